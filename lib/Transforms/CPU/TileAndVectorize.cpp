//===- TileAndVectorize.cpp - register-tile GEMMs and vectorize them ------===//
//
// Three steps over every linalg contraction on tensors:
//  1. tile (innermost m/n/k by the requested sizes, other loops by 1); a
//     static extent gets the largest dividing tile (along n, whole vectors;
//     along n and m, where no such tile is near the requested one, the
//     requested tile and a peeled static remainder), a dynamic one
//     (batch) the requested tile with its last partial iteration peeled off;
//  2. canonicalize, so the full tiles (and static remainders) get static
//     shapes;
//  3. vectorize every static tile into one vector.contract. Dynamic
//     remainder tiles stay scalar and are lowered to loops later: correct,
//     and rare.
//
//===----------------------------------------------------------------------===//

#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "conv-lower-tile-and-vectorize"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERTILEANDVECTORIZE
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using mlir::conv_lower::largestDividingTile;
using mlir::conv_lower::tileInPlace;
using mlir::conv_lower::tileInPlaceFusingFill;

namespace {

/// The tile along N, the vector dimension: whole vectors of `lanes` where
/// some multiple of them up to `size` divides the extent; else the most
/// whole vectors that fit, with a peeled remainder tile (a 112-wide N tiled
/// 28 wide ran 3x slower than 16 wide: 28 lanes are one and three-quarter
/// registers); else (fewer than `lanes`) the largest dividing tile.
int64_t vectorTile(int64_t extent, int64_t size, int64_t lanes) {
  for (int64_t t = size - size % lanes; t >= lanes; t -= lanes)
    if (extent % t == 0)
      return t;
  int64_t whole = std::min(size, extent) / lanes * lanes;
  if (whole >= lanes)
    return whole;
  return largestDividingTile(extent, size);
}

/// The tile along M (rows: one broadcast operand and one accumulator row
/// each): the largest divisor of the extent up to `size` where that is at
/// least three quarters of it; else `size` with a peeled static remainder.
/// AVX2's 6-row tile divides neither a 7x7 image's 49 rows (its largest
/// dividing tile is 1: 49 tiles of one row, each reloading the whole B
/// slice for one FMA a vector) nor 3136 (4: a third of the tile idle).
int64_t rowTile(int64_t extent, int64_t size) {
  int64_t dividing = largestDividingTile(extent, size);
  if (extent <= size || 4 * dividing >= 3 * size)
    return dividing;
  return size;
}

/// Tile sizes for a contraction: the innermost m, n and k loops get the
/// requested sizes (shrunk to divide a static extent; n kept whole vectors),
/// every other loop 1. `exact` (AMX tiles): m and the K groups take the
/// sizes as given, a partial last tile peeled, so that every other tile is
/// whole AMX tiles.
SmallVector<int64_t> computeTileSizes(linalg::LinalgOp op,
                                      const linalg::ContractionDimensions &dims,
                                      int64_t tileM, int64_t tileN,
                                      int64_t tileK, bool exact = false) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> sizes(op.getNumLoops(), 1);
  auto setInnermost = [&](ArrayRef<unsigned> loops, int64_t size) {
    if (loops.empty())
      return;
    unsigned loop = loops.back();
    sizes[loop] = ShapedType::isDynamic(ranges[loop])
                      ? size
                      : largestDividingTile(ranges[loop], size);
  };
  setInnermost(dims.n, tileN);
  if (exact && !dims.m.empty())
    sizes[dims.m.back()] = tileM;
  else if (!dims.m.empty() && !ShapedType::isDynamic(ranges[dims.m.back()]))
    sizes[dims.m.back()] = rowTile(ranges[dims.m.back()], tileM);
  else
    setInnermost(dims.m, tileM);
  if (!dims.n.empty() && !ShapedType::isDynamic(ranges[dims.n.back()]))
    sizes[dims.n.back()] =
        vectorTile(ranges[dims.n.back()], tileN, conv_lower::kVectorLanes);
  setInnermost(dims.k, tileK);
  // A contraction in K groups (bf16 pairs, i8 quads): the group whole,
  // the groups by tileK / g (the same K elements a tile as without groups).
  if (std::optional<conv_lower::DotGroupLoop> group =
          conv_lower::dotGroupLoop(op)) {
    sizes[group->loop] = group->size;
    ArrayRef<unsigned> groups(dims.k);
    groups = groups.drop_back();
    int64_t perTile = std::max<int64_t>(1, tileK / group->size);
    if (exact && !groups.empty())
      sizes[groups.back()] = perTile;
    else
      setInnermost(groups, perTile);
  }
  return sizes;
}

/// The block along a static `extent` for about `blocks` blocks: the
/// smallest multiple of `tile` that divides it and gives at most that many
/// (the whole extent where none does). Every block is whole, so each tiles
/// exactly as the unsplit GEMM would and the result is the same to the bit
/// whatever the thread count.
int64_t blockSize(int64_t extent, int64_t blocks, int64_t tile) {
  int64_t wanted = llvm::divideCeil(extent, blocks);
  for (int64_t b = tile; b < extent; b += tile)
    if (b >= wanted && extent % b == 0)
      return b;
  return extent;
}

/// The share of the threads' time spent working when `count` equal blocks
/// are split among `threads` in static chunks: 7 blocks on 2 threads keep
/// one thread idle for an eighth of the time.
double threadBalance(int64_t count, int64_t threads) {
  return double(count) / double(threads * llvm::divideCeil(count, threads));
}

/// blockSize's block, unless its count (times `outer`, the iterations of
/// the forall's other dimensions) leaves a thread idle part of the time and
/// another multiple of `tile` dividing the extent, at least `minBlock` (the
/// register tile: AMX's 16 rows) and with a total count within 4x of
/// `blocks`, balances better: then the best balanced, the count nearest
/// `blocks` among equals. A 1x1 layer's 1568 rows (14x14 at
/// batch 8) went in 7 blocks of 224 onto 2 threads: 8.4 ms; in 14 of 112,
/// 7.3 (docs/performance.md).
int64_t balancedBlockSize(int64_t extent, int64_t blocks, int64_t tile,
                          int64_t minBlock, int64_t threads, int64_t outer) {
  int64_t chosen = blockSize(extent, blocks, tile);
  if (threads < 2 || outer < 1 || extent % tile != 0 ||
      threadBalance(outer * (extent / chosen), threads) == 1.0)
    return chosen;
  auto countOf = [&](int64_t b) { return outer * (extent / b); };
  auto distance = [&](int64_t b) {
    return std::abs(std::log(double(countOf(b)) / double(blocks)));
  };
  for (int64_t b = llvm::alignTo(minBlock, tile); b <= extent; b += tile) {
    int64_t count = countOf(b);
    if (extent % b != 0 || 4 * count < blocks || count > 4 * blocks)
      continue;
    double balance = threadBalance(count, threads),
           best = threadBalance(countOf(chosen), threads);
    if (balance > best || (balance == best && distance(b) < distance(chosen)))
      chosen = b;
  }
  return chosen;
}

/// The largest multiple of `step` that divides `extent` and is at most
/// `limit` (at least `step`; the extent where `step` does not divide it).
int64_t largestMultipleDividing(int64_t extent, int64_t limit, int64_t step) {
  if (extent % step != 0)
    return extent;
  for (int64_t b = limit - limit % step; b > step; b -= step)
    if (extent % b == 0)
      return b;
  return step;
}

/// Step 0 (optional): an scf.forall over about `blocks` blocks of the
/// innermost M dimension (each a multiple of `tileM`; other M and batch
/// dimensions by 1), or of the innermost N dimension where that is the
/// larger (each a whole vector tile; other N and batch dimensions by 1: a
/// pointwise NCHW convolution's F = 64 filters against 3136 pixels per
/// image, where blocks of filters each streamed every image through): the
/// units of work that threads share. Returns the contraction inside the
/// forall.
linalg::LinalgOp tileForThreads(RewriterBase &rewriter, linalg::LinalgOp op,
                                int64_t blocks, int64_t threads, int64_t tileM,
                                int64_t tileN) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || (dims->m.empty() && dims->n.empty()))
    return op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // No M dimension: a vector-matrix product (a batch-1 linear layer, its
  // unit rows folded away), whose columns are the only work to share.
  int64_t rows = dims->m.empty() ? 1 : ranges[dims->m.back()];
  // The columns: one N dimension, or packed panels [.., panel, column]
  // (conv-lower-pack-filter-panels: the innermost no wider than a register
  // tile), read as one and split in whole panels.
  int64_t columns = dims->n.empty() ? 0 : ranges[dims->n.back()];
  unsigned panelDim = dims->n.size() > 1 ? dims->n[dims->n.size() - 2] : 0;
  bool panels = dims->n.size() > 1 && !ShapedType::isDynamic(columns) &&
                columns <= tileN && !ShapedType::isDynamic(ranges[panelDim]);
  if (panels)
    columns *= ranges[panelDim];
  bool splitColumns = !ShapedType::isDynamic(rows) &&
                      !ShapedType::isDynamic(columns) && columns > rows;
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  for (unsigned d : dims->batch)
    sizes[d] = 1;
  // The forall's iterations over the dimensions tiled by 1 (batch, groups,
  // outer rows or columns): each multiplies the count of blocks the
  // threads share (0 where one is dynamic: no balancing).
  auto unitIterations = [&](ArrayRef<unsigned> split, unsigned blocked) {
    int64_t count = 1;
    for (unsigned d : llvm::concat<const unsigned>(dims->batch, split))
      if (d != blocked && (!panels || d != dims->n.back()))
        count = ShapedType::isDynamic(ranges[d]) ? 0 : count * ranges[d];
    return count;
  };
  if (splitColumns) {
    for (unsigned d : dims->n)
      sizes[d] = 1;
    if (panels) {
      sizes[dims->n.back()] = 0;
      sizes[panelDim] =
          balancedBlockSize(ranges[panelDim], blocks, 1, 1, threads,
                            unitIterations(dims->n, panelDim));
    } else {
      int64_t tile = vectorTile(columns, tileN, conv_lower::kVectorLanes);
      int64_t block =
          balancedBlockSize(columns, blocks, tile, tile, threads,
                            unitIterations(dims->n, dims->n.back()));
      // No multiple of the vector tile divides the columns (1000 classes):
      // the widest blocks of half vectors that give at least `blocks`, each
      // tiled with a peeled remainder (1000 in 8: 25 blocks of 40).
      if (block == columns)
        block = largestMultipleDividing(columns, llvm::divideCeil(columns, blocks),
                                        conv_lower::kVectorLanes / 2);
      sizes[dims->n.back()] = block;
    }
  } else if (dims->m.empty()) {
    return op; // columns too few to share
  } else {
    for (unsigned d : dims->m)
      sizes[d] = 1;
    sizes[dims->m.back()] =
        ShapedType::isDynamic(rows)
            ? 32 * tileM // a dynamic extent: a fixed block
            : balancedBlockSize(rows, blocks, largestDividingTile(rows, tileM),
                                tileM, threads,
                                unitIterations(dims->m, dims->m.back()));
  }
  FailureOr<linalg::LinalgOp> tiled = tileInPlaceFusingFill(
      rewriter, op, sizes, scf::SCFTilingOptions::LoopType::ForallOp);
  return succeeded(tiled) ? *tiled : op;
}

/// Step 0b: the innermost K loop split into blocks of kc, where the [K, N]
/// operand the register tiles stream (each row tile reads all of it: the
/// loops run m, n, k) is larger than `cacheBytes`; kc is the largest divisor
/// of K whose [kc, N] slice fits, at least `minBlock`. The r50 512-channel
/// 7x7 layer's per-thread GEMM [49, 4608] x [4608, 256] read its 4.7 MB B
/// once per 7-row tile from memory; blocked, once. Returns the contraction
/// inside the K loop (or `op` where nothing is blocked).
linalg::LinalgOp blockReduction(RewriterBase &rewriter, linalg::LinalgOp op,
                                int64_t cacheBytes) {
  constexpr int64_t minBlock = 64;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (cacheBytes <= 0 || failed(dims) || dims->k.empty() || dims->n.empty())
    return op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // In K groups: K counts groups, each row of B holds g elements a column.
  std::optional<conv_lower::DotGroupLoop> group = conv_lower::dotGroupLoop(op);
  if (group && dims->k.size() < 2)
    return op;
  unsigned kLoop = group ? dims->k[dims->k.size() - 2] : dims->k.back();
  // A dynamic extent (kDynamic, INT64_MIN) is refused before any product
  // is taken: multiplied in, it overflowed (a fuzzer finding under UBSan).
  int64_t k = ranges[kLoop];
  if (ShapedType::isDynamic(k) ||
      llvm::any_of(dims->n, [&](unsigned d) {
        return ShapedType::isDynamic(ranges[d]);
      }))
    return op;
  int64_t n = group ? group->size : 1;
  for (unsigned d : dims->n)
    n *= ranges[d];
  Type element = getElementTypeOrSelf(op.getDpsInputOperand(1)->get());
  int64_t rowBytes = n * std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  if (k * rowBytes <= cacheBytes) {
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] "
               << "K = " << k << " not blocked: the [K, N = " << n
               << "] operand's " << k * rowBytes
               << " bytes fit cache-block-bytes " << cacheBytes << "\n");
    return op;
  }
  int64_t kc = largestDividingTile(k, std::max(minBlock, cacheBytes / rowBytes));
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] "
                          << "K = " << k << ", [K, N = " << n << "] is "
                          << k * rowBytes << " bytes > " << cacheBytes
                          << ": kc = " << kc
                          << (kc < minBlock || kc == k ? " (not blocked)" : "")
                          << "\n");
  if (kc < minBlock || kc == k)
    return op;
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  sizes[kLoop] = kc;
  FailureOr<linalg::LinalgOp> tiled = tileInPlace(rewriter, op, sizes);
  return succeeded(tiled) ? *tiled : op;
}

/// The contractions this pass tiles: on tensors, linalg's or the signed-i8
/// form conv-lower-pack-vnni writes.
bool isTensorContraction(linalg::LinalgOp op) {
  return op.hasPureTensorSemantics() &&
         (linalg::isaContractionOpInterface(op) ||
          conv_lower::isSignFlippedI8Contraction(op));
}

/// Whether `v` is a linalg.fill's result, seen through a reshape too (the
/// filter panels' [M, N / w, w] view of the filled output).
bool isFilled(Value v) {
  if (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
          v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v.getDefiningOp<linalg::FillOp>() != nullptr;
}

/// Whether the accumulator `op` starts from is a linalg.fill.
bool initIsFill(linalg::LinalgOp op) {
  return op.getNumDpsInits() == 1 && isFilled(op.getDpsInitOperand(0)->get());
}

/// What `v` slices where it is a tensor.extract_slice of the whole of it
/// (as tiling takes an untiled accumulator), else `v`.
Value throughWholeSlice(Value v) {
  auto slice = v.getDefiningOp<tensor::ExtractSliceOp>();
  auto isConstant = [](int64_t c) {
    return [c](OpFoldResult o) { return isConstantIntValue(o, c); };
  };
  if (slice && slice.getSourceType() == slice.getType() &&
      llvm::all_of(slice.getMixedOffsets(), isConstant(0)) &&
      llvm::all_of(slice.getMixedStrides(), isConstant(1)))
    return slice.getSource();
  return v;
}

/// Step 0b': a K-blocked contraction `op` (blockReduction's) whose
/// accumulator is a fill gets its first K block peeled off and inlined,
/// starting from the fill: that block's register tiles then start from
/// splats (tileFusingFill) and the fill goes, where every block read the
/// filled output. Returns the contractions to tile (the first block's, if
/// peeled, then `op`).
SmallVector<linalg::LinalgOp> peelFirstBlock(RewriterBase &rewriter,
                                             linalg::LinalgOp op) {
  auto blocks = dyn_cast<scf::ForOp>(op->getParentOp());
  if (!blocks || blocks.getNumRegionIterArgs() != 1 ||
      op.getNumDpsInits() != 1 ||
      throughWholeSlice(op.getDpsInitOperand(0)->get()) !=
          blocks.getRegionIterArgs()[0] ||
      !isFilled(blocks.getInitArgs()[0]))
    return {op};
  scf::ForOp first;
  if (failed(scf::peelForLoopFirstIteration(rewriter, blocks, first)))
    return {op};
  linalg::LinalgOp firstOp;
  first.getBody()->walk([&](linalg::LinalgOp inner) {
    if (isTensorContraction(inner))
      firstOp = inner;
  });
  if (!firstOp)
    return {op};
  (void)first.promoteIfSingleIteration(rewriter);
  OpOperand *firstInit = firstOp.getDpsInitOperand(0);
  Value filled = throughWholeSlice(firstInit->get());
  rewriter.modifyOpInPlace(firstOp, [&] { firstInit->set(filled); });
  return {firstOp, op};
}

/// The floats between consecutive rows of `v` where it is a slice of a
/// dense tensor: the innermost extent of what it was sliced from.
int64_t rowPitch(Value v) {
  while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>())
    v = slice.getSource();
  return cast<RankedTensorType>(v.getType()).getShape().back();
}

/// Step 0c: the [K, N] operand as contiguous column panels where its rows
/// lie far apart. A channels-first pointwise convolution's B is the image
/// itself, X [C, pixels], rows 3136 floats (12.5 KB) apart on r50's 56x56
/// layers: each register tile's K loop read a vector from another page per
/// step. N is tiled by the vector tile first (an scf.for outside the row
/// tiles) and each [K, tile] panel copied contiguous once, then read by
/// every row tile: the GEMM library's packed B. Operands whose rows are at
/// most `kPackedPitch` floats apart (pack-rhs's W^T of up to 512 filters,
/// already laid out for this) are left as they are. Returns the
/// contraction inside the N loop (or `op`).
constexpr int64_t kPackedPitch = 512;
linalg::LinalgOp packColumnPanels(RewriterBase &rewriter, linalg::LinalgOp op,
                                  int64_t tileN) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->n.empty() || dims->k.empty())
    return op;
  OpOperand *b = op.getDpsInputOperand(1);
  AffineMap map = op.getMatchingIndexingMap(b);
  unsigned results = map.getNumResults();
  if (results < 2 ||
      map.getResult(results - 1) !=
          getAffineDimExpr(dims->n.back(), op.getContext()) ||
      map.getResult(results - 2) !=
          getAffineDimExpr(dims->k.back(), op.getContext()))
    return op;
  if (rowPitch(b->get()) <= kPackedPitch || op.hasDynamicShape())
    return op;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t columns = ranges[dims->n.back()];
  int64_t panel = vectorTile(columns, tileN, conv_lower::kVectorLanes);
  if (panel >= columns || columns % panel)
    return op;
  SmallVector<int64_t> sizes(op.getNumLoops(), 0);
  sizes[dims->n.back()] = panel;
  FailureOr<linalg::LinalgOp> tiled =
      tileInPlaceFusingFill(rewriter, op, sizes);
  if (failed(tiled))
    return op;
  OpOperand *tileB = tiled->getDpsInputOperand(1);
  auto type = cast<RankedTensorType>(tileB->get().getType());
  rewriter.setInsertionPoint(*tiled);
  Location loc = tiled->getLoc();
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
  Value packed =
      linalg::CopyOp::create(rewriter, loc, tileB->get(), empty).getResult(0);
  rewriter.modifyOpInPlace(*tiled, [&] { tileB->set(packed); });
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] B rows " << rowPitch(b->get())
                          << " floats apart: packed in [K, " << panel
                          << "] column panels\n");
  return *tiled;
}

/// Step 1, where the accumulator is a linalg.fill and the tiles divide
/// every extent: the parallel dimensions first with the fill fused into
/// each register tile, then K inside. Tiled with K, the tiles read their
/// accumulators from the filled output: the fill was a pass writing the
/// whole output block (3.2 MB a thread block for r50's 128 -> 256 1x1 layer
/// at batch 8, past the L2) before the tiles read it back; fused, each
/// tile's accumulators start as zero vectors in registers and the fill
/// folds away.
LogicalResult tileFusingFill(RewriterBase &rewriter, linalg::LinalgOp op,
                             ArrayRef<int64_t> sizes) {
  if (!initIsFill(op))
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> parallel(sizes.size(), 0), reduction(sizes.size(), 0);
  bool reduces = false;
  for (auto [dim, size, type] :
       llvm::enumerate(sizes, op.getIteratorTypesArray())) {
    if (size == 0)
      continue;
    if (ShapedType::isDynamic(ranges[dim]) || ranges[dim] % size)
      return failure();
    if (type == utils::IteratorType::reduction) {
      reduction[dim] = size;
      reduces = true;
    } else {
      parallel[dim] = size;
    }
  }
  FailureOr<linalg::LinalgOp> tile =
      tileInPlaceFusingFill(rewriter, op, parallel);
  if (failed(tile))
    return failure();
  if (reduces && failed(tileInPlace(rewriter, *tile, reduction)))
    return failure();
  return success();
}

/// An in-bounds vector.transfer_read of a linalg.fill's result, seen
/// through tensor.extract_slice ops: a splat of the fill's value.
struct ReadOfFillAsSplat : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    if (read.hasOutOfBoundsDim() || read.getMask())
      return failure();
    Value source = read.getBase();
    while (auto slice = source.getDefiningOp<tensor::ExtractSliceOp>())
      source = slice.getSource();
    auto fill = source.getDefiningOp<linalg::FillOp>();
    if (!fill || !isa<RankedTensorType>(source.getType()))
      return failure();
    Value value = fill.getInputs()[0];
    if (value.getType() != read.getVectorType().getElementType())
      return failure();
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(read, read.getVectorType(),
                                                     value);
    return success();
  }
};

/// Whether `use` replaces every element of the tensor it is the
/// destination of: an in-bounds transfer_write of the tensor's size, or an
/// insert_slice of it, seen through slices that take the whole tensor.
bool overwritesWhole(OpOperand &use) {
  Operation *user = use.getOwner();
  auto whole = [](ShapedType part, ShapedType all) {
    return part.hasStaticShape() && all.hasStaticShape() &&
           part.getNumElements() == all.getNumElements();
  };
  auto dest = cast<RankedTensorType>(use.get().getType());
  if (auto write = dyn_cast<vector::TransferWriteOp>(user))
    return &use == &write.getBaseMutable() && !write.hasOutOfBoundsDim() &&
           !write.getMask() && whole(write.getVectorType(), dest);
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(user))
    return &use == &insert.getDestMutable() &&
           whole(insert.getSourceType(), dest);
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user))
    return whole(slice.getType(), dest) &&
           llvm::all_of(slice->getUses(), overwritesWhole);
  return false;
}

/// A linalg.fill every use of which overwrites it whole (the fused fill of
/// a register tile whose accumulators now start as splats): its
/// destination as it was.
struct FillOverwrittenWhole : OpRewritePattern<linalg::FillOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::FillOp fill,
                                PatternRewriter &rewriter) const override {
    if (!fill.hasPureTensorSemantics() || fill->use_empty() ||
        !llvm::all_of(fill->getResult(0).getUses(), overwritesWhole))
      return failure();
    rewriter.replaceOp(fill, fill.getOutputs()[0]);
    return success();
  }
};

/// Step 1: tile one contraction; peel loops over dynamic extents.
LogicalResult tileAndPeel(RewriterBase &rewriter, linalg::LinalgOp op,
                          int64_t tileM, int64_t tileN, int64_t tileK,
                          bool exact) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> sizes =
      computeTileSizes(op, *dims, tileM, tileN, tileK, exact);
  // AMX's exact tiles keep their peeled form (conv-lower-amx-tiles').
  if (!exact && succeeded(tileFusingFill(rewriter, op, sizes)))
    return success();

  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);

  // Loops are created for the non-zero tile sizes, outermost first.
  unsigned loopIndex = 0;
  for (auto [dim, size] : llvm::enumerate(sizes)) {
    if (size == 0)
      continue;
    auto forOp = dyn_cast<scf::ForOp>(
        tiled->loops[loopIndex++].getOperation());
    // Dynamic extents and static ones the tile does not divide (vectorTile)
    // get their partial last tile peeled off.
    bool partial = ShapedType::isDynamic(ranges[dim]) || ranges[dim] % size;
    if (!forOp || !partial || size == 1)
      continue;
    scf::ForOp remainder;
    (void)scf::peelForLoopAndSimplifyBounds(rewriter, forOp, remainder);
  }
  return success();
}

/// Step 2: the canonicalizer's patterns, so that peeled full tiles become
/// static (affine.min folded, slices and linalg ops re-typed).
LogicalResult canonicalize(Operation *root) {
  MLIRContext *ctx = root->getContext();
  RewritePatternSet patterns(ctx);
  for (Dialect *dialect : ctx->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : ctx->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, ctx);
  return applyPatternsGreedily(root, std::move(patterns));
}

/// Whether a vector.contract from `in` operands into an `acc` accumulator
/// lowers cleanly: the contraction lowering widens mixed operands with
/// extf/extsi, so only a same-kind widening (or no conversion) is right;
/// int -> float and narrowing accumulators (f32 x f32 -> f16) are not.
bool contractPromotesCleanly(Type in, Type acc) {
  if (in == acc)
    return true;
  bool sameKind = (isa<FloatType>(in) && isa<FloatType>(acc)) ||
                  (isa<IntegerType>(in) && isa<IntegerType>(acc));
  return sameKind && acc.getIntOrFloatBitWidth() > in.getIntOrFloatBitWidth();
}

/// The loop of a tile's single row where every M loop is a unit (a batch-1
/// linear layer, a vector-matrix product), which dropUnitLoops keeps.
/// Without it the tile is an (n, k) vector-matrix contraction, which the
/// vector lowering computes with a transpose and horizontal sums (a 1280 ->
/// 1024 layer on packed panels: 0.25 ms, against 0.05 for 1280 -> 1000,
/// whose unpacked tile kept its row); as a [1, k] x [k, n] matmul it is
/// one broadcast and outer-product FMAs a K step.
std::optional<unsigned> unitRowLoop(linalg::LinalgOp op) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // Operands of one element type, into the same or a wider accumulator of
  // that kind (what vectorizeTile makes a vector.contract); K in groups (the
  // bf16 pairs and i8 quads) keeps its own dot-product tiles, which take
  // the row dropped.
  Type lhs = getElementTypeOrSelf(op.getDpsInputOperand(0)->get());
  Type rhs = getElementTypeOrSelf(op.getDpsInputOperand(1)->get());
  Type acc = getElementTypeOrSelf(op.getDpsInitOperand(0)->get());
  bool contracts = lhs == rhs && contractPromotesCleanly(lhs, acc);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || !contracts ||
      conv_lower::dotGroupLoop(op) ||
      !llvm::all_of(dims->m, [&](unsigned d) { return ranges[d] == 1; }))
    return std::nullopt;
  return dims->m.back();
}

/// A generic tile keeps the unit loops of the dimensions tiled by 1 (the
/// batch of a pointwise conv, say); vector.contract cannot be formed with a
/// unit loop that only some operands index, so drop them first (all but a
/// single row's: unitRowLoop).
linalg::LinalgOp dropUnitLoops(RewriterBase &rewriter, linalg::LinalgOp op,
                               bool keepRow = true) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || !llvm::is_contained(op.getStaticLoopRanges(), 1))
    return op;
  rewriter.setInsertionPoint(op);
  // Rank-reducing slices (not reshapes) fold into the tile's own
  // extract/insert_slice, so the tile still bufferizes in place.
  linalg::ControlDropUnitDims control;
  control.rankReductionStrategy =
      linalg::ControlDropUnitDims::RankReductionStrategy::ExtractInsertSlice;
  std::optional<unsigned> row =
      keepRow ? unitRowLoop(op) : std::optional<unsigned>();
  control.controlFn = [row](Operation *tile) {
    SmallVector<unsigned> loops;
    for (unsigned d = 0, e = cast<linalg::GenericOp>(tile).getNumLoops(); d < e;
         ++d)
      if (d != row)
        loops.push_back(d);
    return loops;
  };
  FailureOr<linalg::DropUnitDimsResult> dropped =
      linalg::dropUnitDims(rewriter, generic, control);
  if (failed(dropped))
    return op;
  rewriter.replaceOp(op, dropped->replacements);
  auto result = cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
  // The row is kept only for a tile that is then a plain matmul (specialize
  // makes it linalg.matmul); any other form drops it too.
  if (row && result.getIndexingMapsArray() !=
                 linalg::MatmulOp::getDefaultIndexingMaps(op.getContext()))
    return dropUnitLoops(rewriter, result, /*keepRow=*/false);
  return result;
}

/// A generic tile that is a plain matmul ((m, k) x (k, n) -> (m, n)) becomes
/// linalg.matmul: only named contractions vectorize straight into
/// vector.contract (a generic goes through broadcast operands and a
/// multi_reduction). Other maps are left alone: vectorizing a named matmul
/// with transposed maps this way miscomputes its vector shapes in MLIR 22.
linalg::LinalgOp specialize(RewriterBase &rewriter, linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic || generic.getIndexingMapsArray() !=
                      linalg::MatmulOp::getDefaultIndexingMaps(op.getContext()))
    return op;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::LinalgOp> named =
      linalg::specializeGenericOp(rewriter, generic);
  return succeeded(named) ? *named : op;
}

/// Step 3: one static tile into one vector.contract.
void vectorizeTile(RewriterBase &rewriter, linalg::LinalgOp op) {
  op = specialize(rewriter, dropUnitLoops(rewriter, op));
  rewriter.setInsertionPoint(op);
  // Prefer a direct vector.contract (lowered to outer-product FMAs); fall
  // back to broadcast + multi_reduction for bodies it does not accept, for
  // operands of different element types (vector.contract requires one), and
  // for conversions into the accumulator that the contraction lowering would
  // spell wrong (contractPromotesCleanly).
  Type lhsType = getElementTypeOrSelf(op.getDpsInputOperand(0)->get());
  Type rhsType = getElementTypeOrSelf(op.getDpsInputOperand(1)->get());
  Type accType = getElementTypeOrSelf(op.getDpsInitOperand(0)->get());
  FailureOr<linalg::VectorizationResult> result = failure();
  if (lhsType == rhsType && contractPromotesCleanly(lhsType, accType))
    result = linalg::vectorize(
        rewriter, op, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
        /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
        /*assumeDynamicDimsMatchVecSizes=*/false,
        /*createNamedContraction=*/true);
  if (failed(result))
    result = linalg::vectorize(rewriter, op);
  if (failed(result))
    return; // A scalar tile is still correct; later passes lower it.
  if (!result->replacements.empty())
    rewriter.replaceOp(op, result->replacements);
  else
    rewriter.eraseOp(op);
}

/// Whether AMX multiplies `op`'s K groups: bf16 pairs, or i8 quads with
/// A read signed (conv-lower-pack-vnni's signed-i8 body; TDPBSSD), not
/// its sign-flipped form.
bool isAMXGroup(linalg::LinalgOp op, const conv_lower::DotGroupLoop &group) {
  Type a = getElementTypeOrSelf(op.getDpsInputs()[0]);
  if (group.size == 2)
    return a.isBF16();
  return group.size == 4 && a.isInteger(8) &&
         !conv_lower::isSignFlippedI8Contraction(op);
}

struct ConvLowerTileAndVectorizePass
    : conv_lower::impl::ConvLowerTileAndVectorizeBase<
          ConvLowerTileAndVectorizePass> {
  using Base::Base;
  struct RegisterTile {
    int64_t m, n, k;
    bool amx = false;
  };

  /// The pass's register tile; with amx-tiles, a GEMM in bf16 pairs or i8
  /// quads with at least one whole AMX tile takes 2 x 2 AMX accumulator
  /// tiles of 16 x 16 over one 64-byte row of groups (A: 16 rows x 16
  /// groups, B: 16 group rows x 16 columns), each A and B tile then feeding
  /// two TDPBF16PS or TDPBSSD (oneDNN's brgemm blocks AMX alike). The rows go
  /// by 32 where that leaves whole 16-row tiles (or none) over, else by 16:
  /// every tile but a peeled remainder of fewer than 16 rows (or pairs of K) is
  /// then whole AMX tiles of one shape, which LLVM configures once and never
  /// spills for a second (the remainders run on AVX512-BF16's dots).
  RegisterTile registerTileFor(linalg::LinalgOp op) const {
    RegisterTile standard{tileM, tileN, tileK};
    std::optional<conv_lower::DotGroupLoop> group =
        conv_lower::dotGroupLoop(op);
    if (!amxTiles || !group || !isAMXGroup(op, *group))
      return standard;
    FailureOr<linalg::ContractionDimensions> dims =
        linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() ||
        dims->k.size() < 2)
      return standard;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rows = ranges[dims->m.back()], cols = ranges[dims->n.back()],
            groups = ranges[dims->k[dims->k.size() - 2]];
    auto atLeast = [](int64_t extent, int64_t size) {
      return ShapedType::isDynamic(extent) || extent >= size;
    };
    if (!atLeast(rows, 16) || !atLeast(cols, 16) || !atLeast(groups, 16))
      return standard;
    int64_t m = ShapedType::isDynamic(rows) || rows % 16 == 0 ? 32 : 16;
    // K: 16 groups, one 64-byte tile row (32 bf16, 64 i8).
    return {m, 32, 16 * group->size, /*amx=*/true};
  }

  void runOnOperation() override {
    if (tileM < 1 || tileN < 1 || tileK < 1 || parallelBlocks < 0) {
      getOperation()->emitError()
          << "conv-lower-tile-and-vectorize: tile sizes must be positive";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::LinalgOp> contractions;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (isTensorContraction(op))
        contractions.push_back(op);
    });
    for (linalg::LinalgOp op : contractions) {
      RegisterTile tile = registerTileFor(op);
      // A GEMM already inside an scf.forall (conv-lower-im2col-panels'
      // row blocks) has its blocks.
      if (parallelBlocks > 0 && !op->getParentOfType<scf::ForallOp>())
        op = tileForThreads(rewriter, op, parallelBlocks, parallelThreads,
                            tile.m, tile.n);
      op = blockReduction(rewriter, op, cacheBlockBytes);
      SmallVector<linalg::LinalgOp> parts =
          tile.amx ? SmallVector<linalg::LinalgOp>{op}
                   : peelFirstBlock(rewriter, op);
      for (linalg::LinalgOp part : parts) {
        part = packColumnPanels(rewriter, part, tile.n);
        (void)tileAndPeel(rewriter, part, tile.m, tile.n, tile.k, tile.amx);
      }
    }

    (void)canonicalize(getOperation());

    SmallVector<linalg::LinalgOp> tiles;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (isTensorContraction(op) && !op.hasDynamicShape())
        tiles.push_back(op);
    });
    for (linalg::LinalgOp op : tiles)
      vectorizeTile(rewriter, op);

    // Mixed-precision bodies vectorize as ext + mul + multi_reduction: fold
    // them back into vector.contract so that every tile is one contraction.
    // Batch/group tiles of 1 leave leading unit dims: drop them, so every
    // contraction is a 2-D GEMM tile (the LLVM lowering of mixed-precision
    // contractions handles those, not rank-3 ones).
    RewritePatternSet patterns(&getContext());
    vector::populateVectorReductionToContractPatterns(patterns);
    vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));

    // Each K step read its accumulator tile from the output and wrote it
    // back; hoisted out of the K loop (innermost loops first, so a tile
    // climbs as far as its indices allow), the accumulators stay in
    // registers across it.
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      (void)hoistLoopInvariantSubsets(rewriter, loop);

    // The accumulators of a tile whose fill was fused (tileFusingFill)
    // start as splats of the fill's value, not as a read of the filled
    // output; the fill, then overwritten whole, goes.
    RewritePatternSet splats(&getContext());
    splats.add<ReadOfFillAsSplat, FillOverwrittenWhole>(&getContext());
    // (The K loops carry the tile's slices unchanged: forwarded, they show
    // the fill's uses as the writes they are.)
    scf::ForOp::getCanonicalizationPatterns(splats, &getContext());
    (void)applyPatternsGreedily(getOperation(), std::move(splats));
  }
};

} // namespace
