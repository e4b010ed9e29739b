//===- Device.cpp - GPU devices through the ConvLower runtime -------------===//
//
// conv-run asks runtime/ (convrt: libcuda through dlopen) what devices there
// are and, for --doctor, for the full container-passthrough diagnosis. A
// build without the CUDA toolkit's headers has no runtime; it says so.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Device.h"

#include "convrt/Diagnosis.h"

using namespace mlir::conv_lower;

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
    os << convrt::dumpJson(convrt::diagnosisJson(diagnosis), 2) << "\n";
  else
    os << convrt::formatDiagnosisText(diagnosis);
  return diagnosis.usable;
}

