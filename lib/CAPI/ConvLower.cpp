//===- ConvLower.cpp - ConvLower's C API over the run library -------------===//
//
// A thin layer: the C description becomes a ConvSpec, the process-wide
// ConvCache compiles it (once per distinct problem), and a handle holds a
// shared reference to the compiled convolution. Every entry point catches
// its errors into a status plus the calling thread's last message: nothing
// here aborts or throws across the C boundary.
//
//===----------------------------------------------------------------------===//

#include "ConvLower-c/ConvLower.h"

#include "ConvLower/Runner/CompiledConv.h"
#include "ConvLower/Runner/ConvModule.h"
#include "ConvLower/Runner/ConvProblem.h"
#include "ConvLower/Runner/Device.h"
#include "ConvLower/Runner/DiskCache.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

using namespace mlir::conv_lower;

namespace {

thread_local std::string lastError;

ConvLowerStatus succeed() {
  lastError.clear();
  return ConvLowerStatusOk;
}

ConvLowerStatus fail(ConvLowerStatus status, std::string message) {
  lastError = std::move(message);
  return status;
}

/// The status of a run-library error: bad input or a failure.
ConvLowerStatus fail(llvm::Error error) {
  ErrorText text = takeErrorText(std::move(error));
  return fail(text.badInput ? ConvLowerStatusBadInput : ConvLowerStatusFailed,
              std::move(text.message));
}

struct Handle {
  std::shared_ptr<CompiledConv> conv;
  /// This handle's constant weights, packed (constantWeights).
  WeightsPack weights;
};

Handle *unwrap(ConvLowerConv conv) { return static_cast<Handle *>(conv.ptr); }

void emit(ConvLowerStringCallback callback, void *userData,
          const std::string &text) {
  callback(ConvLowerStringRef{text.data(), text.size()}, userData);
}

llvm::Expected<DType> dtypeOf(ConvLowerDType dtype) {
  switch (dtype) {
  case ConvLowerDTypeF32:
    return DType::F32;
  case ConvLowerDTypeTF32:
    return DType::TF32;
  case ConvLowerDTypeF16:
    return DType::F16;
  case ConvLowerDTypeBF16:
    return DType::BF16;
  case ConvLowerDTypeI8:
    return DType::I8;
  }
  return llvm::createStringError(
      llvm::formatv("dtype {0} is not a ConvLowerDType", int(dtype)));
}

llvm::Expected<Target> targetOf(ConvLowerTarget target) {
  switch (target) {
  case ConvLowerTargetAuto:
    return Target::Auto;
  case ConvLowerTargetCpu:
    return Target::Cpu;
  case ConvLowerTargetCpuTwin:
    return Target::CpuTwin;
  case ConvLowerTargetCuda:
    return Target::Cuda;
  }
  return llvm::createStringError(
      llvm::formatv("target {0} is not a ConvLowerTarget", int(target)));
}

/// The description as the run library's problem: a 1-D problem is the 2-D
/// one with H = KH = 1; a 3-D one takes its first dimension as the depth.
llvm::Expected<ConvSpec> specOf(const ConvLowerConvDesc &d) {
  if (d.spatialRank < 1 || d.spatialRank > 3)
    return llvm::createStringError(llvm::formatv(
        "spatialRank must be 1, 2 or 3, got {0}", d.spatialRank));
  if (d.layout != ConvLowerLayoutNCHW && d.layout != ConvLowerLayoutNHWC)
    return llvm::createStringError(
        llvm::formatv("layout {0} is not a ConvLowerLayout", int(d.layout)));
  ConvSpec spec;
  ConvProblem &p = spec.problem;
  auto dtype = dtypeOf(d.dtype);
  if (!dtype)
    return dtype.takeError();
  auto target = targetOf(d.target);
  if (!target)
    return target.takeError();
  p.layout = d.layout == ConvLowerLayoutNCHW ? Layout::NCHW : Layout::NHWC;
  p.filterLayout = convrt::defaultFilterLayout(p.layout);
  p.dtype = *dtype;
  p.accumulate = p.isQuantized() ? DType::I32 : DType::F32;
  if (!p.isQuantized() && (d.inputZeroPoint || d.filterZeroPoint))
    return llvm::createStringError("zero points are for dtype i8 only");
  p.inputZeroPoint = d.inputZeroPoint;
  p.filterZeroPoint = d.filterZeroPoint;
  p.n = d.batch, p.c = d.inChannels, p.f = d.outChannels;
  p.groups = d.groups;
  p.hasBias = d.bias;
  if (d.pooling != ConvLowerPoolingNone && d.pooling != ConvLowerPoolingMax)
    return llvm::createStringError(
        llvm::formatv("pooling {0} is not a ConvLowerPooling", int(d.pooling)));
  if (d.pooling == ConvLowerPoolingMax)
    p.pooling = convrt::Pooling::Max;
  // Dimension i of the description, counted from the innermost (W).
  int rank = d.spatialRank;
  auto inner = [&](const int64_t(&v)[3], int i, int64_t absent) {
    return i < rank ? v[rank - 1 - i] : absent;
  };
  p.w = inner(d.inputSize, 0, 1), p.h = inner(d.inputSize, 1, 1);
  p.kw = inner(d.kernelSize, 0, 1), p.kh = inner(d.kernelSize, 1, 1);
  p.strideW = inner(d.stride, 0, 1), p.strideH = inner(d.stride, 1, 1);
  p.dilationW = inner(d.dilation, 0, 1), p.dilationH = inner(d.dilation, 1, 1);
  p.padLeft = inner(d.padBefore, 0, 0), p.padTop = inner(d.padBefore, 1, 0);
  p.padRight = inner(d.padAfter, 0, 0), p.padBottom = inner(d.padAfter, 1, 0);
  if (rank == 3) {
    p.hasDepth = true;
    p.d = d.inputSize[0], p.kd = d.kernelSize[0], p.strideD = d.stride[0];
    p.dilationD = d.dilation[0];
    p.padFront = d.padBefore[0], p.padBack = d.padAfter[0];
    if (p.d < 1 || p.kd < 1 || p.strideD < 1 || p.dilationD < 1 ||
        p.padFront < 0 || p.padBack < 0)
      return llvm::createStringError(llvm::formatv(
          "depth D {0}, KD {1}, stride {2}, dilation {3} must be positive and "
          "its padding {4},{5} non-negative",
          p.d, p.kd, p.strideD, p.dilationD, p.padFront, p.padBack));
  }
  spec.epilogue.residual = d.residual;
  spec.epilogue.relu = d.relu;
  spec.epilogue.clamp = d.clamp;
  spec.epilogue.clampMin = d.clampMin;
  spec.epilogue.clampMax = d.clampMax;
  spec.epilogue.bf16Output = d.bf16Output;
  spec.epilogue.bf16Residual = d.bf16Residual;
  spec.target = *target;
  spec.threads = d.threads;
  spec.constantWeights = d.constantWeights;
  if (d.chip && *d.chip) {
    std::optional<convrt::Arch> arch = convrt::parseArch(d.chip);
    if (!arch)
      return llvm::createStringError(
          llvm::formatv("chip '{0}' is not one the kernels are built for: {1}",
                        d.chip, convrt::archList()));
    spec.chip = arch;
  }
  if (llvm::Error e = validateProblem(p))
    return std::move(e);
  if (llvm::Error e = validateEpilogue(p, spec.epilogue))
    return std::move(e);
  return spec;
}

} // namespace

extern "C" {

int convlowerGetApiVersion(void) { return CONVLOWER_API_VERSION; }

void convlowerConvDescInit(ConvLowerConvDesc *desc) {
  if (!desc)
    return;
  *desc = ConvLowerConvDesc{};
  desc->spatialRank = 2;
  desc->batch = desc->inChannels = desc->outChannels = 1;
  for (int i = 0; i < 3; ++i) {
    desc->inputSize[i] = desc->kernelSize[i] = 1;
    desc->stride[i] = desc->dilation[i] = 1;
  }
  desc->groups = 1;
  desc->layout = ConvLowerLayoutNCHW;
  desc->dtype = ConvLowerDTypeF32;
  desc->target = ConvLowerTargetAuto;
}

ConvLowerStatus convlowerConvDescOutputSize(const ConvLowerConvDesc *desc,
                                            int64_t *sizes) {
  if (!desc || !sizes)
    return fail(ConvLowerStatusBadInput, "convlowerConvDescOutputSize: NULL "
                                         "description or sizes");
  auto spec = specOf(*desc);
  if (!spec)
    return fail(ConvLowerStatusBadInput, llvm::toString(spec.takeError()));
  const ConvProblem &p = spec->problem;
  int rank = desc->spatialRank;
  if (rank == 3)
    sizes[0] = p.outD();
  if (rank >= 2)
    sizes[rank - 2] = p.outH();
  sizes[rank - 1] = p.outW();
  return succeed();
}

ConvLowerStatus convlowerConvCreate(const ConvLowerConvDesc *desc,
                                    ConvLowerConv *conv, bool *cacheHit) {
  if (conv)
    conv->ptr = nullptr;
  if (!desc || !conv)
    return fail(ConvLowerStatusBadInput,
                "convlowerConvCreate: NULL description or handle");
  auto spec = specOf(*desc);
  if (!spec)
    return fail(ConvLowerStatusBadInput, llvm::toString(spec.takeError()));
  bool hit = false;
  auto compiled = ConvCache::global().get(*spec, &hit);
  if (!compiled)
    return fail(compiled.takeError());
  if (cacheHit)
    *cacheHit = hit;
  auto *handle = new Handle();
  handle->conv = std::move(*compiled);
  conv->ptr = handle;
  return succeed();
}

void convlowerConvDestroy(ConvLowerConv conv) { delete unwrap(conv); }

} // extern "C"

namespace {

/// convlowerConvRun (`fn` without a residual) and convlowerConvRunResidual:
/// the handle's description must say whether the call passes a residual.
ConvLowerStatus runHandle(const char *fn, ConvLowerConv conv,
                          const void *input, const void *filter,
                          const void *bias, const void *residual,
                          void *output, bool passesResidual) {
  Handle *h = unwrap(conv);
  if (!h)
    return fail(ConvLowerStatusBadInput,
                llvm::formatv("{0}: a NULL handle", fn).str());
  if (h->conv->spec().epilogue.residual != passesResidual)
    return fail(ConvLowerStatusBadInput,
                passesResidual
                    ? llvm::formatv("{0}: the description has no residual "
                                    "(set desc.residual)",
                                    fn)
                          .str()
                    : llvm::formatv("{0}: the description has a residual: "
                                    "pass it to convlowerConvRunResidual",
                                    fn)
                          .str());
  if (llvm::Error e =
          h->conv->run(input, filter, bias, residual, output, &h->weights))
    return fail(std::move(e));
  return succeed();
}

} // namespace

extern "C" {

ConvLowerStatus convlowerConvRun(ConvLowerConv conv, const void *input,
                                 const void *filter, const void *bias,
                                 void *output) {
  return runHandle("convlowerConvRun", conv, input, filter, bias, nullptr,
                   output, /*passesResidual=*/false);
}

ConvLowerStatus convlowerConvRunResidual(ConvLowerConv conv,
                                         const void *input,
                                         const void *filter, const void *bias,
                                         const void *residual, void *output) {
  return runHandle("convlowerConvRunResidual", conv, input, filter, bias,
                   residual, output, /*passesResidual=*/true);
}

} // extern "C"

namespace {

/// Why step `i` cannot run on `bufferCount` buffers, or "" when it can.
std::string stepProblem(const ConvLowerStep &step, int64_t i,
                        void *const *buffers, int64_t bufferCount) {
  auto outside = [&](int32_t index) {
    return index < 0 || index >= bufferCount;
  };
  bool residual = step.residual != -1;
  Handle *h = unwrap(step.conv);
  if (!h)
    return llvm::formatv("step {0}: a NULL handle", i).str();
  if (h->conv->spec().epilogue.residual != residual)
    return llvm::formatv(residual ? "step {0}: a residual buffer for a "
                                    "description without one (residual -1)"
                                  : "step {0}: the description has a "
                                    "residual: give the step its buffer",
                         i)
        .str();
  if (outside(step.input) || outside(step.output) ||
      (residual && outside(step.residual)))
    return llvm::formatv("step {0}: a buffer index outside [0, {1}) "
                         "(input {2}, residual {3}, output {4})",
                         i, bufferCount, step.input, step.residual,
                         step.output)
        .str();
  if (!buffers[step.input] || !buffers[step.output] ||
      (residual && !buffers[step.residual]))
    return llvm::formatv("step {0}: a NULL buffer", i).str();
  if (step.output == step.input || (residual && step.output == step.residual))
    return llvm::formatv("step {0}: its output (buffer {1}) is also its "
                         "input or residual; the CPU routes compute into the "
                         "output",
                         i, step.output)
        .str();
  int64_t f = h->conv->spec().problem.f;
  if (step.outputChannels != 0 &&
      (step.outputChannelOffset < 0 ||
       step.outputChannelOffset + f > step.outputChannels))
    return llvm::formatv("step {0}: its {1} channels do not fit at offset {2} "
                         "of an output of {3} channels",
                         i, f, step.outputChannelOffset, step.outputChannels)
        .str();
  return "";
}

/// Whole-output scratch for the steps that write a channel slice, one per
/// thread (steps of concurrent sequences may run at once), grown as needed
/// and kept: a concatenation's producers run every forward.
char *sliceScratch(size_t bytes) {
  struct Scratch {
    std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
    size_t bytes = 0;
  };
  thread_local Scratch scratch;
  if (scratch.bytes < bytes) {
    size_t rounded = llvm::alignTo(bytes, 64);
    scratch.data.reset(static_cast<char *>(std::aligned_alloc(64, rounded)));
    scratch.bytes = scratch.data ? rounded : 0;
  }
  return scratch.data.get();
}

/// Copies a step's whole output `from` (F channels) into channels
/// [offset, offset + F) of `to`, which holds `channels`: per pixel in the
/// channels-last layout, per image in the channels-first one.
void copyIntoChannels(const ConvProblem &p, size_t elementBytes,
                      const char *from, char *to, int64_t channels,
                      int64_t offset) {
  int64_t f = p.f, elements = p.outputElements();
  bool channelsLast = p.layout == convrt::Layout::NHWC;
  // A run of F channels: one pixel's (channels last), or one image's
  // F planes (channels first).
  int64_t run = channelsLast ? f : elements / p.n;
  int64_t inner = run / f; // elements per channel in a run
  for (int64_t at = 0, r = 0; at < elements; at += run, ++r)
    std::memcpy(to + (r * channels + offset) * inner * elementBytes,
                from + at * elementBytes, run * elementBytes);
}

/// Runs one step: into buffers[output] itself, or, for an output slice,
/// into the scratch and then into its channels (directly where the slice
/// is one contiguous run: channels first, one image).
ConvLowerStatus runStep(const ConvLowerStep &step, void *const *buffers) {
  bool residual = step.residual != -1;
  auto runInto = [&](void *output) {
    return runHandle("convlowerRunSteps", step.conv, buffers[step.input],
                     step.filter, step.bias,
                     residual ? buffers[step.residual] : nullptr, output,
                     residual);
  };
  Handle *h = unwrap(step.conv);
  const ConvProblem &p = h->conv->spec().problem;
  if (step.outputChannels == 0 || step.outputChannels == p.f)
    return runInto(buffers[step.output]);
  size_t bytes = elementBytes(outputDType(p, h->conv->spec().epilogue));
  char *to = static_cast<char *>(buffers[step.output]);
  if (p.layout == convrt::Layout::NCHW && p.n == 1)
    return runInto(to + step.outputChannelOffset * (p.outputElements() / p.f) *
                            bytes);
  char *scratch = sliceScratch(p.outputElements() * bytes);
  if (!scratch)
    return fail(ConvLowerStatusFailed,
                llvm::formatv("cannot allocate {0} bytes for a step's output "
                              "slice",
                              p.outputElements() * bytes)
                    .str());
  ConvLowerStatus status = runInto(scratch);
  if (status == ConvLowerStatusOk)
    copyIntoChannels(p, bytes, scratch, to, step.outputChannels,
                     step.outputChannelOffset);
  return status;
}

} // namespace

extern "C" {

ConvLowerStatus convlowerRunSteps(const ConvLowerStep *steps, int64_t count,
                                  void *const *buffers, int64_t bufferCount,
                                  double *stepMs) {
  if (count < 0 || (count > 0 && (!steps || !buffers)))
    return fail(ConvLowerStatusBadInput,
                "convlowerRunSteps: NULL steps or buffers, or a negative count");
  // Every step is checked before any runs: a bad table runs nothing.
  for (int64_t i = 0; i < count; ++i) {
    std::string problem = stepProblem(steps[i], i, buffers, bufferCount);
    if (!problem.empty())
      return fail(ConvLowerStatusBadInput, "convlowerRunSteps: " + problem);
  }
  for (int64_t i = 0; i < count; ++i) {
    auto start = std::chrono::steady_clock::now();
    ConvLowerStatus status = runStep(steps[i], buffers);
    if (stepMs)
      stepMs[i] = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
    if (status != ConvLowerStatusOk)
      return fail(status, llvm::formatv("step {0}: {1}", i, lastError).str());
  }
  return succeed();
}

ConvLowerStatus convlowerConvPackWeights(ConvLowerConv conv,
                                         const void *filter) {
  Handle *h = unwrap(conv);
  if (!h)
    return fail(ConvLowerStatusBadInput,
                "convlowerConvPackWeights: a NULL handle");
  if (llvm::Error e = h->conv->pack(filter, &h->weights))
    return fail(std::move(e));
  return succeed();
}

ConvLowerStatus convlowerConvGetSizes(ConvLowerConv conv,
                                      int64_t *inputElements,
                                      int64_t *filterElements,
                                      int64_t *biasElements,
                                      int64_t *outputElements) {
  Handle *h = unwrap(conv);
  if (!h)
    return fail(ConvLowerStatusBadInput, "convlowerConvGetSizes: a NULL handle");
  const ConvProblem &p = h->conv->spec().problem;
  if (inputElements)
    *inputElements = p.inputElements();
  if (filterElements)
    *filterElements = p.isPooling() ? 0 : p.filterElements();
  if (biasElements)
    *biasElements = p.hasBias ? p.f : 0;
  if (outputElements)
    *outputElements = p.outputElements();
  return succeed();
}

ConvLowerTarget convlowerConvGetTarget(ConvLowerConv conv) {
  Handle *h = unwrap(conv);
  if (!h)
    return ConvLowerTargetAuto;
  switch (h->conv->target()) {
  case Target::Cuda:
    return ConvLowerTargetCuda;
  case Target::CpuTwin:
    return ConvLowerTargetCpuTwin;
  default:
    return ConvLowerTargetCpu;
  }
}

ConvLowerStatus convlowerConvPrintReport(ConvLowerConv conv,
                                         ConvLowerStringCallback callback,
                                         void *userData) {
  Handle *h = unwrap(conv);
  if (!h || !callback)
    return fail(ConvLowerStatusBadInput,
                "convlowerConvPrintReport: a NULL handle or callback");
  std::string json;
  llvm::raw_string_ostream os(json);
  printJson(h->conv->report(&h->weights), os);
  emit(callback, userData, json);
  return succeed();
}

const char *convlowerGetLastErrorMessage(void) { return lastError.c_str(); }

size_t convlowerCacheSize(void) { return ConvCache::global().size(); }

void convlowerCacheClear(void) { ConvCache::global().clear(); }

size_t convlowerCacheCapacity(void) { return ConvCache::global().capacity(); }

void convlowerCacheSetCapacity(size_t entries) {
  ConvCache::global().setCapacity(entries);
}

uint32_t convlowerGetCpuUnits(void) {
  uint32_t units = 0;
  if (hostHasAVX512BF16())
    units |= ConvLowerCpuUnitAVX512BF16;
  if (hostHasAVX512VNNI())
    units |= ConvLowerCpuUnitAVX512VNNI;
  if (whyNoAMX().empty())
    units |= ConvLowerCpuUnitAMX;
  return units;
}

const char *convlowerGetOpenMPRuntimePath(void) {
  // Chosen once and kept for the process's lifetime.
  return processOpenMPRuntime().path.c_str();
}

const char *convlowerDiskCacheDirectory(void) {
  return DiskCache::process().path().data();
}

uint64_t convlowerDiskCacheUsage(size_t *entries) {
  auto [bytes, count] = DiskCache::process().usage();
  if (entries)
    *entries = count;
  return bytes;
}

size_t convlowerDiskCacheClear(void) { return DiskCache::process().clear(); }

void convlowerPrintDevices(ConvLowerStringCallback callback, void *userData) {
  if (!callback)
    return;
  DeviceStatus status = probeDevices();
  std::string json;
  llvm::raw_string_ostream os(json);
  llvm::json::OStream j(os);
  j.object([&] {
    writeDevicesJson(j, status.driverVersion, status.devices, status.problem);
  });
  emit(callback, userData, json);
}

} // extern "C"
