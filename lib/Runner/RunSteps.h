//===- RunSteps.h - the steps of run(), shared by its files -----*- C++ -*-===//
//
// Private to lib/Runner: preparing the problem and its data (RunInputs.cpp),
// the CPU routes (CpuRoute.cpp) and the CUDA route (CudaRoute.cpp), which
// Run.cpp strings together along the route plan (RoutePlan.h) and
// CompiledConv.cpp and Bundle.cpp reuse.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_LIB_RUNNER_RUNSTEPS_H
#define CONVLOWER_LIB_RUNNER_RUNSTEPS_H

#include "RoutePlan.h"

#include "ConvLower/Runner/ConvModule.h"
#include "ConvLower/Runner/CpuRunner.h"
#include "ConvLower/Runner/Device.h"
#include "ConvLower/Runner/GpuKernel.h"
#include "ConvLower/Runner/Run.h"
#include "ConvLower/Runner/RunErrors.h"
#include "ConvLower/Runner/Tensor.h"

#include "convrt/Driver.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <memory>

namespace mlir::conv_lower::runner {

/// The data of one run: host tensors in, the output's spec.
struct RunData {
  std::vector<HostTensor> inputs; // input, filter[, bias][, residual]
  std::vector<BufferSpec> inputSpecs;
  BufferSpec outputSpec;
  /// The shape --output writes: outputSpec's, or torch's rank-3 one for a
  /// conv1d given by flags.
  llvm::SmallVector<int64_t> npyOutputShape;
  int64_t outputElements = 0;
  DType outputDType = DType::F32;
};

/// The module, function and data of a run, from flags or a file.
struct Prepared {
  OwningOpRef<ModuleOp> module;
  std::string function;
  RunData data;
  std::optional<ConvProblem> problem; // flags only
  /// The epilogue the module applies after the bias (flags only).
  ConvEpilogue epilogue;
  /// The residual among data.inputs, when the epilogue adds one.
  const HostTensor *residual() const {
    return epilogue.residual ? &data.inputs.back() : nullptr;
  }
};
/// Errors are bad input.
llvm::Expected<Prepared> prepare(MLIRContext &context,
                                 const RunOptions &options);

/// Compiles `module` (a clone) on the CPU with `pipeline`, runs it warmup +
/// repeat times on `data`: the median and the output (f32, or i32 exactly:
/// kept as doubles).
struct Execution {
  double compileMs = 0, medianMs = 0;
  std::string diskCache; ///< CpuRunner::diskCache()
  /// With constant weights: the packing call's time and bytes.
  std::optional<double> packMs;
  int64_t packedBytes = 0;
  std::vector<double> output;
};
llvm::Expected<Execution> compileAndRun(ModuleOp module, llvm::StringRef func,
                                        const RunData &data,
                                        const ConvLowerToLLVMOptions &pipeline,
                                        int warmup, int repeat);

/// The chip to compile for: `chip`, else the first device's, else sm_80.
llvm::Expected<convrt::Arch> chooseChip(std::optional<convrt::Arch> chip,
                                        const std::vector<DeviceInfo> &devices);

/// conv-lower-to-nvvm for `arch` (every conv required); a conv the kernel
/// does not take is bad input, named.
llvm::Expected<GpuKernelBuild> compileKernelFor(ModuleOp module,
                                                llvm::StringRef function,
                                                const ConvProblem &problem,
                                                convrt::Arch arch);

/// The CUDA route up to running, for run() and CompiledConv alike: the chip
/// (`chip`, else the first device's), the kernel compiled for it, the
/// report's kernel fields (chip, family, tiles, compile time) and the
/// driver that will load it.
struct CudaKernel {
  GpuKernelBuild build;
  std::shared_ptr<convrt::Driver> driver;
};
llvm::Expected<CudaKernel>
compileCudaKernel(ModuleOp module, llvm::StringRef function,
                  const ConvProblem &problem, std::optional<convrt::Arch> chip,
                  const std::function<void(llvm::StringRef)> &progress,
                  RunReport &report);

/// --target cuda: compiles the kernel, runs, times and checks it through
/// runtime/ next to cuDNN; fills `report`.
llvm::Error runOnCuda(ModuleOp module, llvm::StringRef function,
                      const ConvProblem &problem, const RunOptions &options,
                      RunReport &report);

} // namespace mlir::conv_lower::runner

#endif
