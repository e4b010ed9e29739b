//===- Library.h - Which libcuda to load, and what was loaded ---*- C++ -*-===//
//
// The loader's inputs and findings, apart from Driver.h so that the
// telemetry and diagnosis headers need no <cuda.h> on the include path.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_LIBRARY_H
#define CONVRT_LIBRARY_H

#include <string>
#include <vector>

namespace convrt {

/// The library name the NVIDIA driver installs (and the container toolkit
/// injects); the versionless libcuda.so belongs to development packages.
inline constexpr const char *kLibcudaSoname = "libcuda.so.1";
/// Environment variable naming the libcuda file to load (tests, odd installs).
inline constexpr const char *kLibcudaEnvVar = "CONVRT_LIBCUDA";

struct LoadOptions {
  /// Load exactly this file; empty: $CONVRT_LIBCUDA if set, else search.
  std::string path;
  /// Names/paths tried in order when searching; empty: the defaults
  /// (libcuda.so.1 through the dynamic linker, then the driver directories
  /// the dynamic linker cache may not list inside containers).
  std::vector<std::string> searchNames;
};

/// Where the driver came from.
struct LibraryInfo {
  std::string requested; ///< The name or path that was dlopen'ed.
  std::string realPath;  ///< The file actually mapped, symlinks resolved.
  bool stub = false;     ///< The toolkit's stub library (path or cuInit).
  std::string stubReason;
  /// True when entry points came from cuGetProcAddress_v2, false for dlsym.
  bool resolvedWithGetProcAddress = false;
  std::vector<std::string> missingEntryPoints;
  /// Optional entry points (DriverApi.h) the driver lacks: only the features
  /// needing them fail ("cuTensorMapEncodeTiled": TMA kernels).
  std::vector<std::string> missingOptionalEntryPoints;
};

} // namespace convrt

#endif // CONVRT_LIBRARY_H
