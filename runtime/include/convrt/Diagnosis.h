//===- Diagnosis.h - Why is there no usable GPU here? -----------*- C++ -*-===//
//
// Walks the chain a CUDA program in a container depends on - device nodes,
// the kernel module, the injected libcuda, cuInit, the devices, the driver's
// CUDA version against what the kernels need - and states, for each broken
// link, what is wrong and how to fix it. The verdict is "usable" only when
// nothing failed. The driver has the last word: where libcuda loads, cuInit
// succeeds and a device is found, missing or odd /dev/nvidia* nodes and
// /proc entries are warnings (WSL2 has /dev/dxg, CDI and other runtimes name
// nodes differently); where the driver fails, they are failures named first,
// as the likeliest cause. Nothing here crashes or throws: every probe's
// failure is a finding.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_DIAGNOSIS_H
#define CONVRT_DIAGNOSIS_H

#include "convrt/Compatibility.h"
#include "convrt/Json.h" // whole: clients print diagnosisJson() at once
#include "convrt/Library.h"
#include "convrt/Telemetry.h"

#include <optional>
#include <string>
#include <vector>

namespace convrt {

struct DiagnosisOptions {
  /// Where to look for device nodes and procfs (tests point them at
  /// prepared directories).
  std::string devDirectory = "/dev";
  std::string procDirectory = "/proc";
  /// Which libcuda to load (default: $CONVRT_LIBCUDA, else the search).
  LoadOptions load;
  /// Device whose compatibility with `kernel` is checked.
  int device = 0;
  /// What the kernels to run need (e.g. from a bundle), if known.
  std::optional<KernelRequirements> kernel;
};

struct DeviceNode {
  std::string path;
  bool present = false;
  bool characterDevice = false;
  bool accessible = false; ///< Readable and writable by this process.
  unsigned major = 0, minor = 0;
};

struct Finding {
  enum class Severity { Note, Warning, Failure };
  Severity severity = Severity::Note;
  std::string what; ///< What is wrong (or notable).
  std::string fix;  ///< What to do; empty for notes.
};

struct EnvironmentVariable {
  std::string name;
  std::optional<std::string> value; ///< nullopt: unset.
};

struct Diagnosis {
  bool inContainer = false;
  std::string containerEvidence;
  std::vector<EnvironmentVariable> environment;

  std::vector<DeviceNode> nodes; ///< nvidiactl, nvidia-uvm, nvidia0...
  bool wsl = false;              ///< /dev/dxg: WSL2 needs no nvidia nodes.

  std::string kernelModuleVersionLine; ///< First line of .../nvidia/version.
  std::string kernelModuleVersion;     ///< "580.65.06".

  bool libraryLoaded = false;
  std::string libraryError;
  LibraryInfo library;
  bool bindMounted = false;    ///< The file is a mount point (toolkit).
  std::string userModeVersion; ///< From libcuda.so.<version>.

  bool initialized = false;
  std::string initError;
  int initCode = 0;
  int driverVersion = 0;
  std::vector<DeviceInfo> devices;
  std::optional<KernelRequirements> kernel;

  std::vector<Finding> findings;
  bool usable = false;
  std::string verdict; ///< One line, starting "usable" or "no usable GPU".
};

Diagnosis diagnose(const DiagnosisOptions &options = {});

std::string formatDiagnosisText(const Diagnosis &diagnosis);
JsonValue diagnosisJson(const Diagnosis &diagnosis);

} // namespace convrt

#endif // CONVRT_DIAGNOSIS_H
