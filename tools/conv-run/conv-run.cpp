//===- conv-run.cpp - build, compile, run, check and report a convolution -===//
//
// The main job, as flags over the run library (ConvLower/Runner/Run.h): a
// convolution from torch-style flags or a .mlir file is compiled through
// ConvLower, run (CPU JIT; the CPU twin of the GPU kernel; the tensor-core
// kernel on a GPU through runtime/), checked against an independent
// reference and reported. --emit-bundle compiles the GPU kernel into a
// runtime bundle without a GPU; --doctor diagnoses GPU passthrough.
//
// Exit status: 0 success, 1 check failure or run-time error, 2 bad input.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Bundle.h"
#include "ConvLower/Runner/Device.h"
#include "ConvLower/Runner/DiskCache.h"
#include "ConvLower/Runner/Run.h"

#include "mlir/IR/DialectRegistry.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

#include <functional>

using namespace mlir;
using namespace mlir::conv_lower;
namespace cl = llvm::cl;

#ifndef CONV_LOWER_VERSION
#define CONV_LOWER_VERSION "unknown"
#endif

namespace {
/// cl prints a bad enum value's error straight to stderr in its own words;
/// this parser keeps it for the one-line `conv-run: error:` instead.
std::string enumError;
template <typename T> class OneLineEnumParser : public cl::parser<T> {
public:
  using cl::parser<T>::parser;
  bool parse(cl::Option &option, llvm::StringRef, llvm::StringRef arg, T &v) {
    std::string names;
    for (size_t i = 0; i < this->Values.size(); ++i) {
      if (this->Values[i].Name == arg) {
        v = this->Values[i].V.getValue();
        return false;
      }
      names += (i == 0 ? "" : i + 1 == this->Values.size() ? " or " : ", ") +
               this->Values[i].Name.str();
    }
    enumError = llvm::formatv("--{0} must be {1}, got '{2}'", option.ArgStr,
                              names, arg);
    return true;
  }
};
template <typename T>
using EnumOpt = cl::opt<T, /*ExternalStorage=*/false, OneLineEnumParser<T>>;

cl::OptionCategory problemCat("Problem (torch.nn.functional.conv2d terms)");
cl::OptionCategory dataCat("Data");
cl::OptionCategory runCat("Running and reporting");

cl::opt<std::string> mlirFile(cl::Positional, cl::init(""),
                              cl::desc("[conv.mlir]"), cl::cat(problemCat));
cl::opt<std::string> functionName(
    "function", cl::init(""), cl::cat(problemCat),
    cl::desc(
        "Function of the .mlir file to run: (input[, filter[, bias]]) -> "
        "output on tensors (default: @conv, or the only public function)"));
cl::opt<std::string> inputShape(
    "input-shape", cl::cat(problemCat),
    cl::desc("N,C,H,W (torch order, any layout); N,C,L is torch's conv1d "
             "(run as the 2-D convolution with H = 1)"));
cl::opt<std::string> filterShape(
    "filter-shape", cl::cat(problemCat),
    cl::desc("F,C/G,KH,KW (torch order); F,C/G,K with a rank-3 input"));
cl::opt<std::string>
    poolOpt("pool", cl::cat(problemCat), cl::value_desc("max"),
            cl::desc("max: max pooling over --window instead of a convolution "
                     "(torch's max_pool2d: the padding -inf, at most half the "
                     "window before the image; more after it is ceil_mode's, "
                     "PT,PL,PB,PR; float data; --target cpu)"));
cl::opt<std::string>
    windowOpt("window", cl::cat(problemCat),
              cl::desc("--pool's window KH,KW (K with a rank-3 input)"));
cl::opt<std::string> strideOpt("stride", cl::init("1"), cl::cat(problemCat),
                               cl::desc("S or SH,SW (conv1d: S)"));
cl::opt<std::string> dilationOpt("dilation", cl::init("1"), cl::cat(problemCat),
                                 cl::desc("D or DH,DW (conv1d: D)"));
cl::opt<std::string> paddingOpt(
    "padding", cl::init("0"), cl::cat(problemCat),
    cl::desc("P, PH,PW (torch) or PT,PL,PB,PR (top,left,bottom,right); "
             "conv1d: P or PL,PR"));
cl::opt<std::string> groupsText("groups", cl::init("1"), cl::cat(problemCat),
                                cl::desc("Groups G (G = C: depthwise)"));
cl::opt<bool> biasOpt("bias", cl::cat(problemCat), cl::desc("Add a bias [F]"));
cl::opt<bool> residualOpt(
    "residual", cl::cat(problemCat),
    cl::desc("Add a residual of the output's shape and type after the bias "
             "(a ResNet block's skip connection; seeded data), in the "
             "epilogue of the CPU's pass or the tensor-core kernel's store "
             "(2-D), and check the output with it"));
cl::opt<bool> bf16OutputOpt(
    "bf16-output", cl::cat(problemCat),
    cl::desc("cpu: round the output to bfloat16 after the epilogue, which "
             "runs in f32 (a network's activations kept in bf16 between "
             "layers: half the bytes); the residual is bf16 too; checked at "
             "bf16's tolerance"));
cl::opt<bool> bf16ResidualOpt(
    "bf16-residual", cl::cat(problemCat),
    cl::desc("cpu, with --residual: the residual in bfloat16, added in f32, "
             "whatever the output's type (a block's identity kept in bf16)"));
EnumOpt<Layout> layoutOpt(
    "layout", cl::init(Layout::NCHW), cl::cat(problemCat),
    cl::desc("Memory layout"),
    cl::values(clEnumValN(Layout::NCHW, "nchw",
                          "torch: NCHW input, FCHW filter"),
               clEnumValN(Layout::NHWC, "nhwc", "NHWC input, FHWC filter")));
EnumOpt<DType> dtypeOpt(
    "dtype", cl::init(DType::F32), cl::cat(problemCat),
    cl::desc("Input element type (16-bit types accumulate in f32)"),
    cl::values(clEnumValN(DType::F32, "f32",
                          "f32 (tf32 math on the GPU's tensor cores)"),
               clEnumValN(DType::F16, "f16", "IEEE half"),
               clEnumValN(DType::BF16, "bf16", "bfloat16"),
               clEnumValN(DType::I8, "i8",
                          "quantized: i8 data, i32 output, exact check; "
                          "with --zero-points (every target; the GPU kernel on the "
                          "s8 tensor cores)")));
cl::opt<std::string> zeroPointsOpt(
    "zero-points", cl::cat(problemCat),
    cl::desc("XZ,WZ: the input's and the filter's zero points of an i8 "
             "convolution (torch's quantized conv: sum (x-XZ)(w-WZ), the "
             "padding reads as XZ; default 0,0)"));
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

EnumOpt<Target> targetOpt(
    "target", cl::init(Target::Auto), cl::cat(runCat),
    cl::desc("Where to run"),
    cl::values(
        clEnumValN(Target::Auto, "auto",
                   "cuda where a device is usable and the problem comes from "
                   "flags, else cpu"),
        clEnumValN(Target::Cpu, "cpu", "im2col + tiled GEMM, JIT"),
        clEnumValN(Target::CpuTwin, "cpu-twin",
                   "the GPU kernel's tiled loop nest, JIT'd on the CPU: "
                   "checks its indexing anywhere"),
        clEnumValN(Target::Cuda, "cuda",
                   "the tensor-core kernel, run through the runtime next to "
                   "cuDNN")));
EnumOpt<Im2colChoice> im2colOpt(
    "im2col", cl::init(Im2colChoice::Default), cl::cat(runCat),
    cl::desc("How the GEMM's A operand is formed (default: implicit)"),
    cl::values(clEnumValN(Im2colChoice::Explicit, "explicit",
                          "X_col materialized whole, then the GEMM (cpu; the "
                          "twin's im2col kernel + GEMM kernel)"),
               clEnumValN(Im2colChoice::Implicit, "implicit",
                          "cpu: X_col per block of output rows inside the "
                          "GEMM's parallel loop (panels, never whole); "
                          "cpu-twin, cuda: the gather fused into the GEMM's "
                          "loads")));
EnumOpt<WinogradChoice> winogradOpt(
    "winograd", cl::init(WinogradChoice::Auto), cl::cat(runCat),
    cl::desc("cpu: compute 3x3 stride-1 f32 convolutions by Winograd "
             "F(4x4, 3x3) instead of a GEMM (4x fewer multiplies; relative "
             "error a few 1e-6 instead of ~3e-7)"),
    cl::values(clEnumValN(WinogradChoice::Auto, "auto",
                          "where conv-lower-winograd's cost rule says it is "
                          "faster: at least 32 4x4 output tiles per call (16 "
                          "with --constant-weights), the transformed filters "
                          "within 16 MiB"),
               clEnumValN(WinogradChoice::Always, "always",
                          "every convolution it can take"),
               clEnumValN(WinogradChoice::Off, "off",
                          "never: the im2col panels and GEMM")));
// cl::desc keeps a StringRef: the text must outlive the option.
const std::string chipHelp =
    "GPU architecture for --target cuda, --emit-bundle and the cpu-twin: " +
    convrt::archList() +
    " (default: the device's, sm_90a on compute capability 9.0, where f16/bf16/"
    "f32 convolutions take the TMA + wgmma kernels, NCHW ones with a gathered "
    "A tile; else sm_80)";
cl::opt<std::string> chipOpt("chip", cl::init(""), cl::cat(runCat),
                             cl::desc(chipHelp));
cl::opt<std::string> emitBundleDir(
    "emit-bundle", cl::init(""), cl::cat(runCat), cl::value_desc("dir"),
    cl::desc("Compile the convolution's tensor-core kernel for --chip and "
             "write a runtime bundle (manifest.json, .cubin, .ptx) into DIR, "
             "then exit; needs ptxas, not a GPU (--json: report as JSON)"));
EnumOpt<ReferenceMode> referenceOpt(
    "reference", cl::init(ReferenceMode::Direct), cl::cat(runCat),
    cl::desc("What the CPU result is timed next to"),
    cl::values(clEnumValN(ReferenceMode::Direct, "direct",
                          "the convolution lowered without the im2col "
                          "rewrite (upstream's path)"),
               clEnumValN(ReferenceMode::None, "none", "nothing")));
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
cl::opt<bool> constantWeightsOpt(
    "constant-weights", cl::cat(runCat),
    cl::desc("cpu, cpu-twin: the filter is constant (inference): what is "
             "computed from it alone (the filter transposed for the GEMM, "
             "Winograd's transformed filters) is made once before the timed "
             "runs; the report gives that time and the packed bytes apart"));
cl::opt<bool> jsonOpt("json", cl::cat(runCat),
                      cl::desc("Print the report as JSON"));
cl::opt<bool> doctorOpt(
    "doctor", cl::cat(runCat),
    cl::desc("Diagnose GPU passthrough (device nodes, driver, libcuda) and "
             "exit: 0 only when a device is usable"));
cl::opt<bool> clearDiskCacheOpt(
    "clear-disk-cache", cl::cat(runCat),
    cl::desc("Remove every entry of the disk cache of compiled CPU code "
             "($CONVLOWER_CACHE_DIR, default ~/.cache/convlower; "
             "CONVLOWER_CACHE_DIR=off: none; $CONVLOWER_CACHE_BYTES bounds "
             "it, default 256 MiB) and exit"));
cl::opt<std::string> threadsText(
    "num-threads", cl::init(""), cl::cat(runCat),
    cl::desc("Worker threads of the CPU code (OpenMP; default: every core "
             "this process may use)"));
cl::opt<std::string> tileMText(
    "tile-m", cl::init(""), cl::cat(runCat),
    cl::desc("CPU GEMM register tile along M, output rows (default: the "
             "host's, 8 with AVX-512, 6 with AVX2)"));
cl::opt<std::string> tileNText(
    "tile-n", cl::init(""), cl::cat(runCat),
    cl::desc("CPU GEMM register tile along N, filters (default: the host's, "
             "32 with AVX-512, 16 with AVX2)"));
cl::opt<std::string> tileKText("tile-k", cl::init(""), cl::cat(runCat),
                               cl::desc("CPU GEMM tile along K (default 8)"));
cl::opt<bool> bf16DotOpt(
    "bf16-dot", cl::init(true), cl::cat(runCat),
    cl::desc("cpu: bf16 GEMMs on AVX512-BF16's dot product (VDPBF16PS, K in "
             "pairs) where the host has it (default; =false: widened to f32 "
             "FMAs, for comparison)"));
cl::opt<bool> i8DotOpt(
    "i8-dot", cl::init(true), cl::cat(runCat),
    cl::desc("cpu: i8 GEMMs on AVX512-VNNI's dot product (VPDPBUSD, K in "
             "quads) where the host has it (default; =false: widened to i32 "
             "multiplies, for comparison)"));
cl::opt<AMXChoice> amxOpt(
    "amx", cl::init(AMXChoice::Auto), cl::cat(runCat),
    cl::desc("cpu: the bf16 GEMMs (in K pairs, with --bf16-dot) and the i8 "
             "GEMMs (in K quads, with --i8-dot) on AMX tiles, TDPBF16PS and "
             "TDPBSSD, in 32x32 register tiles"),
    cl::values(
        clEnumValN(AMXChoice::Auto, "auto",
                   "where the CPU has AMX (AMX-TILE, AMX-BF16, AMX-INT8) and "
                   "Linux grants the process the tile data (arch_prctl), else "
                   "AVX512-BF16 / AVX512-VNNI (default)"),
        clEnumValN(AMXChoice::On, "on",
                   "required: an error naming the reason where this process "
                   "cannot run them"),
        clEnumValN(AMXChoice::Off, "off",
                   "never: AVX512-BF16's VDPBF16PS, AVX512-VNNI's VPDPBUSD"),
        clEnumValN(AMXChoice::Emulated, "emulated",
                   "the same tile program with each tile operation in vector "
                   "code: checks the AMX route on any AVX512-BF16 (bf16) or "
                   "AVX512-VNNI (i8) CPU (slow)")));

/// Exit statuses.
constexpr int kOk = 0, kFailed = 1, kBadInput = 2;

/// A one-line error on stderr, "conv-run: error: ...".
int fail(int status, const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "conv-run") << message << "\n";
  return status;
}

/// The exit status of a run library error, printed.
int fail(llvm::Error error) {
  ErrorText text = takeErrorText(std::move(error));
  return fail(text.badInput ? kBadInput : kFailed, text.message);
}

/// An integer flag, parsed by conv-run itself so that a bad value is a
/// one-line error with status 2 like every other bad input.
template <typename T>
llvm::Error parseInt(const cl::opt<std::string> &text, int64_t min, T &out) {
  int64_t v;
  if (llvm::StringRef(text).trim().getAsInteger(10, v) || v < min ||
      v > (int64_t(1) << 40))
    return llvm::createStringError(llvm::formatv(
        "--{0} expects an integer {1}, got '{2}'", text.ArgStr,
        min == 0 ? "of at least 0" : "of at least 1", text.getValue()));
  out = static_cast<T>(v);
  return llvm::Error::success();
}

/// A flag that describes a problem built from flags, given with a .mlir
/// file (whose function is the problem): it would be ignored, so it is bad
/// input.
llvm::Error checkNoProblemFlagsWithFile() {
  if (mlirFile.empty() || !inputShape.empty() || !filterShape.empty())
    return llvm::Error::success();
  const cl::Option *flags[] = {
      &poolOpt,    &windowOpt, &strideOpt,    &dilationOpt,   &paddingOpt,
      &groupsText, &biasOpt,   &residualOpt,  &bf16OutputOpt, &bf16ResidualOpt,
      &layoutOpt,  &dtypeOpt,  &zeroPointsOpt};
  for (const cl::Option *flag : flags)
    if (flag->getNumOccurrences())
      return llvm::createStringError(llvm::formatv(
          "--{0} describes a problem given by --input-shape/--filter-shape; "
          "{1}'s function is the problem (drop --{0}, or edit the function)",
          flag->ArgStr, mlirFile.getValue()));
  return llvm::Error::success();
}

/// The flags as run options; errors are bad input.
llvm::Expected<RunOptions> runOptionsFromFlags() {
  if (llvm::Error e = checkNoProblemFlagsWithFile())
    return std::move(e);
  RunOptions o;
  o.mlirFile = mlirFile;
  o.function = functionName;
  if (!inputShape.empty() || !filterShape.empty() || mlirFile.empty()) {
    ConvFlags f;
    f.inputShape = inputShape;
    f.filterShape = filterShape;
    f.stride = strideOpt;
    f.dilation = dilationOpt;
    f.padding = paddingOpt;
    f.layout = layoutOpt;
    f.dtype = dtypeOpt;
    f.zeroPoints = zeroPointsOpt;
    f.bias = biasOpt;
    f.residual = residualOpt;
    f.bf16Output = bf16OutputOpt;
    f.bf16Residual = bf16ResidualOpt;
    if (!poolOpt.empty() && poolOpt != "max")
      return llvm::createStringError(
          llvm::formatv("--pool expects max, got '{0}'", poolOpt.getValue()));
    f.maxPool = poolOpt == "max";
    if (!windowOpt.empty() && !f.maxPool)
      return llvm::createStringError("--window is --pool max's window; a "
                                     "convolution's is --filter-shape");
    f.window = windowOpt;
    if (llvm::Error e = parseInt(groupsText, 1, f.groups))
      return std::move(e);
    o.flags = f;
  }
  o.inputNpy = inputNpy, o.filterNpy = filterNpy, o.biasNpy = biasNpy;
  o.outputNpy = outputNpy;
  o.target = targetOpt;
  o.im2col = im2colOpt;
  o.winograd = winogradOpt;
  o.reference = referenceOpt;
  o.check = checkOpt;
  o.constantWeights = constantWeightsOpt;
  o.bf16Dot = bf16DotOpt;
  o.i8Dot = i8DotOpt;
  o.amx = amxOpt;
  if (!chipOpt.empty()) {
    o.chip = convrt::parseArch(chipOpt.getValue());
    if (!o.chip)
      return llvm::createStringError("--chip must be " + convrt::archList() +
                                     ", got '" + chipOpt + "'");
  }
  struct IntFlag {
    const cl::opt<std::string> &text;
    int64_t min;
    std::function<void(int64_t)> store;
  } ints[] = {
      {seedText, 0, [&](int64_t v) { o.seed = v; }},
      {repeatText, 1, [&](int64_t v) { o.repeat = v; }},
      {warmupText, 0, [&](int64_t v) { o.warmup = v; }},
      {referenceRepeatText, 1, [&](int64_t v) { o.referenceRepeat = v; }},
      {threadsText, 1, [&](int64_t v) { o.threads = v; }},
      {tileMText, 1, [&](int64_t v) { o.tileM = v; }},
      {tileNText, 1, [&](int64_t v) { o.tileN = v; }},
      {tileKText, 1, [&](int64_t v) { o.tileK = v; }},
  };
  for (IntFlag &flag : ints) {
    if (flag.text.getNumOccurrences() == 0 && flag.text.empty())
      continue; // a default the library chooses (threads, tiles)
    int64_t v;
    if (llvm::Error e = parseInt(flag.text, flag.min, v))
      return std::move(e);
    flag.store(v);
  }
  // Progress for long steps, on a terminal only.
  if (llvm::sys::Process::StandardErrIsDisplayed())
    o.progress = [](llvm::StringRef what) {
      llvm::errs() << "conv-run: " << what << "...\n";
    };
  return o;
}

/// --doctor's CPU section: the matrix and dot-product units the CPU route
/// picks its bf16 and i8 GEMMs' code from, and AMX's tile-data permission
/// (requested here, as the route would).
void printCpuUnits(llvm::raw_ostream &os) {
  auto yesNo = [](bool b) { return b ? "yes" : "no"; };
  os << "cpu (the CPU route's bf16 and i8 GEMMs)\n";
  os << llvm::formatv("  {0,-27} {1}\n", "AVX512-BF16 (VDPBF16PS)",
                      yesNo(hostHasAVX512BF16()));
  os << llvm::formatv("  {0,-27} {1}\n", "AVX512-VNNI (VPDPBUSD)",
                      yesNo(hostHasAVX512VNNI()));
  os << llvm::formatv("  {0,-27} {1}\n", "AMX-TILE, -BF16, -INT8",
                      yesNo(hostHasAMX()));
  llvm::StringRef refused = requestAMXTileData();
  os << llvm::formatv("  {0,-27} {1}\n", "AMX tile data (arch_prctl)",
                      refused.empty() ? "granted"
                                      : ("refused: " + refused).str());
  bool amx = whyNoAMX().empty();
  os << llvm::formatv("  {0,-27} {1}\n", "bf16 GEMMs",
                      amx                   ? "AMX tiles (TDPBF16PS)"
                      : hostHasAVX512BF16() ? "AVX512-BF16 dots (no AMX)"
                                            : "widened to f32 FMAs");
  os << llvm::formatv("  {0,-27} {1}\n", "i8 GEMMs",
                      amx                   ? "AMX tiles (TDPBSSD)"
                      : hostHasAVX512VNNI() ? "AVX512-VNNI dots (no AMX)"
                                            : "widened to i32 multiplies");
}

int runMain(MLIRContext &ctx) {
  if (doctorOpt) {
    bool gpuOk = runDoctor(llvm::outs(), jsonOpt);
    if (!jsonOpt)
      printCpuUnits(llvm::outs());
    return gpuOk ? kOk : kFailed;
  }
  if (clearDiskCacheOpt) {
    const DiskCache &disk = DiskCache::process();
    if (!disk.enabled()) {
      llvm::outs() << "disk cache: off (CONVLOWER_CACHE_DIR=off)\n";
      return kOk;
    }
    size_t removed = disk.clear();
    llvm::outs() << "disk cache: removed " << removed << " entr"
                 << (removed == 1 ? "y" : "ies") << " from " << disk.path()
                 << "\n";
    return kOk;
  }
  auto options = runOptionsFromFlags();
  if (!options)
    return fail(kBadInput, llvm::toString(options.takeError()));
  if (emitMlir) {
    auto text = emitModule(ctx, *options);
    if (!text)
      return fail(text.takeError());
    llvm::outs() << *text;
    return kOk;
  }
  if (!emitBundleDir.empty()) {
    auto bundle = emitBundle(ctx, *options, emitBundleDir);
    if (!bundle)
      return fail(bundle.takeError());
    (jsonOpt ? printBundleJson : printBundleHuman)(*bundle, llvm::outs());
    return kOk;
  }
  auto report = run(ctx, *options);
  if (!report)
    return fail(report.takeError());
  (jsonOpt ? printJson : printHuman)(*report, llvm::outs());
  return report->check && !report->check->passed ? kFailed : kOk;
}

/// cl's parse errors as one line, like every other bad input: its
/// "conv-run: " prefixes and line breaks folded into "; ".
std::string oneLine(llvm::StringRef errors) {
  llvm::SmallVector<llvm::StringRef> lines;
  errors.split(lines, '\n', -1, false);
  std::string message;
  for (llvm::StringRef line : lines) {
    line = line.trim();
    line.consume_front("conv-run: ");
    if (!line.empty())
      message += (message.empty() ? "" : "; ") + line.str();
  }
  return message;
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
      "  conv-run --input-shape 8,64,56,56 --filter-shape 64,64,3,3 "
      "--padding 1 --layout nhwc --dtype f16 --target cuda --check\n"
      "  conv-run --input-shape 1,64,112,112 --pool max --window 3,3 "
      "--stride 2 --padding 1 --layout nhwc --check\n"
      "  conv-run model.mlir --function conv --check --json\n"
      "  conv-run --doctor\n\n"
      "Targets: auto picks cuda where libcuda finds a device, else the CPU "
      "JIT.\n"
      "Exit status: 0 ok, 1 check failed or run-time error, 2 bad input.\n",
      &parseErrorStream);
  if (!parsed)
    return fail(kBadInput, enumError.empty() ? oneLine(parseErrors) : enumError);

  DialectRegistry registry;
  registerRunDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  return runMain(ctx);
}
