//===- Compatibility.h - Can this device run that kernel? -------*- C++ -*-===//
//
// A cubin for sm_XY runs on devices of compute capability X.Z with Z >= Y
// (sm_XYa: exactly X.Y); PTX is JIT-compiled for any capability >= X.Y, but
// only by a driver that knows its PTX ISA version. These checks turn a bare
// CUDA_ERROR_NO_BINARY_FOR_GPU / UNSUPPORTED_PTX_VERSION into the reason.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_COMPATIBILITY_H
#define CONVRT_COMPATIBILITY_H

#include "convrt/Telemetry.h"

#include <string>
#include <string_view>
#include <vector>

namespace convrt {

struct KernelRequirements {
  std::string chip;       ///< "sm_90a" (empty: unknown).
  bool hasBinary = false; ///< A cubin/fatbin for `chip`.
  bool hasPtx = false;
  std::string ptxIsa;        ///< "9.0" from the PTX's .version line.
  int ptxMinCudaVersion = 0; ///< 13000: the oldest driver that JITs it.
};

/// The PTX ISA of `ptx` text (".version 9.0" -> "9.0"), or "".
std::string ptxIsaVersion(std::string_view ptx);
/// The first CUDA version whose driver accepts PTX ISA `isa` (9.0 -> 13000),
/// or 0 if `isa` is not a version.
int cudaVersionForPtxIsa(const std::string &isa);
/// The oldest Linux driver branch for a CUDA major version (13 -> 580).
int minimumDriverBranch(int cudaMajor);

/// Why `device` under a driver of `driverVersion` cannot run the kernel;
/// empty when it can (through the binary or the PTX).
std::vector<std::string> compatibilityProblems(const KernelRequirements &kernel,
                                               int driverVersion,
                                               const DeviceInfo &device);

} // namespace convrt

#endif // CONVRT_COMPATIBILITY_H
