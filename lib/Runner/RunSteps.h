//===- RunSteps.h - the steps of run(), shared by its files -----*- C++ -*-===//
//
// Private to lib/Runner: preparing the problem and its data (RunInputs.cpp),
// the CPU routes (CpuRoute.cpp) and the CUDA route and bundles
// (CudaRoute.cpp), which Run.cpp strings together.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_LIB_RUNNER_RUNSTEPS_H
#define CONVLOWER_LIB_RUNNER_RUNSTEPS_H

#include "ConvLower/Runner/CpuRunner.h"
#include "ConvLower/Runner/Device.h"
#include "ConvLower/Runner/GpuKernel.h"
#include "ConvLower/Runner/Run.h"
#include "ConvLower/Runner/Tensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::conv_lower::runner {

llvm::Error badInput(const llvm::Twine &message);
llvm::Error failed(const llvm::Twine &message);
/// `error`, marked as bad input (or as a failure) unless it is a RunError.
llvm::Error asBadInput(llvm::Error error);
llvm::Error asFailure(llvm::Error error);

/// The data of one run: host tensors in, the output's spec.
struct RunData {
  std::vector<HostTensor> inputs; // input, filter[, bias]
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
};
/// Errors are bad input.
llvm::Expected<Prepared> prepare(MLIRContext &context,
                                 const RunOptions &options);

/// How the CPU compiles the convolution.
/// Im2colPanels: X_col per block of output rows inside the GEMM's parallel
/// loop (conv-lower-im2col-panels); Im2col: X_col whole, then the GEMM.
enum class CpuRoute { Im2colPanels, Im2col, Direct, Twin, TwinExplicit };
/// The target a request resolves to (never Auto) and why, in `report`
/// (with the device section, from `status` where probed: cuda and auto need
/// it). `routeProblem` says why the GPU route cannot take the problem ("" if
/// it can); `flag` spells the option in messages ("--target" for conv-run).
llvm::Expected<Target> resolveTarget(Target requested,
                                     const DeviceStatus *status,
                                     llvm::StringRef routeProblem,
                                     llvm::StringRef flag, RunReport &report);

/// The CPU route of a target (cpu or cpu-twin) and im2col choice.
CpuRoute cpuRoute(Target target, bool implicit);
/// The pipeline, as the report names it, and its options for a route.
llvm::StringRef pipelineName(CpuRoute route);
ConvLowerToLLVMOptions pipelineOptions(const RunOptions &options,
                                       CpuRoute route);
/// Whether `pipeline` computes a convolution of `function` by Winograd:
/// the pass's own cost rule, asked of it on a copy of `module`.
bool takesWinograd(ModuleOp module, llvm::StringRef function,
                   const ConvLowerToLLVMOptions &pipeline);
/// How the report says the GEMM's A operand was formed: explicit,
/// implicit (the GPU kernel and its twin), panels or direct (the CPU).
std::string im2colMode(const std::optional<ConvProblem> &problem,
                       Target target, bool implicit, bool xcolSizeKnown);

/// Compiles `module` (a clone) on the CPU, runs it warmup + repeat times on
/// `data`: the median and the output (f32, or i32 exactly: kept as doubles).
struct Execution {
  double compileMs = 0, medianMs = 0;
  std::vector<double> output;
};
llvm::Expected<Execution> compileAndRun(ModuleOp module, llvm::StringRef func,
                                        const RunData &data, CpuRoute route,
                                        const RunOptions &options, int warmup,
                                        int repeat);

/// The chip to compile for: options.chip, else the first device's, else
/// sm_80.
llvm::Expected<convrt::Arch> chooseChip(const RunOptions &options,
                                        const std::vector<DeviceInfo> &devices);

/// Why the runtime's GPU route (--target cuda, --emit-bundle) cannot run
/// `problem` although the kernel and its twin take it: a 3-D problem (a
/// bundle's manifest and the cuDNN comparison are 2-D); "" when it can.
std::string gpuRouteRefusal(const ConvProblem &problem);

/// conv-lower-to-nvvm for `arch` (every conv required); a conv the kernel
/// does not take is bad input, named.
llvm::Expected<GpuKernelBuild> compileKernelFor(ModuleOp module,
                                                llvm::StringRef function,
                                                const ConvProblem &problem,
                                                convrt::Arch arch);

/// The report's pipeline, chip, kernel tiles and compile time of a build.
void recordKernel(const GpuKernelBuild &build, convrt::Arch chip,
                  RunReport &report);

/// --target cuda: compiles the kernel, runs, times and checks it through
/// runtime/ next to cuDNN; fills `report`.
llvm::Error runOnCuda(ModuleOp module, llvm::StringRef function,
                      const ConvProblem &problem, const RunOptions &options,
                      RunReport &report);

} // namespace mlir::conv_lower::runner

#endif
