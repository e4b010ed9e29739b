//===- convrt-info.cpp - Is there a usable GPU here, and if not, why? -----===//
//
// Prints the passthrough diagnosis (device nodes, kernel module, libcuda,
// driver version, devices, environment) and a verdict with the fix for each
// failure. Exit status: 0 when a device is usable, 1 when not, 2 for a bad
// command line. Needs no GPU, no MLIR, no CUDA at link time.
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"

#include "convrt/Compatibility.h"
#include "convrt/Diagnosis.h"
#include "convrt/Files.h"
#include "convrt/Manifest.h"

#include <cstdio>
#include <string>

using namespace convrt;

static void printUsage(const char *program) {
  std::printf(
      "usage: %s [--json] [--bundle DIR] [--device N] [--libcuda PATH]\n"
      "       [--dev-dir DIR] [--proc-dir DIR]\n\n"
      "Diagnoses whether this machine (or container) can run CUDA kernels.\n"
      "  --json          print the diagnosis as JSON\n"
      "  --bundle DIR    also check that device N can run the bundle's kernel\n"
      "  --device N      device checked against --bundle (default 0)\n"
      "  --libcuda PATH  load this libcuda (like CONVRT_LIBCUDA)\n"
      "  --dev-dir DIR   look for device nodes in DIR instead of /dev\n"
      "  --proc-dir DIR  read DIR instead of /proc\n"
      "Exit status: 0 a device is usable, 1 it is not, 2 bad arguments.\n",
      program);
}

/// What a bundle's kernel needs, from its manifest and PTX.
static Expected<KernelRequirements> bundleRequirements(const std::string &dir) {
  CONVRT_ASSIGN_OR_RETURN(Bundle bundle, loadBundle(dir));
  KernelRequirements requirements;
  requirements.chip = bundle.manifest.kernel.chip;
  requirements.hasBinary = !bundle.binaryPath.empty();
  requirements.hasPtx = !bundle.ptxPath.empty();
  if (requirements.hasPtx) {
    CONVRT_ASSIGN_OR_RETURN(std::string ptx, readFile(bundle.ptxPath));
    requirements.ptxIsa = ptxIsaVersion(ptx);
    requirements.ptxMinCudaVersion = cudaVersionForPtxIsa(requirements.ptxIsa);
  }
  return requirements;
}

int main(int argc, char **argv) {
  DiagnosisOptions options;
  bool json = false;
  std::string bundle;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    long long number = 0;
    bool ok = true;
    if (arg == "--json") {
      json = true;
    } else if (arg == "--bundle") {
      ok = tools::optionValue(argc, argv, i, bundle);
    } else if (arg == "--device") {
      ok = tools::integerOption(argc, argv, i, 0, 1 << 20, number);
      options.device = static_cast<int>(number);
    } else if (arg == "--libcuda") {
      ok = tools::optionValue(argc, argv, i, options.load.path);
    } else if (arg == "--dev-dir") {
      ok = tools::optionValue(argc, argv, i, options.devDirectory);
    } else if (arg == "--proc-dir") {
      ok = tools::optionValue(argc, argv, i, options.procDirectory);
    } else if (arg == "-h" || arg == "--help") {
      printUsage(argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "%s: unknown argument '%s' (see --help)\n", argv[0],
                   arg.c_str());
      return tools::kUsageExit;
    }
    if (!ok)
      return tools::kUsageExit;
  }

  if (!bundle.empty()) {
    Expected<KernelRequirements> requirements = bundleRequirements(bundle);
    if (!requirements.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[0],
                   requirements.error().message().c_str());
      return tools::kUsageExit;
    }
    options.kernel = *requirements;
  }

  Diagnosis diagnosis = diagnose(options);
  if (json)
    std::printf("%s\n", dumpJson(diagnosisJson(diagnosis), 2).c_str());
  else
    std::printf("%s", formatDiagnosisText(diagnosis).c_str());
  return diagnosis.usable ? 0 : 1;
}
