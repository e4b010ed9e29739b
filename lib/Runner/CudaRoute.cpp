//===- CudaRoute.cpp - the tensor-core kernel on a CUDA device ------------===//
//
// The convolution compiled with conv-lower-to-nvvm for one chip
// (GpuKernel.cpp) and the driver loaded (compileCudaKernel, shared with
// CompiledConv); run() then hands the kernel to runtime/'s runKernel, which
// loads it through libcuda, fills seeded inputs, launches, times it next to
// cuDNN and checks it against the float64 reference.
//
//===----------------------------------------------------------------------===//

#include "RunSteps.h"

#include "ConvLower/Runner/GpuKernel.h"

#include "convrt/Driver.h"
#include "convrt/Runner.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

llvm::Expected<convrt::Arch>
runner::chooseChip(std::optional<convrt::Arch> chip,
                   const std::vector<DeviceInfo> &devices) {
  if (chip)
    return *chip;
  if (devices.empty())
    return convrt::Arch::SM80;
  const DeviceInfo &d = devices.front();
  std::optional<convrt::Arch> arch =
      convrt::archForComputeCapability(d.ccMajor, d.ccMinor);
  if (!arch)
    return badInput(llvm::formatv(
        "{0} is sm_{1}{2}: the kernels use sm_80 tensor-core instructions "
        "(cp.async, ldmatrix, mma.sync bf16/tf32)",
        d.name, d.ccMajor, d.ccMinor));
  return *arch;
}

llvm::Expected<GpuKernelBuild>
runner::compileKernelFor(ModuleOp module, llvm::StringRef function,
                         const ConvProblem &problem, convrt::Arch arch) {
  ConvLowerToNVVMOptions options;
  options.chip = arch;
  options.requireAll = true;
  auto build = compileGpuKernel(module, function, problem, options);
  if (!build)
    return asBadInput(build.takeError());
  return build;
}

llvm::Expected<CudaKernel> runner::compileCudaKernel(
    ModuleOp module, llvm::StringRef function, const ConvProblem &problem,
    std::optional<convrt::Arch> chip,
    const std::function<void(llvm::StringRef)> &progress, RunReport &report) {
  auto arch = chooseChip(chip, report.devices);
  if (!arch)
    return arch.takeError();
  if (progress)
    progress(std::string("compiling the tensor-core kernel for ") +
             convrt::archName(*arch));
  auto build = compileKernelFor(module, function, problem, *arch);
  if (!build)
    return build.takeError();
  report.chip = convrt::archName(*arch);
  report.kernel = build->tiles;
  report.kernelFamily = stringifyKernelFamily(build->family).str();
  report.compileMs = build->compileMs;
  auto driver = convrt::Driver::load();
  if (!driver.ok())
    return failed(driver.error().message());
  return CudaKernel{std::move(*build), std::move(*driver)};
}

static void reportCheck(const convrt::RunReport &run, RunReport &report) {
  if (!run.checked)
    return;
  report.check =
      toCheckResult(run.comparison, run.manifest.problem.outputElements());
  report.checkAgainst = "float64 direct convolution (runtime, same data)";
}

llvm::Error runner::runOnCuda(ModuleOp module, llvm::StringRef function,
                              const ConvProblem &problem,
                              const RunOptions &options, RunReport &report) {
  auto kernel = compileCudaKernel(module, function, problem, options.chip,
                                  options.progress, report);
  if (!kernel)
    return kernel.takeError();
  const GpuKernelBuild &build = kernel->build;
  convrt::RunOptions runOptions;
  runOptions.warmup = options.warmup;
  runOptions.repeat = options.repeat;
  runOptions.seed = options.seed;
  runOptions.check = options.check;
  if (options.progress)
    options.progress("running on the GPU");
  auto run = convrt::runKernel(build.manifest, build.cubin, build.ptx,
                               kernel->driver, runOptions);
  if (!run.ok())
    return failed(run.error().message());
  report.loweredMs = run->medianMs;
  report.gflops = problem.flops() / (run->medianMs * 1e6);
  if (run->cudnn.ran) {
    report.cudnnMs = run->cudnn.medianMs;
    report.cudnnNote = run->cudnn.algorithm;
  } else {
    report.cudnnNote = run->cudnn.reason;
  }
  reportCheck(*run, report);
  return llvm::Error::success();
}
