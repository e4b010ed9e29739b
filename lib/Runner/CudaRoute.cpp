//===- CudaRoute.cpp - the tensor-core kernel: on a device, or as a bundle -===//
//
// Both compile the convolution with conv-lower-to-nvvm for one chip
// (GpuKernel.cpp). run() then hands the kernel to runtime/'s runKernel,
// which loads it through libcuda, fills seeded inputs, launches, times it
// next to cuDNN and checks it against the float64 reference; emitBundle()
// writes it for convrt-run on a machine without MLIR.
//
//===----------------------------------------------------------------------===//

#include "RunSteps.h"

#include "ConvLower/Runner/GpuKernel.h"

#include "convrt/Driver.h"
#include "convrt/Runner.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

llvm::Expected<convrt::Arch>
runner::chooseChip(const RunOptions &options,
                   const std::vector<DeviceInfo> &devices) {
  if (options.chip)
    return *options.chip;
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

void runner::recordKernel(const GpuKernelBuild &build, convrt::Arch chip,
                          RunReport &report) {
  report.pipeline = "conv-lower-to-nvvm";
  report.chip = convrt::archName(chip);
  report.kernel = build.tiles;
  report.compileMs = build.compileMs;
}

static void reportCheck(const convrt::RunReport &run, RunReport &report) {
  if (!run.checked)
    return;
  report.check = toCheckResult(run.comparison,
                               run.manifest.problem.outputElements());
  report.checkAgainst = "float64 direct convolution (runtime, same data)";
}

llvm::Error runner::runOnCuda(ModuleOp module, llvm::StringRef function,
                              const ConvProblem &problem,
                              const RunOptions &options, RunReport &report) {
  auto chip = chooseChip(options, report.devices);
  if (!chip)
    return chip.takeError();
  if (options.progress)
    options.progress(std::string("compiling the tensor-core kernel for ") +
                     convrt::archName(*chip));
  auto build = compileKernelFor(module, function, problem, *chip);
  if (!build)
    return build.takeError();
  recordKernel(*build, *chip, report);
  auto driver = convrt::Driver::load();
  if (!driver.ok())
    return failed(driver.error().message());
  convrt::RunOptions runOptions;
  runOptions.warmup = options.warmup;
  runOptions.repeat = options.repeat;
  runOptions.seed = options.seed;
  runOptions.check = options.check;
  if (options.progress)
    options.progress("running on the GPU");
  auto run = convrt::runKernel(build->manifest, build->cubin, build->ptx,
                               *driver, runOptions);
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

std::string runner::gpuRouteRefusal(const ConvProblem &problem) {
  if (!problem.hasDepth)
    return "";
  return "a bundle's manifest and the runtime's cuDNN comparison are 2-D: a "
         "3-D convolution runs on --target cpu or cpu-twin";
}

llvm::Expected<BundleReport>
mlir::conv_lower::emitBundle(MLIRContext &context, const RunOptions &options,
                             const std::string &directory) {
  if (!options.mlirFile.empty())
    return badInput("--emit-bundle takes its problem from flags (the "
                    "bundle's manifest describes it), not a .mlir file");
  if (options.im2col == Im2colChoice::Explicit)
    return badInput("--emit-bundle writes the implicit-GEMM kernel; "
                    "--im2col explicit needs two kernels and a bundle holds "
                    "one");
  auto prepared = prepare(context, options);
  if (!prepared)
    return prepared.takeError();
  if (prepared->problem) {
    std::string refusal = gpuRouteRefusal(*prepared->problem);
    if (!refusal.empty())
      return badInput("--emit-bundle: " + refusal);
  }
  convrt::Arch arch = options.chip.value_or(convrt::Arch::SM80);
  auto build = compileKernelFor(*prepared->module, prepared->function,
                          *prepared->problem, arch);
  if (!build)
    return build.takeError();
  if (llvm::Error e = writeGpuBundle(directory, *build))
    return asFailure(std::move(e));
  BundleReport r;
  r.directory = directory;
  r.kernel = build->manifest.kernel;
  r.tiles = build->tiles;
  r.cubinBytes = build->cubin.size();
  return r;
}

void mlir::conv_lower::printBundleHuman(const BundleReport &r,
                                        llvm::raw_ostream &os) {
  const convrt::KernelSpec &k = r.kernel;
  os << llvm::formatv(
      "conv-run: wrote {0}: {1}, {2} ({3} bytes), {4}\n"
      "  kernel {5} for {6}: grid {7}x{8}x{9}, block {10}, tiles {11}\n",
      r.directory, convrt::kManifestFileName, k.binary, r.cubinBytes, k.ptx,
      k.name, k.chip, k.grid.x, k.grid.y, k.grid.z, k.block.x, r.tiles);
}

void mlir::conv_lower::printBundleJson(const BundleReport &r,
                                       llvm::raw_ostream &os) {
  const convrt::KernelSpec &k = r.kernel;
  llvm::json::OStream j(os, 2);
  auto dims = [&](llvm::StringRef key, const convrt::Dim3 &d) {
    j.attributeArray(key, [&] {
      for (unsigned v : {d.x, d.y, d.z})
        j.value(v);
    });
  };
  j.object([&] {
    j.attribute("bundle", r.directory);
    j.attributeArray("files", [&] {
      for (const std::string &f : {std::string(convrt::kManifestFileName),
                                   k.binary, k.ptx})
        j.value(f);
    });
    j.attribute("kernel", k.name);
    j.attribute("chip", k.chip);
    dims("grid", k.grid);
    dims("block", k.block);
    j.attribute("tiles", r.tiles);
    j.attribute("cubin_bytes", static_cast<int64_t>(r.cubinBytes));
  });
  os << "\n";
}
