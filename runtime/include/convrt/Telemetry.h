//===- Telemetry.h - What driver and devices this process sees --*- C++ -*-===//

#ifndef CONVRT_TELEMETRY_H
#define CONVRT_TELEMETRY_H

#include "convrt/Error.h"
#include "convrt/JsonFwd.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convrt {

class Driver;

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeCapabilityMajor = 0;
  int computeCapabilityMinor = 0;
  int multiprocessorCount = 0;
  uint64_t totalMemoryBytes = 0;
  std::string pciBusId;
  /// The most dynamic shared memory a block can opt in to.
  int maxSharedMemoryPerBlockOptin = 0;

  /// "sm_90" for compute capability 9.0.
  std::string chip() const;
};

struct Telemetry {
  std::string libraryPath;
  bool stub = false;
  int driverVersion = 0; ///< cuDriverGetVersion: 13000 for CUDA 13.0.
  std::vector<DeviceInfo> devices;
};

/// "13.0" for 13000, "12.4" for 12040.
std::string formatCudaVersion(int version);

/// Initializes the driver and asks it about every device.
Expected<Telemetry> queryTelemetry(Driver &driver);
Expected<DeviceInfo> queryDevice(const Driver &driver, int ordinal);

/// "[0] NVIDIA H200  sm_90 (compute capability 9.0)  132 SMs  ...".
std::string formatDeviceLine(const DeviceInfo &device);
std::string formatTelemetryText(const Telemetry &telemetry);
JsonValue telemetryJson(const Telemetry &telemetry);
JsonValue deviceJson(const DeviceInfo &device);

} // namespace convrt

#endif // CONVRT_TELEMETRY_H
