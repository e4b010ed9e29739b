//===- RunnerTest.cpp - Bundles run, timed and checked on the fake --------===//

#include "FakeBundles.h"
#include "TestSupport.h"

#include "convrt/Cudnn.h"
#include "convrt/Json.h"
#include "convrt/Runner.h"

#include <optional>

using namespace convrt;
using namespace convrt::test;

namespace {

RunOptions fastOptions() {
  RunOptions options;
  options.warmup = 2;
  options.repeat = 3;
  options.cudnn = false;
  return options;
}

class RunnerTest : public FakeCudaTest {
protected:
  /// Writes a bundle and runs it.
  Expected<RunReport> run(const Manifest &m, const std::string &binary,
                          const std::string &ptx = "",
                          RunOptions options = fastOptions()) {
    Manifest written = m;
    if (!ptx.empty())
      written.kernel.ptx = "kernel.ptx";
    Error error = writeBundle(dir_.path(), written, binary, ptx);
    if (!error.ok())
      return error;
    Expected<Bundle> bundle = loadBundle(dir_.path());
    if (!bundle.ok())
      return bundle.takeError();
    return runBundle(*bundle, loadFakeDriver(), options);
  }

  TempDir dir_;
};

struct Case {
  Layout layout;
  FilterLayout filter;
  DType dtype;
  DType out;
  DType bias;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << layoutName(c.layout) << "/" << filterLayoutName(c.filter) << " "
      << dtypeName(c.dtype) << " -> " << dtypeName(c.out);
}

class RunnerCaseTest : public RunnerTest,
                       public ::testing::WithParamInterface<Case> {};

TEST_P(RunnerCaseTest, MatchesTheReference) {
  const Case &c = GetParam();
  ConvProblem p = sampleProblem(c.layout, c.filter, c.dtype);
  Manifest m = convManifest(p, c.out, c.bias);
  Expected<RunReport> report = run(m, fakeImage(convLine(p, c.out, c.bias)));
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->checked);
  EXPECT_TRUE(report->comparison.pass)
      << "rel_l2 " << report->comparison.relL2Error << " max_abs "
      << report->comparison.maxAbsDiff;
  EXPECT_EQ(report->comparison.nonFinite, 0u);
  EXPECT_EQ(report->loadedFrom, "cubin");
  EXPECT_DOUBLE_EQ(report->medianMs, 0.5);
  EXPECT_GT(report->tflops(), 0);
  EXPECT_EQ(report->device.name, "Fake GPU");
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, RunnerCaseTest,
    ::testing::Values(Case{Layout::NCHW, FilterLayout::FCHW, DType::F32,
                           DType::F32, DType::F32},
                      Case{Layout::NCHW, FilterLayout::FCHW, DType::TF32,
                           DType::F32, DType::F32},
                      Case{Layout::NHWC, FilterLayout::HWCF, DType::F16,
                           DType::F16, DType::F32},
                      Case{Layout::NHWC, FilterLayout::FHWC, DType::BF16,
                           DType::BF16, DType::BF16},
                      Case{Layout::NCHW, FilterLayout::FHWC, DType::F16,
                           DType::F32, DType::F16}),
    [](const ::testing::TestParamInfo<Case> &info) {
      const Case &c = info.param;
      return std::string(layoutName(c.layout)) + "_" +
             filterLayoutName(c.filter) + "_" + dtypeName(c.dtype) + "_to_" +
             dtypeName(c.out);
    });

TEST_F(RunnerTest, LaunchesWithTheManifestsConfiguration) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32);
  m.kernel.sharedMemoryBytes = 96 * 1024;
  Expected<RunReport> report =
      run(m, fakeImage(convLine(p, DType::F32, DType::F32)));
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(fake().lastLaunch(),
            "fake_conv2d grid=4,2,1 block=128,1,1 smem=98304");
  EXPECT_EQ(fake().maxDynamicShared("fake_conv2d"), 96 * 1024);
  EXPECT_EQ(fake().calls("cuLaunchKernel"), 2 + 3);
}

TEST_F(RunnerTest, AWrongKernelFailsTheCheck) {
  ConvProblem p = sampleProblem(Layout::NHWC, FilterLayout::FHWC, DType::F16);
  ConvProblem wrong = p;
  wrong.padTop = 0; // the kernel pads differently than the manifest says
  wrong.padBottom = 1;
  Manifest m = convManifest(p, DType::F16, DType::F16);
  Expected<RunReport> report =
      run(m, fakeImage(convLine(wrong, DType::F16, DType::F16)));
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->comparison.pass);
  EXPECT_FALSE(report->passed());
  EXPECT_GT(report->comparison.relL2Error, 0.1);
}

TEST_F(RunnerTest, UnwrittenOutputIsCaught) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32, "fake_noop");
  Expected<RunReport> report = run(m, fakeImage());
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->comparison.pass);
  EXPECT_EQ(report->comparison.nonFinite, size_t(p.outputElements()));
}

TEST_F(RunnerTest, FallsBackToThePtx) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32);
  Expected<RunReport> report =
      run(m, "not a cubin", fakeImage(convLine(p, DType::F32, DType::F32)));
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->loadedFrom, "ptx");
  EXPECT_EQ(report->loadNote,
            "the binary did not load (cuModuleLoadData failed: "
            "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)), so "
            "the PTX was JIT-compiled");
  EXPECT_TRUE(report->comparison.pass);
}

TEST_F(RunnerTest, LoadFailuresCarryTheJitLogAndTheReason) {
  ScopedEnv cc("FAKE_CUDA_CC", "8.0");
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32);
  Expected<RunReport> noPtx = run(m, "not a cubin");
  ASSERT_FALSE(noPtx.ok());
  EXPECT_EQ(noPtx.error().message(),
            "loading kernel.cubin: cuModuleLoadData failed: "
            "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid): the "
            "kernel binary is built for sm_90 and Fake GPU is sm_80 (compute "
            "capability 8.0): rebuild it for sm_80; the bundle has no PTX to "
            "JIT-compile instead");

  Expected<RunReport> badPtx = run(m, "not a cubin", "not ptx either");
  ASSERT_FALSE(badPtx.ok());
  EXPECT_NE(badPtx.error().message().find(
                "JIT-compiling kernel.ptx after kernel.cubin failed to load: "
                "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_IMAGE (device "
                "kernel image is invalid): JIT error log:\nfake ptxas fatal"),
            std::string::npos)
      << badPtx.error().message();
}

TEST_F(RunnerTest, DriverFailuresDuringTheRunAreNamed) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32);
  fake().setFailures("cuMemAlloc:CUDA_ERROR_OUT_OF_MEMORY@3");
  Expected<RunReport> report =
      run(m, fakeImage(convLine(p, DType::F32, DType::F32)));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().message(),
            "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
}

TEST_F(RunnerTest, CudnnSkipsWhatItCannotExpress) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32);
  RunOptions options = fastOptions();
  options.cudnn = true; // asymmetric padding: cuDNN is never loaded
  Expected<RunReport> report =
      run(m, fakeImage(convLine(p, DType::F32, DType::F32)), "", options);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_FALSE(report->cudnn.ran);
  EXPECT_EQ(report->cudnn.reason,
            "cuDNN's convolution descriptor has symmetric padding only, the "
            "problem pads [1, 2, 0, 1]");
  EXPECT_EQ(report->vsCudnn(), 0);
}

TEST_F(RunnerTest, CudnnOnTheFakeIsReportedNotRun) {
  // Symmetric padding, so cuDNN is tried: where it is installed it cannot
  // work on the fake driver (its CUDA runtime finds no real device), where it
  // is not it cannot load. Either way the run goes on and says why.
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  p.padTop = p.padLeft = p.padBottom = p.padRight = 1;
  Manifest m = convManifest(p, DType::F32, DType::F32);
  RunOptions options = fastOptions();
  options.cudnn = true;
  Expected<RunReport> report =
      run(m, fakeImage(convLine(p, DType::F32, DType::F32)), "", options);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->comparison.pass);
  EXPECT_FALSE(report->cudnn.ran);
  EXPECT_NE(report->cudnn.reason.find("cuDNN"), std::string::npos)
      << report->cudnn.reason;
}

TEST_F(RunnerTest, ReportsAsTableAndJson) {
  ConvProblem p = sampleProblem(Layout::NHWC, FilterLayout::FHWC, DType::F16);
  Manifest m = convManifest(p, DType::F16, DType::F16);
  Expected<RunReport> report =
      run(m, fakeImage(convLine(p, DType::F16, DType::F16)));
  ASSERT_TRUE(report.ok()) << report.error().message();

  std::string header = runTableHeader();
  std::string row = runTableRow(*report);
  EXPECT_EQ(header.find("problem"), 0u);
  EXPECT_NE(header.find("TFLOP/s"), std::string::npos);
  EXPECT_EQ(row.find("n2 c4 h9 w7 f6 k3x3 s2x1 d1x2 p1,2,0,1 g2"), 0u) << row;
  EXPECT_NE(row.find(" f16   nhwc       0.5000"), std::string::npos) << row;
  EXPECT_EQ(row.substr(row.size() - 2), "ok");

  std::string text = dumpJson(runReportJson(*report));
  Expected<JsonValue> json = parseJson(text);
  ASSERT_TRUE(json.ok()) << json.error().message() << "\n" << text;
  EXPECT_EQ(json->at("source").get<std::string>(), dir_.path());
  EXPECT_EQ(json->at("kernel").get<std::string>(), "fake_conv2d");
  EXPECT_EQ(json->at("dtype").get<std::string>(), "f16");
  EXPECT_EQ(json->at("layout").get<std::string>(), "nhwc");
  EXPECT_EQ(json->at("ms").get<double>(), 0.5);
  EXPECT_NEAR(json->at("tflops").get<double>(), p.flops() / 0.5e-3 / 1e12,
              1e-12);
  EXPECT_TRUE(json->at("pass").get<bool>());
  EXPECT_EQ(json->at("tolerance").get<double>(), 1e-2);
  EXPECT_TRUE(json->at("vs_cudnn").is_null());
  EXPECT_FALSE(json->at("cudnn").at("ran").get<bool>());
  EXPECT_EQ(json->at("problem_detail").at("groups").get<int64_t>(), 2);
  EXPECT_EQ(json->at("device").at("chip").get<std::string>(), "sm_90");
}

/// What the fake recorded of a TMA bundle's launches: 4 pointers, then the
/// 2 maps by value (.align 64 within sm_90's constant bank, whose
/// parameters start at 0x210: offsets 48 and 176), each describing its
/// argument's buffer.
void expectTmaLaunch(const JsonValue &launch, const Manifest &m) {
  EXPECT_EQ(launch.at("kernel"), "fake_conv2d");
  EXPECT_EQ(launch.at("param_count"), 6);
  const JsonValue &p = launch.at("params");
  ASSERT_EQ(p.size(), 6u);
  ParamLayout layout = paramLayout(p);
  EXPECT_EQ(layout.offsets, (std::vector<int>{0, 8, 16, 24, 48, 176}));
  EXPECT_EQ(layout.sizes, (std::vector<int>{8, 8, 8, 8, 128, 128}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(p[i].at("allocation").at("offset"), 0) << i;
    EXPECT_FALSE(p[i].contains("tensor_map")) << i;
  }
  const JsonValue &input = p[4].at("tensor_map");
  EXPECT_EQ(input.at("mode"), "im2col");
  EXPECT_EQ(input.at("dtype"), "float16");
  EXPECT_EQ(input.at("dims"), JsonValue({16, 5, 6, 2}));
  EXPECT_EQ(input.at("strides"), JsonValue({32, 160, 960}));
  EXPECT_EQ(input.at("channels_per_pixel"), 16);
  EXPECT_EQ(input.at("pixels_per_column"), 32);
  EXPECT_EQ(input.at("lower_corner"), JsonValue({-1, -1}));
  EXPECT_EQ(input.at("upper_corner"), JsonValue({-1, -1}));
  EXPECT_EQ(input.at("swizzle"), "32B");
  // The map of x's buffer (argument 0), from its start, all of it.
  EXPECT_EQ(input.at("allocation"), p[0].at("allocation"));
  EXPECT_EQ(input.at("allocation").at("bytes"), m.problem.inputElements() * 2);
  const JsonValue &filter = p[5].at("tensor_map");
  EXPECT_EQ(filter.at("mode"), "tiled");
  EXPECT_EQ(filter.at("dims"), JsonValue({144, 8}));
  EXPECT_EQ(filter.at("strides"), JsonValue({288}));
  EXPECT_EQ(filter.at("box"), JsonValue({64, 16}));
  EXPECT_EQ(filter.at("element_strides"), JsonValue({1, 1}));
  EXPECT_EQ(filter.at("swizzle"), "128B");
  EXPECT_EQ(filter.at("allocation"), p[1].at("allocation"));
}

/// Runs with the fake's record on (recorded() reads its events).
class RecordingRunnerTest : public RunnerTest {
protected:
  void SetUp() override {
    RunnerTest::SetUp();
    recordPath_ = dir_.file("record.jsonl");
    record_.emplace("FAKE_CUDA_RECORD", recordPath_.c_str());
  }
  void TearDown() override {
    record_.reset();
    RunnerTest::TearDown();
  }
  std::vector<JsonValue> recorded(const std::string &event) const {
    return recordedEvents(recordPath_, event);
  }
  std::string recordPath_;
  std::optional<ScopedEnv> record_;
};

// A residual argument: drawn, uploaded, and part of what the output is
// checked against (the fake kernel adds it, as the epilogue does): were it
// not uploaded (the buffer starts as NaN) or left out of the expected sum,
// the check would fail.
TEST_F(RecordingRunnerTest, AResidualIsDrawnAddedAndChecked) {
  ConvProblem p = sampleProblem(Layout::NHWC, FilterLayout::FHWC, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32, "fake_conv2d",
                            /*residual=*/true);
  std::string line = convLine(p, DType::F32, DType::F32, /*residual=*/true);
  Expected<RunReport> report = run(m, fakeImage(line));
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->comparison.pass)
      << "rel_l2 " << report->comparison.relL2Error;
  std::vector<JsonValue> launches = recorded("launch");
  ASSERT_FALSE(launches.empty());
  EXPECT_EQ(launches[0].at("params").size(), 5u);

}

TEST_F(RecordingRunnerTest, AKernelSessionUploadsTheResidual) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32, "fake_conv2d",
                            /*residual=*/true);
  Expected<std::unique_ptr<KernelSession>> session = KernelSession::load(
      m, fakeImage(convLine(p, DType::F32, DType::F32, true)), "",
      loadFakeDriver());
  ASSERT_TRUE(session.ok()) << session.error().message();
  std::vector<float> input(size_t(p.inputElements()), 0.0f);
  std::vector<float> filter(size_t(p.filterElements()), 0.0f);
  std::vector<float> bias(size_t(p.f), 0.25f);
  std::vector<float> residual(size_t(p.outputElements()));
  for (size_t i = 0; i < residual.size(); ++i)
    residual[i] = float(i % 7);
  std::vector<float> output(residual.size(), -1.0f);
  Expected<double> ms = (*session)->run(input.data(), filter.data(),
                                        bias.data(), residual.data(),
                                        output.data());
  ASSERT_TRUE(ms.ok()) << ms.error().message();
  for (size_t i = 0; i < output.size(); ++i)
    ASSERT_EQ(output[i], residual[i] + 0.25f) << "at " << i;
  // The four-buffer call has no residual to give: named, nothing launched.
  size_t launched = recorded("launch").size();
  Expected<double> missing = (*session)->run(input.data(), filter.data(),
                                             bias.data(), output.data());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("residual argument 'r'"),
            std::string::npos)
      << missing.error().message();
  EXPECT_EQ(recorded("launch").size(), launched);
  session->reset();
}

class TmaRunnerTest : public RecordingRunnerTest {};

TEST_F(TmaRunnerTest, TensorMapsFollowThePointers) {
  Manifest m = tmaManifest();
  m.kernel.sharedMemoryBytes = 100 * 1024;
  Expected<RunReport> report = run(m, tmaImage());
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_TRUE(report->comparison.pass)
      << "rel_l2 " << report->comparison.relL2Error;
  EXPECT_EQ(report->manifest.tensorMaps.size(), 2u);

  // Encoded once, for the buffers every launch gets.
  std::vector<JsonValue> maps = recorded("tensor_map");
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].at("call"), "cuTensorMapEncodeIm2col");
  EXPECT_EQ(maps[1].at("call"), "cuTensorMapEncodeTiled");
  std::vector<JsonValue> launches = recorded("launch");
  ASSERT_EQ(launches.size(), 2u + 3u); // warmup + repeat
  for (const JsonValue &launch : launches)
    expectTmaLaunch(launch, m);
  EXPECT_EQ(launches[0].at("params")[4].at("tensor_map").at("serial"),
            maps[0].at("serial"));
  EXPECT_EQ(launches[0].at("shared_memory_bytes"), 100 * 1024);
  EXPECT_EQ(fake().maxDynamicShared("fake_conv2d"), 100 * 1024);
}

TEST_F(TmaRunnerTest, KernelSessionPassesTheMapsToo) {
  Manifest m = tmaManifest();
  m.kernel.sharedMemoryBytes = 64 * 1024;
  std::string image = tmaImage();
  Expected<std::unique_ptr<KernelSession>> session =
      KernelSession::load(m, image, "", loadFakeDriver());
  ASSERT_TRUE(session.ok()) << session.error().message();
  // The attribute is set at load: a kernel asking too much fails there.
  EXPECT_EQ(fake().maxDynamicShared("fake_conv2d"), 64 * 1024);
  const ConvProblem &p = m.problem;
  std::vector<uint16_t> input(size_t(p.inputElements()), 0x3C00); // 1.0
  std::vector<uint16_t> filter(size_t(p.filterElements()), 0x3C00);
  std::vector<float> bias(size_t(p.f), 0.5f);
  std::vector<uint16_t> output(size_t(p.outputElements()));
  for (int run = 0; run < 2; ++run) {
    Expected<double> ms = (*session)->run(input.data(), filter.data(),
                                          bias.data(), output.data());
    ASSERT_TRUE(ms.ok()) << ms.error().message();
  }
  // A corner output sees 2x2 taps of 16 channels: 64 + 0.5 (f16 0x5408).
  EXPECT_EQ(output[0], 0x5408);
  EXPECT_EQ(recorded("tensor_map").size(), 2u); // encoded once, at load
  std::vector<JsonValue> launches = recorded("launch");
  ASSERT_EQ(launches.size(), 2u);
  for (const JsonValue &launch : launches)
    expectTmaLaunch(launch, m);
  session->reset();
}

TEST_F(TmaRunnerTest, AnEncodeFailureIsNamedAndLeaksNothing) {
  fake().setFailures("cuTensorMapEncodeTiled:CUDA_ERROR_INVALID_VALUE");
  Expected<RunReport> report = run(tmaManifest(), tmaImage());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().message(),
            "tensor map \"w_tiles\": cuTensorMapEncodeTiled failed: "
            "CUDA_ERROR_INVALID_VALUE (invalid argument)");
  EXPECT_TRUE(recorded("launch").empty());
  // TearDown checks that the buffers, module and context were released.
}

TEST_F(TmaRunnerTest, ADriverWithoutTmaSaysWhatToUpdate) {
  ScopedEnv olderDriver("FAKE_CUDA_NO_TMA", "1");
  Expected<RunReport> report = run(tmaManifest(), tmaImage());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().message(),
            "tensor map \"x_im2col\": cuTensorMapEncodeIm2col failed: not "
            "available (the driver " +
                canonicalPath(fakeLibcudaPath()) +
                " has no cuTensorMapEncodeIm2col: TMA kernels (sm_90a) need a "
                "CUDA 12.0 or later driver; update the NVIDIA driver)");
  EXPECT_TRUE(recorded("launch").empty());
  Expected<std::unique_ptr<KernelSession>> session =
      KernelSession::load(tmaManifest(), tmaImage(), "", loadFakeDriver());
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().call(), "cuTensorMapEncodeIm2col");

  // Kernels without maps run on that driver as before.
  ConvProblem p = sampleProblem(Layout::NHWC, FilterLayout::FHWC, DType::F16);
  Expected<RunReport> plain =
      run(convManifest(p, DType::F16, DType::F16),
          fakeImage(convLine(p, DType::F16, DType::F16)));
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_TRUE(plain->comparison.pass);
}

TEST(CudnnTest, LoadsWhereInstalledOrSaysWhy) {
  Expected<std::unique_ptr<Cudnn>> cudnn = Cudnn::load();
  if (cudnn.ok()) {
    EXPECT_FALSE((*cudnn)->libraryPath().empty());
    EXPECT_TRUE((*cudnn)->version()[0] == '8' || (*cudnn)->version()[0] == '9')
        << (*cudnn)->version();
  } else {
    EXPECT_NE(cudnn.error().message().find("cuDNN"), std::string::npos);
  }
  ScopedEnv env(kCudnnEnvVar, "/nonexistent/libcudnn.so.9");
  Expected<std::unique_ptr<Cudnn>> missing = Cudnn::load();
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/libcudnn.so.9"),
            std::string::npos)
      << missing.error().message();
}

} // namespace
