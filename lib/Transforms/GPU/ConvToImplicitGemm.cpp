//===- ConvToImplicitGemm.cpp - the conv-lower-implicit-gemm pass ---------===//
//
// Every convolution in the module through rewriteToImplicitGemm
// (ImplicitGemm.cpp, which describes the kernel); this file is the policy
// around it: which failures are errors, which are remarks.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Common/ConvAnalysis.h"
#include "Transforms/Common/LiftTo2D.h"

#include "ConvLower/Transforms/GPU/ImplicitGemm.h"
#include "ConvLower/Transforms/GPU/Passes.h"

#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-implicit-gemm"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERIMPLICITGEMM
#include "ConvLower/Transforms/GPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

struct ConvLowerImplicitGemmPass
    : conv_lower::impl::ConvLowerImplicitGemmBase<ConvLowerImplicitGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Once for the module, before anything changes (and even without
    // convolutions): a chip the kernels cannot be compiled for is a mistake
    // in the command, not in a convolution.
    if (Refusal bad; failed(checkPtxFeatures(chip, features, bad))) {
      module.emitError() << "conv-lower-implicit-gemm: " << bad.reason;
      return signalPassFailure();
    }
    // The kernels take a convolution in its 2-D or 3-D form; lifting the
    // 1-D and batchless ones first makes them take every form the im2col
    // route takes (which runs conv-lower-lift-to-2d before it).
    IRRewriter rewriter(&getContext());
    liftConvolutionsTo2D(rewriter, module);
    SmallVector<linalg::LinalgOp> convs;
    module.walk([&](linalg::LinalgOp op) {
      if (looksLikeConvolution(op))
        convs.push_back(op);
    });
    ImplicitGemmOptions options = getRewriteOptions();
    for (linalg::LinalgOp op : convs) {
      ImplicitGemmFailure why;
      Location loc = op.getLoc();
      FailureOr<ImplicitGemmResult> result =
          rewriteToImplicitGemm(rewriter, op, options, &why);
      LLVM_DEBUG({
        llvm::dbgs() << "[" DEBUG_TYPE "] " << loc << ": ";
        if (failed(result))
          llvm::dbgs() << "left untouched: " << why.reason << "\n";
        else
          llvm::dbgs() << "the " << result->family << " kernel\n";
      });
      if (failed(result)) {
        if (failed(report(op, why)))
          return signalPassFailure();
        continue;
      }
      // chip=sm_90a: say which convolutions the Hopper kernels left to the
      // mma.sync family, and why.
      if (emitRemarks && !result->whyNotSm90a.empty())
        emitRemark(loc) << "conv-lower-implicit-gemm: sm_90a: the "
                        << stringifyKernelFamily(result->family)
                        << " kernel, not the TMA + wgmma one: "
                        << result->whyNotSm90a;
      if (emitRemarks && !result->whyGatheredSm90a.empty())
        emitRemark(loc) << "conv-lower-implicit-gemm: sm_90a: the TMA + "
                           "wgmma kernel, its A tiles gathered by the "
                           "producer warpgroup (not TMA im2col): "
                        << result->whyGatheredSm90a;
    }
  }

  ImplicitGemmOptions getRewriteOptions() const {
    ImplicitGemmOptions options;
    options.target = target;
    options.im2col = im2col;
    options.tiles = {blockM, blockN, warpsM, warpsN, stages};
    options.chip = chip;
    options.features = features;
    return options;
  }

  /// A convolution left alone: a remark, or an error when it must not be.
  LogicalResult report(linalg::LinalgOp op, const ImplicitGemmFailure &why) {
    switch (why.kind) {
    case ImplicitGemmFailure::Kind::UnsupportedConvolution:
      if (requireAll) {
        op.emitError() << "conv-lower-implicit-gemm: unsupported "
                          "convolution: "
                       << why.reason;
        return failure();
      }
      if (emitRemarks)
        op.emitRemark() << "conv-lower-implicit-gemm: left untouched: "
                        << why.reason;
      return success();
    case ImplicitGemmFailure::Kind::InvalidTiles:
      op.emitError() << "conv-lower-implicit-gemm: invalid tiles: "
                     << why.reason;
      return failure();
    case ImplicitGemmFailure::Kind::InvalidTarget:
      op.emitError() << "conv-lower-implicit-gemm: " << why.reason;
      return failure();
    }
    llvm_unreachable("unknown failure kind");
  }
};

} // namespace
