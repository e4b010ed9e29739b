//===- LaunchTest.cpp - Load, allocate, copy, launch, time, copy back -----===//

#include "TestSupport.h"

#include "convrt/Context.h"
#include "convrt/Memory.h"
#include "convrt/Module.h"
#include "convrt/Stream.h"
#include "convrt/Timing.h"

#include <cctype>
#include <vector>

using namespace convrt;
using namespace convrt::test;

namespace {

struct SequenceResult {
  std::vector<float> data;
  float elapsedMs = 0;
};

/// The whole launch sequence of a kernel, each step through the RAII API:
/// every early return must release what the earlier steps acquired.
Expected<SequenceResult> addOneSequence(std::shared_ptr<Driver> driver,
                                        std::vector<float> input,
                                        unsigned sharedBytes = 0) {
  CONVRT_ASSIGN_OR_RETURN(PrimaryContext context,
                          PrimaryContext::acquire(driver, 0));
  std::string image = fakeImage();
  CONVRT_ASSIGN_OR_RETURN(Module module,
                          Module::loadImage(driver, image.c_str()));
  CONVRT_ASSIGN_OR_RETURN(Function function, module.function("fake_add_one"));
  size_t bytes = input.size() * sizeof(float);
  CONVRT_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                          DeviceBuffer::allocate(driver, bytes));
  CONVRT_ASSIGN_OR_RETURN(DeviceBuffer scratch,
                          DeviceBuffer::allocate(driver, 64));
  CONVRT_TRY(scratch.fillBytes(0));
  CONVRT_TRY(buffer.copyFromHost(input.data(), bytes));
  CONVRT_ASSIGN_OR_RETURN(Stream stream, Stream::create(driver));
  CONVRT_ASSIGN_OR_RETURN(Event start, Event::create(driver));
  CONVRT_ASSIGN_OR_RETURN(Event stop, Event::create(driver));

  CUdeviceptr pointer = buffer.get();
  int count = static_cast<int>(input.size());
  void *params[] = {&pointer, &count};
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {256, 1, 1};
  config.dynamicSharedMemoryBytes = sharedBytes;
  config.stream = stream.get();
  CONVRT_TRY(start.record(stream.get()));
  CONVRT_TRY(function.launch(config, params));
  CONVRT_TRY(stop.record(stream.get()));
  SequenceResult result;
  CONVRT_ASSIGN_OR_RETURN(result.elapsedMs, Event::elapsedMs(start, stop));
  CONVRT_TRY(stream.synchronize());
  result.data.resize(input.size());
  CONVRT_TRY(buffer.copyToHost(result.data.data(), bytes));
  return result;
}

class LaunchTest : public FakeCudaTest {};

TEST_F(LaunchTest, SequenceComputesOnTheFake) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<SequenceResult> result = addOneSequence(driver, {1.f, 2.5f, -3.f});
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->data, (std::vector<float>{2.f, 3.5f, -2.f}));
  EXPECT_FLOAT_EQ(result->elapsedMs, 0.5f); // the fake clock per launch
  EXPECT_EQ(fake().lastLaunch(),
            "fake_add_one grid=1,1,1 block=256,1,1 smem=0");
  EXPECT_EQ(fake().maxDynamicShared("fake_add_one"), -1)
      << "no attribute below 48 KiB";
}

TEST_F(LaunchTest, LargeDynamicSharedMemorySetsTheAttributeFirst) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<SequenceResult> result = addOneSequence(driver, {1.f}, 100 * 1024);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(fake().maxDynamicShared("fake_add_one"), 100 * 1024);
  EXPECT_EQ(fake().lastLaunch(),
            "fake_add_one grid=1,1,1 block=256,1,1 smem=102400");
}

TEST_F(LaunchTest, SharedMemoryBeyondTheDeviceLimitIsANamedError) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<SequenceResult> result = addOneSequence(driver, {1.f}, 300 * 1024);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().call(), "cuFuncSetAttribute");
  EXPECT_EQ(result.error().message(),
            "kernel fake_add_one asks for 307200 bytes of dynamic shared "
            "memory: cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE "
            "(invalid argument)");
}

TEST_F(LaunchTest, UnknownKernelNamesTheKernel) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver);
  ASSERT_TRUE(context.ok());
  std::string image = fakeImage();
  Expected<Module> module = Module::loadImage(driver, image.c_str());
  ASSERT_TRUE(module.ok());
  Expected<Function> function = module->function("no_such_kernel");
  ASSERT_FALSE(function.ok());
  EXPECT_EQ(function.error().message(),
            "kernel no_such_kernel: cuModuleGetFunction failed: "
            "CUDA_ERROR_NOT_FOUND (named symbol not found)");
}

TEST_F(LaunchTest, PtxLoadReportsTheJitLogs) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver);
  ASSERT_TRUE(context.ok());
  Expected<Module> good = Module::loadPtx(driver, fakeImage(), 3);
  ASSERT_TRUE(good.ok()) << good.error().message();
  EXPECT_EQ(good->jitInfoLog(), "fake ptxas info: compiled 3 fake kernels");

  Expected<Module> bad =
      Module::loadPtx(driver, ".version 9.0\n.target sm_90\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().call(), "cuModuleLoadDataEx");
  EXPECT_EQ(
      bad.error().message(),
      "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_IMAGE (device kernel "
      "image is invalid): JIT error log:\nfake ptxas fatal: line 1: image "
      "does not start with FAKECUBIN");
}

TEST_F(LaunchTest, TimingTakesTheMedianAfterWarmup) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver);
  ASSERT_TRUE(context.ok());
  std::string image = fakeImage();
  Expected<Module> module = Module::loadImage(driver, image.c_str());
  ASSERT_TRUE(module.ok());
  Expected<Function> function = module->function("fake_noop");
  ASSERT_TRUE(function.ok());
  Expected<Stream> stream = Stream::create(driver);
  ASSERT_TRUE(stream.ok());
  LaunchConfig config;
  config.stream = stream->get();
  fake().setFailures(""); // restart call counting
  Expected<LaunchTiming> timing = timeLaunches(
      driver, *stream, 3, 5, [&] { return function->launch(config, nullptr); });
  ASSERT_TRUE(timing.ok()) << timing.error().message();
  EXPECT_EQ(fake().calls("cuLaunchKernel"), 8);
  EXPECT_EQ(timing->samplesMs.size(), 5u);
  EXPECT_DOUBLE_EQ(timing->medianMs, 0.5);
  EXPECT_FALSE(
      timeLaunches(driver, *stream, 0, 0, [] { return Error(); }).ok());
}

TEST_F(LaunchTest, MovedFromObjectsReleaseNothingTwice) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver);
  ASSERT_TRUE(context.ok());
  Expected<DeviceBuffer> a = DeviceBuffer::allocate(driver, 16);
  Expected<DeviceBuffer> b = DeviceBuffer::allocate(driver, 32);
  ASSERT_TRUE(a.ok() && b.ok());
  *a = std::move(*b); // frees a's first allocation
  EXPECT_EQ(fake().live("allocations"), 1);
  EXPECT_EQ(a->size(), 32u);
  EXPECT_EQ(b->get(), 0u);
  Error freed = a->free();
  EXPECT_TRUE(freed.ok()) << freed.message();
  EXPECT_EQ(fake().live("allocations"), 0);
  PrimaryContext moved = std::move(*context);
  EXPECT_EQ(fake().live("contexts"), 1);
}

TEST_F(LaunchTest, ContextScopesNest) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  EXPECT_EQ(fake().currentDevice(), -1);
  {
    Expected<PrimaryContext> outer = PrimaryContext::acquire(driver);
    ASSERT_TRUE(outer.ok());
    {
      Expected<PrimaryContext> inner = PrimaryContext::acquire(driver);
      ASSERT_TRUE(inner.ok());
      EXPECT_EQ(fake().live("contexts"), 2);
    }
    // The outer scope's context is still current: its work goes on.
    EXPECT_EQ(fake().currentDevice(), 0);
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(driver, 4);
    EXPECT_TRUE(buffer.ok()) << buffer.error().message();
  }
  EXPECT_EQ(fake().currentDevice(), -1);
}

TEST_F(LaunchTest, CopiesAreBoundsChecked) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver);
  ASSERT_TRUE(context.ok());
  Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(driver, 8);
  ASSERT_TRUE(buffer.ok());
  char bytes[16] = {};
  Error error = buffer->copyFromHost(bytes, 16);
  EXPECT_EQ(error.message(),
            "host-to-device copy of 16 bytes exceeds the buffer's 8");
}

/// Each step of the sequence made to fail in turn: the error names the
/// call and the driver's error, and nothing stays alive.
struct InjectedFailure {
  const char *spec;
  const char *call;
  CUresult code;
  const char *errorName;
  unsigned sharedBytes = 0;
};

/// Readable test names in ctest's list (the default prints raw bytes).
void PrintTo(const InjectedFailure &failure, std::ostream *os) {
  *os << failure.spec;
}

#define FAILURE(call, error, ...)                                              \
  InjectedFailure { #call ":" #error __VA_ARGS__, #call, error, #error }

class LaunchFailureTest
    : public FakeCudaTest,
      public ::testing::WithParamInterface<InjectedFailure> {};

TEST_P(LaunchFailureTest, NamesTheCallAndLeaksNothing) {
  const InjectedFailure &failure = GetParam();
  std::shared_ptr<Driver> driver = loadFakeDriver(); // a fresh cuInit
  ASSERT_TRUE(driver);
  fake().setFailures(failure.spec);
  Expected<SequenceResult> result =
      addOneSequence(driver, {1.f, 2.f}, failure.sharedBytes);
  ASSERT_FALSE(result.ok()) << "expected " << failure.spec << " to fail";
  EXPECT_EQ(result.error().call(), failure.call);
  EXPECT_EQ(result.error().code(), static_cast<int>(failure.code));
  std::string expected =
      std::string(failure.call) + " failed: " + failure.errorName + " (";
  EXPECT_NE(result.error().message().find(expected), std::string::npos)
      << result.error().message();
  // TearDown checks that nothing leaked.
}

INSTANTIATE_TEST_SUITE_P(
    EveryStep, LaunchFailureTest,
    ::testing::Values(
        FAILURE(cuInit, CUDA_ERROR_NO_DEVICE),
        FAILURE(cuDeviceGet, CUDA_ERROR_INVALID_VALUE),
        FAILURE(cuDevicePrimaryCtxRetain, CUDA_ERROR_OUT_OF_MEMORY),
        FAILURE(cuCtxSetCurrent, CUDA_ERROR_INVALID_VALUE),
        FAILURE(cuModuleLoadData, CUDA_ERROR_INVALID_IMAGE),
        FAILURE(cuModuleGetFunction, CUDA_ERROR_INVALID_HANDLE),
        FAILURE(cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY, "@1"),
        FAILURE(cuMemAlloc, CUDA_ERROR_OUT_OF_MEMORY, "@2"),
        FAILURE(cuMemsetD8, CUDA_ERROR_INVALID_VALUE),
        FAILURE(cuMemcpyHtoD, CUDA_ERROR_INVALID_VALUE),
        FAILURE(cuStreamCreate, CUDA_ERROR_OUT_OF_MEMORY),
        FAILURE(cuEventCreate, CUDA_ERROR_OUT_OF_MEMORY, "@2"),
        FAILURE(cuEventRecord, CUDA_ERROR_INVALID_HANDLE, "@2"),
        InjectedFailure{"cuFuncSetAttribute:CUDA_ERROR_INVALID_VALUE",
                        "cuFuncSetAttribute", CUDA_ERROR_INVALID_VALUE,
                        "CUDA_ERROR_INVALID_VALUE", 64 * 1024},
        FAILURE(cuLaunchKernel, CUDA_ERROR_LAUNCH_FAILED),
        FAILURE(cuEventElapsedTime, CUDA_ERROR_INVALID_HANDLE),
        FAILURE(cuStreamSynchronize, CUDA_ERROR_LAUNCH_FAILED),
        FAILURE(cuMemcpyDtoH, CUDA_ERROR_LAUNCH_FAILED)),
    [](const ::testing::TestParamInfo<InjectedFailure> &info) {
      std::string name = info.param.spec;
      for (char &c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)))
          c = '_';
      return name;
    });

} // namespace
