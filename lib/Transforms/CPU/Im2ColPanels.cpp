//===- Im2ColPanels.cpp - the CPU's implicit GEMM: im2col per row block ---===//
//
// After conv-lower-decompose a convolution's GEMM reads X_col, the output of
// one copy-like linalg.generic (the im2col) reshaped to [G, M, K]: on the
// seed layer 116 MB written and read back, far out of cache. This pass
// splits the GEMM into blocks of whole output rows (and, where the rows are
// too few for the threads, of filters), an scf.forall (the threads' units
// of work), and computes in each block only that block's rows of X_col: the
// copy tiled to the block (its TilingInterface slices the padded image), a
// panel of bh * R rows x K that stays in the L2 cache while the block's GEMM
// reads it. The GEMM's fill moves into the block too, and so does a
// padded image's padding: each block pads the rows it reads.
//
// Two block GEMMs, by output layout:
//  - channels last (the fold is a reshape): the panel is [rows, K], the GEMM
//    X_panel [rows, K] x W^T [K, F] (B packed once, by conv-lower-pack-rhs);
//    grouped, where the fold transposes [G, M, Fg] into the image's [M, G,
//    Fg], each block's [G, rows, Fg] goes to a block of its own, transposed
//    into its rows of the image in cache;
//  - channels first, where the fold would transpose [M, F] into [N, F, O..]:
//    the panel is written [K, rows] (its copy loops ordered so that the
//    innermost runs along the output row, contiguous in the image at stride
//    1), and the GEMM is W [F, K] x X_panel^T [K, rows] straight into the
//    block's [F, rows] of the NCHW output: no fold, no transpose of W.
//
// What it takes: a linalg.matmul or linalg.batch_matmul (default maps, as
// conv-lower-pack-rhs leaves them) on static tensors whose A operand is the
// collapse of such a copy, used by that GEMM alone. Anything else is left as
// it is.
//
//===----------------------------------------------------------------------===//

#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-im2col-panels"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERIM2COLPANELS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// A GEMM whose A operand is the reshape of an im2col copy.
struct PanelGemm {
  linalg::LinalgOp gemm;
  tensor::CollapseShapeOp rows; // [G, N, O_0.., K dims..] -> [(G,) M, K]
  linalg::GenericOp copy;
  bool grouped; // batch_matmul: the group is the GEMM's batch dimension
  /// Channels first: the fold's transpose [G, N, O.., Fg] -> [N, G, Fg, O..]
  /// and W's rows [(G,) Fg, K] (the input of pack-rhs's transpose).
  linalg::TransposeOp fold;
  Value filterRows;
  /// A quantized convolution's row sums of X_col (the correction for a
  /// filter zero point): a reduction along K of the same rows, into a fill.
  linalg::GenericOp rowSums;
  /// Channels last, grouped: the image [N, O.., G * Fg] that the fold's
  /// transpose [G, N, O.., Fg] -> [N, O.., G, Fg] is collapsed into.
  tensor::CollapseShapeOp groupsIntoImage;

  /// The copy's result: [G, N, O_0, ..., O_(d-1), K dims...].
  RankedTensorType colType() {
    return cast<RankedTensorType>(copy->getResult(0).getType());
  }
  /// d, the number of output spatial dimensions.
  int64_t spatialRank() {
    ReassociationIndices m = rows.getReassociationIndices()[grouped ? 1 : 0];
    return static_cast<int64_t>(m.back()) - 1;
  }
  /// The number of K dimensions of the copy's result.
  int64_t kDims() { return colType().getRank() - spatialRank() - 2; }
  int64_t reductionSize() {
    int64_t k = 1;
    for (int64_t i = spatialRank() + 2; i < colType().getRank(); ++i)
      k *= colType().getDimSize(i);
    return k;
  }
  int64_t filtersPerGroup() {
    return cast<RankedTensorType>(gemm->getResult(0).getType())
        .getShape()
        .back();
  }
};

/// The reassociation that collapses the copy's result into the GEMM's A:
/// [[0 .. d+1], [d+2 ..]] (one group: G joins the rows) or
/// [[0], [1 .. d+1], [d+2 ..]] (grouped).
bool isRowsCollapse(tensor::CollapseShapeOp op, bool grouped) {
  SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
  if (groups.size() != (grouped ? 3u : 2u))
    return false;
  if (grouped && groups[0].size() != 1)
    return false;
  // Rows: G?, N and at least one output dimension; K: the rest.
  ReassociationIndices rows = groups[grouped ? 1 : 0];
  return rows.size() >= (grouped ? 2u : 3u) && !groups.back().empty();
}

/// The permutation of conv-lower-decompose's channels-first fold:
/// [G, N, O_0.., Fg] -> [N, G, Fg, O_0..].
SmallVector<int64_t> channelsFirstFold(int64_t d) {
  SmallVector<int64_t> perm = {1, 0, d + 2};
  for (int64_t i = 0; i < d; ++i)
    perm.push_back(2 + i);
  return perm;
}

/// Channels first: the GEMM's result is expanded to [G, N, O.., Fg] and
/// transposed into [N, G, Fg, O..], and B is pack-rhs's transpose of W's
/// rows. Records both on `m`; false where the chain is anything else.
bool matchChannelsFirstFold(PanelGemm &m) {
  Value result = m.gemm->getResult(0);
  if (!result.hasOneUse())
    return false;
  auto expand = dyn_cast<tensor::ExpandShapeOp>(*result.getUsers().begin());
  if (!expand || !expand->hasOneUse() ||
      expand.getResultType().getRank() != m.spatialRank() + 3)
    return false;
  auto fold = dyn_cast<linalg::TransposeOp>(*expand->getUsers().begin());
  if (!fold || fold.getInput() != expand.getResult() ||
      fold.getPermutation() != ArrayRef(channelsFirstFold(m.spatialRank())))
    return false;
  auto packed =
      m.gemm.getDpsInputOperand(1)->get().getDefiningOp<linalg::TransposeOp>();
  int64_t rank = m.grouped ? 3 : 2;
  SmallVector<int64_t> swapLast = m.grouped ? SmallVector<int64_t>{0, 2, 1}
                                            : SmallVector<int64_t>{1, 0};
  if (!packed || packed.getInput().getType().getRank() != rank ||
      packed.getPermutation() != ArrayRef(swapLast))
    return false;
  if (!m.gemm.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>())
    return false;
  m.fold = fold;
  m.filterRows = packed.getInput();
  return true;
}

/// The permutation of conv-lower-decompose's channels-last grouped fold:
/// [G, N, O_0.., Fg] -> [N, O_0.., G, Fg].
SmallVector<int64_t> groupsLastFold(int64_t d) {
  SmallVector<int64_t> perm;
  for (int64_t i = 1; i <= d + 1; ++i)
    perm.push_back(i);
  perm.append({0, d + 2});
  return perm;
}

/// Channels last, grouped: the GEMM's [G, M, Fg] result is expanded to
/// [G, N, O.., Fg], transposed into a fresh [N, O.., G, Fg] and collapsed
/// into the image [N, O.., G * Fg], from a fill. Records the collapse on
/// `m`; false where the chain is anything else.
bool matchGroupsIntoImage(PanelGemm &m) {
  int64_t d = m.spatialRank();
  Value result = m.gemm->getResult(0);
  if (!m.grouped || !result.hasOneUse() ||
      !m.gemm.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>())
    return false;
  auto expand = dyn_cast<tensor::ExpandShapeOp>(*result.getUsers().begin());
  if (!expand || !expand->hasOneUse() ||
      expand.getResultType().getRank() != d + 3)
    return false;
  auto fold = dyn_cast<linalg::TransposeOp>(*expand->getUsers().begin());
  if (!fold || fold.getInput() != expand.getResult() ||
      fold.getPermutation() != ArrayRef(groupsLastFold(d)) ||
      !fold.getInit().getDefiningOp<tensor::EmptyOp>() ||
      !fold->getResult(0).hasOneUse())
    return false;
  auto image =
      dyn_cast<tensor::CollapseShapeOp>(*fold->getResult(0).getUsers().begin());
  if (!image)
    return false;
  // [[0], .., [d], [d + 1, d + 2]]: G and Fg into the channels, nothing else.
  SmallVector<ReassociationIndices> groups = image.getReassociationIndices();
  if (static_cast<int64_t>(groups.size()) != d + 2 ||
      groups.back() != ReassociationIndices{d + 1, d + 2})
    return false;
  m.groupsIntoImage = image;
  return true;
}

/// The sum along K of each row of A ([(G,) M, K] -> [(G,) M]) into a fill:
/// the zero-point expansion's window sums.
bool isRowSum(linalg::GenericOp op, Value rows) {
  if (op.getNumDpsInputs() != 1 || op.getDpsInputs()[0] != rows ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1 ||
      !op.getDpsInits()[0].getDefiningOp<linalg::FillOp>())
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.back() != utils::IteratorType::reduction)
    return false;
  unsigned loops = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  return maps[0].isIdentity() &&
         maps[1] == AffineMap::getMultiDimIdentityMap(loops, op.getContext())
                        .dropResult(loops - 1);
}

FailureOr<PanelGemm> matchPanelGemm(linalg::LinalgOp gemm) {
  bool grouped = isa<linalg::BatchMatmulOp>(gemm.getOperation());
  if (!isa<linalg::MatmulOp, linalg::BatchMatmulOp>(gemm.getOperation()) ||
      !gemm.hasPureTensorSemantics() || gemm.hasDynamicShape())
    return failure();
  MLIRContext *ctx = gemm.getContext();
  SmallVector<AffineMap> defaults =
      grouped ? linalg::BatchMatmulOp::getDefaultIndexingMaps(ctx)
              : linalg::MatmulOp::getDefaultIndexingMaps(ctx);
  if (gemm.getIndexingMapsArray() != defaults)
    return failure();
  auto rows = gemm.getDpsInputOperand(0)->get().getDefiningOp<
      tensor::CollapseShapeOp>();
  if (!rows || !isRowsCollapse(rows, grouped))
    return failure();
  // The GEMM reads A, and at most the row sums besides.
  linalg::GenericOp rowSums;
  for (Operation *user : rows->getUsers()) {
    if (user == gemm.getOperation())
      continue;
    auto sums = dyn_cast<linalg::GenericOp>(user);
    if (rowSums || !sums || !isRowSum(sums, rows.getResult()))
      return failure();
    rowSums = sums;
  }
  auto copy = rows.getSrc().getDefiningOp<linalg::GenericOp>();
  if (!copy || !copy->hasOneUse() || !conv_lower::isPlainCopy(copy) ||
      !copy.hasPureTensorSemantics() || copy.hasDynamicShape())
    return failure();
  PanelGemm match{gemm, rows, copy, grouped, {}, {}, rowSums};
  // Without a group dimension in the GEMM the copy's G must be 1: a row
  // block is then a slice of one image.
  if (!grouped && match.colType().getDimSize(0) != 1)
    return failure();
  if (!rowSums && !matchChannelsFirstFold(match))
    (void)matchGroupsIntoImage(match);
  return match;
}

/// How the work is split: blocks of `rowsPerBlock` output rows along O_0
/// (the inner output dimensions whole), `blocksPerImage` of them per image,
/// times `filterChunks` chunks of each group's filters.
struct Blocks {
  int64_t batch;          // N
  int64_t outer;          // O_0
  int64_t rowsPerBlock;   // bh, divides O_0
  int64_t innerRows;      // R = O_1 * ... * O_(d-1)
  int64_t blocksPerImage; // O_0 / bh
  int64_t filterChunks;   // divides Fg
  int64_t filtersPerChunk;
  int64_t gemmRows() const { return rowsPerBlock * innerRows; }
  int64_t count() const { return batch * blocksPerImage * filterChunks; }
};

/// The largest bh dividing O_0 whose panel (bh * R rows of K elements, every
/// group) fits `panelBytes` (bh = 1 where none does), preferring those whose
/// bh * R rows are a multiple of `rowAlign`, then those with at least
/// `rowAlign` rows (or the smallest such bh over the budget), that still
/// leaves `minBlocks` blocks; where none leaves that many, the smallest, and
/// the filters are split too, into chunks that stay a multiple of `filterAlign` (the
/// register tile along them; 0: never split). `streamed`: the filter every
/// row block reads whole, the cache budget it is measured against and the
/// threads (see below).
struct Streamed {
  int64_t bytes = 0, cacheBytes = 0, threads = 1;
};
Blocks chooseBlocks(PanelGemm &m, int64_t panelBytes, int64_t minBlocks,
                    int64_t rowAlign, int64_t filterAlign,
                    Streamed streamed = {}, bool nearlyAligned = false) {
  RankedTensorType col = m.colType();
  int64_t d = m.spatialRank();
  Blocks blocks{col.getDimSize(1), col.getDimSize(2), 1, 1, 0, 1, 0};
  for (int64_t i = 3; i < d + 2; ++i)
    blocks.innerRows *= col.getDimSize(i);
  int64_t rowBytes = blocks.innerRows * col.getDimSize(0) *
                     m.reductionSize() *
                     (col.getElementTypeBitWidth() / 8);
  SmallVector<int64_t> fitting, aligned, nearly, wholeVector; // descending
  std::optional<int64_t> oversized; // the smallest bh over a vector of rows
  for (int64_t bh = blocks.outer; bh >= 1; --bh) {
    if (blocks.outer % bh != 0)
      continue;
    int64_t rows = bh * blocks.innerRows;
    bool enough = blocks.batch * (blocks.outer / bh) >= minBlocks;
    if (bh * rowBytes > panelBytes && bh > 1) {
      if (rows >= rowAlign && enough)
        oversized = bh;
      continue;
    }
    fitting.push_back(bh);
    if (rows % rowAlign == 0)
      aligned.push_back(bh);
    // nearlyAligned (AMX's 16-row tiles): a partial last tile of at most an
    // eighth of the rows, where no whole number of tiles gives the blocks.
    if (nearlyAligned && 8 * (rows % rowAlign) <= rows)
      nearly.push_back(bh);
    if (rows >= rowAlign)
      wholeVector.push_back(bh);
  }
  // Rows that are whole vectors; else at least one vector of them, over the
  // panel budget if need be where that still leaves the blocks wanted (a
  // 7x7 image's 7-row blocks ran 8x7 register tiles at 58 GFLOP/s: its
  // 49-row panels are 903 KiB); else what fits.
  SmallVector<int64_t> oversizedPool;
  if (oversized)
    oversizedPool.push_back(*oversized);
  auto enoughBlocks = [&](ArrayRef<int64_t> candidates) {
    return llvm::any_of(candidates, [&](int64_t bh) {
      return blocks.batch * (blocks.outer / bh) >= minBlocks;
    });
  };
  // Whole tiles where they give the blocks wanted; else nearly whole ones.
  bool wholeTiles =
      !aligned.empty() && (enoughBlocks(aligned) || nearly.empty());
  ArrayRef<int64_t> pool = wholeTiles             ? aligned
                           : !nearly.empty()      ? nearly
                           : !wholeVector.empty() ? wholeVector
                           : oversized            ? oversizedPool
                                                  : fitting;
  blocks.rowsPerBlock = pool.back();
  for (int64_t bh : pool)
    if (blocks.batch * (blocks.outer / bh) >= minBlocks) {
      blocks.rowsPerBlock = bh;
      break;
    }
  // A filter past the cache budget comes from memory again for every
  // row block (a block's GEMM reads all of it, K-blocked but whole): then
  // the fewest row blocks whose panels fit twice the budget, and only as
  // many blocks as the threads need. r50 512 7x7 N1 NHWC (a 9.4 MB filter):
  // 7 one-row blocks x 2 filter chunks read 66 MB of it, 1 x 2 read 9.4 MB,
  // 4.1 -> 2.9 ms (docs/performance.md).
  // With W first (rowAlign: the rows are the vector dimension) only where
  // that block has at least 4 vectors of rows: NCHW 256 14x14 N1 went from
  // 1.26 to 1.0 ms with 98-row blocks, 512 7x7 from 2.0 to 2.5 ms with
  // 49-row ones (measured, not modelled: their 48 + 1 column tiles).
  if (streamed.cacheBytes > 0 && streamed.bytes > streamed.cacheBytes) {
    int64_t bh = blocks.outer;
    while (bh > 1 && (blocks.outer % bh != 0 || bh * rowBytes > 2 * panelBytes))
      --bh;
    if (rowAlign == 1 || bh * blocks.innerRows >= 4 * rowAlign) {
      blocks.rowsPerBlock = bh;
      minBlocks = std::max<int64_t>(1, streamed.threads);
    }
  }
  assert(blocks.rowsPerBlock >= 1 && blocks.outer % blocks.rowsPerBlock == 0 &&
         "row blocks divide the outer output dim");
  blocks.blocksPerImage = blocks.outer / blocks.rowsPerBlock;
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] "
                          << "rows per block " << blocks.rowsPerBlock << " of "
                          << blocks.outer << " (" << rowBytes
                          << " panel bytes a row, budget " << panelBytes << ", "
                          << (!aligned.empty()       ? "whole vectors"
                              : !wholeVector.empty() ? "a vector or more"
                              : oversized            ? "over the budget"
                                                     : "what fits")
                          << (streamed.bytes > streamed.cacheBytes &&
                                      streamed.cacheBytes > 0
                                  ? ", streamed filter"
                                  : "")
                          << "), min blocks " << minBlocks << "\n");
  int64_t fg = m.filtersPerGroup();
  blocks.filtersPerChunk = fg;
  // Too few row blocks for the threads (a small image, N = 1): split the
  // filters; each chunk gathers its own copy of the panel, cheap next to
  // the GEMM where F is large, which is when this happens.
  int64_t rowBlocks = blocks.batch * blocks.blocksPerImage;
  if (rowBlocks < minBlocks && filterAlign > 0 && fg % filterAlign == 0) {
    int64_t wanted = llvm::divideCeil(minBlocks, rowBlocks);
    int64_t units = fg / filterAlign;
    for (int64_t chunks = std::min(wanted, units); chunks >= 1; --chunks)
      if (units % chunks == 0) {
        blocks.filterChunks = chunks;
        break;
      }
    blocks.filtersPerChunk = fg / blocks.filterChunks;
  }
  return blocks;
}

/// Whole vectors of f32 along the rows where they are the GEMM's N (W
/// first), where a block size allows: no partial vector tile.
constexpr int64_t kRowLanes = 16;

/// The induction variables of one block and where it starts.
struct BlockPlace {
  Value n;              // image
  OpFoldResult row;     // first output row along O_0
  OpFoldResult gemmRow; // first GEMM row: (n * O_0 + row) * R
  OpFoldResult filter;  // first filter of the chunk within its group
};

/// The scf.forall over (n, row block, filter chunk), its shared outputs
/// `shared`, and the block's place; the builder is left in its body.
scf::ForallOp createBlockLoop(RewriterBase &rewriter, Location loc,
                              const Blocks &blocks, ValueRange shared,
                              BlockPlace &place) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<OpFoldResult> counts = {
      rewriter.getIndexAttr(blocks.batch),
      rewriter.getIndexAttr(blocks.blocksPerImage),
      rewriter.getIndexAttr(blocks.filterChunks)};
  auto forall = scf::ForallOp::create(rewriter, loc, counts, shared,
                                      /*mapping=*/std::nullopt);
  Block *body = forall.getBody();
  rewriter.setInsertionPointToStart(body);
  Value n = forall.getInductionVar(0), blk = forall.getInductionVar(1),
        chunk = forall.getInductionVar(2);
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  place.n = n;
  place.row = affine::makeComposedFoldedAffineApply(
      rewriter, loc, d0 * blocks.rowsPerBlock, {blk});
  place.gemmRow = affine::makeComposedFoldedAffineApply(
      rewriter, loc,
      (d0 * blocks.outer + d1 * blocks.rowsPerBlock) * blocks.innerRows,
      {n, blk});
  place.filter = affine::makeComposedFoldedAffineApply(
      rewriter, loc, d0 * blocks.filtersPerChunk, {chunk});
  return forall;
}

/// The tiled copy writes into a slice of the whole X_col's tensor.empty;
/// bufferized as it is, that would allocate all of X_col once. Each block
/// gets an empty tensor of its own panel's size instead.
void allocatePanel(RewriterBase &rewriter, linalg::GenericOp copy) {
  OpBuilder::InsertionGuard guard(rewriter);
  OpOperand &init = copy.getDpsInitsMutable()[0];
  auto slice = init.get().getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !slice.getSource().getDefiningOp<tensor::EmptyOp>())
    return;
  rewriter.setInsertionPoint(copy);
  auto type = cast<RankedTensorType>(slice.getType());
  Value empty = tensor::EmptyOp::create(rewriter, slice.getLoc(),
                                        type.getShape(), type.getElementType());
  rewriter.modifyOpInPlace(copy, [&] { init.set(empty); });
  if (slice->use_empty())
    rewriter.eraseOp(slice);
}

/// Whether every slice of `pad` of `sliceSizes` (anywhere a block's window
/// can lie) holds some of the image: a slice longer than the padding on
/// either side of each dimension. The first block's slice then reaches past
/// the low padding and the last one's before the high padding, and the
/// blocks between lie between those two.
bool slicesReachImage(tensor::PadOp pad, ArrayRef<int64_t> sliceSizes) {
  for (auto [size, low, high] :
       llvm::zip_equal(sliceSizes, pad.getStaticLow(), pad.getStaticHigh()))
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(low) ||
        ShapedType::isDynamic(high) || size <= low || size <= high)
      return false;
  return true;
}

/// The tiled copy reads a slice of the whole padded image, which
/// bufferization writes before the block loop, in one thread: a fill of the
/// padded image and a copy of the image into it (ResNeXt-50's g32 3x3 at
/// 14x14, N1: 0.33 ms with the padding, 0.25 without). Each block pads its
/// own slice instead (the pad of a slice of the image), in parallel and in
/// cache; the whole-image pad goes once no block reads it.
void padPerBlock(RewriterBase &rewriter, linalg::GenericOp copy) {
  OpOperand *input = copy.getDpsInputOperand(0);
  auto slice = input->get().getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !slice.hasUnitStride())
    return;
  auto pad = slice.getSource().getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getConstantPaddingValue() ||
      !slicesReachImage(pad, slice.getType().getShape()))
    return;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(slice);
  FailureOr<TilingResult> padded = tensor::bubbleUpPadSlice(
      rewriter, pad, slice.getMixedOffsets(), slice.getMixedSizes(),
      /*generateZeroSliceGuard=*/false);
  if (failed(padded) || padded->tiledValues.size() != 1 ||
      padded->tiledValues[0].getType() != slice.getType())
    return;
  rewriter.modifyOpInPlace(copy, [&] { input->set(padded->tiledValues[0]); });
  if (slice->use_empty())
    rewriter.eraseOp(slice);
}

/// The block's rows of X_col, [G, 1, bh, O_1.., K dims..]: the copy tiled to
/// them (its TilingInterface slices the padded image it reads), each block
/// padding its own slice of the image.
FailureOr<linalg::GenericOp> tileCopyToBlock(RewriterBase &rewriter,
                                             Location loc, PanelGemm &m,
                                             const Blocks &blocks,
                                             const BlockPlace &place) {
  RankedTensorType col = m.colType();
  SmallVector<OpFoldResult> offsets(col.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(rewriter.getContext(), col.getShape());
  SmallVector<OpFoldResult> strides(col.getRank(), rewriter.getIndexAttr(1));
  offsets[1] = place.n;
  sizes[1] = rewriter.getIndexAttr(1);
  offsets[2] = place.row;
  sizes[2] = rewriter.getIndexAttr(blocks.rowsPerBlock);
  auto slice = tensor::ExtractSliceOp::create(
      rewriter, loc, m.copy->getResult(0), offsets, sizes, strides);
  FailureOr<TilingResult> tiled = tensor::replaceExtractSliceWithTiledProducer(
      rewriter, slice, cast<OpResult>(m.copy->getResult(0)));
  rewriter.eraseOp(slice);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return failure();
  auto copy = dyn_cast<linalg::GenericOp>(tiled->tiledOps.front());
  if (!copy)
    return failure();
  allocatePanel(rewriter, copy);
  padPerBlock(rewriter, copy);
  return copy;
}

/// A block loop opened: the scf.forall over the blocks (the builder in its
/// body) and the block's rows of X_col computed in it.
struct BlockLoop {
  scf::ForallOp forall;
  BlockPlace place;
  linalg::GenericOp copy;
};

FailureOr<BlockLoop> openBlockLoop(RewriterBase &rewriter, Location loc,
                                   PanelGemm &m, const Blocks &blocks,
                                   ValueRange shared) {
  BlockLoop loop;
  loop.forall = createBlockLoop(rewriter, loc, blocks, shared, loop.place);
  FailureOr<linalg::GenericOp> tiled =
      tileCopyToBlock(rewriter, loc, m, blocks, loop.place);
  if (failed(tiled)) {
    rewriter.eraseOp(loop.forall);
    return failure();
  }
  loop.copy = *tiled;
  return loop;
}

/// Channels first: the tiled copy rewritten to write [G, K dims.., 1, bh,
/// O_1..], its loops in that order, so that the innermost loop runs along
/// the output row: contiguous stores, and contiguous loads at stride 1.
Value transposePanel(RewriterBase &rewriter, Location loc, PanelGemm &m,
                     linalg::GenericOp tiled) {
  MLIRContext *ctx = rewriter.getContext();
  int64_t d = m.spatialRank(), kd = m.kDims();
  int64_t loops = tiled.getNumLoops();
  // New loop j writes the copy's result dim order[j]: g, the K dims (in the
  // GEMM's K order, which the filter's rows follow), n, O_0...
  SmallVector<int64_t> order = {0};
  for (int64_t i = 0; i < kd; ++i)
    order.push_back(d + 2 + i);
  for (int64_t i = 0; i < d + 1; ++i)
    order.push_back(1 + i);
  // The loop that writes each result dim: the copy's result map is a
  // permutation, not always the identity (a channels-last image's copy runs
  // its channel loop before the kernel's: a channels-last convolution whose
  // output is transposed to channels first, conv-lower-nchw-to-nhwc's,
  // comes here too).
  AffineMap resultMap = tiled.getIndexingMapsArray()[1];
  SmallVector<int64_t> loopOfDim;
  for (AffineExpr e : resultMap.getResults())
    loopOfDim.push_back(cast<AffineDimExpr>(e).getPosition());
  // Old loop i in terms of the new ones.
  SmallVector<AffineExpr> oldInNew(loops);
  for (auto [j, dim] : llvm::enumerate(order))
    oldInNew[loopOfDim[dim]] = getAffineDimExpr(j, ctx);
  AffineMap toOld = AffineMap::get(loops, 0, oldInNew, ctx);
  AffineMap inputMap = tiled.getIndexingMapsArray()[0].compose(toOld);

  auto tileType = cast<RankedTensorType>(tiled->getResult(0).getType());
  SmallVector<int64_t> shape;
  for (int64_t dim : order)
    shape.push_back(tileType.getDimSize(dim));
  Value empty = tensor::EmptyOp::create(rewriter, loc, shape,
                                        tileType.getElementType());
  SmallVector<utils::IteratorType> iterators(loops,
                                             utils::IteratorType::parallel);
  auto copy = linalg::GenericOp::create(
      rewriter, loc, empty.getType(), tiled.getDpsInputs(), ValueRange{empty},
      {inputMap, AffineMap::getMultiDimIdentityMap(loops, ctx)}, iterators,
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, args[0]);
      });
  rewriter.eraseOp(tiled);
  return copy.getResult(0);
}

/// The reassociation [[0..a-1], [a..b-1], ...] of consecutive group sizes.
SmallVector<ReassociationIndices> consecutive(ArrayRef<int64_t> sizes) {
  SmallVector<ReassociationIndices> groups;
  int64_t next = 0;
  for (int64_t size : sizes) {
    ReassociationIndices group;
    for (int64_t i = 0; i < size; ++i)
      group.push_back(next++);
    groups.push_back(group);
  }
  return groups;
}

/// A slice of `source` at `offsets`/`sizes` (unit strides).
Value sliceOf(OpBuilder &b, Location loc, Value source,
              ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, source, offsets, sizes,
                                        strides);
}

/// The block's panel: its rows of X_col (`copy`, tileCopyToBlock's)
/// collapsed exactly as X_col was, [(G,) rows, K].
Value rowsPanel(RewriterBase &rewriter, Location loc, PanelGemm &m,
                const Blocks &blocks, linalg::GenericOp copy) {
  SmallVector<int64_t> panelShape;
  if (m.grouped)
    panelShape.push_back(m.colType().getDimSize(0));
  panelShape.append({blocks.gemmRows(), m.reductionSize()});
  return tensor::CollapseShapeOp::create(
      rewriter, loc,
      RankedTensorType::get(panelShape, m.colType().getElementType()),
      copy->getResult(0), m.rows.getReassociationIndices());
}

/// Channels last: per block, X_panel [(G,) rows, K] x W^T [(G,) K, Fc] into
/// the block's rows and filters of the GEMM's [(G,) M, Fg] result.
LogicalResult rewriteRowsMajor(RewriterBase &rewriter, PanelGemm &m,
                               int64_t panelBytes, int64_t minBlocks,
                               int64_t rowAlign, int64_t filterAlign,
                               Streamed streamed) {
  // The row sums (quantized) are computed per block too: the sums of a
  // block's rows read its panel only. Filter chunks would each compute and
  // write them: the filters are not split then.
  Blocks blocks = chooseBlocks(m, panelBytes, minBlocks, rowAlign,
                               m.rowSums ? 0 : filterAlign, streamed,
                               /*nearlyAligned=*/rowAlign > 1);
  Location loc = m.gemm.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Value init = m.gemm.getDpsInitOperand(0)->get();
  auto outType = cast<RankedTensorType>(init.getType());
  // A fill's destination becomes the shared output: the fill runs per block.
  Value fillValue, shared = init;
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (fill && init.hasOneUse()) {
    fillValue = fill.getInputs()[0];
    shared = fill.getOutputs()[0];
  }
  SmallVector<Value> shares = {shared};
  if (m.rowSums) {
    shares.push_back(
        m.rowSums.getDpsInits()[0].getDefiningOp<linalg::FillOp>()
            .getOutputs()[0]);
  }
  // Before the later of the two: what either reads is defined by then.
  rewriter.setInsertionPoint(m.rowSums && m.gemm->isBeforeInBlock(m.rowSums)
                                 ? m.rowSums.getOperation()
                                 : m.gemm.getOperation());
  FailureOr<BlockLoop> loop = openBlockLoop(rewriter, loc, m, blocks, shares);
  if (failed(loop))
    return failure();
  scf::ForallOp forall = loop->forall;
  const BlockPlace &place = loop->place;
  Value out = forall.getRegionIterArgs()[0];
  Value panel = rowsPanel(rewriter, loc, m, blocks, loop->copy);

  // The block's rows and filters of the output; B's filters.
  int64_t rank = outType.getRank();
  SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(ctx,
                                                           outType.getShape());
  offsets[rank - 2] = place.gemmRow;
  sizes[rank - 2] = rewriter.getIndexAttr(blocks.gemmRows());
  offsets[rank - 1] = place.filter;
  sizes[rank - 1] = rewriter.getIndexAttr(blocks.filtersPerChunk);
  Value blockOut = sliceOf(rewriter, loc, out, offsets, sizes);
  if (fillValue)
    blockOut = linalg::FillOp::create(rewriter, loc, fillValue, blockOut)
                   .getResult(0);
  Value rhs = m.gemm.getDpsInputOperand(1)->get();
  if (blocks.filterChunks > 1) {
    auto rhsType = cast<RankedTensorType>(rhs.getType());
    SmallVector<OpFoldResult> rhsOffsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> rhsSizes =
        getAsIndexOpFoldResult(ctx, rhsType.getShape());
    rhsOffsets[rank - 1] = place.filter;
    rhsSizes[rank - 1] = rewriter.getIndexAttr(blocks.filtersPerChunk);
    rhs = sliceOf(rewriter, loc, rhs, rhsOffsets, rhsSizes);
  }
  Operation *blockGemm = mlir::clone(rewriter, m.gemm,
                                     TypeRange{blockOut.getType()},
                                     ValueRange{panel, rhs, blockOut});

  // The block's row sums: [(G,) rows] of the [(G,) M] sums.
  Value blockSums;
  SmallVector<OpFoldResult> sumOffsets(offsets.begin(), offsets.end() - 1),
      sumSizes(sizes.begin(), sizes.end() - 1);
  if (m.rowSums) {
    Value sumsOut = forall.getRegionIterArgs()[1];
    auto fill = m.rowSums.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
    Value init = linalg::FillOp::create(
                     rewriter, loc, fill.getInputs()[0],
                     sliceOf(rewriter, loc, sumsOut, sumOffsets, sumSizes))
                     .getResult(0);
    blockSums = mlir::clone(rewriter, m.rowSums, TypeRange{init.getType()},
                            ValueRange{panel, init})
                    ->getResult(0);
  }

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(rewriter, loc, blockGemm->getResult(0),
                                        out, offsets, sizes, strides);
  if (m.rowSums) {
    strides.pop_back();
    tensor::ParallelInsertSliceOp::create(rewriter, loc, blockSums,
                                          forall.getRegionIterArgs()[1],
                                          sumOffsets, sumSizes, strides);
    rewriter.replaceOp(m.rowSums, forall.getResult(1));
  }
  rewriter.replaceOp(m.gemm, forall.getResult(0));
  return success();
}

/// Channels last, grouped (matchGroupsIntoImage): per block, X_panel [G,
/// rows, K] x W^T [G, K, Fg] into a block of its own [G, rows, Fg], in
/// cache, then transposed into the block's rows of the image, [rows, G,
/// Fg] of [M, G * Fg]: the blocks write the NHWC output themselves. The
/// [G, M, Fg] result was transposed into the image by a pass of its own
/// after the blocks, and the epilogue was a third (ResNeXt-50's g32 layers
/// of 16 and 32 filters a group; the epilogue now moves into the blocks).
/// The filters are never split into chunks here.
LogicalResult rewriteGroupsIntoImage(RewriterBase &rewriter, PanelGemm &m,
                                     int64_t panelBytes, int64_t minBlocks,
                                     Streamed streamed) {
  Blocks blocks = chooseBlocks(m, panelBytes, minBlocks, /*rowAlign=*/1,
                               /*filterAlign=*/0, streamed);
  Location loc = m.gemm.getLoc();
  tensor::CollapseShapeOp image = m.groupsIntoImage;
  RankedTensorType imageType = image.getResultType();
  Type element = imageType.getElementType();
  int64_t rank = imageType.getRank();
  int64_t groups = m.colType().getDimSize(0), fg = m.filtersPerGroup();
  int64_t channels = imageType.getDimSize(rank - 1);
  int64_t pixels = imageType.getNumElements() / channels;
  int64_t rows = blocks.gemmRows();
  Value fillValue =
      m.gemm.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>()
          .getInputs()[0];

  rewriter.setInsertionPoint(m.gemm);
  Value shared =
      tensor::EmptyOp::create(rewriter, loc, {pixels, channels}, element);
  FailureOr<BlockLoop> loop = openBlockLoop(rewriter, loc, m, blocks, shared);
  if (failed(loop))
    return failure();
  scf::ForallOp forall = loop->forall;
  const BlockPlace &place = loop->place;
  Value out = forall.getRegionIterArgs()[0];
  Value panel = rowsPanel(rewriter, loc, m, blocks, loop->copy);
  Value own = tensor::EmptyOp::create(rewriter, loc, {groups, rows, fg},
                                      getElementTypeOrSelf(
                                          m.gemm->getResult(0).getType()));
  own = linalg::FillOp::create(rewriter, loc, fillValue, own).getResult(0);
  Operation *blockGemm = mlir::clone(
      rewriter, m.gemm, TypeRange{own.getType()},
      ValueRange{panel, m.gemm.getDpsInputOperand(1)->get(), own});
  // The block's rows of the image, seen as [rows, G, Fg], written by the
  // transpose of the block's result.
  SmallVector<OpFoldResult> offsets = {place.gemmRow, rewriter.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(rewriter.getContext(), {rows, channels});
  SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
  Value rowsOfImage = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get({rows, groups, fg}, element),
      sliceOf(rewriter, loc, out, offsets, sizes), split);
  Value transposed =
      linalg::TransposeOp::create(rewriter, loc, blockGemm->getResult(0),
                                  rowsOfImage, ArrayRef<int64_t>{1, 0, 2})
          ->getResult(0);
  Value block = tensor::CollapseShapeOp::create(rewriter, loc, transposed, split);

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(rewriter, loc, block, out, offsets,
                                        sizes, strides);
  rewriter.setInsertionPointAfter(forall);
  SmallVector<ReassociationIndices> toImage(1);
  for (int64_t i = 0; i < rank - 1; ++i)
    toImage.front().push_back(i);
  toImage.push_back({rank - 1});
  Value result = tensor::ExpandShapeOp::create(rewriter, loc, imageType,
                                               forall.getResult(0), toImage);
  // The collapse's readers take the image; the fold's chain goes.
  Operation *fold = image.getSrc().getDefiningOp();
  Operation *expand = fold->getOperand(0).getDefiningOp();
  rewriter.replaceOp(image, result);
  rewriter.eraseOp(fold);
  rewriter.eraseOp(expand);
  rewriter.eraseOp(m.gemm);
  return success();
}

/// Channels first: per block, W [(G,) Fc, K] x X_panel^T [(G,) K, rows]
/// into the block's [1, G, Fc, bh, O_1..] of the [N, G, Fg, O..] output
/// that the fold's transpose wrote.
LogicalResult rewriteFilterFirst(RewriterBase &rewriter, PanelGemm &m,
                                 int64_t panelBytes, int64_t minBlocks,
                                 int64_t filterAlign, Streamed streamed) {
  Blocks blocks = chooseBlocks(m, panelBytes, minBlocks, kRowLanes, filterAlign,
                               streamed);
  Location loc = m.gemm.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  int64_t d = m.spatialRank();
  int64_t groups = m.colType().getDimSize(0);
  Value fillValue =
      m.gemm.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>()
          .getInputs()[0];
  Value shared = m.fold.getInit();
  auto outType = cast<RankedTensorType>(shared.getType());

  rewriter.setInsertionPoint(m.fold);
  FailureOr<BlockLoop> loop = openBlockLoop(rewriter, loc, m, blocks, shared);
  if (failed(loop))
    return failure();
  scf::ForallOp forall = loop->forall;
  const BlockPlace &place = loop->place;
  Value out = forall.getRegionIterArgs()[0];
  // [G, K dims.., 1, bh, O_1..] -> [(G,) K, rows].
  Value transposed = transposePanel(rewriter, loc, m, loop->copy);
  SmallVector<int64_t> panelShape, panelGroups;
  if (m.grouped) {
    panelShape.push_back(groups);
    panelGroups = {1, m.kDims(), d + 1};
  } else {
    panelGroups = {1 + m.kDims(), d + 1};
  }
  panelShape.append({m.reductionSize(), blocks.gemmRows()});
  Value panel = tensor::CollapseShapeOp::create(
      rewriter, loc,
      RankedTensorType::get(panelShape, m.colType().getElementType()),
      transposed, consecutive(panelGroups));

  // W's rows of the chunk: [(G,) Fc, K].
  auto wType = cast<RankedTensorType>(m.filterRows.getType());
  int64_t wRank = wType.getRank();
  SmallVector<OpFoldResult> wOffsets(wRank, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> wSizes = getAsIndexOpFoldResult(ctx,
                                                            wType.getShape());
  wOffsets[wRank - 2] = place.filter;
  wSizes[wRank - 2] = rewriter.getIndexAttr(blocks.filtersPerChunk);
  Value filters = sliceOf(rewriter, loc, m.filterRows, wOffsets, wSizes);

  // The block's [1, G, Fc, bh, O_1..] of the output, as [(G,) Fc, rows].
  int64_t rank = outType.getRank();
  SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(ctx,
                                                           outType.getShape());
  offsets[0] = place.n;
  sizes[0] = rewriter.getIndexAttr(1);
  offsets[2] = place.filter;
  sizes[2] = rewriter.getIndexAttr(blocks.filtersPerChunk);
  offsets[3] = place.row;
  sizes[3] = rewriter.getIndexAttr(blocks.rowsPerBlock);
  Value blockOut = sliceOf(rewriter, loc, out, offsets, sizes);
  SmallVector<int64_t> outGroups =
      m.grouped ? SmallVector<int64_t>{2, 1, d} : SmallVector<int64_t>{3, d};
  SmallVector<int64_t> gemmShape;
  if (m.grouped)
    gemmShape.push_back(groups);
  gemmShape.append({blocks.filtersPerChunk, blocks.gemmRows()});
  auto gemmType = RankedTensorType::get(gemmShape, outType.getElementType());
  Value gemmOut = tensor::CollapseShapeOp::create(
      rewriter, loc, gemmType, blockOut, consecutive(outGroups));
  gemmOut = linalg::FillOp::create(rewriter, loc, fillValue, gemmOut)
                .getResult(0);
  // A new op, not a clone: the operands swap roles, and with mixed element
  // types (f16 data, f32 filter) the body's arguments must swap too.
  SmallVector<NamedAttribute> cast;
  if (Attribute attr = m.gemm->getAttr("cast"))
    cast.push_back(rewriter.getNamedAttr("cast", attr));
  Operation *blockGemm =
      m.grouped ? linalg::BatchMatmulOp::create(
                      rewriter, loc, TypeRange{gemmType},
                      ValueRange{filters, panel}, ValueRange{gemmOut}, cast)
                      .getOperation()
                : linalg::MatmulOp::create(rewriter, loc, TypeRange{gemmType},
                                           ValueRange{filters, panel},
                                           ValueRange{gemmOut}, cast)
                      .getOperation();
  Value result = tensor::ExpandShapeOp::create(
      rewriter, loc, blockOut.getType(), blockGemm->getResult(0),
      consecutive(outGroups));

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(rewriter, loc, result, out, offsets,
                                        sizes, strides);
  rewriter.replaceOp(m.fold, forall.getResults());
  return success();
}

struct ConvLowerIm2ColPanelsPass
    : conv_lower::impl::ConvLowerIm2ColPanelsBase<ConvLowerIm2ColPanelsPass> {
  using Base::Base;
  /// The filter's bytes (every group) that each row block of `m` reads.
  Streamed streamedFilter(PanelGemm &m) const {
    int64_t bytes = m.colType().getDimSize(0) * m.reductionSize() *
                    m.filtersPerGroup() *
                    (m.colType().getElementTypeBitWidth() / 8);
    return {bytes, filterCacheBytes, threads};
  }
  /// Whether the W-first block GEMM suits `m`. It puts the filters on M
  /// (tile-m rows) and one image's output pixels on the vector dimension
  /// (a block never spans images); the rows-first GEMM the other way round,
  /// plus the fold's transpose and pack-rhs's transpose of W. Measured on
  /// NCHW, AVX2 (6x16), 2 threads (docs/performance-journal.md,
  /// 2026-12-04), W first / rows first:
  ///  - few filters per group go to rows first: ResNeXt's 8 are one 6-row
  ///    tile and a 2-row remainder per group on M, one whole vector on N
  ///    (g32 256 28x28 N1: 1.6 / 0.9-1.2 ms, with or without packing);
  ///  - pixels in whole 16-lane vectors (56x56, 28x28, the stem's 112x112)
  ///    stay W first (stem: 3.6 / 7.1 ms; 1x1 256->64 N8: 12.3 / 14.1);
  ///  - ragged pixels (14x14's 196, 7x7's 49) leave a peeled remainder on
  ///    every W-first tile row: rows first where W^T is packed once
  ///    (256 14x14 N1: 3.2 / 2.0 ms; 512 7x7: 3.6 / 3.3); else only in a
  ///    batch of at least four times `channels-first-min-rows` pixels, that
  ///    pays for the per-call transpose of W (9.4 MB on a 512-channel 3x3
  ///    filter: 512 7x7 N1 2.1 / 2.8 ms, N8 20 / 11-15).
  bool filtersFirstSuits(PanelGemm &m) const {
    if (m.filtersPerGroup() < 2 * tileM)
      return false;
    RankedTensorType col = m.colType();
    int64_t pixels = 1;
    for (int64_t i = 2; i < m.spatialRank() + 2; ++i)
      pixels *= col.getDimSize(i);
    if (pixels % conv_lower::kVectorLanes == 0)
      return true;
    if (filterPackedOnce)
      return false;
    int64_t batch = col.getDimSize(1);
    return pixels >= channelsFirstMinRows ||
           batch * pixels < 4 * channelsFirstMinRows;
  }
  /// Rows first: AMX's tile height for a bf16 or i8 GEMM with amx-rows (its
  /// register tiles are then whole 16-row AMX tiles), else any row count.
  int64_t amxRowAlign(PanelGemm &m) const {
    Type element = m.colType().getElementType();
    return amxRows && (element.isBF16() || element.isInteger(8)) ? 16 : 1;
  }

  void runOnOperation() override {
    if (panelBytes < 1 || minBlocks < 1 || tileM < 1 || tileN < 1) {
      getOperation()->emitError()
          << "conv-lower-im2col-panels: panel-bytes, min-blocks and the "
             "tiles must be positive";
      return signalPassFailure();
    }
    SmallVector<PanelGemm> matches;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (FailureOr<PanelGemm> m = matchPanelGemm(op); succeeded(m))
        matches.push_back(*m);
    });
    IRRewriter rewriter(&getContext());
    for (PanelGemm &m : matches) {
      // Filter chunks stay whole register tiles: the filters are the GEMM's
      // N (tile-n) with the rows first, its M (tile-m) with W first.
      Operation *expand = m.fold ? *m.gemm->getUsers().begin() : nullptr;
      if (m.fold && filtersFirstSuits(m) &&
          succeeded(rewriteFilterFirst(rewriter, m, panelBytes, minBlocks,
                                       tileM, streamedFilter(m)))) {
        // The whole GEMM and its reshape are dead (pack-rhs's transpose of W
        // and the fill go with the next canonicalization).
        rewriter.eraseOp(expand);
        rewriter.eraseOp(m.gemm);
      } else if (m.groupsIntoImage && amxRowAlign(m) == 1 &&
                 succeeded(rewriteGroupsIntoImage(rewriter, m, panelBytes,
                                                  minBlocks,
                                                  streamedFilter(m)))) {
        // The GEMM, the fold and their reshapes went with it.
      } else if (failed(rewriteRowsMajor(rewriter, m, panelBytes, minBlocks,
                                         amxRowAlign(m), tileN,
                                         streamedFilter(m)))) {
        continue;
      }
      // The whole-image copy and its reshape are dead now.
      if (m.rows->use_empty())
        rewriter.eraseOp(m.rows);
      if (m.copy->use_empty())
        rewriter.eraseOp(m.copy);
    }
  }
};

} // namespace
