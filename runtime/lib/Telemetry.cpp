//===- Telemetry.cpp - What driver and devices this process sees ----------===//

#include "convrt/Telemetry.h"

#include "convrt/Driver.h"
#include "convrt/Json.h"

#include <cstdio>

namespace convrt {

std::string DeviceInfo::chip() const {
  return "sm_" + std::to_string(computeCapabilityMajor) +
         std::to_string(computeCapabilityMinor);
}

std::string formatCudaVersion(int version) {
  return std::to_string(version / 1000) + "." +
         std::to_string((version % 1000) / 10);
}

Expected<DeviceInfo> queryDevice(const Driver &driver, int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  CUdevice device = 0;
  CONVRT_TRY(CONVRT_CU(driver, cuDeviceGet)(&device, ordinal));
  char name[256] = {0};
  CONVRT_TRY(
      CONVRT_CU(driver, cuDeviceGetName)(name, int(sizeof(name)) - 1, device));
  info.name = name;
  struct {
    CUdevice_attribute attribute;
    int *slot;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
       &info.computeCapabilityMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
       &info.computeCapabilityMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessorCount},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.maxSharedMemoryPerBlockOptin},
  };
  for (auto &entry : attributes)
    CONVRT_TRY(CONVRT_CU(driver, cuDeviceGetAttribute)(
        entry.slot, entry.attribute, device));
  size_t bytes = 0;
  CONVRT_TRY(CONVRT_CU(driver, cuDeviceTotalMem)(&bytes, device));
  info.totalMemoryBytes = bytes;
  char busId[64] = {0};
  CONVRT_TRY(CONVRT_CU(driver, cuDeviceGetPCIBusId)(
      busId, int(sizeof(busId)) - 1, device));
  info.pciBusId = busId;
  return info;
}

Expected<Telemetry> queryTelemetry(Driver &driver) {
  Telemetry telemetry;
  telemetry.libraryPath = driver.library().realPath;
  CONVRT_TRY(driver.init());
  telemetry.stub = driver.isStub();
  CONVRT_ASSIGN_OR_RETURN(telemetry.driverVersion, driver.version());
  int count = 0;
  CONVRT_TRY(CONVRT_CU(driver, cuDeviceGetCount)(&count));
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CONVRT_ASSIGN_OR_RETURN(DeviceInfo info, queryDevice(driver, ordinal));
    telemetry.devices.push_back(std::move(info));
  }
  return telemetry;
}

static std::string gibibytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", double(bytes) / (1u << 30));
  return text;
}

std::string formatDeviceLine(const DeviceInfo &d) {
  return "[" + std::to_string(d.ordinal) + "] " + d.name + "  " + d.chip() +
         " (compute capability " + std::to_string(d.computeCapabilityMajor) +
         "." + std::to_string(d.computeCapabilityMinor) + ")  " +
         std::to_string(d.multiprocessorCount) + " SMs  " +
         gibibytes(d.totalMemoryBytes) + "  " +
         std::to_string(d.maxSharedMemoryPerBlockOptin / 1024) +
         " KiB smem/block  pci " + d.pciBusId;
}

std::string formatTelemetryText(const Telemetry &t) {
  std::string text = "driver: CUDA " + formatCudaVersion(t.driverVersion) +
                     " (" + t.libraryPath + (t.stub ? ", stub" : "") + ")\n";
  text += "devices: " + std::to_string(t.devices.size()) + "\n";
  for (const DeviceInfo &d : t.devices)
    text += "  " + formatDeviceLine(d) + "\n";
  return text;
}

JsonValue deviceJson(const DeviceInfo &d) {
  return {{"ordinal", d.ordinal},
          {"name", d.name},
          {"compute_capability", std::to_string(d.computeCapabilityMajor) +
                                     "." +
                                     std::to_string(d.computeCapabilityMinor)},
          {"chip", d.chip()},
          {"multiprocessors", d.multiprocessorCount},
          {"total_memory_bytes", d.totalMemoryBytes},
          {"max_shared_memory_per_block_optin", d.maxSharedMemoryPerBlockOptin},
          {"pci_bus_id", d.pciBusId}};
}

JsonValue telemetryJson(const Telemetry &t) {
  JsonValue devices = JsonValue::array();
  for (const DeviceInfo &d : t.devices)
    devices.push_back(deviceJson(d));
  return {{"library", t.libraryPath},
          {"stub", t.stub},
          {"driver_version", formatCudaVersion(t.driverVersion)},
          {"device_count", t.devices.size()},
          {"devices", std::move(devices)}};
}

} // namespace convrt
