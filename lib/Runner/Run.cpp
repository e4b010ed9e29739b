//===- Run.cpp - one run: target, route, timing, check, report ------------===//
//
// run() strings the steps together: prepare the module and data
// (RunInputs.cpp), choose the target from the devices runtime/ finds, then
// either the CUDA route (CudaRoute.cpp) or a CPU route (CpuRoute.cpp) timed
// next to the direct lowering, checked against the float64 reference (flags)
// or against that lowering (a .mlir file) by the one comparison.
//
//===----------------------------------------------------------------------===//

#include "RunSteps.h"

#include "ConvLower/Runner/ConvModule.h"
#include "ConvLower/Runner/Device.h"
#include "ConvLower/Runner/ModuleInfo.h"
#include "ConvLower/Runner/Reference.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

char RunError::ID = 0;

llvm::Error runner::badInput(const llvm::Twine &message) {
  return llvm::make_error<RunError>(message.str(), /*badInput=*/true);
}

llvm::Error runner::failed(const llvm::Twine &message) {
  return llvm::make_error<RunError>(message.str(), /*badInput=*/false);
}

ErrorText mlir::conv_lower::takeErrorText(llvm::Error error) {
  ErrorText text;
  llvm::handleAllErrors(
      std::move(error),
      [&](const RunError &e) {
        text.badInput = e.isBadInput();
        text.message = e.message();
      },
      [&](const llvm::ErrorInfoBase &e) { text.message = e.message(); });
  return text;
}

static llvm::Error mark(llvm::Error error, bool bad) {
  if (!error)
    return error;
  if (error.isA<RunError>())
    return error;
  return llvm::make_error<RunError>(llvm::toString(std::move(error)), bad);
}
llvm::Error runner::asBadInput(llvm::Error error) {
  return mark(std::move(error), true);
}
llvm::Error runner::asFailure(llvm::Error error) {
  return mark(std::move(error), false);
}

llvm::StringRef mlir::conv_lower::toString(Target target) {
  switch (target) {
  case Target::Auto:
    return "auto";
  case Target::Cpu:
    return "cpu";
  case Target::CpuTwin:
    return "cpu-twin";
  case Target::Cuda:
    return "cuda";
  }
  return "?";
}

void mlir::conv_lower::registerRunDialects(DialectRegistry &registry) {
  registerCpuRunnerDialects(registry);
}

namespace {

/// Why the CUDA route cannot run this problem as given, or "".
std::string cudaRouteProblem(const RunOptions &o,
                             const std::optional<ConvProblem> &problem) {
  if (!o.mlirFile.empty())
    return "the GPU route takes its problem from flags, not a .mlir file";
  if (!o.inputNpy.empty() || !o.filterNpy.empty() || !o.biasNpy.empty())
    return "the GPU route makes its own seeded data (--input/--filter/"
           "--bias-file are CPU-only)";
  if (!o.outputNpy.empty())
    return "the GPU route does not copy its output back (--output is "
           "CPU-only)";
  return problem ? gpuRouteRefusal(*problem) : "";
}

/// Fills the report's device section and picks the target (never Auto).
llvm::Expected<Target> chooseTarget(const RunOptions &o,
                                    const std::optional<ConvProblem> &problem,
                                    RunReport &report) {
  DeviceStatus status = probeDevices();
  return resolveTarget(o.target, &status, cudaRouteProblem(o, problem),
                       "--target", report);
}

/// cpu and cpu-twin: either (cpu's implicit mode is per-block panels);
/// cuda: implicit only (a runtime bundle holds one kernel, explicit mode
/// launches two).
llvm::Expected<bool> chooseImplicit(const RunOptions &o,
                                    Target target) {
  if (o.im2col == Im2colChoice::Explicit && target == Target::Cuda)
    return badInput("--im2col explicit launches two kernels (im2col, then the "
                    "GEMM) and the runtime's bundles hold one: run it on the "
                    "CPU twin (--target cpu-twin) or with conv-opt "
                    "--conv-lower-to-nvvm=im2col=explicit and mlir-runner");
  return o.im2col != Im2colChoice::Explicit;
}

llvm::Error checkOptions(const RunOptions &o) {
  if (!o.mlirFile.empty() && o.check && o.reference == ReferenceMode::None)
    return badInput("--check on a .mlir file compares with the reference "
                    "lowering: drop --reference none");
  if (!o.outputNpy.empty()) {
    llvm::StringRef dir = llvm::sys::path::parent_path(o.outputNpy);
    if (!dir.empty() && !llvm::sys::fs::is_directory(dir))
      return badInput("--output: no directory " + dir);
  }
  if (o.repeat < 1 || o.warmup < 0 || o.referenceRepeat < 1 || o.threads < 1)
    return badInput("repeat, reference repeat and threads must be at least "
                    "1, warm-up at least 0");
  return llvm::Error::success();
}

/// Problem description, sizes (X_col's: unknown for a dynamic batch) and
/// FLOPs: from the flags' problem, else read off the module.
std::optional<double> describeInReport(const Prepared &p, RunReport &report) {
  if (p.problem) {
    report.problem = describeProblem(*p.problem);
    report.inputBytes = inputBytes(*p.problem);
    report.im2colBytes = im2colBytes(*p.problem);
    return p.problem->flops();
  }
  ModuleInfo info = analyzeConvModule(*p.module, p.function);
  report.problem = info.description;
  report.inputBytes = info.inputBytes;
  report.im2colBytes = info.im2colBytes;
  return info.flops;
}

} // namespace

llvm::Expected<Target> runner::resolveTarget(Target requested,
                                             const DeviceStatus *status,
                                             llvm::StringRef routeProblem,
                                             llvm::StringRef flag,
                                             RunReport &report) {
  if (status) {
    report.driverVersion = status->driverVersion;
    report.devices = status->devices;
    report.deviceProblem = status->problem;
  }
  std::string requestedName = (flag + " " + toString(requested)).str();
  switch (requested) {
  case Target::Cuda:
    if (!status || status->devices.empty())
      return badInput(requestedName + ": no usable CUDA device: " +
                      (status ? status->problem : "") + " (" + flag +
                      " cpu-twin runs the same kernel's loop nest on the "
                      "CPU)");
    if (!routeProblem.empty())
      return badInput(requestedName + ": " + routeProblem);
    report.targetReason = "requested with " + requestedName;
    return Target::Cuda;
  case Target::CpuTwin:
    report.targetReason = "requested with " + requestedName +
                          ": the GPU kernel's tiled loop nest, JIT'd on the "
                          "CPU";
    return Target::CpuTwin;
  case Target::Cpu:
    report.targetReason = "requested with " + requestedName;
    return Target::Cpu;
  case Target::Auto:
    break;
  }
  bool usable = status && !status->devices.empty();
  if (usable && routeProblem.empty()) {
    report.targetReason = "a CUDA device is usable";
    return Target::Cuda;
  }
  if (usable)
    report.targetReason = ("a CUDA device is usable, but " + routeProblem +
                           "; the CPU JIT runs instead")
                              .str();
  else
    report.targetReason = "no usable CUDA device (see devices); the CPU JIT "
                          "runs instead";
  return Target::Cpu;
}

/// On the CPU's default route a float 2-D depthwise problem has no A
/// operand: the pipeline's conv-lower-depthwise-direct computes it on
/// vectors ("direct"); an X_col of unknown size (a dynamic batch) stays
/// whole, since the panels (conv-lower-im2col-panels) take static shapes
/// only.
std::string runner::im2colMode(const std::optional<ConvProblem> &problem,
                               Target target, bool implicit,
                               bool xcolSizeKnown) {
  if (!implicit)
    return "explicit";
  if (target != Target::Cpu)
    return "implicit";
  if (problem && isDepthwise(*problem) && !problem->isQuantized() &&
      !problem->hasDepth)
    return "direct";
  return xcolSizeKnown ? "panels" : "explicit";
}

CpuRoute runner::cpuRoute(Target target, bool implicit) {
  if (target != Target::CpuTwin)
    return implicit ? CpuRoute::Im2colPanels : CpuRoute::Im2col;
  return implicit ? CpuRoute::Twin : CpuRoute::TwinExplicit;
}

llvm::StringRef runner::pipelineName(CpuRoute route) {
  switch (route) {
  case CpuRoute::Twin:
    return "conv-lower-to-llvm{implicit-gemm-twin}";
  case CpuRoute::TwinExplicit:
    return "conv-lower-to-llvm{implicit-gemm-twin twin-explicit-im2col}";
  case CpuRoute::Im2col:
    return "conv-lower-to-llvm{im2col-panels=false depthwise-direct=false "
           "winograd=false}";
  default:
    return "conv-lower-to-llvm";
  }
}

namespace {

/// The CPU routes: the lowered convolution, its reference lowering, the
/// check and the --output file.
llvm::Error runOnCpu(const Prepared &p, const RunOptions &o, CpuRoute route,
                     std::optional<double> flops, RunReport &report) {
  if (o.progress)
    o.progress("compiling and running " + report.problem);
  auto lowered = compileAndRun(*p.module, p.function, p.data, route, o,
                               o.warmup, o.repeat);
  if (!lowered)
    return lowered.takeError();
  report.compileMs = lowered->compileMs;
  report.loweredMs = lowered->medianMs;
  if (flops)
    report.gflops = *flops / (lowered->medianMs * 1e6);

  std::optional<Execution> reference;
  if (o.reference == ReferenceMode::Direct) {
    if (o.progress)
      o.progress("compiling and running the reference lowering (no im2col)");
    auto ref = compileAndRun(*p.module, p.function, p.data, CpuRoute::Direct,
                             o, /*warmup=*/0, o.referenceRepeat);
    if (!ref)
      return ref.takeError();
    report.referenceMs = ref->medianMs;
    report.referenceRepeat = o.referenceRepeat;
    report.referenceKind =
        "same pipeline without the im2col rewrite: upstream's lowering of the "
        "linalg conv";
    reference = std::move(*ref);
  }

  if (o.check && p.problem) {
    if (o.progress)
      o.progress("checking against a float64 direct convolution");
    const RunData &d = p.data;
    report.check = checkOutput(*p.problem, d.inputs[0], d.inputs[1],
                               d.inputs.size() > 2 ? &d.inputs[2] : nullptr,
                               lowered->output);
    report.checkAgainst = "float64 direct convolution";
  } else if (o.check) {
    std::vector<double> want(reference->output.begin(),
                             reference->output.end());
    // No problem description: the output's type sets the tolerance.
    report.check = compareOutputs(lowered->output, want,
                                  convrt::tolerance(p.data.outputDType));
    report.checkAgainst = "the reference lowering (no im2col)";
  }

  if (!o.outputNpy.empty()) {
    if (llvm::Error e =
            writeNpy(o.outputNpy, p.data.npyOutputShape, lowered->output,
                     p.data.outputDType))
      return asFailure(std::move(e));
    report.outputPath = o.outputNpy;
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<RunReport> mlir::conv_lower::run(MLIRContext &context,
                                                const RunOptions &o) {
  if (llvm::Error e = checkOptions(o))
    return std::move(e);
  auto prepared = prepare(context, o);
  if (!prepared)
    return prepared.takeError();

  RunReport report;
  report.source = o.mlirFile.empty() ? "flags" : o.mlirFile;
  auto target = chooseTarget(o, prepared->problem, report);
  if (!target)
    return target.takeError();
  report.target = toString(*target).str();
  auto implicit = chooseImplicit(o, *target);
  if (!implicit)
    return implicit.takeError();
  report.repeat = o.repeat;
  report.warmup = o.warmup;
  std::optional<double> flops = describeInReport(*prepared, report);
  report.im2col = im2colMode(prepared->problem, *target, *implicit,
                             report.im2colBytes.has_value());
  // Only the explicit mode stores X_col whole: the implicit GEMM never
  // stores it, the CPU's panels hold a block's rows at a time (at most 512
  // KiB a thread), a direct depthwise convolution has none.
  if (report.im2col != "explicit")
    report.im2colBytes = 0;

  if (*target == Target::Cuda) {
    if (llvm::Error e = runOnCuda(*prepared->module, prepared->function,
                                  *prepared->problem, o, report))
      return std::move(e);
    return report;
  }
  CpuRoute route = cpuRoute(*target, *implicit);
  report.pipeline = pipelineName(route).str();
  if (takesWinograd(*prepared->module, prepared->function,
                    pipelineOptions(o, route)))
    report.im2col = "winograd";
  report.threads = o.threads;
  if (llvm::Error e = runOnCpu(*prepared, o, route, flops, report))
    return std::move(e);
  return report;
}

llvm::Expected<std::string>
mlir::conv_lower::emitModule(MLIRContext &context, const RunOptions &o) {
  auto prepared = prepare(context, o);
  if (!prepared)
    return prepared.takeError();
  std::string text;
  llvm::raw_string_ostream os(text);
  if (prepared->problem)
    os << "// conv-run: " << describeProblem(*prepared->problem) << "\n";
  prepared->module->print(os);
  return text;
}
