//===- Manifest.h - AOT bundles: manifest.json + kernel ---------*- C++ -*-===//
//
// A bundle is a directory holding manifest.json, the kernel binary (cubin or
// fatbin) and, optionally, the PTX it came from. The schema is documented in
// runtime/README.md; parsing is strict (unknown fields are errors, so typos
// do not pass silently) and every error names the field's path
// ("manifest.json: kernel.grid[1]: expected a positive integer, got -2").
//
// Kernel arguments are plain device pointers, passed in the order the
// manifest's "arguments" list them, followed by the "tensor_maps" (TMA
// descriptors of some of those buffers, TensorMap.h), by value, in their
// order.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_MANIFEST_H
#define CONVRT_MANIFEST_H

#include "convrt/ConvProblem.h"
#include "convrt/Dim3.h"
#include "convrt/JsonFwd.h"
#include "convrt/TensorMap.h"

#include <string>
#include <vector>

namespace convrt {

inline constexpr int kManifestFormatVersion = 1;
inline constexpr const char *kManifestFileName = "manifest.json";

struct KernelSpec {
  std::string name;   ///< Entry point in the binary.
  std::string binary; ///< cubin/fatbin file in the bundle ("" if PTX only).
  std::string ptx;    ///< PTX file in the bundle ("" if none).
  Dim3 grid;
  Dim3 block;
  unsigned sharedMemoryBytes = 0; ///< Dynamic shared memory per block.
  std::string chip;               ///< "sm_90", "sm_90a", ... ("" unknown).
};

/// A residual is the output's shape and dtype, added to the convolution
/// (and bias) in the kernel's epilogue, before any activation.
enum class ArgumentRole { Input, Filter, Bias, Residual, Output };
const char *argumentRoleName(ArgumentRole role);

struct ArgumentSpec {
  std::string name;
  ArgumentRole role = ArgumentRole::Input;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

struct Manifest {
  int formatVersion = kManifestFormatVersion;
  /// Free-form provenance ("conv-run 0.1.0 ..."), kept but not interpreted.
  std::string generator;
  KernelSpec kernel;
  std::vector<ArgumentSpec> arguments;
  /// CUtensorMap parameters after the pointers (sm_90a TMA kernels), each
  /// encoded at launch for its argument's buffer; optional, empty for
  /// kernels that take pointers only.
  std::vector<TensorMapSpec> tensorMaps;
  /// The convolution; whether it has a bias is decided by the arguments
  /// (parseManifest sets problem.hasBias from them).
  ConvProblem problem;

  /// Index in `arguments` of the argument with `role`, or -1.
  int find(ArgumentRole role) const;
  /// Index in `arguments` of the argument named `name`, or -1.
  int findArgument(const std::string &name) const;
};

/// Parses and validates manifest text; `source` names it in errors.
Expected<Manifest> parseManifest(std::string_view text,
                                 const std::string &source = kManifestFileName);

/// Checks what parsing cannot see from the JSON alone: exactly one input,
/// filter and output (at most one bias and one residual), each with the
/// shape and dtype the
/// problem implies, a launchable kernel spec, and tensor maps that pass
/// validateTensorMap, each naming an argument of its dtype whose buffer
/// holds all the map spans. parseManifest calls it; writers call it before
/// writing.
Error validateManifest(const Manifest &manifest);

JsonValue manifestToJson(const Manifest &manifest);

struct Bundle {
  std::string directory;
  Manifest manifest;
  std::string binaryPath; ///< Absolute or relative to cwd; "" if none.
  std::string ptxPath;    ///< "" if none.
};

/// Reads DIR/manifest.json and checks that the files it names exist.
Expected<Bundle> loadBundle(const std::string &directory);

/// Writes manifest.json plus the binary and PTX (each only if the manifest
/// names it) into an existing directory.
Error writeBundle(const std::string &directory, const Manifest &manifest,
                  const std::string &binary, const std::string &ptx);

} // namespace convrt

#endif // CONVRT_MANIFEST_H
