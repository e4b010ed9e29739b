//===- Report.h - what conv-run prints --------------------------*- C++ -*-===//

#ifndef CONVLOWER_RUNNER_REPORT_H
#define CONVLOWER_RUNNER_REPORT_H

#include "ConvLower/Runner/Reference.h"
#include "ConvLower/Runner/Routes.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::conv_lower {

/// One GPU as the runtime reports it.
struct DeviceInfo {
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int smCount = 0;
  uint64_t totalMemoryBytes = 0;
  std::string pciBusId;
};

struct RunReport {
  std::string problem;             // one-line description
  std::string source;              // "flags" or the .mlir path
  // Where it ran and why.
  Target target = Target::Auto;    // cpu, cpu-twin or cuda once run
  std::string targetReason;
  std::string driverVersion;       // empty without a driver
  std::vector<DeviceInfo> devices; // empty without a usable device
  std::string deviceProblem;       // why no device is usable, if none is
  // Compilation.
  std::string pipeline;
  Im2colRoute im2col = Im2colRoute::Implicit;
  double compileMs = 0;
  std::string diskCache; // CPU: "hit", "miss" or "off" (DiskCache.h)
  std::string kernel;              // GPU/twin: the kernel's tile attributes
  // GPU/twin: the kernel family (ImplicitGemmResult::family: "mma_sync",
  // "sm90a_tma_wgmma" or "direct_depthwise").
  // (Printed: the report names the families of every kernel it ran.)
  std::string kernelFamily;
  std::string chip;                // GPU/twin: the architecture compiled for
  std::optional<int64_t> threads;  // CPU: worker threads of the JIT code
  std::string openmpRuntime;       // CPU, threads > 1: the OpenMP library
  // Constant weights (CPU): what was computed from the filter once, before
  // the timed runs, and how long that took (not part of loweredMs).
  std::optional<double> packMs;
  std::optional<int64_t> packedBytes;
  // Timing (medians).
  int repeat = 0, warmup = 0;
  double loweredMs = 0;
  std::optional<double> referenceMs;
  int referenceRepeat = 0;
  std::string referenceKind;       // what the reference time measures
  std::optional<double> cudnnMs;   // GPU: cuDNN on the same problem
  std::string cudnnNote;           // its algorithm, or why it did not run
  std::optional<double> gflops;
  // Numerics.
  std::optional<CheckResult> check;
  std::string checkAgainst;
  // Memory.
  std::optional<int64_t> inputBytes, im2colBytes;
  std::string outputPath;
};

/// The members of a device-section JSON object: count, driver_version,
/// problem (when there is one) and the devices.
void writeDevicesJson(llvm::json::OStream &j, llvm::StringRef driverVersion,
                      llvm::ArrayRef<DeviceInfo> devices,
                      llvm::StringRef problem);

void printHuman(const RunReport &r, llvm::raw_ostream &os);
void printJson(const RunReport &r, llvm::raw_ostream &os);

} // namespace mlir::conv_lower

#endif
