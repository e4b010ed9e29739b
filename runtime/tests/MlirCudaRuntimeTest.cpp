//===- MlirCudaRuntimeTest.cpp - The mgpu* ABI against the fake -----------===//
//
// Calls libconvrt_mlir_cuda.so the way JIT'd MLIR host code does. The
// library loads its driver once per process from CONVRT_LIBCUDA, set to the
// fake before the first call.
//
//===----------------------------------------------------------------------===//

#include "FakeCuda.h"

#include "convrt/MlirCudaRuntime.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using convrt::StridedMemRef;
using namespace convrt::test;

namespace {

class MlirCudaRuntimeTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    setenv("CONVRT_LIBCUDA", fakeLibcudaPath(), 1);
  }
  void SetUp() override { fake().setFailures(""); }
  void TearDown() override {
    fake().setFailures("");
    fake().expectNoLiveObjects();
    // Like upstream, the ABI retains each device's primary context for the
    // life of the process.
    EXPECT_LE(fake().live("contexts"), 2);
    EXPECT_EQ(fake().currentDevice(), -1) << "a context was left current";
  }
  static const FakeCuda &fake() { return FakeCuda::get(); }
  static std::string capture(const std::function<void()> &body) {
    ::testing::internal::CaptureStderr();
    body();
    return ::testing::internal::GetCapturedStderr();
  }
};

TEST_F(MlirCudaRuntimeTest, LaunchSequence) {
  std::string image = fakeImage();
  CUmodule module = mgpuModuleLoad(image.data(), image.size());
  ASSERT_NE(module, nullptr);
  CUfunction function = mgpuModuleGetFunction(module, "fake_add_one");
  ASSERT_NE(function, nullptr);
  CUstream stream = mgpuStreamCreate();
  ASSERT_NE(stream, nullptr);

  std::vector<float> host = {1, 2, 3, 4};
  size_t bytes = host.size() * sizeof(float);
  void *device = mgpuMemAlloc(bytes, stream, /*isHostShared=*/false);
  ASSERT_NE(device, nullptr);
  mgpuMemcpy(device, host.data(), bytes, stream);
  CUdeviceptr pointer = reinterpret_cast<CUdeviceptr>(device);
  int count = 4;
  void *params[] = {&pointer, &count};
  mgpuLaunchKernel(function, 1, 1, 1, 128, 1, 1, 0, stream, params, nullptr, 2);
  CUevent event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(stream, event);
  mgpuEventSynchronize(event);
  mgpuMemcpy(host.data(), device, bytes, stream);
  mgpuStreamSynchronize(stream);
  EXPECT_EQ(host, (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(fake().lastLaunch(),
            "fake_add_one grid=1,1,1 block=128,1,1 smem=0");

  mgpuEventDestroy(event);
  mgpuMemFree(device, stream);
  mgpuStreamDestroy(stream);
  mgpuModuleUnload(module);
}

TEST_F(MlirCudaRuntimeTest, LargeSharedMemorySetsTheAttribute) {
  std::string image = fakeImage();
  CUmodule module = mgpuModuleLoad(image.data(), image.size());
  CUfunction function = mgpuModuleGetFunction(module, "fake_noop");
  std::string err = capture([&] {
    mgpuLaunchKernel(function, 2, 1, 1, 32, 1, 1, 80 * 1024, nullptr, nullptr,
                     nullptr, 0);
  });
  EXPECT_EQ(err, "");
  EXPECT_EQ(fake().maxDynamicShared("fake_noop"), 80 * 1024);
  mgpuModuleUnload(module);
}

TEST_F(MlirCudaRuntimeTest, FailuresAreReportedWithTheCallName) {
  fake().setFailures("cuModuleLoadData:CUDA_ERROR_INVALID_IMAGE");
  std::string image = fakeImage();
  CUmodule module = nullptr;
  std::string err = capture([&] { module = mgpuModuleLoad(image.data(), 0); });
  EXPECT_EQ(module, nullptr);
  EXPECT_EQ(err, "convrt_mlir_cuda: cuModuleLoadData failed: "
                 "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)\n");

  fake().setFailures("cuMemAlloc:CUDA_ERROR_OUT_OF_MEMORY");
  void *device = nullptr;
  err = capture([&] { device = mgpuMemAlloc(64, nullptr, false); });
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(err, "convrt_mlir_cuda: cuMemAlloc failed: "
                 "CUDA_ERROR_OUT_OF_MEMORY (out of memory)\n");
}

TEST_F(MlirCudaRuntimeTest, JitFailurePrintsTheLog) {
  std::string ptx = ".version 9.0\n.target sm_90\n";
  CUmodule module = nullptr;
  std::string err = capture([&] { module = mgpuModuleLoadJIT(ptx.data(), 2); });
  EXPECT_EQ(module, nullptr);
  EXPECT_NE(err.find("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_IMAGE"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("JIT error log:\nfake ptxas fatal"), std::string::npos)
      << err;

  std::string good = fakeImage();
  module = mgpuModuleLoadJIT(good.data(), 2);
  ASSERT_NE(module, nullptr);
  mgpuModuleUnload(module);
}

TEST_F(MlirCudaRuntimeTest, MemsetsAndManagedMemory) {
  void *managed = mgpuMemAlloc(16, nullptr, /*isHostShared=*/true);
  ASSERT_NE(managed, nullptr);
  mgpuMemset32(managed, 0xDEADBEEF, 4, nullptr);
  EXPECT_EQ(static_cast<uint32_t *>(managed)[3], 0xDEADBEEFu);
  mgpuMemset16(managed, 0x1234, 8, nullptr);
  EXPECT_EQ(static_cast<uint16_t *>(managed)[7], 0x1234);
  mgpuMemFree(managed, nullptr);
  EXPECT_EQ(mgpuMemAlloc(0, nullptr, false), nullptr);
}

TEST_F(MlirCudaRuntimeTest, HostRegisterMemRef) {
  // memref<2x3xf32> at offset 2 of a 8-float buffer, dense strides [3, 1].
  std::vector<float> storage(8);
  struct {
    float *basePtr, *data;
    int64_t offset, sizes[2], strides[2];
  } memref = {storage.data(), storage.data(), 2, {2, 3}, {3, 1}};
  auto *descriptor = reinterpret_cast<StridedMemRef<char, 1> *>(&memref);
  mgpuMemHostRegisterMemRef(2, descriptor, sizeof(float));
  EXPECT_EQ(fake().live("host_registrations"), 1);
  std::string err = capture([&] {
    mgpuMemHostRegister(storage.data() + 2, 4); // overlaps
  });
  EXPECT_NE(err.find("cuMemHostRegister failed: "
                     "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"),
            std::string::npos)
      << err;
  mgpuMemHostUnregisterMemRef(2, descriptor, sizeof(float));
  EXPECT_EQ(fake().live("host_registrations"), 0);

  memref.strides[0] = 4; // padded rows: not dense
  err =
      capture([&] { mgpuMemHostRegisterMemRef(2, descriptor, sizeof(float)); });
  EXPECT_EQ(fake().live("host_registrations"), 0);
  EXPECT_NE(err.find("only densely packed memrefs can be registered"),
            std::string::npos)
      << err;
}

TEST_F(MlirCudaRuntimeTest, EncodesATensorMapIntoDeviceMemory) {
  // An NHWC f16 N8 H56 W56 C64 input as MLIR host code describes it: the
  // record of convrt/TensorMap.h, written out by hand as the compiler does.
  const int64_t record[30] = {
      1, 2, 4, 3,              // im2col, f16 (DType 2), rank 4, 128B swizzle
      64, 56, 56, 8, 0,        // dims
      128, 7168, 401408, 0, 0, // strides in bytes
      64, 128, 0, 0, 0,        // channelsPerPixel, pixelsPerColumn
      1, 1, 1, 1, 0,           // element strides
      -1, -1, 0,               // lower corner
      -1, -1, 0};              // upper corner
  size_t bytes = size_t(8) * 56 * 56 * 64 * 2;
  void *input = mgpuMemAlloc(bytes, nullptr, false);
  ASSERT_NE(input, nullptr);
  void *map = nullptr;
  std::string err =
      capture([&] { map = mgpuConvLowerEncodeTensorMap(input, record); });
  EXPECT_EQ(err, "");
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(map) % 64, 0u);
  EXPECT_EQ(fake().live("allocations"), 2);
  // The fake's device memory is host memory: read the fake's encoding.
  const auto *encoded = static_cast<const unsigned char *>(map);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(encoded), 8),
            "FAKETMAP");
  uint64_t address = 0, dims[4] = {};
  std::memcpy(&address, encoded + 8, 8);
  std::memcpy(dims, encoded + 16, sizeof(dims));
  EXPECT_EQ(address, reinterpret_cast<uintptr_t>(input));
  EXPECT_EQ(std::vector<uint64_t>(dims, dims + 4),
            (std::vector<uint64_t>{64, 56, 56, 8}));
  EXPECT_EQ(fake().calls("cuTensorMapEncodeIm2col"), 1);
  mgpuMemFree(map, nullptr);

  int64_t bad[30];
  std::memcpy(bad, record, sizeof(bad));
  bad[14] = 0; // no channels
  err = capture([&] { map = mgpuConvLowerEncodeTensorMap(input, bad); });
  EXPECT_EQ(map, nullptr);
  EXPECT_EQ(err, "convrt_mlir_cuda: tensor map record: box[0]: "
                 "channelsPerPixel 0 is not in 1..256\n");
  fake().setFailures("cuMemcpyHtoD:CUDA_ERROR_INVALID_VALUE");
  err = capture([&] { map = mgpuConvLowerEncodeTensorMap(input, record); });
  EXPECT_EQ(map, nullptr);
  EXPECT_NE(err.find("cuMemcpyHtoD failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << err;
  EXPECT_EQ(fake().live("allocations"), 1); // the map's was freed
  mgpuMemFree(input, nullptr);
}

TEST_F(MlirCudaRuntimeTest, DefaultDeviceSelectsThePrimaryContext) {
  setenv("FAKE_CUDA_DEVICE_COUNT", "2", 1);
  int before = fake().live("contexts");
  mgpuSetDefaultDevice(1);
  CUstream stream = mgpuStreamCreate();
  ASSERT_NE(stream, nullptr);
  mgpuStreamDestroy(stream);
  mgpuSetDefaultDevice(0);
  unsetenv("FAKE_CUDA_DEVICE_COUNT");
  EXPECT_EQ(fake().live("contexts"), before + 1);
}

} // namespace
