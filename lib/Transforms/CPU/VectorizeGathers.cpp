//===- VectorizeGathers.cpp - im2col copies in vector runs ----------------===//
//
// The im2col copies (a block's panel, or the whole X_col) are linalg.generic
// ops whose input map adds output and window indices (oh + kh): not a
// projected permutation, so linalg's vectorizer rejects them, and LLVM,
// which optimizes the JIT's IR without a target machine, leaves the loops
// they lower to one element per load and store. On r50's 64-channel 3x3
// layer at N = 1 (NHWC) the panel gathers took a third of the convolution
// (1.47 ms against 1.07 for the same GEMM as a 1x1 layer).
//
// Where the output's innermost index steps the input's innermost one by one
// element too (c, g * C + c, ow + kw), each run along that loop is
// contiguous on both sides: the copy is tiled by 1 along every other loop
// and by a run of at most `run` elements along that one, and each tile
// becomes one transfer_read and one transfer_write of the run. NHWC's runs
// are channels, channels-first panels' runs are output rows (stride 1 only:
// a strided row is not contiguous and stays scalar). It runs on buffers: on
// tensors, a vector read of a slice written whole into another folds back
// into a slice copy.
//
//===----------------------------------------------------------------------===//

#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-vectorize-gathers"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERVECTORIZEGATHERS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// Whether `expr` is `dim` plus terms of other dimensions (`oh + kh`, or a
/// group's `g * C + c`): unit steps along `dim` are unit steps in memory.
bool isDimPlusOthers(AffineExpr expr, AffineExpr dim) {
  if (expr == dim)
    return true;
  auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!sum || sum.getKind() != AffineExprKind::Add)
    return false;
  auto other = [&](AffineExpr e) {
    return !e.isFunctionOfDim(cast<AffineDimExpr>(dim).getPosition());
  };
  return (isDimPlusOthers(sum.getLHS(), dim) && other(sum.getRHS())) ||
         (isDimPlusOthers(sum.getRHS(), dim) && other(sum.getLHS()));
}

/// A static copy on buffers of two loops or more (every loop parallel, its
/// body yields the input element) whose output map is a permutation: what
/// both run analyses below take.
bool isStaticPermutedCopy(linalg::GenericOp op) {
  return isPlainCopy(op) && op.hasPureBufferSemantics() &&
         !op.hasDynamicShape() && op.getNumLoops() >= 2 &&
         op.getIndexingMapsArray()[1].isPermutation();
}

/// The loop along which a static permuted copy runs contiguous in both
/// operands: the output's innermost index, where the input's innermost
/// index is it plus other loops' terms and no other input index uses it.
/// None otherwise.
std::optional<unsigned> contiguousRunLoop(linalg::GenericOp op) {
  if (!isStaticPermutedCopy(op))
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap input = maps[0], output = maps[1];
  if (input.getNumResults() == 0)
    return std::nullopt;
  AffineExpr inner = output.getResults().back();
  unsigned loop = cast<AffineDimExpr>(inner).getPosition();
  if (!isDimPlusOthers(input.getResults().back(), inner))
    return std::nullopt;
  for (AffineExpr result : input.getResults().drop_back())
    if (result.isFunctionOfDim(loop))
      return std::nullopt;
  return loop;
}

/// Two loops (kw, c) whose runs together are contiguous: `length` = KW * C.
struct PairRun {
  unsigned outer, inner;
  int64_t length;
};

/// Whether `type`'s last two dimensions are packed: strides [size, 1].
bool hasPackedInnerPair(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (type.getRank() < 2 || failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return strides.back() == 1 &&
         strides[strides.size() - 2] == type.getShape().back();
}

/// The two innermost loops of a channels-last copy that run contiguous
/// together in both operands: the output's last two indices (kw, c), where
/// the input's last index is c over the whole channel dimension and the one
/// before it is kw plus other loops' terms (ow * s + kw), no other input
/// index using either, and both operands' last two dimensions packed
/// (strides [C, 1]). A 3-channel image's kernel row is then one run of
/// KW * C elements (the RGB stem's 9 or 21) where each channel run had 3,
/// too short for a vector.
std::optional<PairRun> contiguousPairRun(linalg::GenericOp op) {
  if (!isStaticPermutedCopy(op))
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap input = maps[0], output = maps[1];
  if (input.getNumResults() < 2)
    return std::nullopt;
  ArrayRef<AffineExpr> out = output.getResults(), in = input.getResults();
  AffineExpr inner = out.back(), outer = out[out.size() - 2];
  auto position = [](AffineExpr e) {
    return cast<AffineDimExpr>(e).getPosition();
  };
  // (c plus other terms over a dimension of exactly C elements: the others
  // are 0 wherever the copy is in bounds, a single group's g * C.)
  if (!isDimPlusOthers(in.back(), inner) ||
      !isDimPlusOthers(in[in.size() - 2], outer))
    return std::nullopt;
  for (AffineExpr result : in.drop_back(2))
    if (result.isFunctionOfDim(position(inner)) ||
        result.isFunctionOfDim(position(outer)))
      return std::nullopt;
  if (in.back().isFunctionOfDim(position(outer)))
    return std::nullopt;
  auto source = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto dest = cast<MemRefType>(op.getDpsInits()[0].getType());
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (source.getShape().back() != ranges[position(inner)] ||
      !hasPackedInnerPair(source) || !hasPackedInnerPair(dest))
    return std::nullopt;
  return PairRun{position(outer), position(inner),
                 ranges[position(outer)] * ranges[position(inner)]};
}

/// One run: a vector of the run's length read from the innermost dimension
/// of the tile's input and written to the innermost of its output (every
/// other dimension of both is 1 in the tile).
void copyRunAsVector(RewriterBase &rewriter, linalg::GenericOp tile,
                     int64_t length) {
  Location loc = tile.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Value source = tile.getDpsInputs()[0], dest = tile.getDpsInits()[0];
  rewriter.setInsertionPoint(tile);
  // A pair run's tile: its two innermost dimensions collapsed into one.
  auto collapseInnerPair = [&](Value v) {
    auto type = cast<MemRefType>(v.getType());
    if (type.getShape().back() == length)
      return v;
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d + 2 < type.getRank(); ++d)
      groups.push_back({d});
    groups.push_back({type.getRank() - 2, type.getRank() - 1});
    return Value(memref::CollapseShapeOp::create(rewriter, loc, v, groups));
  };
  source = collapseInnerPair(source);
  dest = collapseInnerPair(dest);
  auto sourceType = cast<MemRefType>(source.getType());
  auto destType = cast<MemRefType>(dest.getType());
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  auto vectorType = VectorType::get({length}, sourceType.getElementType());
  SmallVector<bool> inBounds = {true};
  Value run = vector::TransferReadOp::create(
      rewriter, loc, vectorType, source,
      SmallVector<Value>(sourceType.getRank(), zero), std::nullopt,
      AffineMap::getMinorIdentityMap(sourceType.getRank(), 1, ctx), inBounds);
  vector::TransferWriteOp::create(
      rewriter, loc, run, dest, SmallVector<Value>(destType.getRank(), zero),
      AffineMap::getMinorIdentityMap(destType.getRank(), 1, ctx), inBounds);
  rewriter.eraseOp(tile);
}

/// Tiles `copy` into 1-D runs of `run` elements at most (dividing the run
/// loop's extent) and copies each as one vector. Runs shorter than 4
/// elements (a 3-channel first layer) are left to the scalar loops.
void vectorizeRuns(RewriterBase &rewriter, linalg::GenericOp copy,
                   unsigned loop, int64_t run) {
  SmallVector<int64_t> ranges = copy.getStaticLoopRanges();
  int64_t tile = largestDividingTile(ranges[loop], run);
  if (tile < 4)
    return;
  SmallVector<int64_t> sizes(ranges.size(), 1);
  sizes[loop] = tile;
  FailureOr<linalg::LinalgOp> tiled = tileInPlace(rewriter, copy, sizes);
  if (failed(tiled))
    return;
  copyRunAsVector(rewriter, cast<linalg::GenericOp>(tiled->getOperation()),
                  tile);
}

/// Tiles `copy` by 1 along every loop but the pair's, whole along those,
/// and copies each tile's KW * C elements as one vector.
void vectorizePairRuns(RewriterBase &rewriter, linalg::GenericOp copy,
                       PairRun pair) {
  SmallVector<int64_t> ranges = copy.getStaticLoopRanges();
  SmallVector<int64_t> sizes(ranges.size(), 1);
  sizes[pair.outer] = ranges[pair.outer];
  sizes[pair.inner] = ranges[pair.inner];
  FailureOr<linalg::LinalgOp> tiled = tileInPlace(rewriter, copy, sizes);
  if (failed(tiled))
    return;
  copyRunAsVector(rewriter, cast<linalg::GenericOp>(tiled->getOperation()),
                  pair.length);
}

struct ConvLowerVectorizeGathersPass
    : conv_lower::impl::ConvLowerVectorizeGathersBase<
          ConvLowerVectorizeGathersPass> {
  using Base::Base;
  void runOnOperation() override {
    if (run < 1) {
      getOperation()->emitError()
          << "conv-lower-vectorize-gathers: the run must be positive";
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::GenericOp, unsigned>> copies;
    SmallVector<std::pair<linalg::GenericOp, PairRun>> pairCopies;
    getOperation()->walk([&](linalg::GenericOp op) {
      // Channel runs too short for a vector (C < 4) but whole kernel rows
      // that fit one: the kernel row's run instead.
      std::optional<PairRun> pair = contiguousPairRun(op);
      if (pair && op.getStaticLoopRanges()[pair->inner] < 4 &&
          pair->length <= run)
        pairCopies.push_back({op, *pair});
      else if (std::optional<unsigned> loop = contiguousRunLoop(op))
        copies.push_back({op, *loop});
    });
    IRRewriter rewriter(&getContext());
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << copies.size()
                            << " copies with a contiguous run, "
                            << pairCopies.size() << " with kernel-row runs\n");
    for (auto [copy, loop] : copies)
      vectorizeRuns(rewriter, copy, loop, run);
    for (auto [copy, pair] : pairCopies)
      vectorizePairRuns(rewriter, copy, pair);
  }
};

} // namespace
