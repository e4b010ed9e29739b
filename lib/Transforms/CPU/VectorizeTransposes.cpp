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

#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>
#include <optional>

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-vectorize-transposes"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERVECTORIZETRANSPOSES
#include "ConvLower/Transforms/CPU/Passes.h.inc"
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
  // Inside a parallel loop's block (conv-lower-im2col-panels' grouped
  // blocks transposing their result into the image), never another one.
  if (bytes < kThreadedTransposeBytes || op->getParentOfType<scf::ForallOp>())
    return std::nullopt;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) > tiles[d])
      return d;
  return std::nullopt;
}

/// A transpose that moves runs of dimensions together (NCHW -> NHWC moves
/// (H, W) as one) becomes the transpose of the collapsed tensors, [N, C, H*W]
/// -> [N, H*W, C], reshaped back: its tiles can be whole 16-lane vectors
/// where H*W divides into them and W alone does not (56x56 = 196 x 16, where
/// 56 gave 14-wide tiles, and 14x14 = 196 where 14 did). Only for an input
/// that is contiguous (not a slice), so the collapse is a view.
linalg::TransposeOp collapseMovedRuns(RewriterBase &rewriter,
                                      linalg::TransposeOp op) {
  ArrayRef<int64_t> perm = op.getPermutation();
  int64_t rank = perm.size();
  // Runs of output dimensions that are consecutive input dimensions too.
  SmallVector<ReassociationIndices> outGroups;
  for (int64_t d = 0; d < rank; ++d) {
    if (d > 0 && perm[d] == perm[d - 1] + 1)
      outGroups.back().push_back(d);
    else
      outGroups.push_back({d});
  }
  if (static_cast<int64_t>(outGroups.size()) == rank ||
      op.getInput().getDefiningOp<tensor::ExtractSliceOp>())
    return op;
  // The same runs in the input's order; the permutation between them.
  SmallVector<int64_t> byInputDim(outGroups.size());
  std::iota(byInputDim.begin(), byInputDim.end(), 0);
  llvm::sort(byInputDim, [&](int64_t a, int64_t b) {
    return perm[outGroups[a].front()] < perm[outGroups[b].front()];
  });
  SmallVector<ReassociationIndices> inGroups;
  SmallVector<int64_t> collapsedPerm(outGroups.size());
  for (auto [position, group] : llvm::enumerate(byInputDim)) {
    ReassociationIndices dims;
    for (int64_t d : outGroups[group])
      dims.push_back(perm[d]);
    inGroups.push_back(dims);
    collapsedPerm[group] = position;
  }
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value input = tensor::CollapseShapeOp::create(rewriter, loc, op.getInput(),
                                                inGroups);
  Value init = tensor::CollapseShapeOp::create(rewriter, loc, op.getInit(),
                                               outGroups);
  auto collapsed = linalg::TransposeOp::create(rewriter, loc, input, init,
                                               collapsedPerm);
  Value result = tensor::ExpandShapeOp::create(
      rewriter, loc, op.getInit().getType(), collapsed.getResult()[0],
      outGroups);
  rewriter.replaceOp(op, result);
  return collapsed;
}

LogicalResult vectorizeTranspose(RewriterBase &rewriter, linalg::TransposeOp op,
                                 int64_t tile) {
  op = collapseMovedRuns(rewriter, op);
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
      else
        LLVM_DEBUG(llvm::dbgs()
                   << "[" DEBUG_TYPE "] "
                   << "left as loops (dynamic, on buffers or bf16): "
                   << op.getLoc() << "\n");
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
