//===- DiagnosisTest.cpp - Verdicts for each broken link ------------------===//

#include "TestSupport.h"

#include "convrt/Diagnosis.h"
#include "convrt/Files.h"

#include <fstream>

using namespace convrt;
using namespace convrt::test;

namespace {

/// Prepared /dev and /proc trees: "good" nodes are symlinks to /dev/null, a
/// character device every user may read and write.
class DiagnosisTest : public FakeCudaTest {
protected:
  void SetUp() override {
    FakeCudaTest::SetUp();
    dev_ = root_.mkdir("dev");
    proc_ = root_.mkdir("proc");
    options_.devDirectory = dev_;
    options_.procDirectory = proc_;
    options_.load.path = fakeLibcudaPath();
  }

  void addNode(const std::string &name) {
    ASSERT_EQ(symlink("/dev/null", (dev_ + "/" + name).c_str()), 0);
  }
  void addAllNodes() {
    addNode("nvidiactl");
    addNode("nvidia-uvm");
    addNode("nvidia0");
  }
  void addKernelModule(const std::string &version = "580.65.06") {
    root_.write("proc/driver/nvidia/version",
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version +
                    "  Sun Jul 27 06:54:38 UTC 2025\nGCC version: gcc 12\n");
  }

  static bool hasFinding(const Diagnosis &d, Finding::Severity severity,
                         const std::string &text) {
    for (const Finding &f : d.findings)
      if (f.severity == severity &&
          (f.what + ": " + f.fix).find(text) != std::string::npos)
        return true;
    return false;
  }
  static std::string describe(const Diagnosis &d) {
    return formatDiagnosisText(d);
  }

  TempDir root_;
  std::string dev_, proc_;
  DiagnosisOptions options_;
};

using Severity = Finding::Severity;

TEST_F(DiagnosisTest, UsableWhenEveryLinkHolds) {
  addAllNodes();
  addKernelModule();
  Diagnosis d = diagnose(options_);
  EXPECT_TRUE(d.usable) << describe(d);
  EXPECT_EQ(d.verdict, "usable: 1 device, first Fake GPU (sm_90), CUDA 13.0 "
                       "driver");
  EXPECT_EQ(d.kernelModuleVersion, "580.65.06");
  ASSERT_EQ(d.nodes.size(), 3u);
  EXPECT_TRUE(d.nodes[2].characterDevice);
  EXPECT_EQ(d.nodes[2].major, 1u); // /dev/null
  EXPECT_TRUE(d.nodes[2].accessible);
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_EQ(d.devices[0].name, "Fake GPU");
}

// Where the driver reaches a device, missing nodes only warn: runtimes
// other than the NVIDIA container toolkit name them differently.
TEST_F(DiagnosisTest, NoDeviceNodesButAWorkingDriverIsUsable) {
  addKernelModule();
  Diagnosis d = diagnose(options_);
  EXPECT_TRUE(d.usable) << describe(d);
  EXPECT_EQ(d.verdict, "usable: 1 device, first Fake GPU (sm_90), CUDA 13.0 "
                       "driver");
  EXPECT_TRUE(hasFinding(d, Severity::Warning,
                         "no /dev/nvidia* nodes, yet the driver reaches 1 "
                         "device (the container runtime names its device "
                         "nodes differently, e.g. CDI)"))
      << describe(d);
}

TEST_F(DiagnosisTest, Wsl2ReachesTheGpuThroughDxg) {
  root_.write("dev/dxg", ""); // WSL2: no /dev/nvidia*, no kernel module
  Diagnosis d = diagnose(options_);
  EXPECT_TRUE(d.wsl);
  EXPECT_TRUE(d.usable) << describe(d);
  EXPECT_TRUE(hasFinding(d, Severity::Warning,
                         "yet the driver reaches 1 device (through /dev/dxg: "
                         "WSL2)"))
      << describe(d);
  EXPECT_NE(formatDiagnosisText(d).find("/dev/dxg"), std::string::npos);
}

TEST_F(DiagnosisTest, NoDeviceNodesAndAFailingDriverMeansNoGpusFlag) {
  addKernelModule();
  fake().setFailures("cuInit:CUDA_ERROR_NO_DEVICE");
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_EQ(d.verdict.rfind("no usable GPU: no /dev/nvidia* nodes: the "
                            "container was started without --gpus (run: "
                            "docker run --gpus all ...",
                            0),
            0u)
      << d.verdict;
  EXPECT_TRUE(hasFinding(d, Severity::Failure, "cuInit failed"));
}

TEST_F(DiagnosisTest, NoDeviceNodesAndNoLibcudaMeansNoGpusFlag) {
  options_.load.path = "/nonexistent/libcuda.so.1";
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_EQ(d.verdict.rfind("no usable GPU: no /dev/nvidia* nodes: the "
                            "container was started without --gpus",
                            0),
            0u)
      << d.verdict;
}

TEST_F(DiagnosisTest, ZeroDevicesMeansNoGpusFlag) {
  ScopedEnv none("FAKE_CUDA_DEVICE_COUNT", "0");
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_EQ(d.verdict.rfind("no usable GPU: no /dev/nvidia* nodes", 0), 0u)
      << d.verdict;
  EXPECT_TRUE(
      hasFinding(d, Severity::Failure, "the driver reports no CUDA device"));
}

TEST_F(DiagnosisTest, ControlNodeWithoutGpuNodes) {
  addNode("nvidiactl");
  addNode("nvidia-uvm");
  addKernelModule();
  ScopedEnv visible("NVIDIA_VISIBLE_DEVICES", "void");
  fake().setFailures("cuInit:CUDA_ERROR_NO_DEVICE"); // as the driver would
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_EQ(d.verdict.rfind("no usable GPU: /dev/nvidiactl is present but no "
                            "/dev/nvidia<N>: no GPU is assigned to this "
                            "container (check NVIDIA_VISIBLE_DEVICES (void)",
                            0),
            0u)
      << d.verdict;
}

TEST_F(DiagnosisTest, NodesThatAreNotCharacterDevices) {
  root_.write("dev/nvidiactl", "");
  root_.write("dev/nvidia0", "");
  addNode("nvidia-uvm");
  addKernelModule();
  Diagnosis working = diagnose(options_);
  EXPECT_TRUE(working.usable) << describe(working);
  EXPECT_TRUE(hasFinding(working, Severity::Warning,
                         dev_ + "/nvidia0 is not a character device"));

  fake().setFailures("cuInit:CUDA_ERROR_UNKNOWN");
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_TRUE(hasFinding(d, Severity::Failure,
                         dev_ + "/nvidia0 is not a character device"))
      << describe(d);
}

TEST_F(DiagnosisTest, MissingUvmIsAWarning) {
  addNode("nvidiactl");
  addNode("nvidia0");
  addKernelModule();
  Diagnosis d = diagnose(options_);
  EXPECT_TRUE(d.usable) << describe(d); // the fake does not need it
  EXPECT_TRUE(hasFinding(d, Severity::Warning, "/dev/nvidia-uvm is missing"));
}

TEST_F(DiagnosisTest, MissingKernelModule) {
  addAllNodes();
  Diagnosis working = diagnose(options_);
  EXPECT_TRUE(working.usable) << describe(working);
  EXPECT_TRUE(hasFinding(working, Severity::Warning,
                         "/proc/driver/nvidia/version is not visible here"));

  fake().setFailures("cuInit:CUDA_ERROR_UNKNOWN");
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_TRUE(hasFinding(d, Severity::Failure,
                         "/proc/driver/nvidia/version is missing: no NVIDIA "
                         "kernel module is loaded"));
}

TEST_F(DiagnosisTest, LibcudaNotFound) {
  addAllNodes();
  addKernelModule();
  ScopedEnv caps("NVIDIA_DRIVER_CAPABILITIES", "utility");
  options_.load.path.clear();
  options_.load.searchNames = {"libconvrt-test-no-such-cuda.so.1"};
  ScopedEnv env(kLibcudaEnvVar, nullptr);
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_FALSE(d.libraryLoaded);
  EXPECT_EQ(d.verdict.rfind("no usable GPU: libcuda.so.1 not found: the NVIDIA "
                            "container toolkit did not inject the driver",
                            0),
            0u)
      << d.verdict;
  EXPECT_NE(d.verdict.find("NVIDIA_DRIVER_CAPABILITIES=utility lacks compute"),
            std::string::npos)
      << d.verdict;
}

TEST_F(DiagnosisTest, ToolkitStub) {
  if (!isRegularFile(CONVRT_CUDA_STUB))
    GTEST_SKIP() << "no toolkit stub at " << CONVRT_CUDA_STUB;
  addAllNodes();
  addKernelModule();
  options_.load.path = CONVRT_CUDA_STUB;
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_TRUE(d.library.stub);
  EXPECT_EQ(d.verdict.rfind("no usable GPU: libcuda.so.1 is the CUDA toolkit's "
                            "stub (",
                            0),
            0u)
      << d.verdict;
  EXPECT_NE(d.verdict.find("/stubs/libcuda.so), not a driver"),
            std::string::npos);
}

TEST_F(DiagnosisTest, CuInitNoDeviceBlamesCudaVisibleDevices) {
  addAllNodes();
  addKernelModule();
  ScopedEnv visible("CUDA_VISIBLE_DEVICES", "-1");
  fake().setFailures("cuInit:CUDA_ERROR_NO_DEVICE");
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_EQ(d.initCode, CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(d.verdict,
            "no usable GPU: cuInit failed: CUDA_ERROR_NO_DEVICE (no "
            "CUDA-capable device is detected) (CUDA_VISIBLE_DEVICES=-1 hides "
            "every GPU: unset it or list device indices)");
}

TEST_F(DiagnosisTest, DriverLibraryAndKernelModuleMismatch) {
  addAllNodes();
  addKernelModule("535.104.05");
  // A libcuda whose file name carries its version, as drivers install it.
  std::string copy = root_.file("libcuda.so.580.65.06");
  {
    std::ifstream in(fakeLibcudaPath(), std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
  }
  options_.load.path = copy;
  // A real driver refuses to start when the two differ. The copy is a
  // library of its own (its own state), so it takes failures from the
  // environment, not from fake().
  ScopedEnv fail("FAKE_CUDA_FAIL", "cuInit:CUDA_ERROR_SYSTEM_DRIVER_MISMATCH");
  Diagnosis d = diagnose(options_);
  EXPECT_EQ(d.userModeVersion, "580.65.06");
  EXPECT_FALSE(d.usable);
  EXPECT_TRUE(hasFinding(d, Severity::Failure,
                         "driver/library version mismatch: libcuda is "
                         "580.65.06 but the kernel module is 535.104.05"))
      << describe(d);
}

TEST_F(DiagnosisTest, BindMountedLibraryIsNoted) {
  addAllNodes();
  addKernelModule();
  std::string resolved = canonicalPath(fakeLibcudaPath());
  root_.write("proc/self/mountinfo",
              "22 1 0:21 / / rw,relatime - overlay overlay rw\n"
              "611 22 259:1 /usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06 " +
                  resolved +
                  " ro,nosuid,nodev,relatime master:1 - ext4 /dev/nvme0n1p1 "
                  "rw\n");
  Diagnosis d = diagnose(options_);
  EXPECT_TRUE(d.bindMounted);
  EXPECT_TRUE(d.usable) << describe(d);
  EXPECT_TRUE(hasFinding(d, Severity::Note,
                         "is bind-mounted: injected by the NVIDIA container "
                         "toolkit"));
}

TEST_F(DiagnosisTest, ADriverWithoutTmaIsUsableWithANote) {
  addAllNodes();
  addKernelModule();
  ScopedEnv olderDriver("FAKE_CUDA_NO_TMA", "1");
  Diagnosis d = diagnose(options_);
  EXPECT_TRUE(d.usable) << describe(d);
  EXPECT_TRUE(hasFinding(d, Severity::Note,
                         "the driver has no cuTensorMapEncodeIm2col: TMA "
                         "kernels (sm_90a) need a CUDA 12.0 or later driver"))
      << describe(d);
  EXPECT_FALSE(hasFinding(d, Severity::Warning, "lacks entry points"))
      << describe(d);
}

TEST_F(DiagnosisTest, OldDriverForTheKernelsPtx) {
  addAllNodes();
  addKernelModule();
  ScopedEnv version("FAKE_CUDA_DRIVER_VERSION", "12040");
  KernelRequirements kernel;
  kernel.chip = "sm_90";
  kernel.hasPtx = true;
  kernel.ptxIsa = "9.0";
  kernel.ptxMinCudaVersion = 13000;
  options_.kernel = kernel;
  Diagnosis d = diagnose(options_);
  EXPECT_FALSE(d.usable);
  EXPECT_EQ(d.verdict,
            "no usable GPU: driver supports CUDA 12.4; the kernel's PTX (ISA "
            "9.0) needs CUDA 13.0 or newer: update the host's NVIDIA driver "
            "(R580 or newer for CUDA 13) or build the kernel with an older "
            "toolkit");
  EXPECT_TRUE(hasFinding(d, Severity::Warning,
                         "driver supports CUDA 12.4; this runtime was built "
                         "with CUDA 13.0"));
}

TEST_F(DiagnosisTest, TextAndJsonAgree) {
  Diagnosis d = diagnose(options_);
  std::string text = formatDiagnosisText(d);
  EXPECT_NE(text.find("VERDICT: " + d.verdict + "\n"), std::string::npos);
  EXPECT_NE(text.find("/dev/nvidia<N>              none"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[0] Fake GPU  sm_90"), std::string::npos) << text;
  Expected<JsonValue> json = parseJson(dumpJson(diagnosisJson(d), 2));
  ASSERT_TRUE(json.ok()) << json.error().message();
  EXPECT_EQ(json->at("usable").get<bool>(), d.usable);
  EXPECT_EQ(json->at("verdict").get<std::string>(), d.verdict);
  EXPECT_EQ(json->at("driver_version").get<std::string>(), "13.0");
  EXPECT_EQ(json->at("cuinit").get<std::string>(), "ok");
  EXPECT_TRUE(json->at("library").at("loaded").get<bool>());
  EXPECT_EQ(json->at("devices").size(), 1u);
  EXPECT_FALSE(json->at("findings").empty());
  EXPECT_TRUE(json->at("environment").contains("NVIDIA_VISIBLE_DEVICES"));
}

} // namespace
