//===- ToolsTest.cpp - convrt-info and convrt-run as processes ------------===//

#include "FakeBundles.h"
#include "TestSupport.h"

#include "convrt/Files.h"
#include "convrt/Json.h"

#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>

using namespace convrt;
using namespace convrt::test;

namespace {

struct ProcessResult {
  int exitCode = -1;
  bool signaled = false;
  std::string output; ///< stdout and stderr together
};

ProcessResult runShell(const std::string &command) {
  ProcessResult result;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return result;
  char buffer[4096];
  size_t read;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.output.append(buffer, read);
  int status = pclose(pipe);
  result.signaled = WIFSIGNALED(status);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// The tool with CONVRT_LIBCUDA set (or unset for "").
ProcessResult runTool(const char *tool, const std::string &libcuda,
                      const std::string &arguments) {
  std::string env = libcuda.empty() ? "env -u CONVRT_LIBCUDA "
                                    : "env CONVRT_LIBCUDA='" + libcuda + "' ";
  return runShell(env + "'" + tool + "' " + arguments);
}

bool contains(const ProcessResult &r, const std::string &text) {
  return r.output.find(text) != std::string::npos;
}

bool machineHasGpuNodes() { return access("/dev/nvidiactl", F_OK) == 0; }

class ToolsTest : public ::testing::Test {
protected:
  std::string emptyTrees() {
    return "--dev-dir '" + root_.mkdir("dev") + "' --proc-dir '" +
           root_.mkdir("proc") + "'";
  }
  TempDir root_;
};

TEST_F(ToolsTest, InfoWithoutLibcuda) {
  ProcessResult r =
      runTool(CONVRT_INFO_PATH, "/nonexistent/libcuda.so.1", emptyTrees());
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r, "VERDICT: no usable GPU: no /dev/nvidia* nodes: the "
                          "container was started without --gpus"))
      << r.output;
  EXPECT_TRUE(contains(r, "cannot load libcuda from "
                          "CONVRT_LIBCUDA=/nonexistent/libcuda.so.1"))
      << r.output;
}

TEST_F(ToolsTest, InfoWithTheToolkitStub) {
  if (!isRegularFile(CONVRT_CUDA_STUB))
    GTEST_SKIP() << "no toolkit stub at " << CONVRT_CUDA_STUB;
  ProcessResult r = runTool(CONVRT_INFO_PATH, CONVRT_CUDA_STUB, emptyTrees());
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r, "VERDICT: no usable GPU")) << r.output;
  EXPECT_TRUE(contains(r, "is the CUDA toolkit's stub")) << r.output;
  EXPECT_TRUE(contains(r, "CUDA_ERROR_STUB_LIBRARY")) << r.output;
}

TEST_F(ToolsTest, InfoWithTheFakeButNoDeviceNodes) {
  // The driver works, so missing nodes only warn.
  ProcessResult r = runTool(CONVRT_INFO_PATH, fakeLibcudaPath(), emptyTrees());
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r, "[0] Fake GPU  sm_90")) << r.output;
  EXPECT_TRUE(contains(r, "warn  no /dev/nvidia* nodes, yet the driver "
                          "reaches 1 device"))
      << r.output;
  EXPECT_TRUE(contains(r, "VERDICT: usable: 1 device")) << r.output;

  r = runShell(
      "env FAKE_CUDA_FAIL=cuInit:CUDA_ERROR_NO_DEVICE CONVRT_LIBCUDA='" +
      std::string(fakeLibcudaPath()) + "' '" + CONVRT_INFO_PATH + "' " +
      emptyTrees());
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r, "VERDICT: no usable GPU: no /dev/nvidia* nodes"))
      << r.output;
}

TEST_F(ToolsTest, InfoOnThisMachine) {
  // Every libcuda this machine offers, with its real /dev and /proc.
  for (std::string libcuda :
       {std::string(""), std::string("/nonexistent/libcuda.so.1"),
        std::string(CONVRT_CUDA_STUB), std::string(fakeLibcudaPath())}) {
    ProcessResult r = runTool(CONVRT_INFO_PATH, libcuda, "");
    EXPECT_FALSE(r.signaled) << libcuda;
    EXPECT_TRUE(r.exitCode == 0 || r.exitCode == 1) << r.output;
    EXPECT_TRUE(contains(r, "VERDICT: ")) << r.output;
    // The fake is a working driver: it is trusted, nodes or not.
    bool fake = libcuda == fakeLibcudaPath();
    if (fake) {
      EXPECT_EQ(r.exitCode, 0) << r.output;
    }
    if (!machineHasGpuNodes() && !fake) {
      EXPECT_EQ(r.exitCode, 1) << r.output;
      EXPECT_TRUE(contains(r, "VERDICT: no usable GPU")) << r.output;
    }
  }
}

TEST_F(ToolsTest, InfoUsableWithTheFakeAndDeviceNodes) {
  std::string dev = root_.mkdir("dev"), proc = root_.mkdir("proc");
  for (const char *node : {"nvidiactl", "nvidia-uvm", "nvidia0"})
    ASSERT_EQ(symlink("/dev/null", (dev + "/" + node).c_str()), 0);
  root_.write("proc/driver/nvidia/version",
              "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  x\n");
  ProcessResult r =
      runTool(CONVRT_INFO_PATH, fakeLibcudaPath(),
              "--dev-dir '" + dev + "' --proc-dir '" + proc + "'");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r, "VERDICT: usable: 1 device, first Fake GPU (sm_90)"))
      << r.output;
}

TEST_F(ToolsTest, InfoJson) {
  ProcessResult r =
      runTool(CONVRT_INFO_PATH, fakeLibcudaPath(), "--json " + emptyTrees());
  EXPECT_EQ(r.exitCode, 0) << r.output;
  Expected<JsonValue> json = parseJson(r.output);
  ASSERT_TRUE(json.ok()) << json.error().message() << "\n" << r.output;
  EXPECT_TRUE(json->at("usable").get<bool>());
  EXPECT_EQ(json->at("findings").at(0).at("severity").get<std::string>(),
            "warn");
  EXPECT_EQ(json->at("devices").at(0).at("name").get<std::string>(),
            "Fake GPU");
}

TEST_F(ToolsTest, InfoChecksABundle) {
  ProcessResult missing =
      runTool(CONVRT_INFO_PATH, fakeLibcudaPath(), "--bundle /nonexistent");
  EXPECT_EQ(missing.exitCode, 2) << missing.output;
  EXPECT_TRUE(contains(missing, "cannot open /nonexistent/manifest.json"));

  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  Manifest m = convManifest(p, DType::F32, DType::F32);
  m.kernel.chip = "sm_100a";
  std::string bundle = root_.mkdir("bundle");
  ASSERT_TRUE(writeBundle(bundle, m, fakeImage(), "").ok());
  ProcessResult r = runTool(CONVRT_INFO_PATH, fakeLibcudaPath(),
                            "--bundle '" + bundle + "' " + emptyTrees());
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_TRUE(contains(r, "FAIL  the kernel binary is built for sm_100a and "
                          "Fake GPU is sm_90"))
      << r.output;
}

TEST_F(ToolsTest, InfoRejectsBadArguments) {
  ProcessResult r = runTool(CONVRT_INFO_PATH, "", "--frobnicate");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(contains(r, "unknown argument '--frobnicate'")) << r.output;
  EXPECT_EQ(runTool(CONVRT_INFO_PATH, "", "--help").exitCode, 0);
}

class RunToolTest : public ToolsTest {
protected:
  std::string bundle(const ConvProblem &p, const ConvProblem &kernel) {
    std::string dir = root_.mkdir("bundle" + std::to_string(count_++));
    Error error = writeFakeBundle(dir, p, kernel);
    EXPECT_TRUE(error.ok()) << error.message();
    return dir;
  }
  int count_ = 0;
};

TEST_F(RunToolTest, RunsAndChecksABundle) {
  ConvProblem p = sampleProblem(Layout::NHWC, FilterLayout::FHWC, DType::F16);
  std::string dir = bundle(p, p);
  ProcessResult r = runTool(CONVRT_RUN_PATH, fakeLibcudaPath(),
                            "'" + dir + "' --no-cudnn --repeat 3 --warmup 1");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_TRUE(contains(r, "problem ")) << r.output;
  EXPECT_TRUE(contains(r, "n2 c4 h9 w7 f6 k3x3 s2x1 d1x2 p1,2,0,1 g2"))
      << r.output;
  EXPECT_TRUE(contains(r, "cudnn: not run: disabled (--no-cudnn)")) << r.output;
}

TEST_F(RunToolTest, JsonLinesAndExitStatusPerResult) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  ConvProblem wrong = p;
  wrong.strideH = 1; // a kernel that computes another convolution
  wrong.h = p.h - 4;
  std::string good = bundle(p, p), bad = bundle(p, wrong);
  ProcessResult r =
      runTool(CONVRT_RUN_PATH, fakeLibcudaPath(),
              "'" + good + "' '" + bad + "' --json --no-cudnn --repeat 2");
  EXPECT_EQ(r.exitCode, 1) << r.output;
  size_t newline = r.output.find('\n');
  Expected<JsonValue> first = parseJson(r.output.substr(0, newline));
  Expected<JsonValue> second = parseJson(r.output.substr(newline + 1));
  ASSERT_TRUE(first.ok()) << first.error().message() << "\n" << r.output;
  ASSERT_TRUE(second.ok()) << second.error().message() << "\n" << r.output;
  EXPECT_TRUE(first->at("pass").get<bool>());
  EXPECT_EQ(first->at("repeat").get<int64_t>(), 2);
  EXPECT_FALSE(second->at("pass").get<bool>());
}

TEST_F(RunToolTest, DriverFailuresFromTheEnvironment) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  std::string dir = bundle(p, p);
  ProcessResult r = runShell(
      "env FAKE_CUDA_FAIL=cuModuleLoadData:CUDA_ERROR_NO_BINARY_FOR_GPU "
      "CONVRT_LIBCUDA='" +
      std::string(fakeLibcudaPath()) + "' '" + CONVRT_RUN_PATH + "' '" + dir +
      "' --no-cudnn");
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r, "loading kernel.cubin: cuModuleLoadData failed: "
                          "CUDA_ERROR_NO_BINARY_FOR_GPU (no kernel image is "
                          "available for execution on the device)"))
      << r.output;
}

TEST_F(RunToolTest, ATmaBundleAndADriverWithoutTma) {
  std::string dir = root_.mkdir("tma");
  Error error = writeBundle(dir, tmaManifest(), tmaImage(), "");
  ASSERT_TRUE(error.ok()) << error.message();
  std::string record = root_.file("record.jsonl");
  ProcessResult r = runShell("env FAKE_CUDA_RECORD='" + record +
                             "' CONVRT_LIBCUDA='" + fakeLibcudaPath() + "' '" +
                             CONVRT_RUN_PATH + "' '" + dir +
                             "' --no-cudnn --repeat 1 --warmup 0");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  std::vector<JsonValue> launches = recordedEvents(record, "launch");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].at("params")[5].at("tensor_map").at("mode"), "tiled");

  r = runShell("env FAKE_CUDA_NO_TMA=1 CONVRT_LIBCUDA='" +
               std::string(fakeLibcudaPath()) + "' '" + CONVRT_RUN_PATH +
               "' '" + dir + "' --no-cudnn");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r, "has no cuTensorMapEncodeIm2col: TMA kernels "
                          "(sm_90a) need a CUDA 12.0 or later driver; update "
                          "the NVIDIA driver"))
      << r.output;
}

TEST_F(RunToolTest, ABundleThatCannotRun) {
  std::string dir = root_.mkdir("broken");
  root_.write("broken/manifest.json", "{\"format_version\": 1}");
  ProcessResult r =
      runTool(CONVRT_RUN_PATH, fakeLibcudaPath(), "'" + dir + "' --json");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r, dir + "/manifest.json: kernel: missing")) << r.output;
  EXPECT_TRUE(contains(r, "\"error\":")) << r.output;
}

TEST_F(RunToolTest, NoDriverIsExplained) {
  ConvProblem p = sampleProblem(Layout::NCHW, FilterLayout::FCHW, DType::F32);
  std::string dir = bundle(p, p);
  ProcessResult r =
      runTool(CONVRT_RUN_PATH, "/nonexistent/libcuda.so.1", "'" + dir + "'");
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_TRUE(contains(r, "cannot load libcuda")) << r.output;
  EXPECT_TRUE(contains(r, "run convrt-info for a full diagnosis")) << r.output;
}

TEST_F(RunToolTest, Usage) {
  EXPECT_EQ(runTool(CONVRT_RUN_PATH, "", "").exitCode, 2);
  ProcessResult r = runTool(CONVRT_RUN_PATH, "", "x --repeat 0");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_TRUE(
      contains(r, "--repeat expects an integer in [1, 1000000], got '0'"))
      << r.output;
}

} // namespace
