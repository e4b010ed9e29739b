//===- FakeCubinTest.cpp - Real cubins through convrt, on the fake driver -===//
//
// A cubin built by nvcc at build time (kernels/record_probe.cu) is loaded
// and launched through convrt's Module API; the fake computes nothing but
// records the launch (FAKE_CUDA_RECORD), and these tests read the record
// back: kernel, geometry, shared memory, each parameter's size and value,
// device pointers resolved to their allocations. This is what lets a lit
// test prove conv-run's GPU route without a GPU.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "convrt/Context.h"
#include "convrt/Files.h"
#include "convrt/Json.h"
#include "convrt/Memory.h"
#include "convrt/Module.h"
#include "convrt/TensorMap.h"

#include <cstring>
#include <optional>

using namespace convrt;
using namespace convrt::test;

namespace {

struct Extent {
  int n, c, h, w;
};

class FakeCubinTest : public FakeCudaTest {
protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
#ifndef CONVRT_DEVICE_KERNEL_DIR
    GTEST_SKIP() << "nvcc was not found when configuring, so there is no real "
                    "cubin to load (set CONVRT_NVCC or put the CUDA toolkit "
                    "in /usr/local/cuda)";
#else
    Expected<std::string> cubin =
        readFile(std::string(CONVRT_DEVICE_KERNEL_DIR) + "/record_probe.cubin");
    Expected<std::string> ptx =
        readFile(std::string(CONVRT_DEVICE_KERNEL_DIR) + "/record_probe.ptx");
    ASSERT_TRUE(cubin.ok()) << cubin.error().message();
    ASSERT_TRUE(ptx.ok()) << ptx.error().message();
    cubin_ = *cubin;
    ptx_ = *ptx;
    recordPath_ = dir_.file("record.jsonl");
    record_.emplace("FAKE_CUDA_RECORD", recordPath_.c_str());
    driver_ = loadFakeDriver();
    ASSERT_TRUE(driver_);
    Expected<PrimaryContext> context = PrimaryContext::acquire(driver_, 0);
    ASSERT_TRUE(context.ok()) << context.error().message();
    context_.emplace(std::move(*context));
#endif
  }

  void TearDown() override {
    context_.reset();
    record_.reset();
    FakeCudaTest::TearDown();
  }

  /// The recorded events named `event`, in order.
  std::vector<JsonValue> recorded(const std::string &event) const {
    return recordedEvents(recordPath_, event);
  }

  TempDir dir_;
  std::string cubin_, ptx_, recordPath_;
  std::optional<ScopedEnv> record_;
  std::shared_ptr<Driver> driver_;
  std::optional<PrimaryContext> context_;
};

TEST_F(FakeCubinTest, LaunchIsRecordedWithItsParameters) {
  Expected<Module> module = Module::loadImage(driver_, cubin_.data());
  ASSERT_TRUE(module.ok()) << module.error().message();
  Expected<Function> function = module->function("record_probe");
  ASSERT_TRUE(function.ok()) << function.error().message();
  Expected<Function> missing = module->function("no_such_kernel");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), CUDA_ERROR_NOT_FOUND);

  Expected<DeviceBuffer> out = DeviceBuffer::allocate(driver_, 4000);
  Expected<DeviceBuffer> in = DeviceBuffer::allocate(driver_, 600);
  ASSERT_TRUE(out.ok() && in.ok());
  std::vector<uint8_t> input(600, 0x3F);
  ASSERT_TRUE(in->copyFromHost(input.data(), input.size()).ok());
  ASSERT_TRUE(out->fillBytes(0xFF).ok());

  CUdeviceptr outPointer = out->get(), inPointer = in->get() + 16;
  int count = 1000;
  Extent extent{1, 2, 3, 4};
  double scale = 0.5;
  char tag = 'x';
  void *params[] = {&outPointer, &inPointer, &count, &extent, &scale, &tag};
  LaunchConfig config;
  config.grid = {7, 2, 1};
  config.block = {128, 1, 1};
  config.dynamicSharedMemoryBytes = 64 * 1024; // sets the attribute first
  Error launched = function->launch(config, params);
  ASSERT_TRUE(launched.ok()) << launched.message();

  // The fake computes nothing: the output is as the runtime left it.
  std::vector<uint8_t> output(4000);
  ASSERT_TRUE(out->copyToHost(output.data(), output.size()).ok());
  EXPECT_EQ(output, std::vector<uint8_t>(4000, 0xFF));

  std::vector<JsonValue> loads = recorded("module_load");
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0].at("kind"), "cubin");
  EXPECT_EQ(loads[0].at("sm"), 90);
  EXPECT_EQ(loads[0].at("bytes"), cubin_.size());
  EXPECT_EQ(loads[0].at("kernels"), JsonValue({"record_probe"}));
  EXPECT_EQ(loads[0].at("result"), "CUDA_SUCCESS");

  std::vector<JsonValue> attributes = recorded("func_set_attribute");
  ASSERT_EQ(attributes.size(), 1u);
  EXPECT_EQ(attributes[0].at("kernel"), "record_probe");
  EXPECT_EQ(attributes[0].at("attribute"),
            int(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
  EXPECT_EQ(attributes[0].at("value"), 64 * 1024);

  std::vector<JsonValue> launches = recorded("launch");
  ASSERT_EQ(launches.size(), 1u);
  const JsonValue &launch = launches[0];
  EXPECT_EQ(launch.at("kernel"), "record_probe");
  EXPECT_EQ(launch.at("kind"), "cubin");
  EXPECT_EQ(launch.at("grid"), JsonValue({7, 2, 1}));
  EXPECT_EQ(launch.at("block"), JsonValue({128, 1, 1}));
  EXPECT_EQ(launch.at("shared_memory_bytes"), 64 * 1024);
  EXPECT_EQ(launch.at("param_count"), 6);
  const JsonValue &p = launch.at("params");
  ASSERT_EQ(p.size(), 6u);
  ParamLayout layout = paramLayout(p);
  EXPECT_EQ(layout.offsets, (std::vector<int>{0, 8, 16, 20, 40, 48}));
  EXPECT_EQ(layout.sizes, (std::vector<int>{8, 8, 4, 16, 8, 1}));
  // Device pointers resolve to their allocations (in: 16 bytes past its base).
  EXPECT_EQ(p[0].at("allocation").at("offset"), 0);
  EXPECT_EQ(p[0].at("allocation").at("bytes"), 4000);
  EXPECT_EQ(p[1].at("allocation").at("offset"), 16);
  EXPECT_EQ(p[1].at("allocation").at("bytes"), 600);
  EXPECT_NE(p[0].at("allocation").at("id"), p[1].at("allocation").at("id"));
  EXPECT_EQ(p[2].at("value"), 1000);
  EXPECT_FALSE(p[2].contains("allocation"));
  EXPECT_EQ(p[3].at("hex"), "01000000020000000300000004000000");
  EXPECT_FALSE(p[3].contains("value"));
  EXPECT_EQ(p[4].at("hex"), "000000000000e03f"); // 0.5
  EXPECT_EQ(p[5].at("value"), int('x'));

  std::vector<JsonValue> copies = recorded("memcpy");
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].at("direction"), "htod");
  EXPECT_EQ(copies[0].at("bytes"), 600);
  EXPECT_EQ(copies[0].at("allocation").at("id"),
            p[1].at("allocation").at("id"));
  EXPECT_EQ(copies[1].at("direction"), "dtoh");
  EXPECT_EQ(copies[1].at("call"), "cuMemcpyDtoH");
  EXPECT_EQ(copies[1].at("bytes"), 4000);
  EXPECT_FALSE(copies[1].at("async").get<bool>());
}

TEST_F(FakeCubinTest, ParamInfoComesFromTheCubin) {
  Expected<Module> module = Module::loadImage(driver_, cubin_.data());
  ASSERT_TRUE(module.ok()) << module.error().message();
  Expected<Function> function = module->function("record_probe");
  ASSERT_TRUE(function.ok());
  size_t offset = 0, size = 0;
  EXPECT_EQ(fake().paramInfo(function->get(), 3, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 20u);
  EXPECT_EQ(size, 16u);
  EXPECT_EQ(fake().paramInfo(function->get(), 6, &offset, &size),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeCubinTest, PtxOfTheSameKernelHasTheSameLayout) {
  Expected<Module> cubin = Module::loadImage(driver_, cubin_.data());
  Expected<Module> ptx = Module::loadPtx(driver_, ptx_);
  ASSERT_TRUE(cubin.ok() && ptx.ok()) << ptx.error().message();
  EXPECT_NE(ptx->jitInfoLog().find("loaded 1 kernels from ptx"),
            std::string::npos)
      << ptx->jitInfoLog();
  Expected<Function> a = cubin->function("record_probe");
  Expected<Function> b = ptx->function("record_probe");
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < 7; ++i) {
    size_t offsetA = 0, sizeA = 0, offsetB = 0, sizeB = 0;
    int resultA = fake().paramInfo(a->get(), i, &offsetA, &sizeA);
    EXPECT_EQ(resultA, fake().paramInfo(b->get(), i, &offsetB, &sizeB)) << i;
    EXPECT_EQ(offsetA, offsetB) << i;
    EXPECT_EQ(sizeA, sizeB) << i;
  }
  std::vector<JsonValue> loads = recorded("module_load");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[1].at("kind"), "ptx");
  EXPECT_EQ(loads[1].at("sm"), 80);
  EXPECT_EQ(loads[1].at("call"), "cuModuleLoadDataEx");
}

TEST_F(FakeCubinTest, ACubinForAnotherChipIsRefusedItsPtxIsNot) {
  ScopedEnv ampere("FAKE_CUDA_CC", "8.0");
  Expected<Module> cubin = Module::loadImage(driver_, cubin_.data());
  ASSERT_FALSE(cubin.ok());
  EXPECT_EQ(cubin.error().code(), CUDA_ERROR_NO_BINARY_FOR_GPU);
  Expected<Module> ptx = Module::loadPtx(driver_, ptx_);
  EXPECT_TRUE(ptx.ok()) << ptx.error().message();
  std::vector<JsonValue> loads = recorded("module_load");
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0].at("result"), "CUDA_ERROR_NO_BINARY_FOR_GPU");
  EXPECT_EQ(loads[1].at("result"), "CUDA_SUCCESS");
}

TEST_F(FakeCubinTest, ATensorMapByValueIsDecodedInTheRecord) {
  Expected<std::string> cubin =
      readFile(std::string(CONVRT_DEVICE_KERNEL_DIR) + "/tma_probe.cubin");
  Expected<std::string> ptx =
      readFile(std::string(CONVRT_DEVICE_KERNEL_DIR) + "/tma_probe.ptx");
  ASSERT_TRUE(cubin.ok() && ptx.ok());
  Expected<Module> module = Module::loadImage(driver_, cubin->data());
  Expected<Module> jit = Module::loadPtx(driver_, *ptx);
  ASSERT_TRUE(module.ok()) << module.error().message();
  ASSERT_TRUE(jit.ok()) << jit.error().message();
  Expected<Function> function = module->function("tma_probe");
  Expected<Function> jitFunction = jit->function("tma_probe");
  ASSERT_TRUE(function.ok() && jitFunction.ok());
  // CUDA 13's CUtensorMap is alignas(128), within constant bank 0 where
  // sm_90's parameters start at 0x210: the map lands at 112, the int at 240,
  // in the cubin and, laid out for the device, in the JIT'd PTX.
  for (const Function *f : {&*function, &*jitFunction}) {
    std::vector<size_t> offsets, sizes;
    for (size_t i = 0; i < 3; ++i) {
      size_t offset = 0, size = 0;
      EXPECT_EQ(fake().paramInfo(f->get(), i, &offset, &size), CUDA_SUCCESS);
      offsets.push_back(offset);
      sizes.push_back(size);
    }
    EXPECT_EQ(offsets, (std::vector<size_t>{0, 112, 240}));
    EXPECT_EQ(sizes, (std::vector<size_t>{8, 128, 4}));
  }

  Expected<DeviceBuffer> out = DeviceBuffer::allocate(driver_, 64);
  Expected<DeviceBuffer> data = DeviceBuffer::allocate(driver_, 4096);
  ASSERT_TRUE(out.ok() && data.ok());
  TensorMapSpec spec;
  spec.name = "rows";
  spec.dtype = DType::F32;
  spec.dims = {32, 32};
  spec.stridesBytes = {128};
  spec.box = {32, 8};
  spec.elementStrides = {1, 1};
  TensorMapBytes map;
  Error encoded = encodeTensorMap(*driver_, spec, data->get(), map.bytes);
  ASSERT_TRUE(encoded.ok()) << encoded.message();
  CUdeviceptr outPointer = out->get();
  int count = 1;
  void *params[] = {&outPointer, map.bytes, &count};
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {32, 1, 1};
  Error launched = function->launch(config, params);
  ASSERT_TRUE(launched.ok()) << launched.message();

  std::vector<JsonValue> launches = recorded("launch");
  ASSERT_EQ(launches.size(), 1u);
  const JsonValue &p = launches[0].at("params");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[1].at("offset"), 112);
  EXPECT_EQ(p[1].at("size"), 128);
  const JsonValue &decoded = p[1].at("tensor_map");
  EXPECT_EQ(decoded.at("mode"), "tiled");
  EXPECT_EQ(decoded.at("dtype"), "float32");
  EXPECT_EQ(decoded.at("dims"), JsonValue({32, 32}));
  EXPECT_EQ(decoded.at("box"), JsonValue({32, 8}));
  EXPECT_EQ(decoded.at("allocation").at("id"),
            recorded("tensor_map")[0].at("allocation").at("id"));
  EXPECT_EQ(decoded.at("allocation").at("bytes"), 4096);
  EXPECT_EQ(p[2].at("value"), 1);
}

TEST_F(FakeCubinTest, NothingIsRecordedWithoutTheVariable) {
  record_.reset();
  Expected<Module> module = Module::loadImage(driver_, cubin_.data());
  ASSERT_TRUE(module.ok());
  EXPECT_FALSE(isRegularFile(recordPath_));
}

} // namespace
