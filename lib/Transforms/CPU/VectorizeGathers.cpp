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

/// The loop along which a static copy (every loop parallel, its body
/// yields the input element, its output map a permutation) runs contiguous
/// in both operands: the output's innermost index, where the input's
/// innermost index is it plus other loops' terms and no other input index
/// uses it. None otherwise.
std::optional<unsigned> contiguousRunLoop(linalg::GenericOp op) {
  if (!isPlainCopy(op) || !op.hasPureBufferSemantics() ||
      op.hasDynamicShape() || op.getNumLoops() < 2)
    return std::nullopt;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap input = maps[0], output = maps[1];
  if (!output.isPermutation() || input.getNumResults() == 0)
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

/// One run: a vector of the run's length read from the innermost dimension
/// of the tile's input and written to the innermost of its output (every
/// other dimension of both is 1 in the tile).
void copyRunAsVector(RewriterBase &rewriter, linalg::GenericOp tile,
                     int64_t length) {
  Location loc = tile.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Value source = tile.getDpsInputs()[0], dest = tile.getDpsInits()[0];
  auto sourceType = cast<MemRefType>(source.getType());
  auto destType = cast<MemRefType>(dest.getType());
  rewriter.setInsertionPoint(tile);
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
    getOperation()->walk([&](linalg::GenericOp op) {
      if (std::optional<unsigned> loop = contiguousRunLoop(op))
        copies.push_back({op, *loop});
    });
    IRRewriter rewriter(&getContext());
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << copies.size()
                            << " copies with a contiguous run\n");
    for (auto [copy, loop] : copies)
      vectorizeRuns(rewriter, copy, loop, run);
  }
};

} // namespace
