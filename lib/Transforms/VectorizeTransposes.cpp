//===- VectorizeTransposes.cpp - transposes in vector tiles ---------------===//
//
// linalg.transpose ops lowered to loops read or write with a large stride
// on every element: pack-rhs's transpose of a 512x4608 filter (9.4 MB, on
// every call) and the channels-first depthwise layers' image transposes
// were a large part of those layers' time. Each static transpose is tiled
// here into square tiles of the two dimensions it exchanges (the output's
// innermost and the one the input's innermost becomes), every other one by
// 1, and each tile vectorized: contiguous vector reads of the input's rows,
// a vector.transpose (lowered to shuffles) and contiguous writes. Large
// ones spread an outer dimension over the threads (an scf.forall) first.
//
//===----------------------------------------------------------------------===//

#include "TilingUtils.h"

#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <optional>

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERVECTORIZETRANSPOSES
#include "ConvLower/Transforms/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// Tile sizes over the output's dimensions: `tile` (dividing) for the
/// output's innermost and for the dimension that the input's innermost
/// becomes, 1 for the others. A transpose that keeps the innermost
/// dimension in place tiles it alone (a strided copy of contiguous rows).
SmallVector<int64_t> transposeTiles(linalg::TransposeOp op, int64_t tile) {
  ArrayRef<int64_t> perm = op.getPermutation();
  ArrayRef<int64_t> shape = op.getInit().getType().getShape();
  int64_t rank = perm.size();
  SmallVector<int64_t> sizes(rank, 1);
  int64_t fromInputInner = llvm::find(perm, rank - 1) - perm.begin();
  sizes[rank - 1] = largestDividingTile(shape[rank - 1], tile);
  sizes[fromInputInner] = largestDividingTile(shape[fromInputInner], tile);
  return sizes;
}

/// Below this many bytes a transpose stays on one thread: the fork and join
/// of a parallel loop would cost about what the copy does.
constexpr int64_t kThreadedTransposeBytes = 256 * 1024;

/// The output dimension whose tiles the threads share (an scf.forall): the
/// outermost that holds more than one of its tiles; none for a small
/// transpose.
std::optional<int64_t> threadedDim(linalg::TransposeOp op,
                                   ArrayRef<int64_t> tiles) {
  auto type = op.getInit().getType();
  int64_t bytes =
      type.getNumElements() * type.getElementTypeBitWidth() / 8;
  if (bytes < kThreadedTransposeBytes)
    return std::nullopt;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) > tiles[d])
      return d;
  return std::nullopt;
}

LogicalResult vectorizeTranspose(RewriterBase &rewriter, linalg::TransposeOp op,
                                 int64_t tile) {
  SmallVector<int64_t> tiles = transposeTiles(op, tile);
  // Large transposes (a channels-first depthwise layer's image and output,
  // 1.8 MB each on MobileNetV2's 144-channel layer; a filter packed per
  // call) were serial: their rows go to the threads first.
  linalg::LinalgOp target = op;
  if (std::optional<int64_t> dim = threadedDim(op, tiles)) {
    SmallVector<int64_t> perThread(tiles.size(), 0);
    perThread[*dim] = tiles[*dim];
    FailureOr<linalg::LinalgOp> split = tileInPlace(
        rewriter, op, perThread, scf::SCFTilingOptions::LoopType::ForallOp);
    if (succeeded(split))
      target = *split;
  }
  FailureOr<linalg::LinalgOp> tiled = tileInPlace(rewriter, target, tiles);
  if (failed(tiled))
    return failure();
  vectorizeOrKeep(rewriter, *tiled);
  return success();
}

struct ConvLowerVectorizeTransposesPass
    : conv_lower::impl::ConvLowerVectorizeTransposesBase<
          ConvLowerVectorizeTransposesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (tile < 1) {
      getOperation()->emitError()
          << "conv-lower-vectorize-transposes: the tile must be positive";
      return signalPassFailure();
    }
    SmallVector<linalg::TransposeOp> transposes;
    getOperation()->walk([&](linalg::TransposeOp op) {
      // Not bf16: LLVM's x86 backend cannot soft-promote the shuffles of
      // bf16 vectors on a host without AVX512-BF16 ("Do not know how to
      // soft promote this operator's operand"): those stay loops.
      if (op.hasPureTensorSemantics() && !op.hasDynamicShape() &&
          !op.getInit().getType().getElementType().isBF16())
        transposes.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::TransposeOp op : transposes)
      (void)vectorizeTranspose(rewriter, op, tile);
    // The vectorizer reads a tile through a transposing permutation map,
    // which the transfer lowering would turn into one strided element load
    // per lane: a row-major read and a vector.transpose instead.
    RewritePatternSet patterns(&getContext());
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
