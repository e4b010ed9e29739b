//===- DirectConvUtils.h - shared steps of the direct CPU routes -*- C++ -*-===//
//
// The direct routes (conv-lower-depthwise-direct, conv-lower-grouped-direct)
// find their convolutions the same way, make their tiles 1-D convolutions
// and vectorize them the same way, and put their result back the same way.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_CPU_DIRECTCONVUTILS_H
#define CONVLOWER_TRANSFORMS_CPU_DIRECTCONVUTILS_H

#include "Transforms/Common/ConvAnalysis.h"
#include "Transforms/CPU/TilingUtils.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/Debug.h"

namespace mlir::conv_lower {

/// The plans of the convolutions under `root` that `takes` accepts, in
/// walk order; with -debug-only=`debugType`, a line for each convolution
/// saying whether it was taken (`what`) and, if not, why.
inline SmallVector<ConvPlan, 2>
collectPlans(Operation *root, llvm::function_ref<bool(const ConvPlan &)> takes,
             const char *debugType, llvm::StringRef what) {
  SmallVector<ConvPlan, 2> plans;
  root->walk([&](linalg::LinalgOp op) {
    if (!looksLikeConvolution(op))
      return;
    std::string whyNot;
    FailureOr<ConvPlan> plan = analyzeConv(op, whyNot);
    bool taken = succeeded(plan) && takes(*plan);
    DEBUG_WITH_TYPE(debugType, {
      llvm::dbgs() << "[" << debugType << "] " << op->getName() << " at "
                   << op.getLoc() << ": ";
      if (taken)
        llvm::dbgs() << what;
      else if (failed(plan))
        llvm::dbgs() << "left alone: " << whyNot;
      else
        llvm::dbgs() << "left alone: not a " << what << " form";
      llvm::dbgs() << "\n";
    });
    if (taken)
      plans.push_back(*plan);
  });
  return plans;
}

/// Replaces `plan.op` by `image` ([N, C, Ho, Wo] or [N, Ho, Wo, C], its
/// layout's) expanded back to the op's result, and erases the pad and
/// expand the plan absorbed once nothing else reads them.
inline void replaceWithImage(RewriterBase &rewriter, ConvPlan &plan,
                             Value image) {
  const ConvForm &form = *plan.form;
  if (!form.outputToImage.empty())
    image = tensor::ExpandShapeOp::create(
        rewriter, plan.op.getLoc(), plan.op->getResult(0).getType(), image,
        form.outputToImage);
  rewriter.replaceOp(plan.op, image);
  if (plan.absorbedExpand && plan.absorbedExpand->use_empty())
    rewriter.eraseOp(plan.absorbedExpand);
  if (plan.absorbedPad && plan.absorbedPad->use_empty())
    rewriter.eraseOp(plan.absorbedPad);
}

/// `tile`, a 2-D convolution of one output row and one kernel row inside an
/// scf.forall, as the 1-D convolution upstream's `Downscale` pattern makes
/// of it (a `Conv1D`), vectorized by `linalg::vectorize`.
template <typename Downscale, typename Conv1D>
inline LogicalResult downscaleAndVectorize(RewriterBase &rewriter,
                                    linalg::LinalgOp tile) {
  Operation *loop = tile->getParentOfType<scf::ForallOp>();
  RewritePatternSet patterns(rewriter.getContext());
  patterns.add<Downscale>(rewriter.getContext());
  if (failed(applyOpPatternsGreedily({tile.getOperation()},
                                     std::move(patterns))))
    return failure();
  SmallVector<Conv1D> convs;
  loop->walk([&](Conv1D op) { convs.push_back(op); });
  for (Conv1D conv1d : convs)
    vectorizeOrKeep(rewriter, conv1d);
  return success();
}

} // namespace mlir::conv_lower

#endif
