//===- Diagnosis.cpp - Why is there no usable GPU here? -------------------===//

#include "convrt/Diagnosis.h"

#include "convrt/Driver.h"
#include "convrt/Files.h"

#include <algorithm>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace convrt {
namespace {

using Severity = Finding::Severity;

/// CUDA_ERROR_INSUFFICIENT_DRIVER: older drivers still return it, CUDA 13's
/// cuda.h no longer names it.
constexpr int kInsufficientDriver = 35;

const char *const kEnvironmentNames[] = {
    "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES", kLibcudaEnvVar, "LD_LIBRARY_PATH"};

constexpr const char *kRunWithGpus =
    "run: docker run --gpus all ...; Kubernetes: request nvidia.com/gpu; "
    "podman: --device nvidia.com/gpu=all";

std::optional<std::string> environment(const Diagnosis &d,
                                       const std::string &name) {
  for (const EnvironmentVariable &var : d.environment)
    if (var.name == name)
      return var.value;
  return std::nullopt;
}

DeviceNode probeNode(const std::string &path) {
  DeviceNode node;
  node.path = path;
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    return node;
  node.present = true;
  node.characterDevice = S_ISCHR(info.st_mode);
  if (node.characterDevice) {
    node.major = major(info.st_rdev);
    node.minor = minor(info.st_rdev);
  }
  node.accessible = access(path.c_str(), R_OK | W_OK) == 0;
  return node;
}

void probeDeviceNodes(const DiagnosisOptions &options, Diagnosis &d) {
  const std::string &dev = options.devDirectory;
  d.nodes.push_back(probeNode(joinPath(dev, "nvidiactl")));
  d.nodes.push_back(probeNode(joinPath(dev, "nvidia-uvm")));
  std::vector<int> gpus;
  if (DIR *dir = opendir(dev.c_str())) {
    while (struct dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
          name.find_first_not_of("0123456789", 6) == std::string::npos)
        gpus.push_back(std::atoi(name.c_str() + 6));
    }
    closedir(dir);
  }
  std::sort(gpus.begin(), gpus.end());
  for (int gpu : gpus)
    d.nodes.push_back(probeNode(joinPath(dev, "nvidia" + std::to_string(gpu))));
  d.wsl = probeNode(joinPath(dev, "dxg")).present;
}

void probeContainer(const DiagnosisOptions &options, Diagnosis &d) {
  for (const char *marker : {"/.dockerenv", "/run/.containerenv"})
    if (access(marker, F_OK) == 0) {
      d.inContainer = true;
      d.containerEvidence = marker;
      return;
    }
  Expected<std::string> cgroup =
      readFile(joinPath(options.procDirectory, "1/cgroup"));
  if (cgroup.ok())
    for (const char *word : {"docker", "kubepods", "containerd", "lxc"})
      if (cgroup->find(word) != std::string::npos) {
        d.inContainer = true;
        d.containerEvidence = std::string("/proc/1/cgroup mentions ") + word;
        return;
      }
}

void probeKernelModule(const DiagnosisOptions &options, Diagnosis &d) {
  Expected<std::string> text =
      readFile(joinPath(options.procDirectory, "driver/nvidia/version"));
  if (!text.ok())
    return;
  d.kernelModuleVersionLine = text->substr(0, text->find('\n'));
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul ..."
  const std::string marker = "Kernel Module";
  size_t at = d.kernelModuleVersionLine.find(marker);
  if (at == std::string::npos)
    return;
  size_t start =
      d.kernelModuleVersionLine.find_first_not_of(' ', at + marker.size());
  if (start == std::string::npos)
    return;
  size_t end = d.kernelModuleVersionLine.find(' ', start);
  d.kernelModuleVersion = d.kernelModuleVersionLine.substr(start, end - start);
}

/// "580.65.06" from ".../libcuda.so.580.65.06"; "" for libcuda.so.1.
std::string versionFromLibraryName(const std::string &path) {
  const std::string marker = "libcuda.so.";
  size_t at = path.rfind(marker);
  if (at == std::string::npos)
    return "";
  std::string version = path.substr(at + marker.size());
  if (version.find('.') == std::string::npos ||
      version.find_first_not_of("0123456789.") != std::string::npos)
    return "";
  return version;
}

/// The NVIDIA container toolkit bind-mounts each driver file into the
/// container, so the loaded file shows up as a mount point.
bool isMountPoint(const DiagnosisOptions &options, const std::string &path) {
  Expected<std::string> mounts =
      readFile(joinPath(options.procDirectory, "self/mountinfo"));
  if (!mounts.ok() || path.empty())
    return false;
  size_t pos = 0;
  while (pos < mounts->size()) {
    size_t end = mounts->find('\n', pos);
    std::string line = mounts->substr(pos, end - pos);
    // Fields: id parent major:minor root mount-point ...
    size_t field = 0, start = 0;
    for (; field < 4 && start != std::string::npos; ++field)
      start = line.find(' ', start + (field ? 1 : 0));
    if (start != std::string::npos) {
      size_t stop = line.find(' ', start + 1);
      std::string mountPoint = line.substr(start + 1, stop - start - 1);
      // Spaces are escaped as \040 in mountinfo.
      for (size_t esc; (esc = mountPoint.find("\\040")) != std::string::npos;)
        mountPoint.replace(esc, 4, " ");
      if (mountPoint == path)
        return true;
    }
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  return false;
}

void probeDriver(const DiagnosisOptions &options, Diagnosis &d) {
  Expected<std::shared_ptr<Driver>> loaded = Driver::load(options.load);
  if (!loaded.ok()) {
    d.libraryError = loaded.error().message();
    return;
  }
  Driver &driver = **loaded;
  d.libraryLoaded = true;
  d.library = driver.library();
  d.userModeVersion = versionFromLibraryName(d.library.realPath);
  d.bindMounted = isMountPoint(options, d.library.realPath);

  Error init = driver.init();
  d.library = driver.library(); // cuInit may have revealed a stub
  if (Expected<int> version = driver.version(); version.ok())
    d.driverVersion = *version;
  if (!init.ok()) {
    d.initError = init.message();
    d.initCode = init.code();
    return;
  }
  d.initialized = true;
  Expected<Telemetry> telemetry = queryTelemetry(driver);
  if (!telemetry.ok()) {
    d.initError = telemetry.error().message();
    d.initCode = telemetry.error().code();
    return;
  }
  d.devices = telemetry->devices;
}

void add(Diagnosis &d, Severity severity, std::string what,
         std::string fix = "") {
  d.findings.push_back({severity, std::move(what), std::move(fix)});
}

bool hidesAllDevices(const std::optional<std::string> &visible) {
  return visible &&
         (visible->empty() || *visible == "-1" || *visible == "NoDevFiles" ||
          *visible == "none" || *visible == "void");
}

/// The driver itself answers for the GPU: libcuda (not the stub) loaded,
/// cuInit succeeded and it reports at least one device.
bool driverWorks(const Diagnosis &d) {
  return d.libraryLoaded && !d.library.stub && d.initialized &&
         d.initError.empty() && !d.devices.empty();
}

/// How bad a complaint about /dev or /proc is. Where the driver reaches a
/// device they only explain: WSL2 reaches GPUs through /dev/dxg, CDI and
/// other runtimes name their nodes differently, procfs may be masked. Where
/// the driver fails, they name the likeliest cause first.
Severity probeSeverity(const Diagnosis &d) {
  return driverWorks(d) ? Severity::Warning : Severity::Failure;
}

void noNodesFinding(Diagnosis &d) {
  if (driverWorks(d)) {
    size_t count = d.devices.size();
    add(d, Severity::Warning,
        "no /dev/nvidia* nodes, yet the driver reaches " +
            std::to_string(count) + (count == 1 ? " device" : " devices") +
            (d.wsl ? " (through /dev/dxg: WSL2)"
                   : " (the container runtime names its device nodes "
                     "differently, e.g. CDI)"));
  } else if (d.wsl) {
    add(d, Severity::Note,
        "WSL2 (/dev/dxg): GPUs are reached through /dev/dxg, not /dev/nvidia*");
  } else {
    add(d, Severity::Failure,
        "no /dev/nvidia* nodes: the container was started without --gpus",
        kRunWithGpus);
  }
}

void nodeAccessFindings(Diagnosis &d) {
  for (const DeviceNode &node : d.nodes) {
    if (!node.present)
      continue;
    if (!node.characterDevice)
      add(d, probeSeverity(d), node.path + " is not a character device",
          "it was created by hand or bind-mounted wrongly; let the NVIDIA "
          "container toolkit create it (--gpus all)");
    else if (!node.accessible)
      add(d, probeSeverity(d),
          node.path + " is not readable and writable by this user (uid " +
              std::to_string(getuid()) + ")",
          "add the user to the device's group (often video) or allow the "
          "device in the container's device cgroup");
  }
}

void nodeFindings(Diagnosis &d) {
  const DeviceNode &ctl = d.nodes[0];
  const DeviceNode &uvm = d.nodes[1];
  bool anyGpuNode = d.nodes.size() > 2;
  if (!ctl.present && !anyGpuNode)
    noNodesFinding(d);
  else if (!anyGpuNode)
    add(d, probeSeverity(d),
        "/dev/nvidiactl is present but no /dev/nvidia<N>: no GPU is assigned "
        "to this container",
        "check NVIDIA_VISIBLE_DEVICES (" +
            environment(d, "NVIDIA_VISIBLE_DEVICES").value_or("unset") +
            ") and start it with --gpus all or --gpus device=<index>");
  else if (!ctl.present)
    add(d, probeSeverity(d), "/dev/nvidiactl is missing",
        "pass it too (docker run --gpus all does), or --device /dev/nvidiactl");
  nodeAccessFindings(d);
  if (!d.wsl && (ctl.present || anyGpuNode) && !uvm.present)
    add(d, Severity::Warning,
        "/dev/nvidia-uvm is missing: CUDA needs it (cuInit fails without it)",
        "load the nvidia-uvm module on the host (nvidia-modprobe -u -c=0) and "
        "restart the container with --gpus all");
}

void moduleFindings(Diagnosis &d) {
  if (d.kernelModuleVersionLine.empty()) {
    if (d.wsl)
      return; // WSL2 has no NVIDIA kernel module in the Linux kernel
    if (driverWorks(d))
      add(d, Severity::Warning,
          "/proc/driver/nvidia/version is not visible here: the kernel "
          "module's version is unknown (the driver works)");
    else
      add(d, Severity::Failure,
          "/proc/driver/nvidia/version is missing: no NVIDIA kernel module is "
          "loaded on this machine",
          "if the host has an NVIDIA GPU, install its driver there (nvidia-smi "
          "must work on the host)");
    return;
  }
  if (!d.kernelModuleVersion.empty() && !d.userModeVersion.empty() &&
      d.kernelModuleVersion != d.userModeVersion)
    add(d, probeSeverity(d),
        "driver/library version mismatch: libcuda is " + d.userModeVersion +
            " but the kernel module is " + d.kernelModuleVersion,
        "the container's libcuda must come from the host's driver: do not "
        "install a driver in the image, let the NVIDIA container toolkit "
        "inject it (--gpus all)");
}

void libraryFindings(Diagnosis &d) {
  if (!d.libraryLoaded) {
    std::string fix;
    std::optional<std::string> caps =
        environment(d, "NVIDIA_DRIVER_CAPABILITIES");
    if (caps && caps->find("compute") == std::string::npos &&
        caps->find("all") == std::string::npos)
      fix = "NVIDIA_DRIVER_CAPABILITIES=" + *caps +
            " lacks compute, so the toolkit injects no libcuda: set "
            "NVIDIA_DRIVER_CAPABILITIES=compute,utility";
    add(d, Severity::Failure, d.libraryError, fix);
    return;
  }
  if (d.library.stub) {
    add(d, Severity::Failure,
        "libcuda.so.1 is the CUDA toolkit's stub (" + d.library.realPath +
            "), not a driver",
        "the stub only satisfies the linker: remove the stubs directory from "
        "LD_LIBRARY_PATH / " +
            std::string(kLibcudaEnvVar) +
            " and run where the NVIDIA driver is installed or injected "
            "(docker run --gpus all ...)");
    return;
  }
  if (d.bindMounted)
    add(d, Severity::Note,
        d.library.realPath +
            " is bind-mounted: injected by the NVIDIA container toolkit");
  if (d.library.realPath.find("/compat/") != std::string::npos)
    add(d, Severity::Note,
        d.library.realPath +
            " is the toolkit's forward-compatibility driver: it works only on "
            "datacenter GPUs with a supported host driver");
  if (!d.library.missingEntryPoints.empty()) {
    std::string names;
    for (const std::string &name : d.library.missingEntryPoints)
      names += (names.empty() ? "" : ", ") + name;
    add(d, Severity::Warning, "the driver lacks entry points: " + names,
        "update the NVIDIA driver");
  }
  // Optional ones cost only the features that need them (Driver names the
  // feature when one is called): a note, not a warning.
  for (const std::string &name : d.library.missingOptionalEntryPoints)
    add(d, Severity::Note,
        "the driver has no " + name + ": " + optionalEntryPointNeed(name));
}

std::string initFix(const Diagnosis &d) {
  std::optional<std::string> cudaVisible =
      environment(d, "CUDA_VISIBLE_DEVICES");
  std::optional<std::string> nvidiaVisible =
      environment(d, "NVIDIA_VISIBLE_DEVICES");
  switch (d.initCode) {
  case CUDA_ERROR_NO_DEVICE:
    if (hidesAllDevices(cudaVisible))
      return "CUDA_VISIBLE_DEVICES=" + *cudaVisible +
             " hides every GPU: unset it or list device indices";
    if (hidesAllDevices(nvidiaVisible))
      return "NVIDIA_VISIBLE_DEVICES=" + *nvidiaVisible +
             " gives the container no GPU: " + kRunWithGpus;
    return "the driver sees no GPU: start the container with --gpus all and "
           "check CUDA_VISIBLE_DEVICES";
  case kInsufficientDriver:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return "libcuda does not match the kernel module: use the libcuda the "
           "host's driver provides (the NVIDIA container toolkit injects it)";
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return "the forward-compatibility libcuda works only on datacenter GPUs: "
           "remove /usr/local/cuda/compat from LD_LIBRARY_PATH";
  case CUDA_ERROR_DEVICE_UNAVAILABLE:
    return "the GPU is busy in exclusive-process mode or unavailable: check "
           "nvidia-smi -q -d COMPUTE on the host";
  case CUDA_ERROR_UNKNOWN:
  case CUDA_ERROR_OPERATING_SYSTEM:
    return "usually /dev/nvidia-uvm is missing or not accessible, or the "
           "kernel module failed: run nvidia-smi and check dmesg on the host";
  default:
    return "run nvidia-smi on the host and check dmesg";
  }
}

void initFindings(Diagnosis &d) {
  if (!d.libraryLoaded || d.library.stub)
    return;
  if (!d.initialized || !d.initError.empty()) {
    add(d, Severity::Failure, d.initError, initFix(d));
    return;
  }
  if (d.devices.empty())
    add(d, Severity::Failure, "the driver reports no CUDA device", initFix(d));
  if (d.driverVersion > 0 && d.driverVersion < CUDA_VERSION)
    add(d, Severity::Warning,
        "driver supports CUDA " + formatCudaVersion(d.driverVersion) +
            "; this runtime was built with CUDA " +
            formatCudaVersion(CUDA_VERSION) +
            " and kernels compiled by that toolkit need a CUDA " +
            formatCudaVersion(CUDA_VERSION) + " driver",
        "update the host's NVIDIA driver (R" +
            std::to_string(minimumDriverBranch(CUDA_VERSION / 1000)) +
            " or newer) or ship cubins for the device");
}

void kernelFindings(const DiagnosisOptions &options, Diagnosis &d) {
  if (!d.kernel || d.devices.empty())
    return;
  if (options.device < 0 || options.device >= int(d.devices.size())) {
    add(d, Severity::Failure,
        "device " + std::to_string(options.device) + " does not exist (" +
            std::to_string(d.devices.size()) + " visible)",
        "pick a device index below " + std::to_string(d.devices.size()));
    return;
  }
  for (const std::string &problem : compatibilityProblems(
           *d.kernel, d.driverVersion, d.devices[options.device]))
    add(d, Severity::Failure, problem);
}

void decideVerdict(Diagnosis &d) {
  const Finding *firstFailure = nullptr;
  for (const Finding &finding : d.findings)
    if (finding.severity == Severity::Failure && !firstFailure)
      firstFailure = &finding;
  d.usable = !firstFailure;
  if (firstFailure) {
    d.verdict = "no usable GPU: " + firstFailure->what;
    if (!firstFailure->fix.empty())
      d.verdict += " (" + firstFailure->fix + ")";
    return;
  }
  const DeviceInfo &first = d.devices.front();
  d.verdict = "usable: " + std::to_string(d.devices.size()) + " device" +
              (d.devices.size() == 1 ? "" : "s") + ", first " + first.name +
              " (" + first.chip() + "), CUDA " +
              formatCudaVersion(d.driverVersion) + " driver";
}

const char *severityName(Severity severity) {
  switch (severity) {
  case Severity::Note:
    return "note";
  case Severity::Warning:
    return "warn";
  case Severity::Failure:
    return "FAIL";
  }
  return "?";
}

} // namespace

Diagnosis diagnose(const DiagnosisOptions &options) {
  Diagnosis d;
  for (const char *name : kEnvironmentNames) {
    const char *value = std::getenv(name);
    d.environment.push_back(
        {name, value ? std::optional<std::string>(value) : std::nullopt});
  }
  d.kernel = options.kernel;
  probeContainer(options, d);
  probeDeviceNodes(options, d);
  probeKernelModule(options, d);
  probeDriver(options, d);

  nodeFindings(d);
  moduleFindings(d);
  libraryFindings(d);
  initFindings(d);
  kernelFindings(options, d);
  decideVerdict(d);
  return d;
}

static std::string row(const std::string &label, const std::string &value) {
  std::string text = "  " + label;
  text.append(label.size() < 28 ? 28 - label.size() : 1, ' ');
  return text + value + "\n";
}

std::string formatDiagnosisText(const Diagnosis &d) {
  std::string text = "convrt-info: NVIDIA GPU passthrough diagnosis\n";
  text += "environment\n";
  text += row("container", d.inContainer ? "yes (" + d.containerEvidence + ")"
                                         : "not detected");
  for (const EnvironmentVariable &var : d.environment)
    text += row(var.name, var.value ? "\"" + *var.value + "\"" : "(unset)");

  text += "device nodes\n";
  for (const DeviceNode &node : d.nodes) {
    std::string state = "missing";
    if (node.present && !node.characterDevice)
      state = "present but not a character device";
    else if (node.present)
      state = "character device " + std::to_string(node.major) + ":" +
              std::to_string(node.minor) +
              (node.accessible ? ", read/write ok" : ", NOT accessible");
    text += row(node.path, state);
  }
  if (d.nodes.size() <= 2)
    text += row("/dev/nvidia<N>", "none");
  if (d.wsl)
    text += row("/dev/dxg", "present (WSL2)");

  text += "kernel module\n";
  text += row("/proc/driver/nvidia/version", d.kernelModuleVersionLine.empty()
                                                 ? "missing"
                                                 : d.kernelModuleVersionLine);

  text += "driver library\n";
  if (!d.libraryLoaded) {
    text += row("libcuda.so.1", "not loaded");
  } else {
    text += row("requested", d.library.requested);
    std::string loaded = d.library.realPath;
    if (d.library.stub)
      loaded += " (STUB: " + d.library.stubReason + ")";
    else if (d.bindMounted)
      loaded += " (bind-mounted by the NVIDIA container toolkit)";
    text += row("loaded", loaded);
    text += row("entry points", d.library.resolvedWithGetProcAddress
                                    ? "cuGetProcAddress"
                                    : "dlsym");
    text += row("driver API", d.driverVersion
                                  ? "CUDA " + formatCudaVersion(d.driverVersion)
                                  : "unknown");
    text += row("cuInit", d.initialized ? "ok" : d.initError);
  }

  text += "devices: " + std::to_string(d.devices.size()) + "\n";
  for (const DeviceInfo &device : d.devices)
    text += "  " + formatDeviceLine(device) + "\n";

  if (!d.findings.empty())
    text += "findings\n";
  for (const Finding &finding : d.findings)
    text += "  " + std::string(severityName(finding.severity)) + "  " +
            finding.what + (finding.fix.empty() ? "" : ": " + finding.fix) +
            "\n";
  text += "VERDICT: " + d.verdict + "\n";
  return text;
}

static JsonValue nodeJson(const DeviceNode &node) {
  return {{"path", node.path},
          {"present", node.present},
          {"character_device", node.characterDevice},
          {"accessible", node.accessible},
          {"major", node.major},
          {"minor", node.minor}};
}

static JsonValue libraryJson(const Diagnosis &d) {
  if (!d.libraryLoaded)
    return {{"loaded", false}, {"error", d.libraryError}};
  return {{"loaded", true},
          {"requested", d.library.requested},
          {"real_path", d.library.realPath},
          {"stub", d.library.stub},
          {"bind_mounted", d.bindMounted},
          {"user_mode_version", d.userModeVersion},
          {"resolved_with", d.library.resolvedWithGetProcAddress
                                ? "cuGetProcAddress"
                                : "dlsym"}};
}

/// A string, or null where `text` is empty (unknown).
static JsonValue stringOrNull(const std::string &text) {
  return text.empty() ? JsonValue() : JsonValue(text);
}

JsonValue diagnosisJson(const Diagnosis &d) {
  JsonValue environment = JsonValue::object();
  for (const EnvironmentVariable &var : d.environment)
    environment[var.name] = var.value ? JsonValue(*var.value) : JsonValue();
  JsonValue nodes = JsonValue::array();
  for (const DeviceNode &node : d.nodes)
    nodes.push_back(nodeJson(node));
  JsonValue devices = JsonValue::array();
  for (const DeviceInfo &device : d.devices)
    devices.push_back(deviceJson(device));
  JsonValue findings = JsonValue::array();
  for (const Finding &finding : d.findings)
    findings.push_back({{"severity", severityName(finding.severity)},
                        {"what", finding.what},
                        {"fix", finding.fix}});
  return {
      {"usable", d.usable},
      {"verdict", d.verdict},
      {"container", d.inContainer},
      {"environment", std::move(environment)},
      {"device_nodes", std::move(nodes)},
      {"wsl", d.wsl},
      {"kernel_module", d.kernelModuleVersionLine.empty()
                            ? JsonValue()
                            : JsonValue(d.kernelModuleVersion)},
      {"library", libraryJson(d)},
      {"driver_version", d.driverVersion
                             ? JsonValue(formatCudaVersion(d.driverVersion))
                             : JsonValue()},
      {"cuinit", d.initialized ? JsonValue("ok") : stringOrNull(d.initError)},
      {"devices", std::move(devices)},
      {"findings", std::move(findings)}};
}

} // namespace convrt
