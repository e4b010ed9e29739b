/*===-- ConvLower-c/ConvLower.h - ConvLower's C API ---------------*- C -*-===*\
|*                                                                            *|
|* Describe a convolution, compile it once for a target (the CPU JIT, the     *|
|* GPU kernel's CPU twin, or the tensor-core kernel on a CUDA device), run it *|
|* on the caller's buffers as often as wanted, read its report.               *|
|*                                                                            *|
|* Conventions (MLIR's C API): opaque handles are structs holding a pointer,  *|
|* created by a function and released by convlowerXDestroy; strings are      *|
|* ConvLowerStringRef (not NUL-terminated) handed to callbacks. Every call    *|
|* that can fail returns a ConvLowerStatus and never aborts; the message of   *|
|* the calling thread's last failure is convlowerGetLastErrorMessage().       *|
|* Compilations are cached by problem: a second identical layer reuses the    *|
|* first one's code. Every function is safe to call from several threads.    *|
|*                                                                            *|
|* Semantics: the convolution of docs/design.md, "Convolution semantics"      *|
|* (torch's conv1d/2d/3d with zero padding, dilation and groups). Buffers     *|
|* are dense, in the layout's order:                                          *|
|* NCHW images with FCHW (torch's) filters, or NHWC images with FHWC filters; *|
|* 1-D problems are the 2-D ones with H = KH = 1; 3-D ones add D (NCDHW /     *|
|* NDHWC, filters FCDHW / FDHWC).                                             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef CONVLOWER_C_CONVLOWER_H
#define CONVLOWER_C_CONVLOWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define CONVLOWER_CAPI_EXPORTED __declspec(dllexport)
#else
#define CONVLOWER_CAPI_EXPORTED __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// The version of this header's API; convlowerGetApiVersion() returns the
/// library's (a caller built against another version should not use it).
#define CONVLOWER_API_VERSION 10

typedef enum ConvLowerStatus {
  ConvLowerStatusOk = 0,
  /// The description or the buffers are wrong: nothing ran.
  ConvLowerStatusBadInput = 1,
  /// Compiling or running failed (a driver error, a compiler defect).
  ConvLowerStatusFailed = 2,
} ConvLowerStatus;

typedef enum ConvLowerLayout {
  ConvLowerLayoutNCHW = 0, ///< with FCHW filters (torch)
  ConvLowerLayoutNHWC = 1, ///< with FHWC filters (cuDNN's KRSC)
} ConvLowerLayout;

typedef enum ConvLowerDType {
  ConvLowerDTypeF32 = 0,  ///< f32 data and math
  ConvLowerDTypeTF32 = 1, ///< f32 data, tf32 tensor-core math on a GPU
  ConvLowerDTypeF16 = 2,  ///< IEEE half data (uint16 words), f32 output
  ConvLowerDTypeBF16 = 3, ///< bfloat16 data (uint16 words), f32 output; on the CPU with AVX512-BF16 the GEMMs run on VDPBF16PS (K in pairs)
  ConvLowerDTypeI8 = 4,   ///< int8 data with zero points, int32 output; on the CPU with AVX512-VNNI the GEMMs run on VPDPBUSD (K in quads)
} ConvLowerDType;

/// The CPU's units the CPU route's bf16 and i8 GEMMs run on, as bits
/// (convlowerGetCpuUnits).
typedef enum ConvLowerCpuUnit {
  ConvLowerCpuUnitAVX512BF16 = 1, ///< VDPBF16PS: bf16 GEMMs in K pairs
  ConvLowerCpuUnitAVX512VNNI = 2, ///< VPDPBUSD: i8 GEMMs in K quads
  /// AMX tiles (TDPBF16PS, TDPBSSD): the CPU has AMX-TILE, -BF16 and -INT8
  /// and Linux granted this process the tile data.
  ConvLowerCpuUnitAMX = 4,
} ConvLowerCpuUnit;

/// What a description computes over each window (desc.pooling).
typedef enum ConvLowerPooling {
  ConvLowerPoolingNone = 0, ///< the convolution
  /// Max pooling: each channel's largest pixel in its window, the padding
  /// -infinity (torch's max_pool2d). inChannels = outChannels = groups;
  /// float data, no bias, 1-D or 2-D, padding before at most half the
  /// window (more after it is torch's ceil_mode, as long as the last window
  /// starts inside the image); no filter is read (pass NULL); the CPU route
  /// only.
  ConvLowerPoolingMax = 1,
} ConvLowerPooling;

typedef enum ConvLowerTarget {
  /// cuda where a device is usable and the GPU route takes the problem,
  /// else cpu.
  ConvLowerTargetAuto = 0,
  ConvLowerTargetCpu = 1,     ///< the CPU JIT (im2col panels + tiled GEMM)
  ConvLowerTargetCpuTwin = 2, ///< the GPU kernel's loop nest on the CPU
  ConvLowerTargetCuda = 3,    ///< the tensor-core kernel on a CUDA device
} ConvLowerTarget;

/// A convolution. Fill it with convlowerConvDescInit() first: the defaults
/// are a 2-D, stride-1, unpadded, ungrouped f32 NCHW problem on target auto.
typedef struct ConvLowerConvDesc {
  /// Spatial dimensions: 1 (conv1d), 2 (conv2d) or 3 (conv3d).
  int32_t spatialRank;
  int64_t batch;       ///< N
  int64_t inChannels;  ///< C
  int64_t outChannels; ///< F
  /// Per spatial dimension, outermost first ((D,) H, W; for 1-D: L): the
  /// image size, the kernel size, strides, dilations, zero padding before
  /// and after. Entries past spatialRank are ignored.
  int64_t inputSize[3];
  int64_t kernelSize[3];
  int64_t stride[3];
  int64_t dilation[3];
  int64_t padBefore[3];
  int64_t padAfter[3];
  int64_t groups;
  ConvLowerLayout layout;
  ConvLowerDType dtype;
  /// i8 only: sum (x - inputZeroPoint) * (w - filterZeroPoint).
  int64_t inputZeroPoint;
  int64_t filterZeroPoint;
  /// A bias [F] in the data's dtype, added to the output.
  bool bias;
  /// y + residual after the bias: an operand of the output's shape and type,
  /// passed to convlowerConvRunResidual (a ResNet block's identity).
  bool residual;
  /// max(y, 0) after the bias and the residual.
  bool relu;
  /// min(max(y, clampMin), clampMax) after that (ReLU6: 0 and 6); float
  /// outputs only. Every route fuses the epilogue into its own: the CPU's
  /// pass over the output, the tensor-core kernels' store (1-D and 2-D
  /// images; a 3-D convolution's runs after the kernel on the twin).
  bool clamp;
  double clampMin;
  double clampMax;
  ConvLowerTarget target;
  /// CPU worker threads; 0: every core this process may use.
  int32_t threads;
  /// cuda and cpu-twin: the chip to compile for (the twin: whose kernel
  /// family it runs), as "sm_90a"; NULL or "": the device's (sm_90a on
  /// compute capability 9.0; the twin: sm_80).
  const char *chip;
  /// The filter holds the same values on every run (inference weights).
  /// The CPU routes then compute what depends on it alone (the transposed
  /// filter, Winograd's U) once per handle, at convlowerConvPackWeights()
  /// or else at the handle's first run, and later runs read that copy, not
  /// the filter they are passed. Nothing is packed on cuda.
  bool constantWeights;
  /// Float convolutions on the CPU: the output rounded to bfloat16 (uint16
  /// words, round to nearest even) after the epilogue, which runs in f32;
  /// the residual is then bf16 too. A network's activations kept in bf16
  /// from layer to layer: half the bytes written and read, and the next
  /// bf16 layer reads them as they are. Bad input for i8 and on cuda (the
  /// tensor-core kernels store f32).
  bool bf16Output;
  /// Float convolutions on the CPU, with `residual`: the residual is bf16
  /// words (added in f32) whatever the output's type, e.g. a block's bf16
  /// identity added into a float32 output.
  bool bf16Residual;
  /// ConvLowerPoolingMax: max pooling over the same windows instead of the
  /// convolution (the epilogue still applies after it).
  ConvLowerPooling pooling;
} ConvLowerConvDesc;

/// A compiled convolution.
typedef struct ConvLowerConv {
  void *ptr;
} ConvLowerConv;

typedef struct ConvLowerStringRef {
  const char *data;
  size_t length;
} ConvLowerStringRef;

/// Receives a string (valid during the call) and the caller's userData.
typedef void (*ConvLowerStringCallback)(ConvLowerStringRef, void *userData);

CONVLOWER_CAPI_EXPORTED int convlowerGetApiVersion(void);

/// The defaults described at ConvLowerConvDesc (sizes 1, no bias).
CONVLOWER_CAPI_EXPORTED void convlowerConvDescInit(ConvLowerConvDesc *desc);

/// The output's size in each spatial dimension (spatialRank entries), by
/// the formula of docs/design.md ("Convolution semantics"); fails on an
/// invalid description.
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerConvDescOutputSize(const ConvLowerConvDesc *desc, int64_t *sizes);

/// Compiles `desc` (or takes it from the cache) into `*conv`. On failure
/// `conv->ptr` is NULL. `cacheHit` (may be NULL) says whether the code came
/// from the cache.
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerConvCreate(const ConvLowerConvDesc *desc, ConvLowerConv *conv,
                    bool *cacheHit);

/// Releases the handle (the cache keeps the compiled code). NULL is a no-op.
CONVLOWER_CAPI_EXPORTED void convlowerConvDestroy(ConvLowerConv conv);

static inline bool convlowerConvIsNull(ConvLowerConv conv) {
  return conv.ptr == NULL;
}

/// Runs the convolution on host buffers: input [N, C, (D,) H, W] or its
/// channels-last order, filter, bias [F] (NULL when desc.bias is false),
/// output in the input's layout. Element types: f32 and tf32 data as float,
/// f16/bf16 as uint16_t words, i8 as int8_t; the output is float (int32_t for
/// i8; bf16 words with desc.bf16Output). Buffers are read and written in place,
/// not retained. The output must not overlap the other buffers: the CPU routes
/// compute into it.
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerConvRun(ConvLowerConv conv, const void *input, const void *filter,
                 const void *bias, void *output);

/// convlowerConvRun for a description with `residual`: `residual` holds the
/// output's shape and type (read, not written; it may not overlap the
/// output). The result is computed in one pass with the bias and the
/// activation, not by a second pass over the output. NULL `residual`, or a
/// description without one, is bad input (and so is convlowerConvRun on a
/// description with one).
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerConvRunResidual(ConvLowerConv conv, const void *input,
                         const void *filter, const void *bias,
                         const void *residual, void *output);

/// One convolution of a sequence run by convlowerRunSteps: the handle, its
/// filter and bias (as convlowerConvRun takes them), and which of the
/// sequence's buffers it reads and writes, as indices into the buffer
/// table. `residual` is -1 for a description without one.
///
/// `outputChannels` 0: buffers[output] is the step's output, as
/// convlowerConvRun writes it. Otherwise buffers[output] holds
/// `outputChannels` channels (the output's shape, its channel count
/// replaced; same layout) and the step writes its F channels at
/// [outputChannelOffset, outputChannelOffset + F), the others left as they
/// are: several steps writing one buffer at their offsets compute a
/// concatenation along the channels (Inception's branches, SqueezeNet's
/// fire modules) in the steps themselves. (The compiled code writes a
/// whole output: the slice is copied from it, per pixel channels last, per
/// image channels first; written in place where it is one run, channels
/// first with one image.)
typedef struct ConvLowerStep {
  ConvLowerConv conv;
  const void *filter;
  const void *bias;
  int32_t input;
  int32_t residual;
  int32_t output;
  int32_t outputChannels;
  int32_t outputChannelOffset;
} ConvLowerStep;

/// Runs `count` steps in order, each as convlowerConvRun (or
/// convlowerConvRunResidual) on buffers[input], buffers[residual] and
/// buffers[output]: a chain of layers in one call, an earlier step's output
/// the input of a later one, with the buffers planned by the caller (a
/// buffer reused once the steps reading it are done keeps the chain's
/// activations in cache). Stops at the first step that fails; its message
/// names the step. Bad input: an index outside [0, bufferCount), a NULL
/// handle or buffer, a step whose output is also its input or residual, a
/// residual given to a description without one (or missing), or an output
/// slice that does not fit (offset + F > outputChannels, a negative one).
/// `stepMs` (NULL: not timed) receives each step's wall time in milliseconds,
/// the run's per-layer profile.
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerRunSteps(const ConvLowerStep *steps, int64_t count,
                  void *const *buffers, int64_t bufferCount, double *stepMs);

/// desc.constantWeights: packs `filter` for this handle's runs now (else
/// its first run packs the filter it is given); call it again after
/// changing the filter's values, not while runs on the handle are in
/// flight. Handles of one description share the compiled code, each with
/// its own packed weights. Bad input without constantWeights.
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerConvPackWeights(ConvLowerConv conv, const void *filter);

/// Element counts of the four buffers (bias: 0 without one, filter: 0 for
/// a pooling; a residual has the output's).
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerConvGetSizes(ConvLowerConv conv, int64_t *inputElements,
                      int64_t *filterElements, int64_t *biasElements,
                      int64_t *outputElements);

/// The target it runs on: never ConvLowerTargetAuto.
CONVLOWER_CAPI_EXPORTED ConvLowerTarget
convlowerConvGetTarget(ConvLowerConv conv);

/// The report as JSON, conv-run's keys: target and why, pipeline, im2col
/// mode, kernel tiles, kernel_family and chip (cuda/twin), threads (cpu),
/// compile_ms, lowered_ms (the last run; the kernel's time on a GPU), repeat
/// (runs so far), gflops, input_bytes, im2col_bytes; with constantWeights,
/// once packed, pack_ms and packed_bytes (this handle's).
CONVLOWER_CAPI_EXPORTED ConvLowerStatus
convlowerConvPrintReport(ConvLowerConv conv, ConvLowerStringCallback callback,
                         void *userData);

/// The calling thread's last failure, or "" after a success. Valid until
/// the thread's next ConvLower call.
CONVLOWER_CAPI_EXPORTED const char *convlowerGetLastErrorMessage(void);

/// Compiled convolutions in the cache; dropping them (live handles keep
/// theirs).
CONVLOWER_CAPI_EXPORTED size_t convlowerCacheSize(void);
CONVLOWER_CAPI_EXPORTED void convlowerCacheClear(void);
/// The most compiled convolutions the cache keeps: past it, the least
/// recently created problems are dropped (live handles keep theirs). The
/// default is $CONVLOWER_CACHE_ENTRIES where that is a positive integer,
/// else 64. Setting it (at least 1) drops what is past the new bound now.
CONVLOWER_CAPI_EXPORTED size_t convlowerCacheCapacity(void);
CONVLOWER_CAPI_EXPORTED void convlowerCacheSetCapacity(size_t entries);

/// The OpenMP library ConvLower's threaded CPU code runs on: the one the
/// process already has (a host's libgomp, a preloaded libomp), so host and
/// ConvLower share one thread pool; in a process with none, LLVM's libomp,
/// loaded by this call or the first threaded convolution. "" when there is
/// none to be had. Chosen once per process.
CONVLOWER_CAPI_EXPORTED const char *convlowerGetOpenMPRuntimePath(void);

/// The disk cache of compiled CPU code: a later process compiling the same
/// convolution (same pipeline, CPU and ConvLower build) links the object
/// file an earlier one left ($CONVLOWER_CACHE_DIR, default
/// $XDG_CACHE_HOME/convlower or ~/.cache/convlower; "off": none; bounded by
/// $CONVLOWER_CACHE_BYTES, default 256 MiB, least recently used first out).
/// Its directory, "" when it is off.
CONVLOWER_CAPI_EXPORTED const char *convlowerDiskCacheDirectory(void);
/// Its entries' total bytes; `entries` (may be NULL) gets their count.
CONVLOWER_CAPI_EXPORTED uint64_t convlowerDiskCacheUsage(size_t *entries);
/// Removes every entry; returns how many.
CONVLOWER_CAPI_EXPORTED size_t convlowerDiskCacheClear(void);

/// The ConvLowerCpuUnit bits of this host and process: what the CPU route's
/// bf16 and i8 GEMMs run on (none: widened to f32 FMAs and i32
/// multiplies). AMX's tile data is requested from Linux here, once per
/// process, as the first AMX convolution would.
CONVLOWER_CAPI_EXPORTED uint32_t convlowerGetCpuUnits(void);

/// The devices as conv-run --doctor sees them, as JSON ({"driver_version",
/// "devices": [...], "problem"}): what target auto will choose.
CONVLOWER_CAPI_EXPORTED void
convlowerPrintDevices(ConvLowerStringCallback callback, void *userData);

#ifdef __cplusplus
}
#endif

#endif /* CONVLOWER_C_CONVLOWER_H */
