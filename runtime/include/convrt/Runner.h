//===- Runner.h - Run, time and check a convolution kernel ------*- C++ -*-===//
//
// What convrt-run does for a bundle, as a library: load the kernel (cubin,
// else its PTX), fill the inputs with seeded random values rounded to their
// dtype, launch with the manifest's grid/block/shared memory, time the
// launches with events (median after warm-up), copy the output back, check it
// against the float64 reference and run cuDNN on the same problem for the
// baseline. conv-run's JIT route calls runKernel with the kernel it just
// compiled.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_RUNNER_H
#define CONVRT_RUNNER_H

#include "convrt/Manifest.h"
#include "convrt/ReferenceConv.h"
#include "convrt/Telemetry.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace convrt {

class Driver;

struct RunOptions {
  int warmup = 5;
  int repeat = 20;
  uint64_t seed = 0;
  int device = 0;
  /// Compare with the host float64 reference (slow for huge problems).
  bool check = true;
  /// Also time cuDNN on the same problem where it can be loaded.
  bool cudnn = true;
};

struct CudnnReport {
  bool ran = false;
  std::string reason; ///< Why it did not run (library absent, unsupported...).
  std::string version;
  std::string algorithm;
  double medianMs = 0;
  Comparison comparison;
};

struct RunReport {
  std::string source; ///< Bundle directory or a caller-given name.
  Manifest manifest;
  DeviceInfo device;
  int driverVersion = 0;
  std::string loadedFrom; ///< "cubin" or "ptx" (JIT).
  std::string loadNote;   ///< Why the PTX was used, if it was.
  int warmup = 0, repeat = 0;
  double medianMs = 0;
  bool checked = false;
  Comparison comparison;
  CudnnReport cudnn;

  double tflops() const;
  /// cuDNN's time over ours: > 1 means faster than cuDNN; 0 if no cuDNN.
  double vsCudnn() const;
  /// Checked and within tolerance (or not checked).
  bool passed() const { return !checked || comparison.pass; }
};

/// Runs a kernel given in memory (`binary` and/or `ptx`, per the manifest).
Expected<RunReport> runKernel(const Manifest &manifest,
                              const std::string &binary, const std::string &ptx,
                              std::shared_ptr<Driver> driver,
                              const RunOptions &options);

/// Loads the bundle's files and runs its kernel.
Expected<RunReport> runBundle(const Bundle &bundle,
                              std::shared_ptr<Driver> driver,
                              const RunOptions &options);

/// A kernel loaded once and launched many times on the caller's host
/// buffers: what a compiled handle of the C API holds for a CUDA target.
/// Loading acquires the device's primary context, loads the module (cubin,
/// else its PTX) and allocates one device buffer per manifest argument; each
/// run() copies the operands in, launches on its own stream, times the
/// launch with events and copies the output back. Calls from several
/// threads are serialized (the buffers are the session's).
class KernelSession {
public:
  static Expected<std::unique_ptr<KernelSession>>
  load(const Manifest &manifest, const std::string &binary,
       const std::string &ptx, std::shared_ptr<Driver> driver, int device = 0);

  /// Host operands in the manifest's layouts and dtypes (`bias` and
  /// `residual` may be null when the manifest has none); the output is
  /// written in its dtype. Returns the kernel's time in ms (events around
  /// the one launch).
  Expected<double> run(const void *input, const void *filter,
                       const void *bias, const void *residual, void *output);
  Expected<double> run(const void *input, const void *filter,
                       const void *bias, void *output) {
    return run(input, filter, bias, /*residual=*/nullptr, output);
  }

  const Manifest &manifest() const { return manifest_; }
  const DeviceInfo &device() const { return device_; }
  /// "cubin" or "ptx" (the PTX was JIT-compiled; loadNote says why).
  const std::string &loadedFrom() const { return loadedFrom_; }
  const std::string &loadNote() const { return loadNote_; }

  ~KernelSession();

private:
  struct State;
  KernelSession() = default;
  Manifest manifest_;
  DeviceInfo device_;
  std::string loadedFrom_, loadNote_;
  std::unique_ptr<State> state_;
  std::mutex mutex_;
};

std::string runTableHeader();
std::string runTableRow(const RunReport &report);
JsonValue runReportJson(const RunReport &report);

} // namespace convrt

#endif // CONVRT_RUNNER_H
