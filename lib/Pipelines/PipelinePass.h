//===- PipelinePass.h - a named pipeline as a pass --------------*- C++ -*-===//
//
// The named pipelines are declared as passes (Pipelines.td says why). Such a
// pass builds its pipeline from its options and runs it on the module as a
// dynamic pipeline; its dependent dialects are those of the passes it runs.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_PIPELINES_PIPELINEPASS_H
#define CONVLOWER_PIPELINES_PIPELINEPASS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::conv_lower {

/// `Derived` provides `Options getPipelineOptions() const` (its generated
/// option members copied into the generated options struct); `build` is
/// the public builder C++ callers use on their own pass managers.
template <typename Derived, typename GeneratedBase, typename Options,
          void (*build)(OpPassManager &, const Options &)>
struct PipelinePass : GeneratedBase {
  using GeneratedBase::GeneratedBase;

  /// Anchored and nested as mlir-opt's pass manager is when it expands a
  /// registered pipeline, so the passes run exactly as they did then.
  OpPassManager buildPipeline() const {
    OpPassManager pm(ModuleOp::getOperationName(),
                     OpPassManager::Nesting::Implicit);
    build(pm, static_cast<const Derived *>(this)->getPipelineOptions());
    return pm;
  }

  void getDependentDialects(DialectRegistry &registry) const override {
    buildPipeline().getDependentDialects(registry);
  }

  void runOnOperation() override {
    OpPassManager pipeline = buildPipeline();
    if (failed(this->runPipeline(pipeline, this->getOperation())))
      this->signalPassFailure();
  }
};

} // namespace mlir::conv_lower

#endif // CONVLOWER_PIPELINES_PIPELINEPASS_H
