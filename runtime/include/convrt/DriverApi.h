//===- DriverApi.h - The CUDA driver entry points convrt uses ---*- C++ -*-===//
//
// The table of driver functions, resolved at run time from a dlopen'ed
// libcuda.so.1: nothing here links against libcuda. <cuda.h> supplies types,
// enums and prototypes only.
//
// cuda.h maps many names to their current ABI version with macros
// (cuMemAlloc -> cuMemAlloc_v2, cuStreamDestroy -> cuStreamDestroy_v2, ...).
// The list below is written with the plain names; inside the X-macro, `#name`
// stays the plain name (what cuGetProcAddress wants) while `name` expands to
// the versioned one, so the member's type is the versioned prototype and the
// dlsym fallback asks for the versioned symbol. Code reads `api.cuMemAlloc`,
// which the same macro turns into the `cuMemAlloc_v2` member.
//
// Optional entry points (the second table) belong to newer features: a
// driver without them still loads and runs everything else, and calling one
// it lacks is an error that says what needs it and which driver has it.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_DRIVERAPI_H
#define CONVRT_DRIVERAPI_H

#include <cuda.h>

#define CONVRT_DRIVER_ENTRY_POINTS(X)                                          \
  /* Initialization, versions, errors. */                                      \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  /* Devices. */                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDeviceGetPCIBusId)                                                       \
  /* Contexts: only primary contexts, shared with cuDNN / the CUDA runtime. */ \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  /* Modules and launch. */                                                    \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  /* Memory. */                                                                \
  X(cuMemAlloc)                                                                \
  X(cuMemAllocManaged)                                                         \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyAsync)                                                             \
  X(cuMemsetD8)                                                                \
  X(cuMemsetD16Async)                                                          \
  X(cuMemsetD32Async)                                                          \
  X(cuMemHostRegister)                                                         \
  X(cuMemHostUnregister)                                                       \
  /* Streams and events. */                                                    \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)

/// X(name, what needs it): entry points newer than the oldest supported
/// driver. Each is newer than cuGetProcAddress_v2 (CUDA 12.0), so a driver
/// that has them answers cuGetProcAddress_v2 for them.
#define CONVRT_DRIVER_OPTIONAL_ENTRY_POINTS(X)                                 \
  /* Tensor maps for the TMA (cp.async.bulk.tensor): sm_90a kernels. */        \
  X(cuTensorMapEncodeTiled,                                                    \
    "TMA kernels (sm_90a) need a CUDA 12.0 or later driver")                   \
  X(cuTensorMapEncodeIm2col,                                                   \
    "TMA kernels (sm_90a) need a CUDA 12.0 or later driver")

namespace convrt {

/// Function pointers into the loaded driver. A null member means the driver
/// does not export that entry point; Driver::call reports it by name.
struct DriverApi {
#define CONVRT_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
#define CONVRT_DECLARE_OPTIONAL_ENTRY_POINT(name, needs)                       \
  CONVRT_DECLARE_ENTRY_POINT(name)
  CONVRT_DRIVER_ENTRY_POINTS(CONVRT_DECLARE_ENTRY_POINT)
  CONVRT_DRIVER_OPTIONAL_ENTRY_POINTS(CONVRT_DECLARE_OPTIONAL_ENTRY_POINT)
#undef CONVRT_DECLARE_OPTIONAL_ENTRY_POINT
#undef CONVRT_DECLARE_ENTRY_POINT
};

} // namespace convrt

#endif // CONVRT_DRIVERAPI_H
