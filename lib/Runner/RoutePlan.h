//===- RoutePlan.h - what runs where, decided before compiling --*- C++ -*-===//
//
// Private to lib/Runner: the one place both front ends of the run library
// decide a convolution's route. run() (conv-run: RunOptions) and
// CompiledConv (the C API and Python: ConvSpec) each state a RouteRequest;
// planRoute() resolves the target (auto: cuda where a device is usable and
// the GPU route takes the problem), the GEMM's A operand, the CPU pipeline
// and its options, and writes the report's route fields. Compiling and
// running the plan is the front ends' business.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_LIB_RUNNER_ROUTEPLAN_H
#define CONVLOWER_LIB_RUNNER_ROUTEPLAN_H

#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Runner/ConvProblem.h"
#include "ConvLower/Runner/Device.h"
#include "ConvLower/Runner/Report.h"
#include "ConvLower/Runner/Routes.h"
#include "ConvLower/Runner/Run.h"

#include "convrt/Arch.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir::conv_lower::runner {

/// How the CPU compiles the convolution.
/// Im2colPanels: X_col per block of output rows inside the GEMM's parallel
/// loop (conv-lower-im2col-panels); Im2col: X_col whole, then the GEMM;
/// Direct: upstream's lowering of the convolution (the reference); Twin and
/// TwinExplicit: the GPU kernel's loop nest (and its im2col kernel).
enum class CpuRoute { Im2colPanels, Im2col, Direct, Twin, TwinExplicit };

/// What a front end asks of the route: the part of RunOptions (conv-run)
/// and of ConvSpec (the C API) that decides it.
struct RouteRequest {
  Target target = Target::Auto;
  Im2colChoice im2col = Im2colChoice::Default;
  WinogradChoice winograd = WinogradChoice::Auto;
  /// cuda: the chip to compile for (default: the device's); cpu-twin: the
  /// chip whose kernel family the twin runs (default: sm_80).
  std::optional<convrt::Arch> chip;
  int64_t threads = 1;
  /// CPU: pack what depends on the filter alone once (constant-weights).
  bool constantWeights = false;
  int64_t tileM = hostGemmTile().m, tileN = hostGemmTile().n,
          tileK = hostGemmTile().k;
  /// CPU: bf16 GEMMs on AVX512-BF16's dot product where the host has it
  /// (pipelineOptions asks: the JIT's code runs here).
  bool bf16Dot = true;
  /// CPU: i8 GEMMs on AVX512-VNNI's dot product where the host has it.
  bool i8Dot = true;
  /// CPU: the bf16 GEMMs on AMX tiles (auto: where the host can run them).
  AMXChoice amx = AMXChoice::Auto;
  /// How messages spell the target option: "--target" (conv-run), "target"
  /// (the C API).
  llvm::StringRef targetFlag = "--target";
};
/// conv-run's request.
RouteRequest routeRequest(const RunOptions &options);

/// What the plan reads of the convolution and the machine.
struct RouteInputs {
  /// The convolution, when there is one to ask the CPU's cost rules
  /// (Winograd) and to describe the twin's kernels; not changed.
  ModuleOp module;
  llvm::StringRef function;
  /// The problem, when it comes from flags (or a ConvSpec).
  const ConvProblem *problem = nullptr;
  /// Whether X_col's size is known (not with a dynamic batch).
  bool xcolSizeKnown = true;
  /// Why the GPU route cannot take this request; nothing when it can.
  std::optional<std::string> gpuRefusal;
  /// The devices runtime/ found, when probed (cuda and auto need them).
  const DeviceStatus *devices = nullptr;
};

/// Everything decided before compiling.
struct RoutePlan {
  Target target = Target::Cpu; ///< never Auto
  /// The A operand is gathered (not X_col materialized first).
  bool implicit = true;
  /// How the A operand is formed, before the CPU's Winograd rule (which
  /// stores no X_col either).
  Im2colRoute operand = Im2colRoute::Implicit;
  /// cpu and cpu-twin: the route and its conv-lower-to-llvm options.
  std::optional<CpuRoute> cpuRoute;
  ConvLowerToLLVMOptions pipeline;
};

/// Resolves `request` for `inputs` and records the report's route fields:
/// the device section, target and why, pipeline, im2col and (CPU routes)
/// threads; for cpu-twin also the kernel it emulates (chip, family, tiles).
/// The errors are bad input (a target or mode that cannot be had).
llvm::Expected<RoutePlan> planRoute(const RouteRequest &request,
                                    const RouteInputs &inputs,
                                    RunReport &report);

/// The pipeline, as the report names it, and its options for a route.
llvm::StringRef pipelineName(CpuRoute route);
ConvLowerToLLVMOptions pipelineOptions(const RouteRequest &request,
                                       CpuRoute route);

/// Whether the runtime's GPU route (--target cuda, --emit-bundle) can run
/// `problem` although the kernel and its twin take it: not a 3-D problem (a
/// bundle's manifest and the cuDNN comparison are 2-D); `whyNot` says why.
LogicalResult checkGpuRoute(const ConvProblem &problem, std::string &whyNot);

/// Why `target` cannot run max pooling `problem`, in the terms of `flag`
/// ("--target" for conv-run, "target" for the C API): the GPU kernels and
/// their twin are convolutions. None for a convolution or a CPU target.
/// Asked before any device question, which would not change it.
std::optional<std::string> poolingTargetRefusal(const ConvProblem &problem,
                                                Target target,
                                                llvm::StringRef flag);

} // namespace mlir::conv_lower::runner

#endif
