//===- PackBF16Pairs.cpp - bf16 GEMM operands in K pairs (VNNI layout) ----===//
//
// AVX512-BF16's VDPBF16PS multiplies 16 pairs of bf16 from one register by
// 16 pairs from another and adds each pair's two products into one f32 lane:
// 32 multiply-adds an instruction, twice an f32 FMA's. The pairs run along
// K, so both operands must hold K's consecutive elements side by side: the
// broadcast operand (A [M, K], row-major) already does, the streamed one
// (B [K, N], or the filter panels [P, K, nr]) does not. This pass rewrites a
// bf16 x bf16 -> f32 contraction with one static K into the same
// contraction over (k / 2, k % 2), every input read through its K split in
// two with the pair innermost: A as [.., m, k / 2, 2], the streamed B as
// [.., k / 2, n, 2] (n: the output's innermost dimension, the vector lanes).
// Where the split alone gives that order (A = X_col, K innermost) the input
// is only reshaped (tensor.expand_shape); otherwise (B [K, N], the filter
// panels, W [N, K]) it is reshaped and transposed once, where it is defined
// (outside the GEMM's loops: a constant filter's repack is then hoisted into
// the packing function). An odd K gets one zero more in both inputs.
// conv-lower-tile-and-vectorize keeps the pair whole in every tile, and
// conv-lower-bf16-dot-product turns the tiles into VDPBF16PS.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-pack-bf16-pairs"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPACKBF16PAIRS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// The output's innermost dimension (the register tile's vector lanes)
/// where exactly one input indexes it: that input is the streamed one.
std::optional<AffineExpr> vectorDim(linalg::LinalgOp op) {
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() == 0)
    return std::nullopt;
  AffineExpr n = out.getResults().back();
  int readers = llvm::count_if(op.getDpsInputOperands(), [&](OpOperand *in) {
    return llvm::is_contained(op.getMatchingIndexingMap(in).getResults(), n);
  });
  if (readers != 1)
    return std::nullopt;
  return n;
}

/// What packPairs needs of a contraction: its K loop and the output's
/// innermost dimension (the streamed operand's vector lanes).
struct PairedDims {
  unsigned k;
  AffineExpr n;
};

/// The K loop and vector dimension of `op` where it is a contraction this
/// pass rewrites: tensors,
/// two bf16 inputs into f32, one reduction loop of static extent (at least
/// 2; an odd one is padded with a zero to the next pair) that
/// each input indexes exactly once by itself, the output's innermost
/// dimension read by one input (vectorDim) and of a static extent that is a
/// multiple of 4, no linalg.index in the body.
std::optional<PairedDims> pairableReduction(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  auto elementOf = [](Value v) { return getElementTypeOrSelf(v.getType()); };
  if (!elementOf(op.getDpsInputOperand(0)->get()).isBF16() ||
      !elementOf(op.getDpsInputOperand(1)->get()).isBF16() ||
      !elementOf(op.getDpsInitOperand(0)->get()).isF32())
    return std::nullopt;
  if (!op.getBlock()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->k.size() != 1)
    return std::nullopt;
  unsigned k = dims->k.front();
  int64_t extent = op.getStaticLoopRanges()[k];
  if (ShapedType::isDynamic(extent) || extent < 2)
    return std::nullopt;
  AffineExpr kExpr = getAffineDimExpr(k, op.getContext());
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isProjectedPermutation() ||
        llvm::count(map.getResults(), kExpr) != 1)
      return std::nullopt;
  }
  // The register tiles' columns must come in whole dots (4, 8 or 16
  // lanes): vectorTile splits a static N into multiples of 16 and a
  // remainder, a multiple of 4 where N is.
  std::optional<AffineExpr> n = vectorDim(op);
  if (!n)
    return std::nullopt;
  int64_t columns =
      op.getStaticLoopRanges()[cast<AffineDimExpr>(*n).getPosition()];
  if (ShapedType::isDynamic(columns) || columns % 4)
    return std::nullopt;
  return PairedDims{k, *n};
}

/// The layout each input gets, as its results in order: every dimension
/// but K (and, for the streamed operand, the output's innermost dimension
/// n) in its own order, then K's pairs, then n for the streamed operand,
/// then the pair. The register tile broadcasts A's pair per row (A: [.., m,
/// k / 2, 2]) and loads L pairs of B's columns as one vector (B: [..,
/// k / 2, n, 2]). `kExpr` stands for K's pairs, `pair` for the pair.
SmallVector<AffineExpr> pairedResults(AffineMap map, AffineExpr kExpr,
                                      AffineExpr pair,
                                      std::optional<AffineExpr> n) {
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map.getResults())
    if (e != kExpr && e != n)
      results.push_back(e);
  results.push_back(kExpr);
  if (n)
    results.push_back(*n);
  results.push_back(pair);
  return results;
}

/// `input` with one zero after its last element along `dim` where that
/// extent is odd (the RGB stem's K = 3 * 7 * 7 = 147): the padded product
/// adds nothing, and the pairs come out whole. A copy of the input (the
/// filter's at packing time; the im2col rows' per block).
Value padToPairs(RewriterBase &rewriter, Location loc, Value input,
                 unsigned dim) {
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getDimSize(dim) % 2 == 0)
    return input;
  SmallVector<OpFoldResult> low(type.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> high = low;
  high[dim] = rewriter.getIndexAttr(1);
  SmallVector<int64_t> shape(type.getShape());
  ++shape[dim];
  Value zero = arith::ConstantOp::create(
      rewriter, loc, rewriter.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(rewriter, loc, type.clone(shape), input, low,
                               high, zero);
}

/// `input` (read through `map`) laid out as `target` (pairedResults): its K
/// dimension split into (K / 2, 2) by a reshape, then, where that is not
/// already the order, one transpose made where `input` is defined.
Value layOutPairs(RewriterBase &rewriter, Location loc, Value input,
                  AffineMap map, AffineExpr kExpr, AffineExpr pair,
                  ArrayRef<AffineExpr> target);

/// `input` laid out as `target` by laying out the tensor it is a slice of
/// (whole along K, unit strides, not rank-reducing) and slicing that: the
/// im2col panels' blocks slice the filter panels per block of filters inside
/// their scf.forall, where a repack of the slice would run on every call
/// (r50 512 7x7: 2.4 MB a block, 0.86 ms against 0.60 without it). Null
/// where `input` is no such slice.
Value layOutSliceSource(RewriterBase &rewriter, Location loc, Value input,
                        AffineMap map, AffineExpr kExpr, AffineExpr pair,
                        ArrayRef<AffineExpr> target) {
  auto slice = input.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getSourceType().getRank() != slice.getType().getRank() ||
      !slice.hasUnitStride())
    return nullptr;
  unsigned k = *map.getResultPosition(kExpr);
  if (!isZeroInteger(slice.getMixedOffsets()[k]) ||
      slice.getSourceType().isDynamicDim(k) ||
      getConstantIntValue(slice.getMixedSizes()[k]) !=
          slice.getSourceType().getDimSize(k))
    return nullptr;
  Value packed = layOutPairs(rewriter, loc, slice.getSource(), map, kExpr,
                             pair, target);
  auto packedType = cast<RankedTensorType>(packed.getType());
  SmallVector<OpFoldResult> offsets, sizes;
  for (auto [at, e] : llvm::enumerate(target)) {
    if (e == kExpr || e == pair) {
      offsets.push_back(rewriter.getIndexAttr(0));
      sizes.push_back(rewriter.getIndexAttr(packedType.getDimSize(at)));
      continue;
    }
    unsigned d = *map.getResultPosition(e);
    offsets.push_back(slice.getMixedOffsets()[d]);
    sizes.push_back(slice.getMixedSizes()[d]);
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(slice);
  return tensor::ExtractSliceOp::create(
      rewriter, loc, packed, offsets, sizes,
      SmallVector<OpFoldResult>(target.size(), rewriter.getIndexAttr(1)));
}

Value layOutPairs(RewriterBase &rewriter, Location loc, Value input,
                  AffineMap map, AffineExpr kExpr, AffineExpr pair,
                  ArrayRef<AffineExpr> target) {
  if (Value sliced =
          layOutSliceSource(rewriter, loc, input, map, kExpr, pair, target))
    return sliced;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfterValue(input);
  input = padToPairs(rewriter, loc, input, *map.getResultPosition(kExpr));
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape;
  SmallVector<ReassociationIndices> groups;
  SmallVector<AffineExpr> expandedOrder;
  for (auto [d, e] : llvm::enumerate(map.getResults())) {
    int64_t at = shape.size();
    if (e == kExpr) {
      groups.push_back({at, at + 1});
      shape.append({type.getDimSize(d) / 2, 2});
      expandedOrder.append({kExpr, pair});
      continue;
    }
    groups.push_back({at});
    shape.push_back(type.getDimSize(d));
    expandedOrder.push_back(e);
  }
  Value expanded = tensor::ExpandShapeOp::create(
      rewriter, loc, type.clone(shape), input, groups);
  SmallVector<int64_t> perm, packedShape;
  for (AffineExpr e : target) {
    int64_t from = llvm::find(expandedOrder, e) - expandedOrder.begin();
    perm.push_back(from);
    packedShape.push_back(shape[from]);
  }
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return expanded;
  Value empty = tensor::EmptyOp::create(rewriter, loc, packedShape,
                                        type.getElementType());
  return linalg::TransposeOp::create(rewriter, loc, expanded, empty, perm)
      .getResult()[0];
}

/// Rewrites `op` over (k / 2, k % 2); the new loop (the pair) is the last.
void packPairs(RewriterBase &rewriter, linalg::LinalgOp op, unsigned k,
               AffineExpr n) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  unsigned loops = op.getNumLoops();
  AffineExpr kExpr = getAffineDimExpr(k, ctx);
  AffineExpr pair = getAffineDimExpr(loops, ctx);

  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    std::optional<AffineExpr> streamed;
    if (llvm::is_contained(map.getResults(), n))
      streamed = n;
    // K's result now counts pairs; the pair's index comes last.
    SmallVector<AffineExpr> target = pairedResults(map, kExpr, pair, streamed);
    inputs.push_back(
        layOutPairs(rewriter, loc, input->get(), map, kExpr, pair, target));
    maps.push_back(AffineMap::get(loops + 1, 0, target, ctx));
  }
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  maps.push_back(AffineMap::get(loops + 1, 0, outMap.getResults(), ctx));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::reduction);

  rewriter.setInsertionPoint(op);
  auto packed = linalg::GenericOp::create(
      rewriter, loc, op->getResultTypes(), inputs,
      ValueRange{op.getDpsInitOperand(0)->get()}, maps, iterators);
  // The body (multiply the two, add into the accumulator) is unchanged.
  rewriter.cloneRegionBefore(op->getRegion(0), packed.getRegion(),
                             packed.getRegion().end());
  rewriter.replaceOp(op, packed->getResults());
}

struct ConvLowerPackBF16PairsPass
    : conv_lower::impl::ConvLowerPackBF16PairsBase<ConvLowerPackBF16PairsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<std::pair<linalg::LinalgOp, PairedDims>> contractions;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (std::optional<PairedDims> dims = pairableReduction(op))
        contractions.emplace_back(op, *dims);
    });
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << contractions.size()
                            << " bf16 contractions in K pairs\n");
    for (auto [op, dims] : contractions) {
      // Named contractions (linalg.matmul) become generics first (the same
      // loops): only a generic takes the extra loop.
      if (!isa<linalg::GenericOp>(op.getOperation())) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> generic =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generic))
          continue;
        op = *generic;
      }
      packPairs(rewriter, op, dims.k, dims.n);
    }
  }
};

} // namespace
