//===- Run.cpp - one run: target, route, timing, check, report ------------===//
//
// run() strings the steps together: prepare the module and data
// (RunInputs.cpp), plan the route from the devices runtime/ finds
// (RoutePlan.cpp), then either the CUDA route (CudaRoute.cpp) or a CPU route
// (CpuRoute.cpp) timed next to the direct lowering, checked against the
// float64 reference (flags) or against that lowering (a .mlir file) by the
// one comparison.
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

void mlir::conv_lower::registerRunDialects(DialectRegistry &registry) {
  registerCpuRunnerDialects(registry);
}

namespace {

/// Why the CUDA route cannot run this problem as given; nothing when it
/// can.
std::optional<std::string> cudaRouteRefusal(const RunOptions &o,
                                            const Prepared &prepared) {
  if (!o.mlirFile.empty())
    return "the GPU route takes its problem from flags, not a .mlir file";
  if (!o.inputNpy.empty() || !o.filterNpy.empty() || !o.biasNpy.empty())
    return "the GPU route makes its own seeded data (--input/--filter/"
           "--bias-file are CPU-only)";
  if (!o.outputNpy.empty())
    return "the GPU route does not copy its output back (--output is "
           "CPU-only)";
  std::string whyNot;
  if (prepared.problem && failed(checkGpuRoute(*prepared.problem, whyNot)))
    return whyNot;
  if (std::string why = gpuEpilogueRefusal(prepared.epilogue); !why.empty())
    return why;
  return std::nullopt;
}

llvm::Error constantWeightsOnCuda() {
  return badInput("--constant-weights packs the filter for the CPU "
                      "routes; the cuda kernels read it in place (run with "
                      "--target cpu)");
}

llvm::Error checkOptions(const RunOptions &o) {
  if (o.constantWeights && o.target == Target::Cuda)
    return constantWeightsOnCuda();
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
    if (p.epilogue.residual)
      report.problem += " +residual";
    if (p.epilogue.bf16Residual)
      report.problem += " (bf16)";
    if (p.epilogue.bf16Output)
      report.problem += " ->bf16";
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

/// The CPU routes: the lowered convolution, its reference lowering, the
/// check and the --output file.
llvm::Error runOnCpu(const Prepared &p, const RunOptions &o,
                     const RoutePlan &plan, std::optional<double> flops,
                     RunReport &report) {
  if (o.progress)
    o.progress("compiling and running " + report.problem);
  auto lowered = compileAndRun(*p.module, p.function, p.data, plan.pipeline,
                               o.warmup, o.repeat);
  if (!lowered)
    return lowered.takeError();
  report.compileMs = lowered->compileMs;
  report.diskCache = lowered->diskCache;
  report.loweredMs = lowered->medianMs;
  if (lowered->packMs) {
    report.packMs = lowered->packMs;
    report.packedBytes = lowered->packedBytes;
  }
  if (flops)
    report.gflops = *flops / (lowered->medianMs * 1e6);

  std::optional<Execution> reference;
  if (o.reference == ReferenceMode::Direct) {
    if (o.progress)
      o.progress("compiling and running the reference lowering (no im2col)");
    auto ref = compileAndRun(
        *p.module, p.function, p.data,
        pipelineOptions(routeRequest(o), CpuRoute::Direct), /*warmup=*/0,
        o.referenceRepeat);
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
    // The arguments: input, filter (not a pooling's), [bias,] [residual].
    const HostTensor *filter = p.problem->isPooling() ? nullptr : &d.inputs[1];
    report.check = checkOutput(*p.problem, d.inputs[0], filter,
                               p.problem->hasBias ? &d.inputs[2] : nullptr,
                               lowered->output, d.outputDType, p.residual());
    report.checkAgainst = p.problem->isPooling() ? "float64 direct max pooling"
                                                 : "float64 direct convolution";
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
  if (prepared->problem && prepared->problem->isPooling() && o.constantWeights)
    return badInput("--constant-weights: max pooling has no weights to "
                    "pack");
  if (prepared->problem)
    if (auto why =
            poolingTargetRefusal(*prepared->problem, o.target, "--target"))
      return badInput(*why);
  if (std::string why = gpuEpilogueRefusal(prepared->epilogue);
      !why.empty() && o.target == Target::CpuTwin)
    return badInput("--bf16-output, --bf16-residual: " + why +
                    " (run with --target cpu)");

  RunReport report;
  report.source = o.mlirFile.empty() ? "flags" : o.mlirFile;
  report.repeat = o.repeat;
  report.warmup = o.warmup;
  std::optional<double> flops = describeInReport(*prepared, report);

  DeviceStatus devices = probeDevices();
  RouteInputs inputs;
  inputs.module = *prepared->module;
  inputs.function = prepared->function;
  inputs.problem = prepared->problem ? &*prepared->problem : nullptr;
  inputs.xcolSizeKnown = report.im2colBytes.has_value();
  inputs.gpuRefusal = cudaRouteRefusal(o, *prepared);
  inputs.devices = &devices;
  auto plan = planRoute(routeRequest(o), inputs, report);
  if (!plan)
    return plan.takeError();
  // Only the explicit mode stores X_col whole: the implicit GEMM never
  // stores it, the CPU's panels hold a block's rows at a time (at most 512
  // KiB a thread), a direct depthwise convolution has none.
  if (plan->operand != Im2colRoute::Explicit)
    report.im2colBytes = 0;

  if (plan->target == Target::Cuda) {
    if (o.constantWeights) // auto chose the device
      return constantWeightsOnCuda();
    if (llvm::Error e = runOnCuda(*prepared->module, prepared->function,
                                  *prepared->problem, o, report))
      return std::move(e);
    return report;
  }
  if (llvm::Error e = runOnCpu(*prepared, o, *plan, flops, report))
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
