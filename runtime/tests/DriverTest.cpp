//===- DriverTest.cpp - Loading libcuda and naming its errors -------------===//

#include "TestSupport.h"

#include "convrt/Context.h"
#include "convrt/Driver.h"
#include "convrt/Files.h"

using namespace convrt;
using namespace convrt::test;

namespace {

class DriverTest : public FakeCudaTest {};

TEST_F(DriverTest, LoadsTheFakeByPathAndRecordsTheRealFile) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  EXPECT_EQ(driver->library().requested, fakeLibcudaPath());
  EXPECT_EQ(driver->library().realPath, canonicalPath(fakeLibcudaPath()));
  EXPECT_FALSE(driver->isStub());
  EXPECT_TRUE(driver->library().missingEntryPoints.empty());
  EXPECT_TRUE(driver->init().ok());
  Expected<int> version = driver->version();
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, 13000);
}

TEST_F(DriverTest, ResolvesEntryPointsThroughGetProcAddress) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  EXPECT_TRUE(driver->library().resolvedWithGetProcAddress);
  EXPECT_GT(fake().calls("cuGetProcAddress"), 40);
}

TEST_F(DriverTest, FallsBackToDlsymOfVersionedNames) {
  fake().setFailures("cuGetProcAddress:CUDA_ERROR_NOT_SUPPORTED");
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  EXPECT_FALSE(driver->library().resolvedWithGetProcAddress);
  // cuMemAlloc must be cuMemAlloc_v2 (the fake exports nothing else).
  EXPECT_TRUE(driver->library().missingEntryPoints.empty());
  EXPECT_NE(driver->api().cuMemAlloc, nullptr);
  ASSERT_TRUE(driver->init().ok());
  Expected<PrimaryContext> context = PrimaryContext::acquire(driver);
  ASSERT_TRUE(context.ok()) << context.error().message();
}

TEST_F(DriverTest, ExplicitPathThatDoesNotExist) {
  LoadOptions options;
  options.path = "/nonexistent/libcuda.so.1";
  Expected<std::shared_ptr<Driver>> driver = Driver::load(options);
  ASSERT_FALSE(driver.ok());
  EXPECT_NE(driver.error().message().find("/nonexistent/libcuda.so.1"),
            std::string::npos)
      << driver.error().message();
}

TEST_F(DriverTest, EnvironmentVariableSelectsTheLibraryAndIsNamedOnFailure) {
  {
    ScopedEnv env(kLibcudaEnvVar, fakeLibcudaPath());
    Expected<std::shared_ptr<Driver>> driver = Driver::load();
    ASSERT_TRUE(driver.ok()) << driver.error().message();
    EXPECT_EQ((*driver)->library().requested, fakeLibcudaPath());
  }
  ScopedEnv env(kLibcudaEnvVar, "/nonexistent/libcuda.so.1");
  Expected<std::shared_ptr<Driver>> driver = Driver::load();
  ASSERT_FALSE(driver.ok());
  const std::string &message = driver.error().message();
  EXPECT_NE(message.find("CONVRT_LIBCUDA=/nonexistent/libcuda.so.1"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("point CONVRT_LIBCUDA at the driver's libcuda.so.1"),
            std::string::npos)
      << message;
}

TEST_F(DriverTest, NotFoundMessageNamesTheFix) {
  ScopedEnv env(kLibcudaEnvVar, nullptr);
  LoadOptions options;
  options.searchNames = {"libconvrt-test-no-such-cuda.so.1",
                         "/nonexistent/libcuda.so.1"};
  Expected<std::shared_ptr<Driver>> driver = Driver::load(options);
  ASSERT_FALSE(driver.ok());
  const std::string &message = driver.error().message();
  EXPECT_EQ(message.rfind("libcuda.so.1 not found: the NVIDIA container "
                          "toolkit did not inject the driver; start the "
                          "container with --gpus all",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("install the NVIDIA driver"), std::string::npos);
  EXPECT_NE(message.find("tried libconvrt-test-no-such-cuda.so.1, "
                         "/nonexistent/libcuda.so.1"),
            std::string::npos)
      << message;
}

TEST_F(DriverTest, RejectsALibraryThatIsNotADriver) {
  LoadOptions options;
  options.path = "libm.so.6";
  Expected<std::shared_ptr<Driver>> driver = Driver::load(options);
  ASSERT_FALSE(driver.ok());
  EXPECT_NE(driver.error().message().find("is not a CUDA driver library"),
            std::string::npos)
      << driver.error().message();
}

TEST_F(DriverTest, ToolkitStubIsDetectedByPathAndByCuInit) {
  if (!isRegularFile(CONVRT_CUDA_STUB))
    GTEST_SKIP() << "no toolkit stub at " << CONVRT_CUDA_STUB;
  LoadOptions options;
  options.path = CONVRT_CUDA_STUB;
  Expected<std::shared_ptr<Driver>> driver = Driver::load(options);
  ASSERT_TRUE(driver.ok()) << driver.error().message();
  EXPECT_TRUE((*driver)->isStub());
  EXPECT_NE((*driver)->library().realPath.find("/stubs/"), std::string::npos);
  Error init = (*driver)->init();
  ASSERT_FALSE(init.ok());
  EXPECT_EQ(init.call(), "cuInit");
  EXPECT_EQ(init.code(), CUDA_ERROR_STUB_LIBRARY);
  // The stub cannot name its own errors; the built-in table does.
  EXPECT_NE(init.message().find("cuInit failed: CUDA_ERROR_STUB_LIBRARY"),
            std::string::npos)
      << init.message();
  EXPECT_NE(init.message().find("stub libcuda, not a driver"),
            std::string::npos)
      << init.message();
  // init() is idempotent: the same answer again.
  EXPECT_EQ((*driver)->init().message(), init.message());
}

TEST_F(DriverTest, StubDetectedFromCuInitWhereverItLives) {
  fake().setFailures("cuInit:CUDA_ERROR_STUB_LIBRARY");
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  EXPECT_FALSE(driver->isStub());
  Error init = driver->init();
  EXPECT_EQ(init.code(), CUDA_ERROR_STUB_LIBRARY);
  EXPECT_TRUE(driver->isStub());
  EXPECT_EQ(driver->library().stubReason,
            "cuInit returned CUDA_ERROR_STUB_LIBRARY");
}

TEST_F(DriverTest, ErrorsCarryTheCallAndTheDriversNames) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  Error error = driver->check(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData");
  EXPECT_EQ(error.message(),
            "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE "
            "(device kernel image is invalid)");
  EXPECT_EQ(error.call(), "cuModuleLoadData");
  EXPECT_EQ(error.code(), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_TRUE(driver->check(CUDA_SUCCESS, "cuInit").ok());
  // Unknown codes still produce a readable name. 1000 is named by no cuda.h
  // yet lies in CUresult's value range (0..1023: its largest enumerator is
  // 999); a larger cast would be undefined behaviour (UBSan says so).
  EXPECT_EQ(driver->errorName(static_cast<CUresult>(1000)), "CUresult 1000");
}

TEST_F(DriverTest, ErrorsNameThePlainEntryPoint) {
  std::shared_ptr<Driver> driver = loadFakeDriver();
  ASSERT_TRUE(driver);
  ASSERT_TRUE(driver->init().ok());
  // cuda.h maps cuMemAlloc to cuMemAlloc_v2; messages use the name people
  // know and the failure spec the fake understands.
  fake().setFailures("cuMemAlloc:CUDA_ERROR_OUT_OF_MEMORY");
  CUdeviceptr pointer = 0;
  Error error = CONVRT_CU(*driver, cuMemAlloc)(&pointer, size_t(64));
  EXPECT_EQ(error.call(), "cuMemAlloc");
  EXPECT_EQ(error.message(),
            "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
}

TEST(ErrorTest, ContextAndHintsWrapTheMessage) {
  Error error = Error::failure("bad thing");
  error.withContext("loading X").withHint("do Y");
  EXPECT_EQ(error.message(), "loading X: bad thing: do Y");
  Error ok;
  ok.withContext("ignored");
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.message(), "");
}

TEST(ErrorTest, BuiltinNamesCoverTheDiagnosedCodes) {
  EXPECT_STREQ(builtinErrorName(34), "CUDA_ERROR_STUB_LIBRARY");
  EXPECT_STREQ(builtinErrorName(100), "CUDA_ERROR_NO_DEVICE");
  EXPECT_STREQ(builtinErrorName(803), "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH");
  EXPECT_STREQ(builtinErrorName(4242), "");
}

} // namespace
