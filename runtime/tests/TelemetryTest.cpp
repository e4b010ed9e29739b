//===- TelemetryTest.cpp - Driver and device facts, as text and JSON ------===//

#include "TestSupport.h"

#include "convrt/Json.h"
#include "convrt/Telemetry.h"

using namespace convrt;
using namespace convrt::test;

namespace {

class TelemetryTest : public FakeCudaTest {};

TEST_F(TelemetryTest, QueriesTheFakeDevice) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<Telemetry> telemetry = queryTelemetry(*driver);
  ASSERT_TRUE(telemetry.ok()) << telemetry.error().message();
  EXPECT_EQ(telemetry->driverVersion, 13000);
  EXPECT_FALSE(telemetry->stub);
  ASSERT_EQ(telemetry->devices.size(), 1u);
  const DeviceInfo &device = telemetry->devices[0];
  EXPECT_EQ(device.name, "Fake GPU");
  EXPECT_EQ(device.computeCapabilityMajor, 9);
  EXPECT_EQ(device.computeCapabilityMinor, 0);
  EXPECT_EQ(device.chip(), "sm_90");
  EXPECT_EQ(device.multiprocessorCount, 132);
  EXPECT_EQ(device.totalMemoryBytes, uint64_t(80) << 30);
  EXPECT_EQ(device.pciBusId, "0000:10:00.0");
  EXPECT_EQ(device.maxSharedMemoryPerBlockOptin, 232448);
}

TEST_F(TelemetryTest, SeveralDevices) {
  ScopedEnv devices("FAKE_CUDA_DEVICE_COUNT", "3");
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<Telemetry> telemetry = queryTelemetry(*driver);
  ASSERT_TRUE(telemetry.ok());
  ASSERT_EQ(telemetry->devices.size(), 3u);
  EXPECT_EQ(telemetry->devices[2].ordinal, 2);
  EXPECT_EQ(telemetry->devices[2].pciBusId, "0000:12:00.0");
}

TEST_F(TelemetryTest, FailuresNameTheQuery) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  fake().setFailures("cuDeviceGetPCIBusId:CUDA_ERROR_INVALID_DEVICE");
  Expected<Telemetry> telemetry = queryTelemetry(*driver);
  ASSERT_FALSE(telemetry.ok());
  EXPECT_EQ(telemetry.error().message(),
            "cuDeviceGetPCIBusId failed: CUDA_ERROR_INVALID_DEVICE (invalid "
            "device ordinal)");
}

TEST(TelemetryFormatTest, CudaVersions) {
  EXPECT_EQ(formatCudaVersion(13000), "13.0");
  EXPECT_EQ(formatCudaVersion(12040), "12.4");
  EXPECT_EQ(formatCudaVersion(12090), "12.9");
  EXPECT_EQ(formatCudaVersion(11080), "11.8");
}

Telemetry sampleTelemetry() {
  Telemetry t;
  t.libraryPath = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06";
  t.driverVersion = 13000;
  DeviceInfo d;
  d.ordinal = 0;
  d.name = "NVIDIA H200";
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.multiprocessorCount = 132;
  d.totalMemoryBytes = uint64_t(143771) << 20;
  d.pciBusId = "0000:1B:00.0";
  d.maxSharedMemoryPerBlockOptin = 232448;
  t.devices.push_back(d);
  return t;
}

TEST(TelemetryFormatTest, Text) {
  EXPECT_EQ(
      formatTelemetryText(sampleTelemetry()),
      "driver: CUDA 13.0 (/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06)\n"
      "devices: 1\n"
      "  [0] NVIDIA H200  sm_90 (compute capability 9.0)  132 SMs  140.4 "
      "GiB  227 KiB smem/block  pci 0000:1B:00.0\n");
}

TEST(TelemetryFormatTest, JsonRoundTrips) {
  std::string text = dumpJson(telemetryJson(sampleTelemetry()), 2);
  Expected<JsonValue> parsed = parseJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message() << "\n" << text;
  EXPECT_EQ(parsed->at("driver_version").get<std::string>(), "13.0");
  EXPECT_EQ(parsed->at("device_count").get<int64_t>(), 1);
  EXPECT_FALSE(parsed->at("stub").get<bool>());
  const JsonValue &device = parsed->at("devices").at(0);
  EXPECT_EQ(device.at("name").get<std::string>(), "NVIDIA H200");
  EXPECT_EQ(device.at("compute_capability").get<std::string>(), "9.0");
  EXPECT_EQ(device.at("chip").get<std::string>(), "sm_90");
  EXPECT_EQ(device.at("multiprocessors").get<int64_t>(), 132);
  EXPECT_EQ(device.at("total_memory_bytes").get<int64_t>(), int64_t(143771)
                                                                << 20);
  EXPECT_EQ(device.at("pci_bus_id").get<std::string>(), "0000:1B:00.0");
}

} // namespace
