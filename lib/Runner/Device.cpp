//===- Device.cpp - GPU devices through the ConvLower runtime -------------===//
//
// conv-run asks runtime/ (convrt: libcuda through dlopen) what devices there
// are and, for --doctor, for the full container-passthrough diagnosis. A
// build without the CUDA toolkit's headers has no runtime; it says so.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Device.h"

#ifdef CONV_LOWER_HAVE_RUNTIME
#include "convrt/Diagnosis.h"
#endif

using namespace mlir::conv_lower;

#ifdef CONV_LOWER_HAVE_RUNTIME

static DeviceInfo toDeviceInfo(const convrt::DeviceInfo &d) {
  DeviceInfo info;
  info.name = d.name;
  info.ccMajor = d.computeCapabilityMajor;
  info.ccMinor = d.computeCapabilityMinor;
  info.smCount = d.multiprocessorCount;
  info.totalMemoryBytes = d.totalMemoryBytes;
  info.pciBusId = d.pciBusId;
  return info;
}

DeviceStatus mlir::conv_lower::probeDevices() {
  convrt::Diagnosis diagnosis = convrt::diagnose();
  DeviceStatus status;
  if (diagnosis.driverVersion)
    status.driverVersion = convrt::formatCudaVersion(diagnosis.driverVersion);
  if (diagnosis.usable)
    for (const convrt::DeviceInfo &d : diagnosis.devices)
      status.devices.push_back(toDeviceInfo(d));
  else
    status.problem = diagnosis.verdict;
  return status;
}

bool mlir::conv_lower::runDoctor(llvm::raw_ostream &os, bool json) {
  convrt::Diagnosis diagnosis = convrt::diagnose();
  if (json)
    os << convrt::diagnosisJson(diagnosis).dump(2) << "\n";
  else
    os << convrt::formatDiagnosisText(diagnosis);
  return diagnosis.usable;
}

#else

static constexpr const char *kNoRuntime =
    "this conv-run was built without the CUDA runtime (no cuda.h when it was "
    "configured): install the CUDA toolkit and rebuild";

DeviceStatus mlir::conv_lower::probeDevices() {
  DeviceStatus status;
  status.problem = kNoRuntime;
  return status;
}

bool mlir::conv_lower::runDoctor(llvm::raw_ostream &os, bool) {
  os << "no usable GPU: " << kNoRuntime << "\n";
  return false;
}

#endif
