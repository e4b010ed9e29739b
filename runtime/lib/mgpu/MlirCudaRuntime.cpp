//===- MlirCudaRuntime.cpp - MLIR's GPU runtime ABI over convrt -----------===//

#include "convrt/MlirCudaRuntime.h"

#include "convrt/Driver.h"
#include "convrt/Module.h"
#include "convrt/TensorMap.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

using namespace convrt;

namespace {

thread_local int32_t defaultDevice = 0;

/// Prints a failure the way callers of this ABI expect (they cannot receive
/// errors) and says whether the call succeeded.
bool report(const Error &error) {
  if (!error.ok())
    std::fprintf(stderr, "convrt_mlir_cuda: %s\n", error.message().c_str());
  return error.ok();
}

/// Process-wide state, created on first use and never destroyed: JIT'd code
/// may call in while static destructors run.
struct ProcessState {
  std::shared_ptr<Driver> driver; ///< Null if libcuda could not be used.
  std::mutex mutex;
  std::map<int32_t, CUcontext> contexts; ///< Retained primary contexts.
};

ProcessState &state() {
  static ProcessState *process = [] {
    auto *s = new ProcessState();
    Expected<std::shared_ptr<Driver>> driver = Driver::load();
    if (!driver.ok()) {
      report(driver.error());
      return s;
    }
    if (report((*driver)->init()))
      s->driver = *driver;
    return s;
  }();
  return *process;
}

/// The default device's primary context, retained once per device.
CUcontext primaryContext(const Driver &driver, int32_t ordinal) {
  ProcessState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto found = s.contexts.find(ordinal);
  if (found != s.contexts.end())
    return found->second;
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (!report(CONVRT_CU(driver, cuDeviceGet)(&device, ordinal)) ||
      !report(CONVRT_CU(driver, cuDevicePrimaryCtxRetain)(&context, device)))
    return nullptr;
  s.contexts[ordinal] = context;
  return context;
}

/// Makes the default device's primary context current for one call and
/// restores the caller's afterwards.
class ScopedContext {
public:
  ScopedContext() : driver_(state().driver) {
    if (!driver_)
      return;
    CUcontext context = primaryContext(*driver_, defaultDevice);
    pushed_ = context && report(CONVRT_CU(*driver_, cuCtxPushCurrent)(context));
  }
  ~ScopedContext() {
    CUcontext popped = nullptr;
    if (pushed_)
      report(CONVRT_CU(*driver_, cuCtxPopCurrent)(&popped));
  }
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;

  bool ok() const { return pushed_; }
  const std::shared_ptr<Driver> &driver() const { return driver_; }
  const Driver &drv() const { return *driver_; }

private:
  std::shared_ptr<Driver> driver_;
  bool pushed_ = false;
};

CUdeviceptr devicePointer(void *ptr) {
  return reinterpret_cast<CUdeviceptr>(ptr);
}

/// Start and byte size of a dense memref; false (reported) if not dense.
bool denseExtent(int64_t rank, StridedMemRef<char, 1> *descriptor,
                 int64_t elementSizeBytes, char *&start, uint64_t &bytes) {
  int64_t *sizes = descriptor->sizes;
  int64_t *strides = sizes + rank; // strides follow the rank sizes
  int64_t elements = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    if (strides[i] != elements && sizes[i] != 1) {
      std::fprintf(stderr,
                   "convrt_mlir_cuda: mgpuMemHostRegisterMemRef: only densely "
                   "packed memrefs can be registered (dimension %lld has "
                   "stride %lld, expected %lld)\n",
                   static_cast<long long>(i),
                   static_cast<long long>(strides[i]),
                   static_cast<long long>(elements));
      return false;
    }
    elements *= sizes[i];
  }
  start = descriptor->data + descriptor->offset * elementSizeBytes;
  bytes = static_cast<uint64_t>(elements * elementSizeBytes);
  return true;
}

} // namespace

extern "C" {

CUmodule mgpuModuleLoad(void *data, size_t /*gpuBlobSize*/) {
  ScopedContext scope;
  if (!scope.ok())
    return nullptr;
  Expected<Module> module = Module::loadImage(scope.driver(), data);
  return report(module.error()) ? module->release() : nullptr;
}

CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  ScopedContext scope;
  if (!scope.ok())
    return nullptr;
  Expected<Module> module = Module::loadPtx(
      scope.driver(), static_cast<const char *>(data), optLevel);
  return report(module.error()) ? module->release() : nullptr;
}

void mgpuModuleUnload(CUmodule module) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuModuleUnload)(module));
}

CUfunction mgpuModuleGetFunction(CUmodule module, const char *name) {
  ScopedContext scope;
  CUfunction function = nullptr;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuModuleGetFunction)(&function, module, name)
               .withContext(std::string("kernel ") + name));
  return function;
}

void mgpuLaunchKernel(CUfunction function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, CUstream stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  ScopedContext scope;
  if (!scope.ok())
    return;
  LaunchConfig config;
  config.grid = {unsigned(gridX), unsigned(gridY), unsigned(gridZ)};
  config.block = {unsigned(blockX), unsigned(blockY), unsigned(blockZ)};
  config.dynamicSharedMemoryBytes = smem > 0 ? unsigned(smem) : 0;
  config.stream = stream;
  report(Function(scope.driver(), function, "launched by mgpuLaunchKernel")
             .launch(config, params, extra));
}

CUstream mgpuStreamCreate() {
  ScopedContext scope;
  CUstream stream = nullptr;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuStreamCreate)(&stream,
                                                  CU_STREAM_NON_BLOCKING));
  return stream;
}

void mgpuStreamDestroy(CUstream stream) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuStreamDestroy)(stream));
}

void mgpuStreamSynchronize(CUstream stream) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuStreamSynchronize)(stream));
}

void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuStreamWaitEvent)(stream, event, 0u));
}

CUevent mgpuEventCreate() {
  ScopedContext scope;
  CUevent event = nullptr;
  if (scope.ok())
    report(
        CONVRT_CU(scope.drv(), cuEventCreate)(&event, CU_EVENT_DISABLE_TIMING));
  return event;
}

void mgpuEventDestroy(CUevent event) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuEventDestroy)(event));
}

void mgpuEventSynchronize(CUevent event) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuEventSynchronize)(event));
}

void mgpuEventRecord(CUevent event, CUstream stream) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuEventRecord)(event, stream));
}

void *mgpuMemAlloc(uint64_t sizeBytes, CUstream /*stream*/, bool isHostShared) {
  ScopedContext scope;
  CUdeviceptr pointer = 0;
  if (!scope.ok() || sizeBytes == 0)
    return nullptr;
  if (isHostShared)
    report(CONVRT_CU(scope.drv(), cuMemAllocManaged)(&pointer, sizeBytes,
                                                     CU_MEM_ATTACH_GLOBAL));
  else
    report(CONVRT_CU(scope.drv(), cuMemAlloc)(&pointer, sizeBytes));
  return reinterpret_cast<void *>(pointer);
}

void mgpuMemFree(void *ptr, CUstream /*stream*/) {
  ScopedContext scope;
  if (scope.ok() && ptr)
    report(CONVRT_CU(scope.drv(), cuMemFree)(devicePointer(ptr)));
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, CUstream stream) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuMemcpyAsync)(
        devicePointer(dst), devicePointer(src), sizeBytes, stream));
}

void mgpuMemset32(void *dst, unsigned int value, size_t count,
                  CUstream stream) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuMemsetD32Async)(devicePointer(dst), value,
                                                    count, stream));
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  CUstream stream) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuMemsetD16Async)(devicePointer(dst), value,
                                                    count, stream));
}

void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuMemHostRegister)(ptr, sizeBytes, 0u));
}

void mgpuMemHostRegisterMemRef(int64_t rank, StridedMemRef<char, 1> *descriptor,
                               int64_t elementSizeBytes) {
  char *start = nullptr;
  uint64_t bytes = 0;
  if (denseExtent(rank, descriptor, elementSizeBytes, start, bytes))
    mgpuMemHostRegister(start, bytes);
}

void mgpuMemHostUnregister(void *ptr) {
  ScopedContext scope;
  if (scope.ok())
    report(CONVRT_CU(scope.drv(), cuMemHostUnregister)(ptr));
}

void mgpuMemHostUnregisterMemRef(int64_t /*rank*/,
                                 StridedMemRef<char, 1> *descriptor,
                                 int64_t elementSizeBytes) {
  mgpuMemHostUnregister(descriptor->data +
                        descriptor->offset * elementSizeBytes);
}

void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

void *mgpuConvLowerEncodeTensorMap(void *globalAddress, const int64_t *record) {
  ScopedContext scope;
  if (!scope.ok())
    return nullptr;
  Expected<TensorMapSpec> spec = tensorMapFromRecord(record);
  if (!report(spec.error()))
    return nullptr;
  TensorMapBytes map;
  if (!report(encodeTensorMap(scope.drv(), *spec,
                              reinterpret_cast<uint64_t>(globalAddress),
                              map.bytes)))
    return nullptr;
  // Device allocations are at least 256-byte aligned: more than the 64 a
  // CUtensorMap needs.
  CUdeviceptr device = 0;
  if (!report(CONVRT_CU(scope.drv(), cuMemAlloc)(&device, sizeof(map.bytes))))
    return nullptr;
  if (!report(CONVRT_CU(scope.drv(), cuMemcpyHtoD)(device, map.bytes,
                                                   sizeof(map.bytes)))) {
    report(CONVRT_CU(scope.drv(), cuMemFree)(device));
    return nullptr;
  }
  return reinterpret_cast<void *>(device);
}

} // extern "C"
