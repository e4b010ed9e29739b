//===- DeviceTest.cpp - The runtime on a real GPU (skipped without one) ---===//
//
// These run only where the diagnosis says a device is usable (bench/gpu's
// machine); elsewhere each test skips with the verdict as its reason.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "kernels/NaiveConvProblem.h"

#include "convrt/Context.h"
#include "convrt/Diagnosis.h"
#include "convrt/Files.h"
#include "convrt/Memory.h"
#include "convrt/Module.h"
#include "convrt/Runner.h"
#include "convrt/Stream.h"
#include "convrt/Telemetry.h"

using namespace convrt;
using namespace convrt::test;

namespace {

/// add_one(float *data, int n) in hand-written PTX: JIT-compiled by the
/// driver for whatever GPU is present, no nvcc needed.
const char *kAddOnePtx = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry add_one(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;

  ld.param.u64 %rd1, [data];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
)";

class DeviceTest : public ::testing::Test {
protected:
  void SetUp() override {
    Diagnosis diagnosis = diagnose();
    if (!diagnosis.usable)
      GTEST_SKIP() << "needs a usable CUDA device; " << diagnosis.verdict;
    Expected<std::shared_ptr<Driver>> driver = Driver::load();
    ASSERT_TRUE(driver.ok()) << driver.error().message();
    driver_ = *driver;
    // dlopen("libcuda.so.1") returns any library already loaded under that
    // soname: the fake, if an earlier test of this process loaded it.
    if (driver_->library().realPath == canonicalPath(fakeLibcudaPath()))
      GTEST_SKIP() << "the fake libcuda is loaded in this process; run the "
                      "device tests alone (ctest runs each test in its own "
                      "process)";
    ASSERT_TRUE(driver_->init().ok());
  }
  std::shared_ptr<Driver> driver_;
};

TEST_F(DeviceTest, Telemetry) {
  Expected<Telemetry> telemetry = queryTelemetry(*driver_);
  ASSERT_TRUE(telemetry.ok()) << telemetry.error().message();
  ASSERT_FALSE(telemetry->devices.empty());
  EXPECT_GE(telemetry->driverVersion, 11000);
  const DeviceInfo &device = telemetry->devices[0];
  EXPECT_FALSE(device.name.empty());
  EXPECT_GE(device.computeCapabilityMajor, 7);
  EXPECT_GT(device.multiprocessorCount, 0);
  EXPECT_GT(device.totalMemoryBytes, 0u);
  EXPECT_GE(device.maxSharedMemoryPerBlockOptin, 48 * 1024);
  std::printf("%s", formatTelemetryText(*telemetry).c_str());
}

TEST_F(DeviceTest, PtxJitLaunchAndTiming) {
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver_);
  ASSERT_TRUE(context.ok()) << context.error().message();
  Expected<Module> module = Module::loadPtx(driver_, kAddOnePtx);
  ASSERT_TRUE(module.ok()) << module.error().message();
  Expected<Function> function = module->function("add_one");
  ASSERT_TRUE(function.ok()) << function.error().message();

  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = float(i);
  size_t bytes = host.size() * sizeof(float);
  Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(driver_, bytes);
  ASSERT_TRUE(buffer.ok());
  ASSERT_TRUE(buffer->copyFromHost(host.data(), bytes).ok());
  ASSERT_TRUE(context->synchronize().ok()); // the copy ran on the legacy stream
  Expected<Stream> stream = Stream::create(driver_);
  Expected<Event> start = Event::create(driver_), stop = Event::create(driver_);
  ASSERT_TRUE(stream.ok() && start.ok() && stop.ok());

  CUdeviceptr pointer = buffer->get();
  int count = int(host.size());
  void *params[] = {&pointer, &count};
  LaunchConfig config;
  config.grid = {4, 1, 1};
  config.block = {256, 1, 1};
  config.stream = stream->get();
  ASSERT_TRUE(start->record(stream->get()).ok());
  Error launched = function->launch(config, params);
  ASSERT_TRUE(launched.ok()) << launched.message();
  ASSERT_TRUE(stop->record(stream->get()).ok());
  Expected<float> ms = Event::elapsedMs(*start, *stop);
  ASSERT_TRUE(ms.ok()) << ms.error().message();
  EXPECT_GE(*ms, 0.0f);

  std::vector<float> back(host.size());
  ASSERT_TRUE(buffer->copyToHost(back.data(), bytes).ok());
  for (size_t i = 0; i < host.size(); ++i)
    ASSERT_EQ(back[i], host[i] + 1.0f) << i;
}

TEST_F(DeviceTest, InvalidImageIsANamedError) {
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver_);
  ASSERT_TRUE(context.ok());
  Expected<Module> module = Module::loadImage(driver_, "not a cubin");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error().call(), "cuModuleLoadData");
  EXPECT_NE(
      module.error().message().find("cuModuleLoadData failed: CUDA_ERROR_"),
      std::string::npos)
      << module.error().message();
}

/// The nvcc-built naive convolution as a bundle: run, check, and compare
/// with cuDNN, as bench/gpu does with generated kernels.
TEST_F(DeviceTest, NaiveConvBundleWithCudnn) {
#ifndef CONVRT_DEVICE_KERNEL_DIR
  GTEST_SKIP() << "nvcc was not found at configure time";
#else
  Expected<std::string> cubin =
      readFile(std::string(CONVRT_DEVICE_KERNEL_DIR) + "/naive_conv.cubin");
  Expected<std::string> ptx =
      readFile(std::string(CONVRT_DEVICE_KERNEL_DIR) + "/naive_conv.ptx");
  ASSERT_TRUE(cubin.ok() && ptx.ok());
  ConvProblem p;
  p.n = NAIVE_N;
  p.c = NAIVE_C;
  p.h = NAIVE_H;
  p.w = NAIVE_W;
  p.f = NAIVE_F;
  p.kh = NAIVE_KH;
  p.kw = NAIVE_KW;
  p.strideH = NAIVE_SH;
  p.strideW = NAIVE_SW;
  p.dilationH = NAIVE_DH;
  p.dilationW = NAIVE_DW;
  p.padTop = p.padLeft = p.padBottom = p.padRight = NAIVE_PAD;
  p.groups = NAIVE_G;
  p.hasBias = true;
  Manifest m;
  m.kernel.name = "naive_conv";
  m.kernel.binary = "naive_conv.cubin";
  m.kernel.ptx = "naive_conv.ptx";
  m.kernel.chip = "sm_90";
  m.kernel.block = {NAIVE_BLOCK, 1, 1};
  m.kernel.grid = {
      unsigned((p.outputElements() + NAIVE_BLOCK - 1) / NAIVE_BLOCK), 1, 1};
  m.problem = p;
  m.arguments = {{"x", ArgumentRole::Input, DType::F32, p.inputShape()},
                 {"w", ArgumentRole::Filter, DType::F32, p.filterShape()},
                 {"b", ArgumentRole::Bias, DType::F32, p.biasShape()},
                 {"y", ArgumentRole::Output, DType::F32, p.outputShape()}};
  TempDir dir;
  ASSERT_TRUE(writeBundle(dir.path(), m, *cubin, *ptx).ok());
  Expected<Bundle> bundle = loadBundle(dir.path());
  ASSERT_TRUE(bundle.ok()) << bundle.error().message();

  RunOptions options;
  options.warmup = 2;
  options.repeat = 5;
  Expected<RunReport> report = runBundle(*bundle, driver_, options);
  ASSERT_TRUE(report.ok()) << report.error().message();
  std::printf("%s\n%s\n", runTableHeader().c_str(),
              runTableRow(*report).c_str());
  EXPECT_TRUE(report->comparison.pass)
      << "rel_l2 " << report->comparison.relL2Error;
  EXPECT_GT(report->medianMs, 0.0);
  if (report->cudnn.ran)
    EXPECT_TRUE(report->cudnn.comparison.pass)
        << "cuDNN rel_l2 " << report->cudnn.comparison.relL2Error;
  else
    std::printf("cuDNN not run: %s\n", report->cudnn.reason.c_str());
#endif
}

} // namespace
