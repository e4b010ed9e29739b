//===- RoutePlan.cpp - what runs where, decided before compiling ----------===//
//
// The decisions run() and CompiledConv share: the target (resolveTarget),
// the GEMM's A operand, the CPU route and its pipeline options, the CPU's
// Winograd rule, and for the twin the kernel it emulates; each written into
// the report's route fields. `-debug-only=conv-run` shows them.
//
//===----------------------------------------------------------------------===//

#include "RoutePlan.h"

#include "ConvLower/Runner/GpuKernel.h"
#include "ConvLower/Runner/ModuleInfo.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"

#define DEBUG_TYPE "conv-run"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

namespace {

/// The target a request resolves to (never Auto) and why, in `report`
/// (with the device section, from `status` where probed: cuda and auto need
/// it). `refusal` says why the GPU route cannot take the problem; `flag`
/// spells the option in messages.
llvm::Expected<Target> resolveTarget(Target requested,
                                     const DeviceStatus *status,
                                     const std::optional<std::string> &refusal,
                                     llvm::StringRef flag, RunReport &report) {
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
    if (refusal)
      return badInput(requestedName + ": " + *refusal);
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
  if (usable && !refusal) {
    report.targetReason = "a CUDA device is usable";
    return Target::Cuda;
  }
  if (usable)
    report.targetReason = "a CUDA device is usable, but " + *refusal +
                          "; the CPU JIT runs instead";
  else
    report.targetReason = "no usable CUDA device (see devices); the CPU JIT "
                          "runs instead";
  return Target::Cpu;
}

/// cpu and cpu-twin: either (cpu's implicit mode is per-block panels);
/// cuda: implicit only (a runtime bundle holds one kernel, explicit mode
/// launches two).
llvm::Expected<bool> chooseImplicit(Im2colChoice im2col, Target target) {
  if (im2col == Im2colChoice::Explicit && target == Target::Cuda)
    return badInput("--im2col explicit launches two kernels (im2col, then the "
                    "GEMM) and the runtime's bundles hold one: run it on the "
                    "CPU twin (--target cpu-twin) or with conv-opt "
                    "--conv-lower-to-nvvm=im2col=explicit and mlir-runner");
  return im2col != Im2colChoice::Explicit;
}

/// How the GEMM's A operand is formed. On the CPU's default route a float
/// 2-D depthwise problem has none: the pipeline's
/// conv-lower-depthwise-direct computes it on vectors; an X_col of unknown
/// size (a dynamic batch) stays whole, since the panels
/// (conv-lower-im2col-panels) take static shapes only.
Im2colRoute operandRoute(const ConvProblem *problem, Target target,
                         bool implicit, bool xcolSizeKnown) {
  if (!implicit)
    return Im2colRoute::Explicit;
  if (target != Target::Cpu)
    return Im2colRoute::Implicit;
  if (problem && isDepthwise(*problem) && !problem->isQuantized() &&
      !problem->hasDepth)
    return Im2colRoute::Direct;
  return xcolSizeKnown ? Im2colRoute::Panels : Im2colRoute::Explicit;
}

/// The CPU route of a target (cpu or cpu-twin) and im2col choice.
CpuRoute cpuRoute(Target target, bool implicit) {
  assert(target == Target::Cpu || target == Target::CpuTwin);
  if (target != Target::CpuTwin)
    return implicit ? CpuRoute::Im2colPanels : CpuRoute::Im2col;
  return implicit ? CpuRoute::Twin : CpuRoute::TwinExplicit;
}

/// Whether `pipeline` computes a convolution of `function` by Winograd:
/// the pass's own cost rule, asked of it on a copy of `module`.
bool takesWinograd(ModuleOp module, llvm::StringRef function,
                   const ConvLowerToLLVMOptions &pipeline) {
  return pipeline.winograd &&
         countWinogradConvs(module, function, pipeline.winogradMinTiles,
                            pipeline.constantWeights) > 0;
}

/// The twin runs the kernel of its chip: the report names the chip, the
/// kernel family and the tiles, as the CUDA route's report does.
void recordTwinKernels(const RoutePlan &plan, const RouteInputs &inputs,
                       RunReport &report) {
  convrt::Arch chip = plan.pipeline.twinChip;
  report.chip = convrt::archName(chip);
  if (!inputs.module)
    return;
  SmallVector<GpuKernelInfo> kernels = describeGpuKernels(
      inputs.module, inputs.function, chip,
      plan.cpuRoute == CpuRoute::TwinExplicit ? Im2colMode::Explicit
                                              : Im2colMode::Implicit);
  SmallVector<std::string> tiles, families;
  for (const GpuKernelInfo &kernel : kernels) {
    tiles.push_back(kernel.tiles);
    families.push_back(stringifyKernelFamily(kernel.family).str());
  }
  // One convolution (every problem from flags): its kernel alone.
  report.kernel = llvm::join(tiles, "; ");
  report.kernelFamily = llvm::join(families, ", ");
  LLVM_DEBUG(llvm::dbgs() << "conv-run: the twin emulates " << kernels.size()
                          << " kernel(s) of " << report.chip << ": "
                          << report.kernelFamily << "\n");
}

} // namespace

RouteRequest runner::routeRequest(const RunOptions &options) {
  RouteRequest r;
  r.target = options.target;
  r.im2col = options.im2col;
  r.winograd = options.winograd;
  r.chip = options.chip;
  r.threads = options.threads;
  r.constantWeights = options.constantWeights;
  r.tileM = options.tileM;
  r.tileN = options.tileN;
  r.tileK = options.tileK;
  r.bf16Dot = options.bf16Dot;
  r.i8Dot = options.i8Dot;
  r.amx = options.amx;
  r.targetFlag = "--target";
  return r;
}

llvm::StringRef runner::pipelineName(CpuRoute route) {
  switch (route) {
  case CpuRoute::Twin:
    return "conv-lower-to-llvm{implicit-gemm-twin}";
  case CpuRoute::TwinExplicit:
    return "conv-lower-to-llvm{implicit-gemm-twin twin-explicit-im2col}";
  case CpuRoute::Im2col:
    return "conv-lower-to-llvm{im2col-panels=false depthwise-direct=false "
           "grouped-direct=false winograd=false}";
  case CpuRoute::Im2colPanels:
  case CpuRoute::Direct:
    return "conv-lower-to-llvm";
  }
  llvm_unreachable("unknown CPU route");
}

/// The report's note on the CPU GEMMs' dot-product route for `dtype` (bf16:
/// VDPBF16PS, i8: VPDPBUSD): taken, or why they are widened instead. Empty
/// for the other types.
static std::string dotProductNote(DType dtype,
                                  const ConvLowerToLLVMOptions &pipeline) {
  struct Route {
    bool taken, hostHas;
    llvm::StringRef onDots, widened, feature, option;
  };
  std::optional<Route> route;
  auto onTiles = [&](llvm::StringRef gemms, llvm::StringRef instruction) {
    return pipeline.amxEmulated
               ? llvm::formatv("; {0} on AMX tiles, each tile operation "
                               "emulated in vector code (--amx=emulated)",
                               gemms)
                     .str()
               : llvm::formatv("; {0} on AMX tiles ({1})", gemms, instruction)
                     .str();
  };
  if (dtype == DType::BF16 && pipeline.amx && pipeline.bf16Dot)
    return onTiles("bf16 GEMMs in K pairs", "TDPBF16PS");
  if (dtype == DType::I8 && pipeline.amx && pipeline.i8Dot)
    return onTiles("i8 GEMMs in K quads", "TDPBSSD");
  if (dtype == DType::BF16)
    route = Route{pipeline.bf16Dot, hostHasAVX512BF16(),
                  "bf16 GEMMs in K pairs on AVX512-BF16 (VDPBF16PS)",
                  "bf16 widened to f32 FMAs", "AVX512-BF16", "bf16-dot"};
  if (dtype == DType::I8)
    route = Route{pipeline.i8Dot, hostHasAVX512VNNI(),
                  "i8 GEMMs in K quads on AVX512-VNNI (VPDPBUSD)",
                  "i8 widened to i32 multiplies", "AVX512-VNNI", "i8-dot"};
  if (!route)
    return "";
  if (route->taken)
    return ("; " + route->onDots).str();
  return llvm::formatv("; {0} ({1})", route->widened,
                       route->hostHas
                           ? (route->option + " off").str()
                           : ("no " + route->feature + " on this host").str());
}

ConvLowerToLLVMOptions runner::pipelineOptions(const RouteRequest &request,
                                               CpuRoute route) {
  ConvLowerToLLVMOptions o;
  o.tileM = request.tileM;
  o.tileN = request.tileN;
  o.tileK = request.tileK;
  o.threads = request.threads;
  // The reference lowering (Direct) runs the convolution as written.
  o.constantWeights = request.constantWeights && route != CpuRoute::Direct;
  o.im2col = route == CpuRoute::Im2col || route == CpuRoute::Im2colPanels;
  o.im2colPanels = route == CpuRoute::Im2colPanels;
  o.depthwiseDirect = route == CpuRoute::Im2colPanels;
  o.groupedDirect = route == CpuRoute::Im2colPanels;
  // The dot products are the im2col GEMMs' register tiles.
  o.bf16Dot = request.bf16Dot && hostHasAVX512BF16() && o.im2col;
  o.i8Dot = request.i8Dot && hostHasAVX512VNNI() && o.im2col;
  // AMX's tiles take the GEMMs in K groups: only with the dots, which also
  // run the tiles' partial edges.
  bool grouped = o.bf16Dot || o.i8Dot;
  o.amxEmulated = grouped && request.amx == AMXChoice::Emulated;
  o.amx = o.amxEmulated ||
          (grouped &&
           (request.amx == AMXChoice::Auto || request.amx == AMXChoice::On) &&
           whyNoAMX().empty());
  o.winograd = route == CpuRoute::Im2colPanels &&
               request.winograd != WinogradChoice::Off;
  if (request.winograd == WinogradChoice::Always)
    o.winogradMinTiles = 0;
  o.implicitGemmTwin =
      route == CpuRoute::Twin || route == CpuRoute::TwinExplicit;
  o.twinExplicitIm2col = route == CpuRoute::TwinExplicit;
  // The twin runs the kernel of the chip asked for (no device: sm_80's).
  o.twinChip = request.chip.value_or(convrt::Arch::SM80);
  return o;
}

/// What max pooling's refusals say, in `flag`'s terms.
static std::string poolingOnCpuOnly(llvm::StringRef flag) {
  return llvm::formatv("max pooling runs on the CPU route ({0} cpu); the GPU "
                       "kernels are convolutions",
                       flag);
}

std::optional<std::string>
runner::poolingTargetRefusal(const ConvProblem &problem, Target target,
                             llvm::StringRef flag) {
  if (!problem.isPooling() ||
      (target != Target::Cuda && target != Target::CpuTwin))
    return std::nullopt;
  return llvm::formatv("{0} {1}: {2}", flag, toString(target),
                       poolingOnCpuOnly(flag))
      .str();
}

LogicalResult runner::checkGpuRoute(const ConvProblem &problem,
                                    std::string &whyNot) {
  if (problem.isPooling()) {
    whyNot = poolingOnCpuOnly("--target");
    return failure();
  }
  if (!problem.hasDepth)
    return success();
  whyNot = "a bundle's manifest and the runtime's cuDNN comparison are 2-D: "
           "a 3-D convolution runs on --target cpu or cpu-twin";
  return failure();
}

/// An error where AMX was asked for and cannot be had: --amx=on on a host
/// without it, or either of on and emulated where the GEMMs of `dtype`
/// (where known) are not in K groups: bf16 without AVX512-BF16's pairs, i8
/// without AVX512-VNNI's quads, or a route without the im2col GEMMs.
static llvm::Error checkAMXRequest(const RouteRequest &request,
                                   const ConvLowerToLLVMOptions &pipeline,
                                   CpuRoute route, std::optional<DType> dtype) {
  if (request.amx != AMXChoice::On && request.amx != AMXChoice::Emulated)
    return llvm::Error::success();
  llvm::StringRef flag =
      request.amx == AMXChoice::On ? "--amx=on" : "--amx=emulated";
  if (!pipeline.im2col)
    return llvm::createStringError(
        llvm::formatv("{0}: the AMX tiles are the im2col route's GEMMs; "
                      "{1} runs none (use --target cpu)",
                      flag, pipelineName(route)));
  // The GEMMs the tiles take for this dtype, and the dots they need.
  struct Groups {
    llvm::StringRef type, groups, option, feature;
    bool grouped, hostHas;
  };
  Groups g = dtype == DType::I8
                 ? Groups{"i8", "quads", "i8-dot", "AVX512-VNNI",
                          pipeline.i8Dot, hostHasAVX512VNNI()}
                 : Groups{"bf16", "pairs", "bf16-dot", "AVX512-BF16",
                          pipeline.bf16Dot, hostHasAVX512BF16()};
  if (!g.grouped)
    return llvm::createStringError(llvm::formatv(
        "{0}: the AMX tiles take the {1} GEMMs in K {2}, which need "
        "--{3} and a CPU with {4} (this one {5})",
        flag, g.type, g.groups, g.option, g.feature,
        g.hostHas ? "has it" : "has none"));
  if (request.amx == AMXChoice::On && !pipeline.amx)
    return llvm::createStringError(
        llvm::formatv("--amx=on: {0}; --amx=emulated runs the same tile "
                      "program with each tile operation in vector code, "
                      "--amx=auto uses AVX512-BF16 and AVX512-VNNI",
                      whyNoAMX()));
  return llvm::Error::success();
}

llvm::Expected<RoutePlan> runner::planRoute(const RouteRequest &request,
                                            const RouteInputs &inputs,
                                            RunReport &report) {
  assert(request.threads >= 1 && "the front end checks the thread count");
  auto target = resolveTarget(request.target, inputs.devices, inputs.gpuRefusal,
                              request.targetFlag, report);
  if (!target)
    return target.takeError();
  assert(*target != Target::Auto && "resolveTarget picks a target");
  auto implicit = chooseImplicit(request.im2col, *target);
  if (!implicit)
    return implicit.takeError();

  RoutePlan plan;
  plan.target = *target;
  plan.implicit = *implicit;
  plan.operand = operandRoute(inputs.problem, plan.target, plan.implicit,
                              inputs.xcolSizeKnown);
  report.target = plan.target;
  report.im2col = plan.operand;
  LLVM_DEBUG(llvm::dbgs() << "conv-run: target " << toString(plan.target)
                          << " (" << report.targetReason << "), A operand "
                          << toString(plan.operand) << "\n");
  if (plan.target == Target::Cuda) {
    report.pipeline = "conv-lower-to-nvvm";
    return plan;
  }

  CpuRoute route = cpuRoute(plan.target, plan.implicit);
  plan.cpuRoute = route;
  plan.pipeline = pipelineOptions(request, route);
  std::optional<DType> dtype;
  if (inputs.problem)
    dtype = inputs.problem->dtype;
  if (auto error = checkAMXRequest(request, plan.pipeline, route, dtype))
    return std::move(error);
  report.pipeline = pipelineName(route).str();
  report.threads = request.threads;
  if (request.threads > 1)
    report.openmpRuntime = processOpenMPRuntime().path;
  bool pooling = inputs.problem && inputs.problem->isPooling();
  if (plan.target == Target::Cpu && pooling)
    report.kernel = "max pooling by output rows, vectorized over channels "
                    "(conv-lower-max-pool-rows; channels-first: generic "
                    "loops)";
  else if (plan.target == Target::Cpu)
    report.kernel = llvm::formatv(
        "GEMM register tile {0}x{1}, K by {2} ({3} default {4}x{5})",
        request.tileM, request.tileN, request.tileK,
        hostGemmTile().registers, hostGemmTile().m, hostGemmTile().n);
  if (plan.target == Target::Cpu && inputs.problem && !pooling)
    report.kernel += dotProductNote(inputs.problem->dtype, plan.pipeline);
  if (inputs.module &&
      takesWinograd(inputs.module, inputs.function, plan.pipeline)) {
    LLVM_DEBUG(llvm::dbgs() << "conv-run: conv-lower-winograd's cost rule "
                               "takes a convolution of @"
                            << inputs.function << "\n");
    report.im2col = Im2colRoute::Winograd;
  }
  if (inputs.module && plan.pipeline.groupedDirect &&
      countGroupedDirectConvs(inputs.module, inputs.function,
                              plan.pipeline.tileN) > 0)
    report.im2col = Im2colRoute::Direct;
  if (plan.target == Target::CpuTwin)
    recordTwinKernels(plan, inputs, report);
  return plan;
}
