//===- Runner.cpp - Run, time and check a convolution kernel --------------===//

#include "convrt/Runner.h"

#include "convrt/Compatibility.h"
#include "convrt/Context.h"
#include "convrt/Cudnn.h"
#include "convrt/Files.h"
#include "convrt/Json.h"
#include "convrt/Memory.h"
#include "convrt/Module.h"
#include "convrt/Timing.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace convrt {
namespace {

struct HostOperands {
  std::vector<double> input, filter, bias, residual;
};

/// Every operand gets its own stream of random numbers from the one seed.
HostOperands makeOperands(const Manifest &m, uint64_t seed) {
  const ConvProblem &p = m.problem;
  HostOperands ops;
  ops.input = randomTensor(size_t(p.inputElements()), p.dtype, seed * 4 + 1);
  ops.filter = randomTensor(size_t(p.filterElements()), p.dtype, seed * 4 + 2);
  if (int bias = m.find(ArgumentRole::Bias); bias >= 0)
    ops.bias = randomTensor(size_t(p.f), m.arguments[bias].dtype, seed * 4 + 3);
  // Index 0 of the next seed's four is never drawn from.
  if (int residual = m.find(ArgumentRole::Residual); residual >= 0)
    ops.residual = randomTensor(size_t(p.outputElements()),
                                m.arguments[residual].dtype, seed * 4 + 4);
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

/// The manifest's tensor maps, each encoded for its argument's buffer
/// (`pointers` in manifest order). The caller keeps the result alive and
/// unmoved while launches read it: the params array points into it.
Expected<std::vector<TensorMapBytes>>
encodeTensorMaps(const Driver &driver, const Manifest &m,
                 const std::vector<CUdeviceptr> &pointers) {
  std::vector<TensorMapBytes> maps(m.tensorMaps.size());
  for (size_t i = 0; i < m.tensorMaps.size(); ++i) {
    const TensorMapSpec &spec = m.tensorMaps[i];
    int argument = m.findArgument(spec.argument); // validateManifest: >= 0
    CONVRT_TRY(
        encodeTensorMap(driver, spec, pointers[argument], maps[i].bytes));
  }
  return maps;
}

/// The kernel's parameters: one pointer to each argument's device pointer,
/// then one to each encoded map (passed by value: the driver copies the 128
/// bytes into the parameter buffer at launch).
std::vector<void *> kernelParams(std::vector<CUdeviceptr> &pointers,
                                 std::vector<TensorMapBytes> &maps) {
  std::vector<void *> params;
  for (CUdeviceptr &pointer : pointers)
    params.push_back(&pointer);
  for (TensorMapBytes &map : maps)
    params.push_back(map.bytes);
  return params;
}

/// The manifest's problem at its output argument's type.
double manifestTolerance(const Manifest &m) {
  int out = m.find(ArgumentRole::Output);
  return checkTolerance(m.problem,
                        out >= 0 ? m.arguments[out].dtype : m.problem.accumulate);
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
        manifestTolerance(m));
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
        : argument.role == ArgumentRole::Bias     ? &ops.bias
        : argument.role == ArgumentRole::Residual ? &ops.residual
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
  CONVRT_ASSIGN_OR_RETURN(std::vector<TensorMapBytes> maps,
                          encodeTensorMaps(*driver, m, pointers));
  std::vector<void *> params = kernelParams(pointers, maps);
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
    // The kernel's output is the convolution plus the residual (cuDNN's
    // check below is against the convolution alone).
    std::vector<double> expected = reference;
    for (size_t i = 0; i < ops.residual.size(); ++i)
      expected[i] += ops.residual[i];
    report.comparison = compareResults(got, expected, manifestTolerance(m));
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

// Members in destruction order reversed: the buffers, stream and module go
// before the context they live in.
struct KernelSession::State {
  PrimaryContext context;
  Module module;
  std::optional<Function> function;
  std::optional<Stream> stream;
  std::vector<DeviceBuffer> buffers;
  std::vector<CUdeviceptr> pointers;
  std::vector<TensorMapBytes> tensorMaps; // encoded for `buffers`
  std::shared_ptr<Driver> driver;
  LaunchConfig config;
  std::vector<void *> params; // into `pointers`, then into `tensorMaps`
  int outputIndex = -1;
};

KernelSession::~KernelSession() = default;

Expected<std::unique_ptr<KernelSession>>
KernelSession::load(const Manifest &m, const std::string &binary,
                    const std::string &ptx, std::shared_ptr<Driver> driver,
                    int device) {
  CONVRT_TRY(validateManifest(m));
  CONVRT_ASSIGN_OR_RETURN(PrimaryContext context,
                          PrimaryContext::acquire(driver, device));
  CONVRT_ASSIGN_OR_RETURN(int driverVersion, driver->version());
  CONVRT_ASSIGN_OR_RETURN(DeviceInfo info, queryDevice(*driver, device));
  Expected<LoadedKernel> kernel = loadKernel(driver, m.kernel, binary, ptx);
  if (!kernel.ok())
    return explainLoadFailure(kernel.takeError(), m, ptx, driverVersion, info);
  std::unique_ptr<KernelSession> session(new KernelSession());
  session->manifest_ = m;
  session->device_ = info;
  session->loadedFrom_ = kernel->from;
  session->loadNote_ = kernel->note;
  CONVRT_ASSIGN_OR_RETURN(Function function,
                          kernel->module.function(m.kernel.name));
  CONVRT_ASSIGN_OR_RETURN(Stream stream, Stream::create(driver));
  auto state = std::unique_ptr<State>(new State{
      std::move(context), std::move(kernel->module), std::move(function),
      std::move(stream), {}, {}, {}, driver, {}, {},
      m.find(ArgumentRole::Output)});
  for (const ArgumentSpec &argument : m.arguments) {
    size_t bytes =
        size_t(elementCount(argument.shape)) * dtypeSize(argument.dtype);
    CONVRT_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                            DeviceBuffer::allocate(driver, bytes));
    state->pointers.push_back(buffer.get());
    state->buffers.push_back(std::move(buffer));
  }
  CONVRT_ASSIGN_OR_RETURN(state->tensorMaps,
                          encodeTensorMaps(*driver, m, state->pointers));
  state->params = kernelParams(state->pointers, state->tensorMaps);
  state->config.grid = m.kernel.grid;
  state->config.block = m.kernel.block;
  state->config.dynamicSharedMemoryBytes = m.kernel.sharedMemoryBytes;
  state->config.stream = state->stream->get();
  // Function::launch sets the attribute again (a no-op for the driver);
  // doing it here makes a kernel asking for more than the device has fail
  // at load, not at the first run.
  CONVRT_TRY(
      state->function->allowDynamicSharedMemory(m.kernel.sharedMemoryBytes));
  session->state_ = std::move(state);
  return session;
}

Expected<double> KernelSession::run(const void *input, const void *filter,
                                    const void *bias, const void *residual,
                                    void *output) {
  std::lock_guard<std::mutex> lock(mutex_);
  State &s = *state_;
  // The caller's thread may not have the context current yet.
  CONVRT_TRY(s.context.makeCurrent());
  for (size_t i = 0; i < manifest_.arguments.size(); ++i) {
    const ArgumentSpec &argument = manifest_.arguments[i];
    if (argument.role == ArgumentRole::Output)
      continue;
    const void *source = argument.role == ArgumentRole::Input    ? input
                         : argument.role == ArgumentRole::Filter ? filter
                         : argument.role == ArgumentRole::Bias   ? bias
                                                                 : residual;
    if (!source)
      return Error::failure("no host buffer for the kernel's " +
                   std::string(argumentRoleName(argument.role)) +
                   " argument '" + argument.name + "'");
    CONVRT_TRY(s.buffers[i].copyFromHost(source, s.buffers[i].size()));
  }
  // The copies ran on the legacy stream; the kernel's stream does not wait.
  CONVRT_TRY(s.context.synchronize());
  CONVRT_ASSIGN_OR_RETURN(
      LaunchTiming timing,
      timeLaunches(s.driver, *s.stream, /*warmup=*/0, /*repeat=*/1, [&] {
        return s.function->launch(s.config, s.params.data());
      }));
  CONVRT_TRY(s.stream->synchronize());
  CONVRT_TRY(s.buffers[s.outputIndex].copyToHost(
      output, s.buffers[s.outputIndex].size()));
  return timing.medianMs;
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

/// The comparison's fields, added to `json`.
static void addComparison(JsonValue &json, const Comparison &c) {
  json["checked_elements"] = c.checked;
  json["max_abs_diff"] = c.maxAbsDiff;
  json["max_abs_reference"] = c.maxAbsReference;
  json["rel_l2_error"] = c.relL2Error;
  json["tolerance"] = c.tolerance;
  json["non_finite"] = c.nonFinite;
}

static JsonValue cudnnJson(const RunReport &r) {
  if (!r.cudnn.ran)
    return {{"ran", false}, {"reason", r.cudnn.reason}};
  const ConvProblem &p = r.manifest.problem;
  JsonValue cudnn = {
      {"ran", true},
      {"version", r.cudnn.version},
      {"algorithm", r.cudnn.algorithm},
      {"ms", r.cudnn.medianMs},
      {"tflops", r.cudnn.medianMs > 0
                     ? p.flops() / (r.cudnn.medianMs * 1e-3) / 1e12
                     : 0.0}};
  if (r.checked) {
    JsonValue check = JsonValue::object();
    addComparison(check, r.cudnn.comparison);
    check["pass"] = r.cudnn.comparison.pass;
    cudnn["check"] = std::move(check);
  }
  return cudnn;
}

JsonValue runReportJson(const RunReport &r) {
  const ConvProblem &p = r.manifest.problem;
  JsonValue root = {{"source", r.source},
                    {"kernel", r.manifest.kernel.name},
                    {"problem", p.describe()},
                    {"problem_detail", manifestToJson(r.manifest)["problem"]},
                    {"dtype", dtypeName(p.dtype)},
                    {"layout", layoutName(p.layout)},
                    {"device", deviceJson(r.device)},
                    {"driver_version", formatCudaVersion(r.driverVersion)},
                    {"loaded_from", r.loadedFrom}};
  if (!r.loadNote.empty())
    root["load_note"] = r.loadNote;
  root["warmup"] = r.warmup;
  root["repeat"] = r.repeat;
  root["ms"] = r.medianMs;
  root["tflops"] = r.tflops();
  root["flops"] = p.flops();
  root["checked"] = r.checked;
  if (r.checked)
    addComparison(root, r.comparison);
  root["pass"] = r.passed();
  root["cudnn"] = cudnnJson(r);
  root["vs_cudnn"] = r.cudnn.ran ? JsonValue(r.vsCudnn()) : JsonValue();
  return root;
}

} // namespace convrt
