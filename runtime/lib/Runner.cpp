//===- Runner.cpp - Run, time and check a convolution kernel --------------===//

#include "convrt/Runner.h"

#include "convrt/Compatibility.h"
#include "convrt/Context.h"
#include "convrt/Cudnn.h"
#include "convrt/Files.h"
#include "convrt/Memory.h"
#include "convrt/Module.h"
#include "convrt/Timing.h"

#include <algorithm>
#include <cstdio>

namespace convrt {
namespace {

struct HostOperands {
  std::vector<double> input, filter, bias;
};

/// Every operand gets its own stream of random numbers from the one seed.
HostOperands makeOperands(const Manifest &m, uint64_t seed) {
  const ConvProblem &p = m.problem;
  HostOperands ops;
  ops.input = randomTensor(size_t(p.inputElements()), p.dtype, seed * 4 + 1);
  ops.filter = randomTensor(size_t(p.filterElements()), p.dtype, seed * 4 + 2);
  if (int bias = m.find(ArgumentRole::Bias); bias >= 0)
    ops.bias = randomTensor(size_t(p.f), m.arguments[bias].dtype, seed * 4 + 3);
  return ops;
}

struct LoadedKernel {
  Module module;
  std::string from;
  std::string note;
};

Expected<LoadedKernel> loadKernel(std::shared_ptr<Driver> driver,
                                  const KernelSpec &spec,
                                  const std::string &binary,
                                  const std::string &ptx) {
  std::string note;
  if (!spec.binary.empty()) {
    Expected<Module> module = Module::loadImage(driver, binary.data());
    if (module.ok())
      return LoadedKernel{std::move(*module), "cubin", ""};
    if (spec.ptx.empty())
      return module.takeError().withContext("loading " + spec.binary);
    note = "the binary did not load (" + module.error().message() +
           "), so the PTX was JIT-compiled";
  }
  Expected<Module> module = Module::loadPtx(driver, ptx);
  if (!module.ok())
    return module.takeError().withContext(
        "JIT-compiling " + spec.ptx +
        (note.empty() ? "" : " after " + spec.binary + " failed to load"));
  return LoadedKernel{std::move(*module), "ptx", note};
}

/// Appends why the device cannot run the kernel, when that is the cause.
Error explainLoadFailure(Error error, const Manifest &m, const std::string &ptx,
                         int driverVersion, const DeviceInfo &device) {
  KernelRequirements requirements;
  requirements.chip = m.kernel.chip;
  requirements.hasBinary = !m.kernel.binary.empty();
  requirements.hasPtx = !m.kernel.ptx.empty();
  requirements.ptxIsa = ptxIsaVersion(ptx);
  requirements.ptxMinCudaVersion = cudaVersionForPtxIsa(requirements.ptxIsa);
  for (const std::string &problem :
       compatibilityProblems(requirements, driverVersion, device))
    error.withHint(problem);
  return error;
}

double checkTolerance(const Manifest &m) {
  // The output's own rounding and the accumulation type bound the accuracy
  // as much as the input precision does.
  double tol =
      std::max(tolerance(m.problem.dtype), tolerance(m.problem.accumulate));
  if (int out = m.find(ArgumentRole::Output); out >= 0)
    tol = std::max(tol, tolerance(m.arguments[out].dtype));
  return tol;
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

CudnnReport runCudnn(const Manifest &m, std::shared_ptr<Driver> driver,
                     const Stream &stream, const HostOperands &ops,
                     const RunOptions &options,
                     const std::vector<double> *reference) {
  CudnnReport report;
  report.reason = Cudnn::unsupportedReason(m.problem);
  if (!report.reason.empty())
    return report;
  Expected<std::unique_ptr<Cudnn>> cudnn = Cudnn::load();
  if (!cudnn.ok()) {
    report.reason = cudnn.error().message();
    return report;
  }
  report.version = (*cudnn)->version();
  Expected<CudnnResult> result =
      (*cudnn)->run(m.problem, driver, stream, ops.input, ops.filter, ops.bias,
                    options.warmup, options.repeat);
  if (!result.ok()) {
    report.reason = "cuDNN failed: " + result.error().message();
    return report;
  }
  report.ran = true;
  report.algorithm = result->algorithm;
  report.medianMs = result->medianMs;
  if (reference)
    report.comparison = compareResults(
        result->output, *reference,
        std::max(tolerance(m.problem.dtype), tolerance(m.problem.accumulate)));
  return report;
}

} // namespace

double RunReport::tflops() const {
  return medianMs > 0 ? manifest.problem.flops() / (medianMs * 1e-3) / 1e12 : 0;
}

double RunReport::vsCudnn() const {
  return cudnn.ran && medianMs > 0 ? cudnn.medianMs / medianMs : 0;
}

Expected<RunReport> runKernel(const Manifest &m, const std::string &binary,
                              const std::string &ptx,
                              std::shared_ptr<Driver> driver,
                              const RunOptions &options) {
  CONVRT_TRY(validateManifest(m));
  RunReport report;
  report.manifest = m;
  report.warmup = options.warmup;
  report.repeat = options.repeat;

  CONVRT_ASSIGN_OR_RETURN(PrimaryContext context,
                          PrimaryContext::acquire(driver, options.device));
  CONVRT_ASSIGN_OR_RETURN(report.driverVersion, driver->version());
  CONVRT_ASSIGN_OR_RETURN(report.device, queryDevice(*driver, options.device));

  Expected<LoadedKernel> kernel = loadKernel(driver, m.kernel, binary, ptx);
  if (!kernel.ok())
    return explainLoadFailure(kernel.takeError(), m, ptx, report.driverVersion,
                              report.device);
  report.loadedFrom = kernel->from;
  report.loadNote = kernel->note;
  CONVRT_ASSIGN_OR_RETURN(Function function,
                          kernel->module.function(m.kernel.name));

  // One buffer per argument, in manifest order: that order is the kernel's
  // parameter list. Outputs start as NaN so unwritten elements fail the check.
  HostOperands ops = makeOperands(m, options.seed);
  std::vector<DeviceBuffer> buffers;
  std::vector<CUdeviceptr> pointers;
  int outputIndex = m.find(ArgumentRole::Output);
  for (const ArgumentSpec &argument : m.arguments) {
    size_t bytes =
        size_t(elementCount(argument.shape)) * dtypeSize(argument.dtype);
    CONVRT_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                            DeviceBuffer::allocate(driver, bytes));
    const std::vector<double> *values =
        argument.role == ArgumentRole::Input    ? &ops.input
        : argument.role == ArgumentRole::Filter ? &ops.filter
        : argument.role == ArgumentRole::Bias   ? &ops.bias
                                                : nullptr;
    if (values) {
      std::vector<uint8_t> encoded = encode(argument.dtype, *values);
      CONVRT_TRY(buffer.copyFromHost(encoded.data(), encoded.size()));
    } else {
      CONVRT_TRY(buffer.fillBytes(0xFF));
    }
    pointers.push_back(buffer.get());
    buffers.push_back(std::move(buffer));
  }
  std::vector<void *> params;
  for (CUdeviceptr &pointer : pointers)
    params.push_back(&pointer);
  // The uploads ran on the legacy stream; the kernel's stream does not wait.
  CONVRT_TRY(context.synchronize());

  CONVRT_ASSIGN_OR_RETURN(Stream stream, Stream::create(driver));
  LaunchConfig config;
  config.grid = m.kernel.grid;
  config.block = m.kernel.block;
  config.dynamicSharedMemoryBytes = m.kernel.sharedMemoryBytes;
  config.stream = stream.get();
  CONVRT_ASSIGN_OR_RETURN(
      LaunchTiming timing,
      timeLaunches(driver, stream, options.warmup, options.repeat,
                   [&] { return function.launch(config, params.data()); }));
  report.medianMs = timing.medianMs;

  CONVRT_TRY(stream.synchronize());
  const ArgumentSpec &output = m.arguments[outputIndex];
  std::vector<uint8_t> bytes(buffers[outputIndex].size());
  CONVRT_TRY(buffers[outputIndex].copyToHost(bytes.data(), bytes.size()));
  std::vector<double> got = decode(output.dtype, bytes);

  std::vector<double> reference;
  if (options.check) {
    reference = referenceConv2d(m.problem, ops.input, ops.filter, ops.bias);
    report.checked = true;
    report.comparison = compareResults(got, reference, checkTolerance(m));
  }
  if (options.cudnn)
    report.cudnn = runCudnn(m, driver, stream, ops, options,
                            options.check ? &reference : nullptr);
  else
    report.cudnn.reason = "disabled (--no-cudnn)";
  return report;
}

Expected<RunReport> runBundle(const Bundle &bundle,
                              std::shared_ptr<Driver> driver,
                              const RunOptions &options) {
  std::string binary, ptx;
  if (!bundle.binaryPath.empty()) {
    CONVRT_ASSIGN_OR_RETURN(binary, readFile(bundle.binaryPath));
  }
  if (!bundle.ptxPath.empty()) {
    CONVRT_ASSIGN_OR_RETURN(ptx, readFile(bundle.ptxPath));
  }
  CONVRT_ASSIGN_OR_RETURN(
      RunReport report,
      runKernel(bundle.manifest, binary, ptx, std::move(driver), options));
  report.source = bundle.directory;
  return report;
}

static std::string formatNumber(const char *format, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

std::string runTableHeader() {
  char line[256];
  std::snprintf(line, sizeof(line),
                "%-50s %-5s %-6s %10s %9s %9s %13s %13s  %s", "problem",
                "dtype", "layout", "ms", "TFLOP/s", "vs_cudnn", "max_abs_diff",
                "rel_l2_error", "check");
  return line;
}

std::string runTableRow(const RunReport &r) {
  const ConvProblem &p = r.manifest.problem;
  std::string check = !r.checked ? "-" : r.comparison.pass ? "ok" : "FAIL";
  std::string vs = r.cudnn.ran ? formatNumber("%.2f", r.vsCudnn()) : "-";
  std::string maxAbs =
      r.checked ? formatNumber("%.3e", r.comparison.maxAbsDiff) : "-";
  std::string relL2 =
      r.checked ? formatNumber("%.3e", r.comparison.relL2Error) : "-";
  char line[512];
  std::snprintf(line, sizeof(line),
                "%-50s %-5s %-6s %10.4f %9.2f %9s %13s %13s  %s",
                p.describe().c_str(), dtypeName(p.dtype), layoutName(p.layout),
                r.medianMs, r.tflops(), vs.c_str(), maxAbs.c_str(),
                relL2.c_str(), check.c_str());
  return line;
}

static JsonValue comparisonJson(const Comparison &c) {
  return JsonValue::object()
      .set("max_abs_diff", c.maxAbsDiff)
      .set("rel_l2_error", c.relL2Error)
      .set("tolerance", c.tolerance)
      .set("non_finite", static_cast<uint64_t>(c.nonFinite))
      .set("pass", c.pass);
}

JsonValue runReportJson(const RunReport &r) {
  const ConvProblem &p = r.manifest.problem;
  JsonValue cudnn = JsonValue::object();
  cudnn.set("ran", r.cudnn.ran);
  if (r.cudnn.ran) {
    cudnn.set("version", r.cudnn.version)
        .set("algorithm", r.cudnn.algorithm)
        .set("ms", r.cudnn.medianMs)
        .set("tflops", r.cudnn.medianMs > 0
                           ? p.flops() / (r.cudnn.medianMs * 1e-3) / 1e12
                           : 0.0);
    if (r.checked)
      cudnn.set("check", comparisonJson(r.cudnn.comparison));
  } else {
    cudnn.set("reason", r.cudnn.reason);
  }
  JsonValue root = JsonValue::object();
  root.set("source", r.source)
      .set("kernel", r.manifest.kernel.name)
      .set("problem", p.describe())
      .set("problem_detail", *manifestToJson(r.manifest).find("problem"))
      .set("dtype", dtypeName(p.dtype))
      .set("layout", layoutName(p.layout))
      .set("device", deviceJson(r.device))
      .set("driver_version", formatCudaVersion(r.driverVersion))
      .set("loaded_from", r.loadedFrom);
  if (!r.loadNote.empty())
    root.set("load_note", r.loadNote);
  root.set("warmup", r.warmup)
      .set("repeat", r.repeat)
      .set("ms", r.medianMs)
      .set("tflops", r.tflops())
      .set("flops", p.flops())
      .set("checked", r.checked);
  if (r.checked) {
    root.set("max_abs_diff", r.comparison.maxAbsDiff)
        .set("rel_l2_error", r.comparison.relL2Error)
        .set("tolerance", r.comparison.tolerance)
        .set("non_finite", static_cast<uint64_t>(r.comparison.nonFinite));
  }
  root.set("pass", r.passed())
      .set("cudnn", std::move(cudnn))
      .set("vs_cudnn", r.cudnn.ran ? JsonValue(r.vsCudnn()) : JsonValue());
  return root;
}

} // namespace convrt
