//===- conv-run.cpp - build, compile, run, check and report a convolution -===//
//
// The main job: a convolution (from torch-style flags or a .mlir file) is
// compiled through ConvLower, run (CPU JIT; the CPU twin of the GPU kernel;
// the tensor-core kernel on a GPU through runtime/), checked against an
// independent reference and reported: device, time next to a reference
// lowering (cuDNN on the GPU), error, and what im2col costs in memory.
// --emit-bundle compiles the GPU kernel into a runtime bundle without a GPU.
//
// Exit status: 0 success, 1 check failure or run-time error, 2 bad input.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Runner/ConvModule.h"
#include "ConvLower/Runner/CpuRunner.h"
#include "ConvLower/Runner/Device.h"
#include "ConvLower/Runner/GpuKernel.h"
#include "ConvLower/Runner/ModuleInfo.h"
#include "ConvLower/Runner/Report.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#ifdef CONV_LOWER_HAVE_RUNTIME
#include "convrt/Driver.h"
#include "convrt/Runner.h"
#endif

#include <algorithm>
#include <functional>
#include <chrono>
#include <cstring>

using namespace mlir;
using namespace mlir::conv_lower;
namespace cl = llvm::cl;

#ifndef CONV_LOWER_VERSION
#define CONV_LOWER_VERSION "unknown"
#endif

namespace {
cl::OptionCategory problemCat("Problem (torch.nn.functional.conv2d terms)");
cl::OptionCategory dataCat("Data");
cl::OptionCategory runCat("Running and reporting");

cl::opt<std::string> mlirFile(cl::Positional, cl::init(""),
                              cl::desc("[conv.mlir]"), cl::cat(problemCat));
cl::opt<std::string> functionName(
    "function", cl::init(""), cl::cat(problemCat),
    cl::desc("Function of the .mlir file to run: (input, filter[, bias]) -> "
             "output on tensors (default: @conv, or the only public function)"));
cl::opt<std::string> inputShape("input-shape", cl::cat(problemCat),
                                cl::desc("N,C,H,W (torch order, any layout)"));
cl::opt<std::string> filterShape("filter-shape", cl::cat(problemCat),
                                 cl::desc("F,C/G,KH,KW (torch order)"));
cl::opt<std::string> strideOpt("stride", cl::init("1"), cl::cat(problemCat),
                               cl::desc("S or SH,SW"));
cl::opt<std::string> dilationOpt("dilation", cl::init("1"), cl::cat(problemCat),
                                 cl::desc("D or DH,DW"));
cl::opt<std::string> paddingOpt(
    "padding", cl::init("0"), cl::cat(problemCat),
    cl::desc("P, PH,PW (torch) or PT,PL,PB,PR (top,left,bottom,right)"));
cl::opt<std::string> groupsText("groups", cl::init("1"), cl::cat(problemCat),
                           cl::desc("Groups G (G = C: depthwise)"));
cl::opt<bool> biasOpt("bias", cl::cat(problemCat), cl::desc("Add a bias [F]"));
cl::opt<std::string> layoutOpt(
    "layout", cl::init("nchw"), cl::cat(problemCat),
    cl::desc("nchw (torch: NCHW input, FCHW filter) or nhwc (NHWC input, "
             "FHWC filter)"));
cl::opt<std::string> dtypeOpt(
    "dtype", cl::init("f32"), cl::cat(problemCat),
    cl::desc("f32, f16 or bf16 inputs (16-bit types accumulate in f32)"));
cl::opt<bool> emitMlir("emit-mlir", cl::cat(problemCat),
                       cl::desc("Print the linalg module built from the flags "
                                "and exit"));

cl::opt<std::string> inputNpy("input", cl::cat(dataCat),
                              cl::desc("Input X.npy (C order, <f4 or <f2)"));
cl::opt<std::string> filterNpy("filter", cl::cat(dataCat),
                               cl::desc("Filter W.npy"));
cl::opt<std::string> biasNpy("bias-file", cl::cat(dataCat),
                             cl::desc("Bias B.npy (implies --bias)"));
cl::opt<std::string> seedText("seed", cl::init("0"), cl::cat(dataCat),
                          cl::desc("Seed of the random data (default 0)"));
cl::opt<std::string> outputNpy(
    "output", cl::cat(dataCat),
    cl::desc("Write the result Y.npy (f32; for nchw torch's output shape)"));

cl::opt<std::string> targetOpt(
    "target", cl::init("auto"), cl::cat(runCat),
    cl::desc("auto (cuda where a device is usable and the problem comes from "
             "flags, else cpu); cpu (im2col + tiled GEMM, "
             "JIT); cpu-twin (the GPU kernel's tiled loop nest, JIT'd on the "
             "CPU: checks its indexing anywhere); cuda (the tensor-core "
             "kernel, run through the runtime next to cuDNN)"));
cl::opt<std::string> im2colOpt(
    "im2col", cl::init(""), cl::cat(runCat),
    cl::desc("explicit (X_col materialized: --target cpu, or the twin's "
             "im2col kernel + GEMM kernel) or implicit (the gather fused into "
             "the GEMM's loads: cpu-twin, cuda); default: explicit on cpu, "
             "implicit otherwise"));
cl::opt<std::string> chipOpt(
    "chip", cl::init(""), cl::cat(runCat),
    cl::desc("GPU architecture for --target cuda and --emit-bundle: sm_80, "
             "sm_86, sm_89, sm_90 or sm_90a (default: the device's, else "
             "sm_80)"));
cl::opt<std::string> emitBundle(
    "emit-bundle", cl::init(""), cl::cat(runCat), cl::value_desc("dir"),
    cl::desc("Compile the convolution's tensor-core kernel for --chip and "
             "write a runtime bundle (manifest.json, .cubin, .ptx) into DIR, "
             "then exit; needs ptxas, not a GPU"));
cl::opt<std::string> referenceOpt(
    "reference", cl::init("direct"), cl::cat(runCat),
    cl::desc("direct: also time the convolution lowered without the im2col "
             "rewrite (upstream's path); none: skip it"));
cl::opt<std::string> repeatText("repeat", cl::init("5"), cl::cat(runCat),
                       cl::desc("Timed runs; medians are reported"));
cl::opt<std::string> warmupText("warmup", cl::init("1"), cl::cat(runCat),
                       cl::desc("Untimed runs first"));
cl::opt<std::string> referenceRepeatText(
    "reference-repeat", cl::init("1"), cl::cat(runCat),
    cl::desc("Timed runs of the reference lowering (slow: default 1, no "
             "warm-up)"));
cl::opt<bool> checkOpt(
    "check", cl::cat(runCat),
    cl::desc("Compare with a float64 direct convolution (flags) or with the "
             "reference lowering (a .mlir file)"));
cl::opt<bool> jsonOpt("json", cl::cat(runCat),
                      cl::desc("Print the report as JSON"));
cl::opt<bool> doctorOpt(
    "doctor", cl::cat(runCat),
    cl::desc("Diagnose GPU passthrough (device nodes, driver, libcuda) and "
             "exit: 0 only when a device is usable"));
cl::opt<std::string> threadsText(
    "num-threads", cl::init("1"), cl::cat(runCat),
    cl::desc("Worker threads of the CPU code (OpenMP; default 1)"));
cl::opt<std::string> tileMText("tile-m", cl::init("8"), cl::cat(runCat),
                       cl::desc("CPU GEMM tile along M"));
cl::opt<std::string> tileNText("tile-n", cl::init("32"), cl::cat(runCat),
                       cl::desc("CPU GEMM tile along N"));
cl::opt<std::string> tileKText("tile-k", cl::init("8"), cl::cat(runCat),
                       cl::desc("CPU GEMM tile along K"));

/// The integer options, parsed by conv-run itself so that a bad value is a
/// one-line error with status 2 like every other bad input.
struct IntSettings {
  int64_t groups, tileM, tileN, tileK, threads;
  uint64_t seed;
  int repeat, warmup, referenceRepeat;
} settings;

llvm::Error parseIntSettings() {
  struct Field {
    const cl::opt<std::string> &text;
    int64_t min;
    std::function<void(int64_t)> store;
  } fields[] = {
      {groupsText, 1, [](int64_t v) { settings.groups = v; }},
      {seedText, 0, [](int64_t v) { settings.seed = v; }},
      {repeatText, 1, [](int64_t v) { settings.repeat = v; }},
      {warmupText, 0, [](int64_t v) { settings.warmup = v; }},
      {referenceRepeatText, 1,
       [](int64_t v) { settings.referenceRepeat = v; }},
      {threadsText, 1, [](int64_t v) { settings.threads = v; }},
      {tileMText, 1, [](int64_t v) { settings.tileM = v; }},
      {tileNText, 1, [](int64_t v) { settings.tileN = v; }},
      {tileKText, 1, [](int64_t v) { settings.tileK = v; }},
  };
  for (Field &f : fields) {
    int64_t v;
    if (llvm::StringRef(f.text).trim().getAsInteger(10, v) || v < f.min ||
        v > (int64_t(1) << 40))
      return llvm::createStringError(llvm::formatv(
          "--{0} expects an integer {1}, got '{2}'", f.text.ArgStr,
          f.min == 0 ? "of at least 0" : "of at least 1", f.text.getValue()));
    f.store(v);
  }
  return llvm::Error::success();
}

/// Exit statuses.
constexpr int kOk = 0, kFailed = 1, kBadInput = 2;

/// A one-line error on stderr, "conv-run: error: ...".
int fail(int status, const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "conv-run") << message << "\n";
  return status;
}
int fail(int status, llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  return fail(status, message);
}

/// Progress for long steps, on a terminal only.
void progress(const llvm::Twine &what) {
  if (llvm::sys::Process::StandardErrIsDisplayed())
    llvm::errs() << "conv-run: " << what << "...\n";
}

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Runs `runner` warm-up + repeat times; returns the median in ms.
llvm::Expected<double> timeRuns(CpuRunner &runner,
                                llvm::ArrayRef<void *> buffers, int warmup,
                                int repeat) {
  std::vector<double> times;
  for (int i = 0; i < warmup + repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = runner.run(buffers))
      return std::move(e);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (i >= warmup)
      times.push_back(ms);
  }
  return medianOf(times);
}

/// The data of one run: host tensors in, f32 result out.
struct RunData {
  std::vector<HostTensor> inputs; // input, filter[, bias]
  std::vector<BufferSpec> inputSpecs;
  BufferSpec outputSpec;
  int64_t outputElements = 0;
  DType outputDType = DType::F32;
};

/// Output buffer in its storage type, converted to f32 values.
struct OutputBuffer {
  std::vector<uint8_t> bytes;
  std::vector<float> values(DType dtype) const {
    std::vector<double> v = convrt::decode(toRuntime(dtype), bytes);
    return std::vector<float>(v.begin(), v.end());
  }
};

/// Compiles `module` (a clone is consumed), runs it on `data` and times it.
struct Execution {
  double compileMs = 0, medianMs = 0;
  std::vector<float> output;
};
/// How the CPU compiles the convolution.
enum class CpuRoute { Im2col, Direct, Twin, TwinExplicit };

llvm::Expected<Execution> compileAndRun(ModuleOp module, llvm::StringRef func,
                                        const RunData &data, CpuRoute route,
                                        int warmup, int repeat) {
  ConvLowerToLLVMOptions options;
  options.tileM = settings.tileM;
  options.tileN = settings.tileN;
  options.tileK = settings.tileK;
  options.threads = settings.threads;
  options.im2col = route == CpuRoute::Im2col;
  options.implicitGemmTwin =
      route == CpuRoute::Twin || route == CpuRoute::TwinExplicit;
  options.twinExplicitIm2col = route == CpuRoute::TwinExplicit;
  auto runner = CpuRunner::create(OwningOpRef<ModuleOp>(module.clone()), func,
                                  data.inputSpecs, data.outputSpec, options);
  if (!runner)
    return runner.takeError();
  std::vector<std::vector<uint8_t>> storage;
  std::vector<void *> buffers;
  for (const HostTensor &t : data.inputs)
    storage.push_back(t.storage());
  for (auto &s : storage)
    buffers.push_back(s.data());
  OutputBuffer out;
  out.bytes.assign(data.outputElements * elementBytes(data.outputDType), 0);
  buffers.push_back(out.bytes.data());
  Execution e;
  e.compileMs = (*runner)->compileMs();
  auto ms = timeRuns(**runner, buffers, warmup, repeat);
  if (!ms)
    return ms.takeError();
  e.medianMs = *ms;
  e.output = out.values(data.outputDType);
  return e;
}

llvm::Expected<DType> dtypeOf(Type t) {
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return llvm::createStringError("element type " + s +
                                 " is not supported (f32, f16, bf16)");
}

/// Loads `path` if given (checking its shape), else random data.
llvm::Expected<HostTensor> loadOrRandom(llvm::StringRef path,
                                        llvm::StringRef what,
                                        llvm::ArrayRef<int64_t> shape,
                                        DType dtype, uint64_t stream) {
  if (path.empty())
    return randomTensor(shape, dtype, settings.seed, stream);
  auto t = readNpy(path, dtype);
  if (!t)
    return t.takeError();
  if (!shape.empty() && llvm::ArrayRef<int64_t>(t->shape) != shape)
    return llvm::createStringError(
        llvm::formatv("{0} {1} has shape {2} but the problem needs {3}", what,
                      path, formatShape(t->shape), formatShape(shape)));
  return t;
}

Type mlirType(MLIRContext &ctx, DType d) {
  switch (d) {
  case DType::F32:
    return Float32Type::get(&ctx);
  case DType::F16:
    return Float16Type::get(&ctx);
  case DType::BF16:
    return BFloat16Type::get(&ctx);
  }
  return {};
}

/// Why the GPU route cannot run this problem as given, or "".
std::string gpuRouteProblem(bool fromFlags) {
  if (!fromFlags)
    return "the GPU route takes its problem from flags, not a .mlir file";
  if (!inputNpy.empty() || !filterNpy.empty())
    return "the GPU route makes its own seeded data (--input/--filter are "
           "CPU-only)";
  if (!outputNpy.empty())
    return "the GPU route does not copy its output back (--output is "
           "CPU-only)";
  return "";
}

/// Fills the report's device section and picks the target.
llvm::Error chooseTarget(RunReport &report, bool fromFlags) {
  DeviceStatus status = probeDevices();
  report.driverVersion = status.driverVersion;
  report.devices = status.devices;
  report.deviceProblem = status.problem;
  bool usable = !status.devices.empty();
  std::string gpuProblem = gpuRouteProblem(fromFlags);
  if (targetOpt == "cuda") {
    if (!usable)
      return llvm::createStringError(
          "--target cuda: no usable CUDA device: " + status.problem +
          " (--target cpu-twin runs the same kernel's loop nest on the CPU)");
    if (!gpuProblem.empty())
      return llvm::createStringError("--target cuda: " + gpuProblem);
    report.target = "cuda";
    report.targetReason = "requested with --target cuda";
    return llvm::Error::success();
  }
  if (targetOpt == "cpu-twin") {
    report.target = "cpu-twin";
    report.targetReason = "requested with --target cpu-twin: the GPU kernel's "
                          "tiled loop nest, JIT'd on the CPU";
    return llvm::Error::success();
  }
  if (targetOpt != "auto" && targetOpt != "cpu")
    return llvm::createStringError(
        "--target must be auto, cpu, cpu-twin or cuda, got '" + targetOpt +
        "'");
  report.target = "cpu";
  if (targetOpt == "cpu") {
    report.targetReason = "requested with --target cpu";
  } else if (usable && gpuProblem.empty()) {
    report.target = "cuda";
    report.targetReason = "a CUDA device is usable";
  } else if (usable) {
    report.targetReason = "a CUDA device is usable, but " + gpuProblem +
                          "; the CPU JIT runs instead";
  } else {
    report.targetReason = "no usable CUDA device (see devices); the CPU JIT "
                          "runs instead";
  }
  return llvm::Error::success();
}

/// The chip to compile for: --chip, else the first device's, else sm_80.
llvm::Expected<std::string> chooseChip(const RunReport &report) {
  if (!chipOpt.empty()) {
    if (!isSupportedChip(chipOpt))
      return llvm::createStringError(
          "--chip must be sm_80, sm_86, sm_89, sm_90 or sm_90a, got '" +
          chipOpt + "'");
    return std::string(chipOpt);
  }
  if (report.devices.empty())
    return std::string("sm_80");
  const DeviceInfo &d = report.devices.front();
  if (d.ccMajor < 8)
    return llvm::createStringError(llvm::formatv(
        "{0} is sm_{1}{2}: the kernels use sm_80 tensor-core instructions "
        "(cp.async, ldmatrix, mma.sync bf16/tf32)",
        d.name, d.ccMajor, d.ccMinor));
  std::string chip = llvm::formatv("sm_{0}{1}", d.ccMajor, d.ccMinor).str();
  // Newer architectures run sm_90 code through the driver's PTX JIT.
  return isSupportedChip(chip) ? chip : std::string("sm_90");
}

/// conv-run's GPU compile: the chip, and an error for an unsupported conv.
void setGpuOptions(ConvLowerToNVVMOptions &options, const std::string &chip) {
  options.chip = chip;
  options.requireAll = true;
}

/// --emit-bundle: compile for the GPU and write the bundle; no device needed.
int emitGpuBundle(ModuleOp module, llvm::StringRef function,
                  const std::optional<ConvProblem> &problem) {
  if (!problem)
    return fail(kBadInput, "--emit-bundle takes its problem from flags (the "
                           "bundle's manifest describes it), not a .mlir file");
  if (im2colOpt == "explicit")
    return fail(kBadInput, "--emit-bundle writes the implicit-GEMM kernel; "
                           "--im2col explicit needs two kernels and a bundle "
                           "holds one");
  RunReport none;
  auto chip = chooseChip(none);
  if (!chip)
    return fail(kBadInput, chip.takeError());
  ConvLowerToNVVMOptions options;
  setGpuOptions(options, *chip);
  auto build = compileGpuKernel(module, function, *problem, options);
  if (!build)
    return fail(kBadInput, build.takeError());
  if (llvm::Error e = writeGpuBundle(emitBundle, *build))
    return fail(kFailed, std::move(e));
  const convrt::KernelSpec &k = build->manifest.kernel;
  llvm::outs() << llvm::formatv(
      "conv-run: wrote {0}: manifest.json, {1} ({2} bytes), {3}\n"
      "  kernel {4} for {5}: grid {6}x{7}x{8}, block {9}, tiles {10}\n",
      emitBundle, k.binary, build->cubin.size(), k.ptx, k.name, k.chip,
      k.grid.x, k.grid.y, k.grid.z, k.block.x, build->tiles);
  return kOk;
}

#ifdef CONV_LOWER_HAVE_RUNTIME
/// --target cuda: compile, then run, time and check through runtime/ next to
/// cuDNN (the runtime generates the seeded data on the host).
llvm::Error runOnGpu(ModuleOp module, llvm::StringRef function,
                     const ConvProblem &problem, RunReport &report) {
  auto chip = chooseChip(report);
  if (!chip)
    return chip.takeError();
  progress("compiling the tensor-core kernel for " + *chip);
  ConvLowerToNVVMOptions compileOptions;
  setGpuOptions(compileOptions, *chip);
  auto build = compileGpuKernel(module, function, problem, compileOptions);
  if (!build)
    return build.takeError();
  report.pipeline = "conv-lower-to-nvvm";
  report.chip = *chip;
  report.kernel = build->tiles;
  report.compileMs = build->compileMs;
  auto driver = convrt::Driver::load();
  if (!driver)
    return llvm::createStringError(driver.error().message());
  convrt::RunOptions options;
  options.warmup = settings.warmup;
  options.repeat = settings.repeat;
  options.seed = settings.seed;
  options.check = checkOpt;
  progress("running on the GPU");
  auto run = convrt::runKernel(build->manifest, build->cubin, build->ptx,
                               *driver, options);
  if (!run)
    return llvm::createStringError(run.error().message());
  report.loweredMs = run->medianMs;
  report.gflops = problem.flops() / (run->medianMs * 1e6);
  if (run->cudnn.ran) {
    report.cudnnMs = run->cudnn.medianMs;
    report.cudnnNote = run->cudnn.algorithm;
  } else {
    report.cudnnNote = run->cudnn.reason;
  }
  if (run->checked) {
    CheckResult c;
    c.maxAbsDiff = run->comparison.maxAbsDiff;
    c.relL2Error = run->comparison.relL2Error;
    c.tolerance = run->comparison.tolerance;
    c.checked = c.total = build->manifest.problem.outputElements();
    c.passed = run->comparison.pass;
    report.check = c;
    report.checkAgainst = "float64 direct convolution (runtime, same data)";
  }
  return llvm::Error::success();
}
#endif

/// Flags or file: builds the module, data and what the report states about
/// the problem. Errors are bad input.
struct Prepared {
  OwningOpRef<ModuleOp> module;
  std::string function;
  RunData data;
  std::optional<ConvProblem> problem; // flags only
};

llvm::Expected<Prepared> prepareFromFlags(MLIRContext &ctx) {
  ConvFlags flags;
  flags.inputShape = inputShape;
  flags.filterShape = filterShape;
  flags.stride = strideOpt;
  flags.dilation = dilationOpt;
  flags.padding = paddingOpt;
  flags.layout = layoutOpt;
  flags.dtype = dtypeOpt;
  flags.groups = settings.groups;
  flags.bias = biasOpt || !biasNpy.empty();
  auto problem = problemFromFlags(flags);
  if (!problem)
    return problem.takeError();
  Prepared p;
  p.problem = *problem;
  p.function = kConvFunctionName.str();
  std::string text = buildConvModule(*problem);
  p.module = parseSourceString<ModuleOp>(text, &ctx, "conv-run");
  if (!p.module)
    return llvm::createStringError("internal error: the built module does not "
                                   "parse (run with --emit-mlir to see it)");
  DType dt = problem->dtype;
  auto x = loadOrRandom(inputNpy, "--input", problem->inputShape(), dt, 0);
  if (!x)
    return x.takeError();
  auto w = loadOrRandom(filterNpy, "--filter", problem->filterShape(), dt, 1);
  if (!w)
    return w.takeError();
  p.data.inputs = {std::move(*x), std::move(*w)};
  if (problem->bias) {
    auto b = loadOrRandom(biasNpy, "--bias-file", problem->biasShape(), dt, 2);
    if (!b)
      return b.takeError();
    p.data.inputs.push_back(std::move(*b));
  }
  for (const HostTensor &t : p.data.inputs)
    p.data.inputSpecs.push_back({t.shape, mlirType(ctx, dt)});
  p.data.outputSpec = {problem->outputShape(), Float32Type::get(&ctx)};
  p.data.outputElements = problem->n * problem->f * problem->ho() * problem->wo();
  return p;
}

llvm::Expected<Prepared> prepareFromFile(MLIRContext &ctx) {
  Prepared p;
  std::string openError;
  std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(mlirFile, &openError);
  if (!file)
    return llvm::createStringError(openError);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  p.module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!p.module)
    return llvm::createStringError("cannot parse " + mlirFile +
                                   " (diagnostics above)");
  auto func = findConvFunction(*p.module, functionName);
  if (!func)
    return func.takeError();
  p.function = func->getSymName().str();
  if (func->isExternal())
    return llvm::createStringError("@" + p.function +
                                   " is a declaration without a body");
  FunctionType type = func->getFunctionType();
  if (type.getNumInputs() < 2 || type.getNumInputs() > 3 ||
      type.getNumResults() != 1)
    return llvm::createStringError(llvm::formatv(
        "@{0} must take (input, filter[, bias]) tensors and return the output",
        p.function));
  for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
    if (!isa<RankedTensorType>(t))
      return llvm::createStringError(llvm::formatv(
          "@{0} must take and return ranked tensors, not {1}", p.function, t));
  llvm::StringRef paths[] = {inputNpy, filterNpy, biasNpy};
  llvm::StringRef names[] = {"--input", "--filter", "--bias-file"};
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    auto t = cast<RankedTensorType>(type.getInput(i));
    auto dt = dtypeOf(t.getElementType());
    if (!dt)
      return dt.takeError();
    llvm::SmallVector<int64_t> shape(t.getShape());
    if (!t.hasStaticShape() && paths[i].empty())
      return llvm::createStringError(llvm::formatv(
          "argument {0} of @{1} has a dynamic shape: give its data with {2}",
          i, p.function, names[i]));
    auto data = loadOrRandom(paths[i], names[i],
                             t.hasStaticShape() ? llvm::ArrayRef<int64_t>(shape)
                                                : llvm::ArrayRef<int64_t>(),
                             *dt, i);
    if (!data)
      return data.takeError();
    if (!t.hasStaticShape() && data->shape.size() != t.getShape().size())
      return llvm::createStringError(llvm::formatv(
          "{0} {1} has rank {2}; @{3} expects rank {4}", names[i], paths[i],
          data->shape.size(), p.function, t.getRank()));
    p.data.inputSpecs.push_back({data->shape, t.getElementType()});
    p.data.inputs.push_back(std::move(*data));
  }
  auto result = cast<RankedTensorType>(type.getResult(0));
  auto outDType = dtypeOf(result.getElementType());
  if (!outDType)
    return outDType.takeError();
  llvm::SmallVector<int64_t> outShape(result.getShape());
  if (!outShape.empty() && ShapedType::isDynamic(outShape[0]))
    outShape[0] = p.data.inputs[0].shape[0]; // a dynamic batch
  if (llvm::any_of(outShape, ShapedType::isDynamic))
    return llvm::createStringError(
        "only the batch of the result may be dynamic");
  p.data.outputSpec = {outShape, result.getElementType()};
  p.data.outputDType = *outDType;
  p.data.outputElements = 1;
  for (int64_t d : outShape)
    p.data.outputElements *= d;
  return p;
}

int runMain(MLIRContext &ctx) {
  if (llvm::Error e = parseIntSettings())
    return fail(kBadInput, std::move(e));
  if (doctorOpt)
    return runDoctor(llvm::outs(), jsonOpt) ? kOk : kFailed;
  if (!im2colOpt.empty() && im2colOpt != "explicit" &&
      im2colOpt != "implicit")
    return fail(kBadInput, "--im2col must be explicit or implicit, got '" +
                               im2colOpt + "'");
  if (referenceOpt != "direct" && referenceOpt != "none")
    return fail(kBadInput, "--reference must be direct or none, got '" +
                               referenceOpt + "'");
  if (!mlirFile.empty() && (!inputShape.empty() || !filterShape.empty()))
    return fail(kBadInput,
                "give either a .mlir file or --input-shape/--filter-shape");
  if (!mlirFile.empty() && checkOpt && referenceOpt == "none")
    return fail(kBadInput, "--check on a .mlir file compares with the "
                           "reference lowering: drop --reference none");
  if (!outputNpy.empty()) {
    llvm::StringRef dir = llvm::sys::path::parent_path(outputNpy);
    if (!dir.empty() && !llvm::sys::fs::is_directory(dir))
      return fail(kBadInput, "--output: no directory " + dir);
  }

  auto prepared = mlirFile.empty() ? prepareFromFlags(ctx) : prepareFromFile(ctx);
  if (!prepared)
    return fail(kBadInput, prepared.takeError());
  if (emitMlir) {
    prepared->module->print(llvm::outs());
    return kOk;
  }
  if (!emitBundle.empty())
    return emitGpuBundle(*prepared->module, prepared->function,
                         prepared->problem);

  RunReport report;
  report.source = mlirFile.empty() ? "flags" : std::string(mlirFile);
  if (llvm::Error e = chooseTarget(report, prepared->problem.has_value()))
    return fail(kBadInput, std::move(e));
  // cpu: explicit only; cpu-twin: either; cuda: implicit only (a runtime
  // bundle holds one kernel, explicit mode launches two).
  bool implicit = report.target != "cpu" && im2colOpt != "explicit";
  if (im2colOpt == "implicit" && report.target == "cpu")
    return fail(kBadInput,
                "--im2col implicit fuses the gather into the GEMM's operand "
                "load, which the GPU kernel (--target cuda) and its CPU twin "
                "(--target cpu-twin) do; --target cpu materializes X_col");
  if (im2colOpt == "explicit" && report.target == "cuda")
    return fail(kBadInput,
                "--im2col explicit launches two kernels (im2col, then the "
                "GEMM) and the runtime's bundles hold one: run it on the CPU "
                "twin (--target cpu-twin) or with conv-opt "
                "--conv-lower-to-nvvm=im2col=explicit and mlir-runner");
  report.im2col = implicit ? "implicit" : "explicit";
  report.pipeline =
      report.target != "cpu-twin" ? "conv-lower-to-llvm"
      : implicit ? "conv-lower-to-llvm{implicit-gemm-twin}"
                 : "conv-lower-to-llvm{implicit-gemm-twin twin-explicit-im2col}";
  report.repeat = settings.repeat;
  report.warmup = settings.warmup;

  ModuleOp module = *prepared->module;
  ModuleInfo info = analyzeConvModule(module, prepared->function);
  report.problem = prepared->problem ? prepared->problem->describe()
                                     : info.description;
  report.inputBytes = prepared->problem
                          ? std::optional<int64_t>(prepared->problem->inputBytes())
                          : info.inputBytes;
  report.im2colBytes = prepared->problem
                           ? std::optional<int64_t>(prepared->problem->im2colBytes())
                           : info.im2colBytes;
  std::optional<double> flops = prepared->problem
                                    ? std::optional<double>(prepared->problem->flops())
                                    : info.flops;
  // The implicit GEMM never stores X_col.
  if (implicit)
    report.im2colBytes = 0;

  if (report.target == "cuda") {
#ifdef CONV_LOWER_HAVE_RUNTIME
    if (llvm::Error e =
            runOnGpu(module, prepared->function, *prepared->problem, report))
      return fail(kFailed, std::move(e));
    if (jsonOpt)
      printJson(report, llvm::outs());
    else
      printHuman(report, llvm::outs());
    return report.check && !report.check->passed ? kFailed : kOk;
#else
    return fail(kFailed, "this conv-run was built without the CUDA runtime");
#endif
  }

  progress("compiling and running " + report.problem);
  auto lowered = compileAndRun(
      module, prepared->function, prepared->data,
      report.target != "cpu-twin" ? CpuRoute::Im2col
      : implicit                  ? CpuRoute::Twin
                                  : CpuRoute::TwinExplicit,
      settings.warmup, settings.repeat);
  if (!lowered)
    return fail(kFailed, lowered.takeError());
  report.compileMs = lowered->compileMs;
  report.loweredMs = lowered->medianMs;
  if (flops)
    report.gflops = *flops / (lowered->medianMs * 1e6);

  std::optional<Execution> reference;
  if (referenceOpt == "direct") {
    progress("compiling and running the reference lowering (no im2col)");
    auto ref = compileAndRun(module, prepared->function, prepared->data,
                             CpuRoute::Direct, /*warmup=*/0,
                             settings.referenceRepeat);
    if (!ref)
      return fail(kFailed, ref.takeError());
    report.referenceMs = ref->medianMs;
    report.referenceRepeat = settings.referenceRepeat;
    report.referenceKind =
        "same pipeline without the im2col rewrite: upstream's lowering of the "
        "linalg conv";
    reference = std::move(*ref);
  }

  if (checkOpt) {
    if (prepared->problem) {
      progress("checking against a float64 direct convolution");
      const RunData &d = prepared->data;
      report.check = checkOutput(*prepared->problem, d.inputs[0], d.inputs[1],
                                 d.inputs.size() > 2 ? &d.inputs[2] : nullptr,
                                 lowered->output);
      report.checkAgainst = "float64 direct convolution";
    } else {
      std::vector<double> want(reference->output.begin(),
                               reference->output.end());
      report.check = compareValues(lowered->output, want,
                                   toleranceFor(prepared->data.outputDType));
      report.checkAgainst = "the reference lowering (no im2col)";
    }
  }

  if (!outputNpy.empty()) {
    if (llvm::Error e = writeNpy(outputNpy, prepared->data.outputSpec.shape,
                                 lowered->output))
      return fail(kFailed, std::move(e));
    report.outputPath = outputNpy;
  }

  if (jsonOpt)
    printJson(report, llvm::outs());
  else
    printHuman(report, llvm::outs());
  return report.check && !report.check->passed ? kFailed : kOk;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&problemCat, &dataCat, &runCat});
  cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "ConvLower conv-run version " CONV_LOWER_VERSION
          " (built against LLVM/MLIR " LLVM_VERSION_STRING ")\n";
  });
  std::string parseErrors;
  llvm::raw_string_ostream parseErrorStream(parseErrors);
  bool parsed = cl::ParseCommandLineOptions(
      argc, argv,
      "conv-run: build (or read), compile, run, check and report a 2-D "
      "convolution\n\n"
      "  conv-run --input-shape 16,64,56,56 --filter-shape 128,64,3,3 "
      "--padding 1 --check\n"
      "  conv-run model.mlir --function conv --check --json\n"
      "  conv-run --doctor\n\n"
      "Exit status: 0 ok, 1 check failed or run-time error, 2 bad input.\n",
      &parseErrorStream);
  if (!parsed) {
    // One line, like every other bad input: cl's "conv-run: " prefixes and
    // line breaks folded into "; ".
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(parseErrors).split(lines, '\n', -1, false);
    std::string message;
    for (llvm::StringRef line : lines) {
      line = line.trim();
      line.consume_front("conv-run: ");
      if (!line.empty())
        message += (message.empty() ? "" : "; ") + line.str();
    }
    return fail(kBadInput, message);
  }

  DialectRegistry registry;
  registerCpuRunnerDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  return runMain(ctx);
}
