//===- Sm90.h - the sm_90a family's kernel and launch -----------*- C++ -*-===//
//
// What the rewrite driver (../ImplicitGemm.cpp) calls to build the sm_90a
// family (TMA, mbarrier ring, wgmma; Sm90Kernel.h): its gpu.func
// (Sm90Module.cpp) and its launch with the tensor maps (Sm90Launch.cpp).
// The twin is ../Twin's.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_SM90_SM90_H
#define CONVLOWER_TRANSFORMS_GPU_SM90_SM90_H

#include "Transforms/GPU/Core/Core.h"
#include "Transforms/GPU/Sm90/Sm90Kernel.h"

namespace mlir::conv_lower::igemm {

/// The sm_90a family's kernel for `p`, named as the core's kernels are, its
/// launch, dynamic shared memory and tensor maps recorded on it.
gpu::GPUFuncOp buildSm90GpuKernel(RewriterBase &b, ModuleOp module,
                                  int64_t index, const GemmProblem &p,
                                  const Sm90Tiles &t, Location loc);

/// target=cuda: as the core's buildGpuLaunch, with the tensor maps encoded
/// on the host (mgpuConvLowerEncodeTensorMap, a device copy of each) and the
/// dynamic shared memory the kernel records.
GpuLaunch buildSm90GpuLaunch(OpBuilder &b, Location loc, gpu::GPUFuncOp kernel,
                             const GemmProblem &p, const Sm90Tiles &t,
                             Value input, Value filter,
                             const FusedEpilogue &epilogue,
                             RankedTensorType outputType);

/// The sm_90a family's twin: the grid as host loops around its CTA body,
/// the output poisoned with NaN where the emulated protocol would hang.
} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_SM90_SM90_H
