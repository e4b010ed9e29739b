//===- MlirCudaRuntime.h - MLIR's GPU runtime ABI (mgpu*) -------*- C++ -*-===//
//
// The C functions that MLIR's gpu-to-llvm lowering calls, with the signatures
// of upstream's mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp, exported by
// libconvrt_mlir_cuda.so. JIT'd host code links against them instead of
// libmlir_cuda_runtime (which Debian does not ship), and they reach the
// driver through convrt's dlopen'ed libcuda, so the library has no link-time
// CUDA dependency.
//
// Like upstream they work in the default device's primary context (pushed
// for the duration of each call) and cannot return errors: a failure is
// printed to stderr with the call's name and the driver's error name, and
// the function returns a null handle.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_MLIRCUDARUNTIME_H
#define CONVRT_MLIRCUDARUNTIME_H

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#if defined(__GNUC__)
#define CONVRT_MGPU_EXPORT __attribute__((visibility("default")))
#else
#define CONVRT_MGPU_EXPORT
#endif

namespace convrt {

/// MLIR's ranked memref descriptor (StridedMemRefType in CRunnerUtils.h):
/// the layout LLVM lowering gives memref<...xT> of rank N.
template <typename T, int N> struct StridedMemRef {
  T *basePtr;
  T *data;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

} // namespace convrt

extern "C" {
CONVRT_MGPU_EXPORT CUmodule mgpuModuleLoad(void *data, size_t gpuBlobSize);
CONVRT_MGPU_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel);
CONVRT_MGPU_EXPORT void mgpuModuleUnload(CUmodule module);
CONVRT_MGPU_EXPORT CUfunction mgpuModuleGetFunction(CUmodule module,
                                                    const char *name);
/// intptr_t dimensions match MLIR's index type; paramsCount is unused (the
/// driver knows the kernel's parameters).
CONVRT_MGPU_EXPORT void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                         intptr_t gridY, intptr_t gridZ,
                                         intptr_t blockX, intptr_t blockY,
                                         intptr_t blockZ, int32_t smem,
                                         CUstream stream, void **params,
                                         void **extra, size_t paramsCount);
CONVRT_MGPU_EXPORT CUstream mgpuStreamCreate();
CONVRT_MGPU_EXPORT void mgpuStreamDestroy(CUstream stream);
CONVRT_MGPU_EXPORT void mgpuStreamSynchronize(CUstream stream);
CONVRT_MGPU_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event);
CONVRT_MGPU_EXPORT CUevent mgpuEventCreate();
CONVRT_MGPU_EXPORT void mgpuEventDestroy(CUevent event);
CONVRT_MGPU_EXPORT void mgpuEventSynchronize(CUevent event);
CONVRT_MGPU_EXPORT void mgpuEventRecord(CUevent event, CUstream stream);
/// isHostShared: managed memory (cuMemAllocManaged), visible to the host.
CONVRT_MGPU_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, CUstream stream,
                                      bool isHostShared);
CONVRT_MGPU_EXPORT void mgpuMemFree(void *ptr, CUstream stream);
CONVRT_MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                                   CUstream stream);
CONVRT_MGPU_EXPORT void mgpuMemset32(void *dst, unsigned int value,
                                     size_t count, CUstream stream);
CONVRT_MGPU_EXPORT void mgpuMemset16(void *dst, unsigned short value,
                                     size_t count, CUstream stream);
CONVRT_MGPU_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
/// `descriptor` points at a rank-`rank` memref descriptor (typed as rank 1,
/// as upstream does); only densely packed memrefs can be registered.
CONVRT_MGPU_EXPORT void
mgpuMemHostRegisterMemRef(int64_t rank,
                          convrt::StridedMemRef<char, 1> *descriptor,
                          int64_t elementSizeBytes);
CONVRT_MGPU_EXPORT void mgpuMemHostUnregister(void *ptr);
CONVRT_MGPU_EXPORT void
mgpuMemHostUnregisterMemRef(int64_t rank,
                            convrt::StridedMemRef<char, 1> *descriptor,
                            int64_t elementSizeBytes);
CONVRT_MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device);

/// ConvLower's own addition, for TMA kernels that read their CUtensorMap
/// from global memory: encodes the flat record of convrt/TensorMap.h
/// (kTensorMapRecordSize int64 entries) for the device buffer at
/// `globalAddress`, copies the 128 bytes into a new device allocation and
/// returns it (null on failure, reported like the other calls). The caller
/// frees it with mgpuMemFree.
CONVRT_MGPU_EXPORT void *mgpuConvLowerEncodeTensorMap(void *globalAddress,
                                                      const int64_t *record);
}

#endif // CONVRT_MLIRCUDARUNTIME_H
