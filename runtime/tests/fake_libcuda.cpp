//===- fake_libcuda.cpp - A host-memory libcuda.so.1 for tests ------------===//
//
// Built as libcuda.so.1 into a test-only directory and loaded by path, it
// implements the driver entry points convrt uses on the host:
//
//  - one or more "Fake GPU" devices (sm_90, 132 SMs; FAKE_CUDA_DEVICE_COUNT,
//    FAKE_CUDA_CC="8.0", FAKE_CUDA_DRIVER_VERSION=12040 change them);
//  - device memory is malloc'ed host memory, so pointers are usable both ways;
//  - module images that start with "FAKECUBIN" hold host kernels:
//    fake_add_one(float *data, int n), fake_noop(), and
//    fake_conv2d(input, filter, [bias], [residual], output) configured by a
//    line "conv layout=nchw filter=fchw in=f32 out=f32 n=.. c=.. ... g=..
//    bias=0|1 [residual=1]" (the residual: the output's type, added)
//    of the blob (with "tensor_maps=N" it also takes N CUtensorMaps by value
//    after the pointers, .align 64, laid out as ptxas would for the device
//    (offsets 48 and 176 after 4 pointers on sm_90), as a TMA kernel takes
//    them; it computes from the pointers);
//  - real cubins (ELF, e.g. from ptxas or MLIR's gpu-module-to-binary) and
//    PTX text with .entry kernels load too (fakecuda/Image.h reads their
//    kernels and parameter layouts, PTX's laid out as ptxas would for the
//    device; a cubin for another architecture than
//    the device's fails with CUDA_ERROR_NO_BINARY_FOR_GPU, PTX for a newer
//    one with CUDA_ERROR_INVALID_PTX). Their kernels compute nothing: a
//    launch leaves memory as it was and is only recorded (below);
//  - cuFuncGetParamInfo answers from those layouts (and for the host
//    kernels: pointers are 8 bytes, fake_add_one's int 4);
//  - events read a fake clock that each launch advances by 0.5 ms;
//  - cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col check their arguments
//    as cuda.h documents them (CUDA_ERROR_INVALID_VALUE otherwise; the
//    packed sub-byte types are CUDA_ERROR_NOT_SUPPORTED) and write a
//    readable FakeTensorMap ("FAKETMAP", the arguments, a serial number)
//    into the 128 bytes. FAKE_CUDA_NO_TMA=1 makes cuGetProcAddress deny
//    both, as a driver older than CUDA 12.0 would.
//
// Any call can be made to fail: FAKE_CUDA_FAIL or fakecuda_set_failures()
// take "cuName:CUDA_ERROR_NAME[@N][,...]" (N: only the N-th call from now).
// It counts live allocations, modules, contexts, streams, events and host
// registrations so tests can assert that nothing leaked. Like the real
// driver it insists on cuInit first and on a current context where one is
// needed, which catches a runtime that forgets either.
//
// The record. With FAKE_CUDA_RECORD=<file> set, every event below appends
// one JSON object as a line (JSON Lines) to that file, flushed at once, so
// that a test - or a lit test running conv-run through this library - can
// check what a runtime did. Keys, in this order:
//
//   {"event":"module_load","call":"cuModuleLoadData"|"cuModuleLoadDataEx",
//    "kind":"cubin"|"ptx"|"fake"|"unknown","bytes":N,"sm":90,
//    "kernels":["name",...],"result":"CUDA_SUCCESS"|"CUDA_ERROR_..."}
//       every load attempt; "sm" is the cubin's architecture or the PTX's
//       .target (0 if none); "kernels" only for a parsed image.
//   {"event":"func_set_attribute","kernel":"k","attribute":8,"value":N}
//       each successful cuFuncSetAttribute (8: the maximum dynamic shared
//       memory, the only one the fake accepts).
//   {"event":"memcpy","call":"cuMemcpyHtoD","direction":"htod","bytes":N,
//    "async":false,"allocation":{"id":I,"offset":O,"bytes":B}}
//       each successful cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyHtoDAsync,
//       cuMemcpyDtoHAsync ("async":true) and cuMemcpyAsync (direction from
//       where the pointers lie: htod, dtoh, dtod or htoh); "allocation" is
//       the device side's allocation: "id" counts allocations from 0 in this
//       process, "offset" is the pointer's offset from its base, "bytes" the
//       allocation's size.
//   {"event":"launch","kernel":"k","kind":"cubin","grid":[x,y,z],
//    "block":[x,y,z],"shared_memory_bytes":N,"param_count":P,
//    "params":[{"offset":O,"size":S,"hex":"<bytes in memory order>",
//               "value":V,"allocation":{"id":I,"offset":O,"bytes":B}},...]}
//       each launch that passed the driver's checks. "value" is the
//       little-endian integer for 1, 2, 4 and 8 byte parameters;
//       "allocation" is present for an 8-byte value that points into a live
//       allocation (a device pointer argument); "tensor_map" (the members
//       below, without "call") for a 128-byte parameter holding a map this
//       fake encoded, its allocation resolved at the launch.
//   {"event":"tensor_map","call":"cuTensorMapEncodeIm2col","serial":S,
//    "mode":"tiled"|"im2col","dtype":"float16","rank":R,"dims":[..],
//    "strides":[..],  tiled: "box":[..]  im2col: "channels_per_pixel":C,
//    "pixels_per_column":P,"lower_corner":[..],"upper_corner":[..],
//    "element_strides":[..],"swizzle":"128B","interleave":"none",
//    "l2_promotion":"128B","oob_fill":"none","address":A,
//    "allocation":{"id":I,"offset":O,"bytes":B}}
//       each successful encode; "serial" counts maps from 0 in this process,
//       dtype names are CU_TENSOR_MAP_DATA_TYPE_* in lower case, "strides"
//       are in bytes (rank - 1), "allocation" is where the global address
//       lies (absent if in none).
//
//===----------------------------------------------------------------------===//

#include "fakecuda/Image.h"
#include "fakecuda/Record.h"

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct CUctx_st {
  int device = 0;
};
struct CUfunc_st {
  std::string name;
  CUmod_st *module = nullptr;
  int maxDynamicShared = 48 * 1024;
  /// Host kernels of FAKECUBIN images compute; cubin/PTX kernels record only.
  bool computes = false;
  std::vector<fakecuda::Param> params;
};
struct CUmod_st {
  fakecuda::ImageKind kind = fakecuda::ImageKind::Fake;
  std::string image;
  std::map<std::string, std::unique_ptr<CUfunc_st>> functions;
};
struct CUstream_st {
  unsigned flags = 0;
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  double timeMs = 0;
};

namespace {

constexpr int kMaxDevices = 8;
constexpr int kOptinSharedMemory = 232448; // H100/H200: 227 KiB
constexpr double kKernelMs = 0.5;

struct NamedError {
  CUresult code;
  const char *name;
  const char *text;
};

const NamedError kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
     "CUDA driver is a stub library"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
     "unspecified launch failure"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
     "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
     "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "operation not supported"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

struct Allocation {
  size_t bytes = 0;
  uint64_t id = 0; ///< Allocation order in this process, for the record.
};

struct Failure {
  std::string call;
  CUresult code;
  int nth; // 0: every call
};

struct State {
  std::recursive_mutex mutex;
  bool initialized = false;
  bool failuresLoaded = false;
  std::vector<Failure> failures;
  std::map<std::string, int> calls;            // since the failures were set
  std::map<uintptr_t, Allocation> allocations; // device and managed memory
  uint64_t allocationsMade = 0;
  std::set<CUmod_st *> modules;
  std::set<CUstream_st *> streams;
  std::set<CUevent_st *> events;
  std::map<uintptr_t, size_t> hostRegistrations;
  int retains[kMaxDevices] = {};
  CUctx_st contexts[kMaxDevices];
  std::map<std::string, int> maxDynamicShared; // by kernel name
  std::string lastLaunch;
  double clockMs = 0;
  uint32_t tensorMapsEncoded = 0;
};

State &state() {
  // An object, not a leaked pointer: a copy of this library that a test
  // loads and unloads must not leave its state behind.
  static State s;
  return s;
}

thread_local std::vector<CUcontext> contextStack;

CUresult codeForName(const std::string &name) {
  for (const NamedError &e : kErrors)
    if (name == e.name)
      return e.code;
  return CUDA_ERROR_UNKNOWN;
}

std::vector<Failure> parseFailures(const std::string &spec) {
  std::vector<Failure> failures;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t colon = item.find(':');
    if (colon == std::string::npos)
      continue;
    Failure failure;
    failure.call = item.substr(0, colon);
    std::string rest = item.substr(colon + 1);
    size_t at = rest.find('@');
    failure.nth =
        at == std::string::npos ? 0 : std::atoi(rest.c_str() + at + 1);
    failure.code = codeForName(rest.substr(0, at));
    failures.push_back(failure);
  }
  return failures;
}

/// Counts the call and returns the injected failure, if any.
CUresult enter(const char *name) {
  State &s = state();
  if (!s.failuresLoaded) {
    s.failuresLoaded = true;
    if (const char *spec = std::getenv("FAKE_CUDA_FAIL"))
      s.failures = parseFailures(spec);
  }
  int count = ++s.calls[name];
  for (const Failure &failure : s.failures)
    if (failure.call == name && (failure.nth == 0 || failure.nth == count))
      return failure.code;
  return CUDA_SUCCESS;
}

int envInt(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

int deviceCount() {
  return std::min(envInt("FAKE_CUDA_DEVICE_COUNT", 1), kMaxDevices);
}

CUresult requireContext() {
  State &s = state();
  if (contextStack.empty() || !contextStack.back())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (s.retains[contextStack.back()->device] <= 0)
    return CUDA_ERROR_INVALID_CONTEXT; // released: destroyed
  return CUDA_SUCCESS;
}

/// The live allocation holding `pointer`, or null.
const std::pair<const uintptr_t, Allocation> *allocationOf(uintptr_t pointer) {
  State &s = state();
  auto it = s.allocations.upper_bound(pointer);
  if (it == s.allocations.begin())
    return nullptr;
  --it;
  return pointer < it->first + it->second.bytes ? &*it : nullptr;
}

/// Is [pointer, pointer + bytes) inside one live allocation?
bool inAllocation(uintptr_t pointer, size_t bytes) {
  const auto *allocation = allocationOf(pointer);
  return allocation &&
         pointer + bytes <= allocation->first + allocation->second.bytes;
}

void *allocate(size_t bytes) {
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (memory) {
    State &s = state();
    s.allocations[reinterpret_cast<uintptr_t>(memory)] = {bytes,
                                                          s.allocationsMade++};
  }
  return memory;
}

/// {"id":I,"offset":O,"bytes":B} of the allocation `pointer` lies in, or "".
std::string allocationJson(uintptr_t pointer) {
  const auto *allocation = allocationOf(pointer);
  if (!allocation)
    return "";
  return "{\"id\":" + std::to_string(allocation->second.id) +
         ",\"offset\":" + std::to_string(pointer - allocation->first) +
         ",\"bytes\":" + std::to_string(allocation->second.bytes) + "}";
}

/// The compute capability every fake device has (FAKE_CUDA_CC, else 9.0).
void computeCapability(int &major, int &minor) {
  const char *cc = std::getenv("FAKE_CUDA_CC");
  major = 9;
  minor = 0;
  if (cc && std::strchr(cc, '.')) {
    major = std::atoi(cc);
    minor = std::atoi(std::strchr(cc, '.') + 1);
  }
}

const char *errorName(CUresult code) {
  for (const NamedError &e : kErrors)
    if (e.code == code)
      return e.name;
  return "CUDA_ERROR_UNKNOWN";
}

#define FAKE_ENTER(name)                                                       \
  std::lock_guard<std::recursive_mutex> fakeLock(state().mutex);               \
  if (CUresult injected = enter(name))                                         \
    return injected;

#define FAKE_REQUIRE_INIT()                                                    \
  if (!state().initialized)                                                    \
    return CUDA_ERROR_NOT_INITIALIZED;

#define FAKE_REQUIRE_CONTEXT()                                                 \
  FAKE_REQUIRE_INIT()                                                          \
  if (CUresult noContext = requireContext())                                   \
    return noContext;

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// key=value settings of the "conv" line of a module image.
std::map<std::string, std::string> convConfig(const std::string &image) {
  std::map<std::string, std::string> config;
  std::stringstream lines(image);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, 5, "conv ") != 0)
      continue;
    std::stringstream words(line.substr(5));
    std::string word;
    while (words >> word) {
      size_t eq = word.find('=');
      if (eq != std::string::npos)
        config[word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
  return config;
}

enum class Type { F32, F16, BF16 };

Type typeNamed(const std::string &name) {
  return name == "f16" ? Type::F16 : name == "bf16" ? Type::BF16 : Type::F32;
}

double loadValue(const void *base, size_t index, Type type) {
  if (type == Type::F32)
    return static_cast<const float *>(base)[index];
  uint16_t bits = static_cast<const uint16_t *>(base)[index];
  if (type == Type::BF16) {
    uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &wide, 4);
    return value;
  }
  _Float16 half;
  std::memcpy(&half, &bits, 2);
  return static_cast<double>(half);
}

void storeValue(void *base, size_t index, Type type, double value) {
  if (type == Type::F32) {
    static_cast<float *>(base)[index] = static_cast<float>(value);
    return;
  }
  uint16_t bits;
  if (type == Type::BF16) {
    float single = static_cast<float>(value);
    uint32_t wide;
    std::memcpy(&wide, &single, 4);
    wide += 0x7FFF + ((wide >> 16) & 1);
    bits = static_cast<uint16_t>(wide >> 16);
  } else {
    _Float16 half = static_cast<_Float16>(static_cast<float>(value));
    std::memcpy(&bits, &half, 2);
  }
  static_cast<uint16_t *>(base)[index] = bits;
}

/// A direct convolution written independently of convrt's reference.
CUresult fakeConv2d(const std::map<std::string, std::string> &cfg,
                    void **params) {
  auto num = [&](const char *key) -> long {
    auto it = cfg.find(key);
    return it == cfg.end() ? -1 : std::atol(it->second.c_str());
  };
  auto text = [&](const char *key, const char *fallback) {
    auto it = cfg.find(key);
    return it == cfg.end() ? std::string(fallback) : it->second;
  };
  long N = num("n"), C = num("c"), H = num("h"), W = num("w"), F = num("f"),
       KH = num("kh"), KW = num("kw"), SH = num("sh"), SW = num("sw"),
       DH = num("dh"), DW = num("dw"), PT = num("pt"), PL = num("pl"),
       PB = num("pb"), PR = num("pr"), G = num("g");
  if (N < 1 || C < 1 || H < 1 || W < 1 || F < 1 || KH < 1 || KW < 1 || SH < 1 ||
      SW < 1 || DH < 1 || DW < 1 || PT < 0 || PL < 0 || PB < 0 || PR < 0 ||
      G < 1)
    return CUDA_ERROR_INVALID_IMAGE;
  bool nhwc = text("layout", "nchw") == "nhwc";
  std::string filterLayout = text("filter", nhwc ? "fhwc" : "fchw");
  std::string inName = text("in", "f32");
  Type in = typeNamed(inName), out = typeNamed(text("out", inName.c_str()));
  Type biasType = typeNamed(text("bias_dtype", inName.c_str()));
  bool bias = num("bias") == 1, residual = num("residual") == 1;
  long HO = (H + PT + PB - DH * (KH - 1) - 1) / SH + 1;
  long WO = (W + PL + PR - DW * (KW - 1) - 1) / SW + 1;
  long CG = C / G, FG = F / G;

  auto ptr = [&](int i) {
    return reinterpret_cast<void *>(*static_cast<CUdeviceptr *>(params[i]));
  };
  int next = 2;
  void *x = ptr(0), *w = ptr(1), *b = bias ? ptr(next++) : nullptr,
       *r = residual ? ptr(next++) : nullptr, *y = ptr(next);
  auto xAt = [&](long n, long c, long h, long ww) -> size_t {
    return nhwc ? ((n * H + h) * W + ww) * C + c
                : ((n * C + c) * H + h) * W + ww;
  };
  auto wAt = [&](long f, long c, long r, long s) -> size_t {
    if (filterLayout == "hwcf")
      return ((r * KW + s) * CG + c) * F + f;
    if (filterLayout == "fhwc")
      return ((f * KH + r) * KW + s) * CG + c;
    return ((f * CG + c) * KH + r) * KW + s;
  };
  auto yAt = [&](long n, long f, long h, long ww) -> size_t {
    return nhwc ? ((n * HO + h) * WO + ww) * F + f
                : ((n * F + f) * HO + h) * WO + ww;
  };
  for (long n = 0; n < N; ++n)
    for (long f = 0; f < F; ++f)
      for (long oh = 0; oh < HO; ++oh)
        for (long ow = 0; ow < WO; ++ow) {
          double acc = b ? loadValue(b, f, biasType) : 0.0;
          long g = f / FG;
          for (long c = 0; c < CG; ++c)
            for (long r = 0; r < KH; ++r)
              for (long s = 0; s < KW; ++s) {
                long ih = oh * SH - PT + r * DH, iw = ow * SW - PL + s * DW;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                  acc += loadValue(w, wAt(f, c, r, s), in) *
                         loadValue(x, xAt(n, g * CG + c, ih, iw), in);
              }
          if (r)
            acc += loadValue(r, yAt(n, f, oh, ow), out);
          storeValue(y, yAt(n, f, oh, ow), out, acc);
        }
  return CUDA_SUCCESS;
}

CUresult runKernel(CUfunc_st *function, void **params) {
  if (!function->computes || function->name == "fake_noop")
    return CUDA_SUCCESS; // cubin and PTX kernels are only recorded
  if (!params)
    return CUDA_ERROR_INVALID_VALUE;
  if (function->name == "fake_add_one") {
    float *data =
        reinterpret_cast<float *>(*static_cast<CUdeviceptr *>(params[0]));
    int n = *static_cast<int *>(params[1]);
    if (!inAllocation(reinterpret_cast<uintptr_t>(data), size_t(n) * 4))
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int i = 0; i < n; ++i)
      data[i] += 1.0f;
    return CUDA_SUCCESS;
  }
  if (function->name == "fake_conv2d")
    return fakeConv2d(convConfig(function->module->image), params);
  return CUDA_ERROR_NOT_FOUND;
}

/// The host kernels' parameters, as a compiler would lay them out.
std::vector<fakecuda::Param> hostKernelParams(const std::string &name,
                                              const std::string &image) {
  if (name == "fake_add_one")
    return {{0, 8}, {8, 4}};
  if (name == "fake_conv2d") {
    std::map<std::string, std::string> config = convConfig(image);
    size_t pointers = 3 + (config["bias"] == "1") + (config["residual"] == "1");
    std::vector<fakecuda::Param> params;
    for (uint32_t i = 0; i < pointers; ++i)
      params.push_back({8 * i, 8, 8});
    // tensor_maps=N: N CUtensorMaps by value after the pointers, as a TMA
    // kernel takes them (.param .align 64 .b8 map[128]), where ptxas would
    // put them for this device.
    long maps = std::atol(config["tensor_maps"].c_str());
    for (long i = 0; i < maps; ++i)
      params.push_back({0, uint32_t(sizeof(CUtensorMap)), 64});
    int major, minor;
    computeCapability(major, minor);
    fakecuda::layoutParamsFor(major * 10 + minor, params);
    return params;
  }
  return {};
}

const char *const kKernelNames[] = {"fake_add_one", "fake_noop", "fake_conv2d"};

CUmod_st *newModule(fakecuda::ImageKind kind, std::string image) {
  auto *m = new CUmod_st();
  m->kind = kind;
  m->image = std::move(image);
  state().modules.insert(m);
  return m;
}

void addFunction(CUmod_st *m, const std::string &name,
                 std::vector<fakecuda::Param> params, bool computes) {
  auto function = std::make_unique<CUfunc_st>();
  function->name = name;
  function->module = m;
  function->params = std::move(params);
  function->computes = computes;
  m->functions[name] = std::move(function);
}

/// What a load did, for the JIT logs and the record.
struct Load {
  CUresult result = CUDA_ERROR_INVALID_IMAGE;
  std::string log;
  const char *kind = "unknown";
  fakecuda::Image image;
  bool parsed = false;
};

void loadFake(const char *text, CUmodule *module, Load &load) {
  load.kind = "fake";
  load.image.bytes = std::strlen(text) + 1;
  CUmod_st *m = newModule(fakecuda::ImageKind::Fake, text);
  for (const char *name : kKernelNames)
    addFunction(m, name, hostKernelParams(name, text), true);
  *module = m;
  load.result = CUDA_SUCCESS;
  load.log = "fake ptxas info: compiled 3 fake kernels";
}

/// Can the device run it? A cubin for sm_XY runs on X.Z with Z >= Y; PTX
/// JIT-compiles for any device at least as new as its .target.
CUresult checkArchitecture(const fakecuda::Image &image, std::string &log) {
  int major, minor;
  computeCapability(major, minor);
  int device = major * 10 + minor, sm = image.smVersion;
  std::string names = "sm_" + std::to_string(sm) + " and the device is sm_" +
                      std::to_string(device);
  if (image.kind == fakecuda::ImageKind::Cubin &&
      (sm / 10 != major || sm % 10 > minor)) {
    log = "fake: the cubin is for " + names;
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (image.kind == fakecuda::ImageKind::Ptx && sm > device) {
    log = "fake ptxas fatal: the PTX targets " + names;
    return CUDA_ERROR_INVALID_PTX;
  }
  return CUDA_SUCCESS;
}

void loadParsed(const void *data, CUmodule *module, Load &load) {
  fakecuda::Image &image = load.image;
  std::string error;
  load.kind = fakecuda::isElf(data) ? "cubin" : "ptx";
  load.parsed =
      fakecuda::isElf(data)
          ? fakecuda::parseCubin(static_cast<const unsigned char *>(data),
                                 image, error)
          : fakecuda::parsePtx(static_cast<const char *>(data), image, error);
  if (!load.parsed) {
    load.result =
        load.kind[0] == 'c' ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_INVALID_PTX;
    load.log = "fake ptxas fatal: " + error;
    return;
  }
  load.result = checkArchitecture(image, load.log);
  if (load.result != CUDA_SUCCESS)
    return;
  // The JIT compiles PTX for this device, which decides where ptxas puts
  // parameters aligned beyond 16 bytes (a __grid_constant__ CUtensorMap).
  if (image.kind == fakecuda::ImageKind::Ptx) {
    int major, minor;
    computeCapability(major, minor);
    for (fakecuda::Kernel &kernel : image.kernels)
      fakecuda::layoutParamsFor(major * 10 + minor, kernel.params);
  }
  const char *bytes = static_cast<const char *>(data);
  CUmod_st *m = newModule(image.kind, std::string(bytes, image.bytes));
  for (const fakecuda::Kernel &kernel : image.kernels)
    addFunction(m, kernel.name, kernel.params, false);
  *module = m;
  load.log = "fake: loaded " + std::to_string(image.kernels.size()) +
             " kernels from " + load.kind + " (they compute nothing)";
}

std::string jsonStrings(const std::vector<fakecuda::Kernel> &kernels) {
  std::string list;
  for (const fakecuda::Kernel &kernel : kernels)
    list += (list.empty() ? "" : ",") + fakecuda::quote(kernel.name);
  return "[" + list + "]";
}

void recordLoad(const char *call, const Load &load) {
  fakecuda::JsonLine line("module_load");
  line.string("call", call)
      .string("kind", load.kind)
      .number("bytes", load.image.bytes)
      .number("sm", uint64_t(load.image.smVersion));
  if (load.parsed)
    line.raw("kernels", jsonStrings(load.image.kernels));
  fakecuda::record(line.string("result", errorName(load.result)));
}

Load loadModule(const char *call, CUmodule *module, const void *image) {
  Load load;
  const char *text = static_cast<const char *>(image);
  if (text && std::strncmp(text, "FAKECUBIN", 9) == 0)
    loadFake(text, module, load);
  else if (fakecuda::isElf(image) || fakecuda::looksLikePtx(text))
    loadParsed(image, module, load);
  else
    load.log = "fake ptxas fatal: line 1: image does not start with FAKECUBIN";
  recordLoad(call, load);
  return load;
}

//===----------------------------------------------------------------------===//
// Tensor maps
//===----------------------------------------------------------------------===//

/// What the fake writes into a CUtensorMap: the arguments, readable back
/// (the launch record decodes a 128-byte parameter holding one). No padding:
/// the layout is the same wherever this file is compiled.
struct FakeTensorMap {
  char magic[8];
  uint64_t globalAddress;
  uint64_t dims[5];
  uint64_t strides[4];
  uint32_t serial; ///< The n-th map encoded in this process, from 0.
  uint16_t box[5]; ///< Im2col: channelsPerPixel, pixelsPerColumn.
  int16_t lower[3], upper[3];
  uint8_t mode; ///< 0 tiled, 1 im2col.
  uint8_t dtype, rank, swizzle, interleave, l2Promotion, oobFill;
  uint8_t elementStrides[5];
  uint8_t reserved[2];
};
static_assert(sizeof(FakeTensorMap) == sizeof(CUtensorMap),
              "a fake tensor map fills a CUtensorMap exactly");
constexpr char kTensorMapMagic[8] = {'F', 'A', 'K', 'E', 'T', 'M', 'A', 'P'};

/// cuTensorMapEncodeTiled's and cuTensorMapEncodeIm2col's arguments.
struct TensorMapArgs {
  bool im2col = false;
  CUtensorMap *map = nullptr;
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  cuuint32_t rank = 0;
  void *address = nullptr;
  const cuuint64_t *dims = nullptr, *strides = nullptr;
  const cuuint32_t *box = nullptr; ///< Tiled.
  const int *lower = nullptr, *upper = nullptr;
  cuuint32_t channelsPerPixel = 0, pixelsPerColumn = 0; ///< Im2col.
  const cuuint32_t *elementStrides = nullptr;
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMapFloatOOBfill oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
};

/// Bytes per element of a CUtensorMapDataType; 0 for the packed sub-byte
/// types, which the fake does not model.
size_t tensorMapElementSize(CUtensorMapDataType dtype) {
  switch (dtype) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

const char *tensorMapTypeName(unsigned dtype) {
  static const char *const names[] = {
      "uint8",       "uint16",   "uint32",      "int32",   "uint64",
      "int64",       "float16",  "float32",     "float64", "bfloat16",
      "float32_ftz", "tfloat32", "tfloat32_ftz"};
  return dtype < sizeof(names) / sizeof(names[0]) ? names[dtype] : "?";
}

const char *swizzleName(unsigned swizzle) {
  static const char *const names[] = {"none",          "32B",
                                      "64B",           "128B",
                                      "128B_atom_32B", "128B_atom_32B_flip_8B",
                                      "128B_atom_64B"};
  return swizzle < sizeof(names) / sizeof(names[0]) ? names[swizzle] : "?";
}

bool isFloatType(CUtensorMapDataType dtype) {
  return dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 ||
         dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ||
         dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT64 ||
         dtype == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 ||
         dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ ||
         dtype == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 ||
         dtype == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

/// The requirements cuda.h documents for both calls (the interleaved and
/// packed-type variants included where they are simple).
CUresult checkTensorMap(const TensorMapArgs &a) {
  if (!a.map || reinterpret_cast<uintptr_t>(a.map) % 64 != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (unsigned(a.dtype) > unsigned(CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B))
    return CUDA_ERROR_INVALID_VALUE;
  size_t elementSize = tensorMapElementSize(a.dtype);
  if (elementSize == 0)
    return CUDA_ERROR_NOT_SUPPORTED; // the packed 4- and 6-bit types
  if (unsigned(a.interleave) > unsigned(CU_TENSOR_MAP_INTERLEAVE_32B) ||
      unsigned(a.swizzle) > unsigned(CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B) ||
      unsigned(a.l2Promotion) > unsigned(CU_TENSOR_MAP_L2_PROMOTION_L2_256B) ||
      unsigned(a.oobFill) >
          unsigned(CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA))
    return CUDA_ERROR_INVALID_VALUE;
  bool interleaved = a.interleave != CU_TENSOR_MAP_INTERLEAVE_NONE;
  if (a.im2col ? a.rank < 3 || a.rank > 5
               : a.rank < 1 || a.rank > 5 || (interleaved && a.rank < 3))
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t address = reinterpret_cast<uintptr_t>(a.address);
  unsigned addressAlignment =
      a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (!address || address % addressAlignment != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!a.dims || !a.elementStrides || (a.rank > 1 && !a.strides))
    return CUDA_ERROR_INVALID_VALUE;
  for (cuuint32_t i = 0; i < a.rank; ++i)
    if (a.dims[i] == 0 || a.dims[i] > (uint64_t(1) << 32))
      return CUDA_ERROR_INVALID_VALUE;
  unsigned strideMultiple =
      a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  for (cuuint32_t i = 0; i + 1 < a.rank; ++i)
    if (a.strides[i] % strideMultiple != 0 ||
        a.strides[i] >= (uint64_t(1) << 40))
      return CUDA_ERROR_INVALID_VALUE;
  for (cuuint32_t i = 0; i < a.rank; ++i)
    if (a.elementStrides[i] == 0 || a.elementStrides[i] > 8)
      return CUDA_ERROR_INVALID_VALUE;
  uint64_t innerBytes = 0;
  if (a.im2col) {
    if (!a.lower || !a.upper)
      return CUDA_ERROR_INVALID_VALUE;
    int range = a.rank == 3 ? 32768 : a.rank == 4 ? 128 : 16;
    for (cuuint32_t i = 0; i + 2 < a.rank; ++i) {
      if (a.lower[i] < -range || a.lower[i] >= range || a.upper[i] < -range ||
          a.upper[i] >= range)
        return CUDA_ERROR_INVALID_VALUE;
      // The bounding box must have a non-zero area.
      if (int64_t(a.dims[i + 1]) + a.upper[i] - a.lower[i] < 1)
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (a.channelsPerPixel == 0 || a.channelsPerPixel > 256 ||
        a.pixelsPerColumn == 0 || a.pixelsPerColumn > 1024)
      return CUDA_ERROR_INVALID_VALUE;
    innerBytes = uint64_t(a.channelsPerPixel) * elementSize;
  } else {
    if (!a.box)
      return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < a.rank; ++i)
      if (a.box[i] == 0 || a.box[i] > 256)
        return CUDA_ERROR_INVALID_VALUE;
    innerBytes = uint64_t(a.box[0]) * elementSize;
    if (!interleaved && innerBytes % 16 != 0)
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (a.interleave == CU_TENSOR_MAP_INTERLEAVE_32B &&
      a.swizzle != CU_TENSOR_MAP_SWIZZLE_32B)
    return CUDA_ERROR_INVALID_VALUE;
  if (!interleaved && a.swizzle != CU_TENSOR_MAP_SWIZZLE_NONE) {
    uint64_t span = a.swizzle == CU_TENSOR_MAP_SWIZZLE_32B   ? 32
                    : a.swizzle == CU_TENSOR_MAP_SWIZZLE_64B ? 64
                                                             : 128;
    if (innerBytes > span)
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (a.oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA &&
      !isFloatType(a.dtype))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

FakeTensorMap encodeFakeTensorMap(const TensorMapArgs &a, uint32_t serial) {
  FakeTensorMap m{};
  std::memcpy(m.magic, kTensorMapMagic, sizeof(m.magic));
  m.globalAddress = reinterpret_cast<uintptr_t>(a.address);
  m.serial = serial;
  m.mode = a.im2col ? 1 : 0;
  m.dtype = uint8_t(a.dtype);
  m.rank = uint8_t(a.rank);
  m.swizzle = uint8_t(a.swizzle);
  m.interleave = uint8_t(a.interleave);
  m.l2Promotion = uint8_t(a.l2Promotion);
  m.oobFill = uint8_t(a.oobFill);
  for (cuuint32_t i = 0; i < a.rank; ++i) {
    m.dims[i] = a.dims[i];
    m.elementStrides[i] = uint8_t(a.elementStrides[i]);
    if (i + 1 < a.rank)
      m.strides[i] = a.strides[i];
    if (!a.im2col)
      m.box[i] = uint16_t(a.box[i]);
    else if (i + 2 < a.rank) {
      m.lower[i] = int16_t(a.lower[i]);
      m.upper[i] = int16_t(a.upper[i]);
    }
  }
  if (a.im2col) {
    m.box[0] = uint16_t(a.channelsPerPixel);
    m.box[1] = uint16_t(a.pixelsPerColumn);
  }
  return m;
}

template <typename T> std::string jsonNumbers(const T *values, size_t count) {
  std::string list;
  for (size_t i = 0; i < count; ++i)
    list += (i ? "," : "") + std::to_string(values[i]);
  return "[" + list + "]";
}

/// The map's members for the record (tensor_map events, launch parameters);
/// the address is resolved to its allocation now.
void tensorMapMembers(fakecuda::JsonLine &line, const FakeTensorMap &m) {
  bool im2col = m.mode == 1;
  line.number("serial", m.serial)
      .string("mode", im2col ? "im2col" : "tiled")
      .string("dtype", tensorMapTypeName(m.dtype))
      .number("rank", m.rank)
      .raw("dims", jsonNumbers(m.dims, m.rank))
      .raw("strides", jsonNumbers(m.strides, m.rank ? m.rank - 1u : 0u));
  if (im2col)
    line.number("channels_per_pixel", m.box[0])
        .number("pixels_per_column", m.box[1])
        .raw("lower_corner", jsonNumbers(m.lower, m.rank - 2u))
        .raw("upper_corner", jsonNumbers(m.upper, m.rank - 2u));
  else
    line.raw("box", jsonNumbers(m.box, m.rank));
  static const char *const interleaves[] = {"none", "16B", "32B"};
  static const char *const promotions[] = {"none", "64B", "128B", "256B"};
  line.raw("element_strides", jsonNumbers(m.elementStrides, m.rank))
      .string("swizzle", swizzleName(m.swizzle))
      .string("interleave", interleaves[m.interleave % 3])
      .string("l2_promotion", promotions[m.l2Promotion % 4])
      .string("oob_fill", m.oobFill ? "nan_request_zero_fma" : "none")
      .number("address", m.globalAddress);
  std::string allocation = allocationJson(m.globalAddress);
  if (!allocation.empty())
    line.raw("allocation", allocation);
}

/// Checks, encodes and records one map.
CUresult encodeTensorMap(const char *call, const TensorMapArgs &args) {
  if (CUresult invalid = checkTensorMap(args))
    return invalid;
  State &s = state();
  FakeTensorMap map = encodeFakeTensorMap(args, s.tensorMapsEncoded++);
  std::memcpy(args.map, &map, sizeof(map));
  fakecuda::JsonLine line("tensor_map");
  line.string("call", call);
  tensorMapMembers(line, map);
  fakecuda::record(line);
  return CUDA_SUCCESS;
}

/// FAKE_CUDA_NO_TMA=1: cuGetProcAddress knows neither encode call, as a
/// driver older than CUDA 12.0 (the symbols stay exported for dlsym).
bool hidesTensorMapEntryPoints(const char *symbol) {
  const char *hide = std::getenv("FAKE_CUDA_NO_TMA");
  return hide && *hide && std::strcmp(hide, "0") != 0 &&
         (std::strcmp(symbol, "cuTensorMapEncodeTiled") == 0 ||
          std::strcmp(symbol, "cuTensorMapEncodeIm2col") == 0);
}

//===----------------------------------------------------------------------===//
// The record of launches and copies
//===----------------------------------------------------------------------===//

std::string hexBytes(const unsigned char *bytes, size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < size; ++i) {
    hex += digits[bytes[i] >> 4];
    hex += digits[bytes[i] & 15];
  }
  return hex;
}

std::string paramJson(const fakecuda::Param &param, const void *value) {
  const auto *bytes = static_cast<const unsigned char *>(value);
  std::string json = "{\"offset\":" + std::to_string(param.offset) +
                     ",\"size\":" + std::to_string(param.size) + ",\"hex\":\"" +
                     hexBytes(bytes, param.size) + "\"";
  if (param.size == 1 || param.size == 2 || param.size == 4 ||
      param.size == 8) {
    uint64_t integer = 0;
    std::memcpy(&integer, bytes, param.size); // little-endian host
    json += ",\"value\":" + std::to_string(integer);
    std::string allocation = param.size == 8 ? allocationJson(integer) : "";
    if (!allocation.empty())
      json += ",\"allocation\":" + allocation;
  }
  // A CUtensorMap passed by value (__grid_constant__): what it describes.
  if (param.size == sizeof(FakeTensorMap) &&
      std::memcmp(bytes, kTensorMapMagic, sizeof(kTensorMapMagic)) == 0) {
    FakeTensorMap map;
    std::memcpy(&map, bytes, sizeof(map));
    fakecuda::JsonLine members;
    tensorMapMembers(members, map);
    json += ",\"tensor_map\":" + members.text();
  }
  return json + "}";
}

std::string dim3Json(unsigned x, unsigned y, unsigned z) {
  return "[" + std::to_string(x) + "," + std::to_string(y) + "," +
         std::to_string(z) + "]";
}

struct LaunchShape {
  unsigned grid[3], block[3], sharedMemBytes;
};

void recordLaunch(const CUfunc_st *function, const LaunchShape &shape,
                  void **params) {
  std::string list;
  for (size_t i = 0; i < function->params.size(); ++i)
    list += (i ? "," : "") + paramJson(function->params[i], params[i]);
  fakecuda::record(
      fakecuda::JsonLine("launch")
          .string("kernel", function->name)
          .string("kind", fakecuda::imageKindName(function->module->kind))
          .raw("grid", dim3Json(shape.grid[0], shape.grid[1], shape.grid[2]))
          .raw("block",
               dim3Json(shape.block[0], shape.block[1], shape.block[2]))
          .number("shared_memory_bytes", shape.sharedMemBytes)
          .number("param_count", function->params.size())
          .raw("params", "[" + list + "]"));
}

void recordCopy(const char *call, const char *direction, size_t bytes,
                bool async, uintptr_t devicePointer) {
  fakecuda::JsonLine line("memcpy");
  line.string("call", call)
      .string("direction", direction)
      .number("bytes", bytes)
      .boolean("async", async);
  std::string allocation = allocationJson(devicePointer);
  if (!allocation.empty())
    line.raw("allocation", allocation);
  fakecuda::record(line);
}

} // namespace

//===----------------------------------------------------------------------===//
// Driver API
//===----------------------------------------------------------------------===//

extern "C" {

CUresult CUDAAPI cuInit(unsigned int flags) {
  FAKE_ENTER("cuInit");
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  state().initialized = true;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  FAKE_ENTER("cuDriverGetVersion");
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = envInt("FAKE_CUDA_DRIVER_VERSION", 13000);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **name) {
  for (const NamedError &e : kErrors)
    if (e.code == error) {
      *name = e.name;
      return CUDA_SUCCESS;
    }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **text) {
  for (const NamedError &e : kErrors)
    if (e.code == error) {
      *text = e.text;
      return CUDA_SUCCESS;
    }
  *text = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  FAKE_REQUIRE_INIT();
  *count = deviceCount();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  FAKE_REQUIRE_INIT();
  if (ordinal < 0 || ordinal >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int length, CUdevice device) {
  FAKE_ENTER("cuDeviceGetName");
  FAKE_REQUIRE_INIT();
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, size_t(length), "Fake GPU");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                                      CUdevice device) {
  FAKE_ENTER("cuDeviceGetAttribute");
  FAKE_REQUIRE_INIT();
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  int major, minor;
  computeCapability(major, minor);
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = major;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = minor;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *value = 48 * 1024;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = kOptinSharedMemory;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice device) {
  FAKE_ENTER("cuDeviceTotalMem");
  FAKE_REQUIRE_INIT();
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = size_t(80) << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *busId, int length, CUdevice device) {
  FAKE_ENTER("cuDeviceGetPCIBusId");
  FAKE_REQUIRE_INIT();
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(busId, size_t(length), "0000:%02X:00.0", 0x10 + device);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  FAKE_REQUIRE_INIT();
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  State &s = state();
  s.contexts[device].device = device;
  ++s.retains[device];
  *context = &s.contexts[device];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  FAKE_REQUIRE_INIT();
  if (device < 0 || device >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  if (state().retains[device] <= 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  --state().retains[device];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  FAKE_ENTER("cuCtxSetCurrent");
  FAKE_REQUIRE_INIT();
  if (contextStack.empty())
    contextStack.push_back(context);
  else
    contextStack.back() = context;
  if (!context)
    contextStack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *context) {
  FAKE_ENTER("cuCtxGetCurrent");
  FAKE_REQUIRE_INIT();
  *context = contextStack.empty() ? nullptr : contextStack.back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext context) {
  FAKE_ENTER("cuCtxPushCurrent");
  FAKE_REQUIRE_INIT();
  if (!context)
    return CUDA_ERROR_INVALID_CONTEXT;
  contextStack.push_back(context);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *context) {
  FAKE_ENTER("cuCtxPopCurrent");
  FAKE_REQUIRE_INIT();
  if (contextStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (context)
    *context = contextStack.back();
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  FAKE_REQUIRE_CONTEXT();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  FAKE_ENTER("cuModuleLoadData");
  FAKE_REQUIRE_CONTEXT();
  return loadModule("cuModuleLoadData", module, image).result;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                    unsigned int numOptions,
                                    CUjit_option *options, void **values) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  char *errorLog = nullptr, *infoLog = nullptr;
  size_t errorSize = 0, infoSize = 0;
  for (unsigned i = 0; i < numOptions; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      errorLog = static_cast<char *>(values[i]);
    else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      errorSize = reinterpret_cast<uintptr_t>(values[i]);
    else if (options[i] == CU_JIT_INFO_LOG_BUFFER)
      infoLog = static_cast<char *>(values[i]);
    else if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
      infoSize = reinterpret_cast<uintptr_t>(values[i]);
  }
  auto write = [&](char *buffer, size_t size, const char *text,
                   CUjit_option sizeOption) {
    if (!buffer || !size)
      return;
    std::snprintf(buffer, size, "%s", text);
    for (unsigned i = 0; i < numOptions; ++i)
      if (options[i] == sizeOption)
        values[i] =
            reinterpret_cast<void *>(uintptr_t(std::strlen(buffer) + 1));
  };
  Load load;
  load.result = enter("cuModuleLoadDataEx");
  if (load.result == CUDA_SUCCESS && !state().initialized)
    load.result = CUDA_ERROR_NOT_INITIALIZED;
  if (load.result == CUDA_SUCCESS)
    load.result = requireContext();
  if (load.result == CUDA_SUCCESS)
    load = loadModule("cuModuleLoadDataEx", module, image);
  else
    load.log = std::string("fake ptxas fatal: ") + errorName(load.result);
  if (load.result == CUDA_SUCCESS)
    write(infoLog, infoSize, load.log.c_str(),
          CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
  else
    write(errorLog, errorSize, load.log.c_str(),
          CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  return load.result;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  FAKE_ENTER("cuModuleUnload");
  FAKE_REQUIRE_INIT();
  if (!state().modules.erase(module))
    return CUDA_ERROR_INVALID_HANDLE;
  delete module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module,
                                     const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  FAKE_REQUIRE_INIT();
  if (!state().modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  auto found = module->functions.find(name ? name : "");
  if (found == module->functions.end())
    return CUDA_ERROR_NOT_FOUND;
  *function = found->second.get();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction function,
                                    CUfunction_attribute attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  FAKE_REQUIRE_CONTEXT();
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return CUDA_ERROR_INVALID_VALUE;
  if (value < 0 || value > kOptinSharedMemory)
    return CUDA_ERROR_INVALID_VALUE;
  function->maxDynamicShared = value;
  state().maxDynamicShared[function->name] = value;
  fakecuda::record(fakecuda::JsonLine("func_set_attribute")
                       .string("kernel", function->name)
                       .number("attribute", uint64_t(attribute))
                       .number("value", uint64_t(value)));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction function, size_t index,
                                    size_t *offset, size_t *size) {
  FAKE_ENTER("cuFuncGetParamInfo");
  FAKE_REQUIRE_INIT();
  if (!function)
    return CUDA_ERROR_INVALID_HANDLE;
  if (index >= function->params.size())
    return CUDA_ERROR_INVALID_VALUE;
  if (offset)
    *offset = function->params[index].offset;
  if (size)
    *size = function->params[index].size;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned gridX,
                                unsigned gridY, unsigned gridZ, unsigned blockX,
                                unsigned blockY, unsigned blockZ,
                                unsigned sharedMemBytes, CUstream stream,
                                void **params, void **extra) {
  FAKE_ENTER("cuLaunchKernel");
  FAKE_REQUIRE_CONTEXT();
  State &s = state();
  if (!function || (stream && !s.streams.count(stream)))
    return CUDA_ERROR_INVALID_HANDLE;
  if (extra)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!gridX || !gridY || !gridZ || !blockX || !blockY || !blockZ ||
      uint64_t(blockX) * blockY * blockZ > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (int(sharedMemBytes) > function->maxDynamicShared)
    return CUDA_ERROR_INVALID_VALUE; // the real driver wants the attribute
  if (!params && !function->params.empty())
    return CUDA_ERROR_INVALID_VALUE;
  recordLaunch(
      function,
      {{gridX, gridY, gridZ}, {blockX, blockY, blockZ}, sharedMemBytes},
      params);
  std::ostringstream launch;
  launch << function->name << " grid=" << gridX << "," << gridY << "," << gridZ
         << " block=" << blockX << "," << blockY << "," << blockZ
         << " smem=" << sharedMemBytes;
  s.lastLaunch = launch.str();
  s.clockMs += kKernelMs;
  return runKernel(function, params);
}

CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
    cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
    const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  FAKE_ENTER("cuTensorMapEncodeTiled");
  FAKE_REQUIRE_INIT();
  TensorMapArgs args;
  args.map = tensorMap;
  args.dtype = tensorDataType;
  args.rank = tensorRank;
  args.address = globalAddress;
  args.dims = globalDim;
  args.strides = globalStrides;
  args.box = boxDim;
  args.elementStrides = elementStrides;
  args.interleave = interleave;
  args.swizzle = swizzle;
  args.l2Promotion = l2Promotion;
  args.oobFill = oobFill;
  return encodeTensorMap("cuTensorMapEncodeTiled", args);
}

CUresult CUDAAPI cuTensorMapEncodeIm2col(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
    cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
    const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
    const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
    cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  FAKE_ENTER("cuTensorMapEncodeIm2col");
  FAKE_REQUIRE_INIT();
  TensorMapArgs args;
  args.im2col = true;
  args.map = tensorMap;
  args.dtype = tensorDataType;
  args.rank = tensorRank;
  args.address = globalAddress;
  args.dims = globalDim;
  args.strides = globalStrides;
  args.lower = pixelBoxLowerCorner;
  args.upper = pixelBoxUpperCorner;
  args.channelsPerPixel = channelsPerPixel;
  args.pixelsPerColumn = pixelsPerColumn;
  args.elementStrides = elementStrides;
  args.interleave = interleave;
  args.swizzle = swizzle;
  args.l2Promotion = l2Promotion;
  args.oobFill = oobFill;
  return encodeTensorMap("cuTensorMapEncodeIm2col", args);
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  FAKE_ENTER("cuMemAlloc");
  FAKE_REQUIRE_CONTEXT();
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *memory = allocate(bytes);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *pointer, size_t bytes,
                                   unsigned int flags) {
  FAKE_ENTER("cuMemAllocManaged");
  FAKE_REQUIRE_CONTEXT();
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  void *memory = allocate(bytes);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr pointer) {
  FAKE_ENTER("cuMemFree");
  FAKE_REQUIRE_CONTEXT();
  if (!state().allocations.erase(pointer))
    return CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr destination, const void *source,
                              size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD");
  FAKE_REQUIRE_CONTEXT();
  if (!inAllocation(destination, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
  recordCopy("cuMemcpyHtoD", "htod", bytes, false, destination);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr destination, const void *source,
                                   size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyHtoDAsync");
  FAKE_REQUIRE_CONTEXT();
  if (stream && !state().streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!inAllocation(destination, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
  recordCopy("cuMemcpyHtoDAsync", "htod", bytes, true, destination);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *destination, CUdeviceptr source,
                              size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH");
  FAKE_REQUIRE_CONTEXT();
  if (!inAllocation(source, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(destination, reinterpret_cast<void *>(source), bytes);
  recordCopy("cuMemcpyDtoH", "dtoh", bytes, false, source);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *destination, CUdeviceptr source,
                                   size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyDtoHAsync");
  FAKE_REQUIRE_CONTEXT();
  if (stream && !state().streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!inAllocation(source, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(destination, reinterpret_cast<void *>(source), bytes);
  recordCopy("cuMemcpyDtoHAsync", "dtoh", bytes, true, source);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr destination, CUdeviceptr source,
                               size_t bytes, CUstream stream) {
  FAKE_ENTER("cuMemcpyAsync");
  FAKE_REQUIRE_CONTEXT();
  if (stream && !state().streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  std::memmove(reinterpret_cast<void *>(destination),
               reinterpret_cast<void *>(source), bytes);
  // Unified addressing: the direction is where the pointers lie.
  bool toDevice = inAllocation(destination, bytes);
  bool fromDevice = inAllocation(source, bytes);
  const char *direction = toDevice ? (fromDevice ? "dtod" : "htod")
                                   : (fromDevice ? "dtoh" : "htoh");
  recordCopy("cuMemcpyAsync", direction, bytes, true,
             toDevice ? destination : source);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr destination, unsigned char value,
                            size_t count) {
  FAKE_ENTER("cuMemsetD8");
  FAKE_REQUIRE_CONTEXT();
  if (!inAllocation(destination, count))
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void *>(destination), value, count);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr destination, unsigned short value,
                                  size_t count, CUstream) {
  FAKE_ENTER("cuMemsetD16Async");
  FAKE_REQUIRE_CONTEXT();
  if (!inAllocation(destination, count * 2))
    return CUDA_ERROR_INVALID_VALUE;
  auto *data = reinterpret_cast<unsigned short *>(destination);
  for (size_t i = 0; i < count; ++i)
    data[i] = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr destination, unsigned int value,
                                  size_t count, CUstream) {
  FAKE_ENTER("cuMemsetD32Async");
  FAKE_REQUIRE_CONTEXT();
  if (!inAllocation(destination, count * 4))
    return CUDA_ERROR_INVALID_VALUE;
  auto *data = reinterpret_cast<unsigned int *>(destination);
  for (size_t i = 0; i < count; ++i)
    data[i] = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostRegister(void *pointer, size_t bytes, unsigned int) {
  FAKE_ENTER("cuMemHostRegister");
  FAKE_REQUIRE_CONTEXT();
  if (!pointer || !bytes)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  for (const auto &[begin, size] : state().hostRegistrations)
    if (start < begin + size && begin < start + bytes)
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  state().hostRegistrations[start] = bytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostUnregister(void *pointer) {
  FAKE_ENTER("cuMemHostUnregister");
  FAKE_REQUIRE_CONTEXT();
  if (!state().hostRegistrations.erase(reinterpret_cast<uintptr_t>(pointer)))
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  FAKE_ENTER("cuStreamCreate");
  FAKE_REQUIRE_CONTEXT();
  auto *s = new CUstream_st();
  s->flags = flags;
  state().streams.insert(s);
  *stream = s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  FAKE_ENTER("cuStreamDestroy");
  FAKE_REQUIRE_INIT();
  if (!state().streams.erase(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  delete stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  FAKE_ENTER("cuStreamSynchronize");
  FAKE_REQUIRE_CONTEXT();
  if (stream && !state().streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event,
                                   unsigned int) {
  FAKE_ENTER("cuStreamWaitEvent");
  FAKE_REQUIRE_CONTEXT();
  if ((stream && !state().streams.count(stream)) ||
      !state().events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
  FAKE_ENTER("cuEventCreate");
  FAKE_REQUIRE_CONTEXT();
  auto *e = new CUevent_st();
  e->flags = flags;
  state().events.insert(e);
  *event = e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  FAKE_ENTER("cuEventDestroy");
  FAKE_REQUIRE_INIT();
  if (!state().events.erase(event))
    return CUDA_ERROR_INVALID_HANDLE;
  delete event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER("cuEventRecord");
  FAKE_REQUIRE_CONTEXT();
  if (!state().events.count(event) ||
      (stream && !state().streams.count(stream)))
    return CUDA_ERROR_INVALID_HANDLE;
  event->recorded = true;
  event->timeMs = state().clockMs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  FAKE_ENTER("cuEventSynchronize");
  FAKE_REQUIRE_INIT();
  if (!state().events.count(event))
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  FAKE_ENTER("cuEventElapsedTime");
  FAKE_REQUIRE_INIT();
  State &s = state();
  if (!s.events.count(start) || !s.events.count(end) ||
      (start->flags & CU_EVENT_DISABLE_TIMING) ||
      (end->flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded || !end->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = static_cast<float>(end->timeMs - start->timeMs);
  return CUDA_SUCCESS;
}

} // extern "C"

namespace {

struct Symbol {
  const char *name;
  void *function;
};

/// What cuGetProcAddress hands out, by plain name.
const Symbol kSymbols[] = {
#define FAKE_SYMBOL(name)                                                      \
  { #name, reinterpret_cast < void *>(&name) }
    FAKE_SYMBOL(cuInit),
    FAKE_SYMBOL(cuDriverGetVersion),
    FAKE_SYMBOL(cuGetErrorName),
    FAKE_SYMBOL(cuGetErrorString),
    FAKE_SYMBOL(cuDeviceGetCount),
    FAKE_SYMBOL(cuDeviceGet),
    FAKE_SYMBOL(cuDeviceGetName),
    FAKE_SYMBOL(cuDeviceGetAttribute),
    FAKE_SYMBOL(cuDeviceTotalMem),
    FAKE_SYMBOL(cuDeviceGetPCIBusId),
    FAKE_SYMBOL(cuDevicePrimaryCtxRetain),
    FAKE_SYMBOL(cuDevicePrimaryCtxRelease),
    FAKE_SYMBOL(cuCtxSetCurrent),
    FAKE_SYMBOL(cuCtxGetCurrent),
    FAKE_SYMBOL(cuCtxPushCurrent),
    FAKE_SYMBOL(cuCtxPopCurrent),
    FAKE_SYMBOL(cuCtxSynchronize),
    FAKE_SYMBOL(cuModuleLoadData),
    FAKE_SYMBOL(cuModuleLoadDataEx),
    FAKE_SYMBOL(cuModuleUnload),
    FAKE_SYMBOL(cuModuleGetFunction),
    FAKE_SYMBOL(cuFuncSetAttribute),
    FAKE_SYMBOL(cuFuncGetParamInfo),
    FAKE_SYMBOL(cuLaunchKernel),
    FAKE_SYMBOL(cuMemAlloc),
    FAKE_SYMBOL(cuMemAllocManaged),
    FAKE_SYMBOL(cuMemFree),
    FAKE_SYMBOL(cuMemcpyHtoD),
    FAKE_SYMBOL(cuMemcpyDtoH),
    FAKE_SYMBOL(cuMemcpyHtoDAsync),
    FAKE_SYMBOL(cuMemcpyDtoHAsync),
    FAKE_SYMBOL(cuMemcpyAsync),
    FAKE_SYMBOL(cuMemsetD8),
    FAKE_SYMBOL(cuMemsetD16Async),
    FAKE_SYMBOL(cuMemsetD32Async),
    FAKE_SYMBOL(cuMemHostRegister),
    FAKE_SYMBOL(cuMemHostUnregister),
    FAKE_SYMBOL(cuStreamCreate),
    FAKE_SYMBOL(cuStreamDestroy),
    FAKE_SYMBOL(cuStreamSynchronize),
    FAKE_SYMBOL(cuStreamWaitEvent),
    FAKE_SYMBOL(cuEventCreate),
    FAKE_SYMBOL(cuEventDestroy),
    FAKE_SYMBOL(cuEventRecord),
    FAKE_SYMBOL(cuEventSynchronize),
    FAKE_SYMBOL(cuEventElapsedTime),
    FAKE_SYMBOL(cuTensorMapEncodeTiled),
    FAKE_SYMBOL(cuTensorMapEncodeIm2col),
#undef FAKE_SYMBOL
};

} // namespace

extern "C" CUresult CUDAAPI
cuGetProcAddress_v2(const char *symbol, void **function, int cudaVersion,
                    cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  FAKE_ENTER("cuGetProcAddress");
  (void)flags;
  *function = nullptr;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (cudaVersion < 3020)
    return CUDA_ERROR_INVALID_VALUE; // would mean the pre-_v2 ABIs
  if (hidesTensorMapEntryPoints(symbol))
    return CUDA_ERROR_NOT_FOUND;
  for (const Symbol &entry : kSymbols)
    if (std::strcmp(entry.name, symbol) == 0) {
      *function = entry.function;
      if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

//===----------------------------------------------------------------------===//
// Test controls
//===----------------------------------------------------------------------===//

/// Live objects of a kind: allocations, modules, contexts (primary context
/// retains), streams, events, host_registrations.
FAKE_EXPORT int fakecuda_live(const char *kind) {
  State &s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  std::string k = kind;
  if (k == "allocations")
    return int(s.allocations.size());
  if (k == "modules")
    return int(s.modules.size());
  if (k == "streams")
    return int(s.streams.size());
  if (k == "events")
    return int(s.events.size());
  if (k == "host_registrations")
    return int(s.hostRegistrations.size());
  if (k == "contexts") {
    int total = 0;
    for (int retains : s.retains)
      total += retains;
    return total;
  }
  return -1;
}

/// Replaces the injected failures ("" clears) and restarts call counting.
FAKE_EXPORT void fakecuda_set_failures(const char *spec) {
  State &s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.failuresLoaded = true;
  s.failures = parseFailures(spec ? spec : "");
  s.calls.clear();
}

FAKE_EXPORT int fakecuda_calls(const char *name) {
  State &s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  auto found = s.calls.find(name);
  return found == s.calls.end() ? 0 : found->second;
}

/// The last CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set on a kernel
/// of that name, or -1.
FAKE_EXPORT int fakecuda_max_dynamic_shared(const char *kernel) {
  State &s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  auto found = s.maxDynamicShared.find(kernel);
  return found == s.maxDynamicShared.end() ? -1 : found->second;
}

/// "name grid=x,y,z block=x,y,z smem=N" of the last launch.
FAKE_EXPORT const char *fakecuda_last_launch() {
  return state().lastLaunch.c_str();
}

/// Device of the calling thread's current context, or -1.
FAKE_EXPORT int fakecuda_current_device() {
  return contextStack.empty() || !contextStack.back()
             ? -1
             : contextStack.back()->device;
}
