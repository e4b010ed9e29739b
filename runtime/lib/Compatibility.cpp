//===- Compatibility.cpp - Can this device run that kernel? ---------------===//

#include "convrt/Compatibility.h"

#include "convrt/ChipName.h"

#include <cstdlib>

namespace convrt {

std::string ptxIsaVersion(std::string_view ptx) {
  size_t pos = 0;
  while (pos < ptx.size()) {
    size_t end = ptx.find('\n', pos);
    std::string_view line =
        ptx.substr(pos, end == std::string_view::npos ? ptx.npos : end - pos);
    size_t start = line.find_first_not_of(" \t");
    if (start != line.npos && line.substr(start, 9) == ".version ") {
      std::string_view rest = line.substr(start + 9);
      size_t last = rest.find_first_of(" \t\r/");
      return std::string(rest.substr(0, last));
    }
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  return "";
}

int cudaVersionForPtxIsa(const std::string &isa) {
  size_t dot = isa.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= isa.size())
    return 0;
  int major = std::atoi(isa.substr(0, dot).c_str());
  int minor = std::atoi(isa.substr(dot + 1).c_str());
  // PTX ISA 7.x shipped with CUDA 11.x, 8.0-8.5 with 12.0-12.5, 8.6-8.8
  // with 12.7-12.9 (12.6 kept 8.5), 9.x with 13.x.
  if (major == 8 && minor >= 6)
    return 12000 + (minor + 1) * 10;
  if (major >= 7)
    return (major + 4) * 1000 + minor * 10;
  return 10000; // older ISAs: any driver this runtime supports
}

int minimumDriverBranch(int cudaMajor) {
  switch (cudaMajor) {
  case 11:
    return 450;
  case 12:
    return 525;
  case 13:
    return 580;
  default:
    return 0;
  }
}

std::vector<std::string> compatibilityProblems(const KernelRequirements &kernel,
                                               int driverVersion,
                                               const DeviceInfo &device) {
  std::vector<std::string> problems;
  std::optional<ChipName> parsed = parseChipName(kernel.chip);
  ChipName chip = parsed.value_or(ChipName());
  const int devMajor = device.computeCapabilityMajor;
  const int devMinor = device.computeCapabilityMinor;
  const std::string deviceText =
      device.name + " is " + device.chip() + " (compute capability " +
      std::to_string(devMajor) + "." + std::to_string(devMinor) + ")";

  bool binaryRuns = false;
  if (kernel.hasBinary && parsed)
    binaryRuns = chip.suffix == 'a'
                     ? devMajor == chip.major && devMinor == chip.minor
                     : devMajor == chip.major && devMinor >= chip.minor;
  bool ptxArchOk = false;
  if (kernel.hasPtx && parsed)
    ptxArchOk = chip.suffix == 'a'
                    ? devMajor == chip.major && devMinor == chip.minor
                    : devMajor * 10 + devMinor >= chip.major * 10 + chip.minor;
  bool ptxDriverOk = kernel.ptxMinCudaVersion == 0 ||
                     driverVersion >= kernel.ptxMinCudaVersion;

  if (!parsed || (!kernel.hasBinary && !kernel.hasPtx) || binaryRuns ||
      (ptxArchOk && ptxDriverOk))
    return problems; // unknown target: let the driver decide

  if (kernel.hasBinary)
    problems.push_back("the kernel binary is built for " + kernel.chip +
                       " and " + deviceText + ": rebuild it for " +
                       device.chip() +
                       (chip.suffix == 'a' ? " (sm_XYa binaries run only on "
                                             "exactly that chip)"
                                           : ""));
  if (kernel.hasPtx && !ptxArchOk)
    problems.push_back("the PTX targets " + kernel.chip +
                       ", newer than the device (" + device.chip() +
                       "): it cannot be JIT-compiled for it");
  if (kernel.hasPtx && ptxArchOk && !ptxDriverOk) {
    int needed = kernel.ptxMinCudaVersion / 1000;
    problems.push_back(
        "driver supports CUDA " + formatCudaVersion(driverVersion) +
        "; the kernel's PTX (ISA " + kernel.ptxIsa + ") needs CUDA " +
        formatCudaVersion(kernel.ptxMinCudaVersion) +
        " or newer: update the host's NVIDIA driver" +
        (minimumDriverBranch(needed)
             ? " (R" + std::to_string(minimumDriverBranch(needed)) +
                   " or newer for CUDA " + std::to_string(needed) + ")"
             : "") +
        " or build the kernel with an older toolkit");
  }
  if (!kernel.hasPtx && !problems.empty())
    problems.back() += "; the bundle has no PTX to JIT-compile instead";
  return problems;
}

} // namespace convrt
