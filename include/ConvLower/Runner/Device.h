//===- Device.h - GPU devices as conv-run sees them -------------*- C++ -*-===//

#ifndef CONVLOWER_RUNNER_DEVICE_H
#define CONVLOWER_RUNNER_DEVICE_H

#include "ConvLower/Runner/Report.h"

#include <string>
#include <vector>

namespace mlir::conv_lower {

struct DeviceStatus {
  std::string driverVersion;       // "13.0", empty without a driver
  std::vector<DeviceInfo> devices; // usable devices
  std::string problem;             // why none is usable, with the fix
};

/// Asks the ConvLower runtime (libcuda through dlopen) for devices.
DeviceStatus probeDevices();

/// Prints the container-passthrough diagnosis; true when a device is usable.
bool runDoctor(llvm::raw_ostream &os, bool json);

} // namespace mlir::conv_lower

#endif
