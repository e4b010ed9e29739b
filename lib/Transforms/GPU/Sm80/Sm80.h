//===- Sm80.h - the mma.sync family's kernels -------------------*- C++ -*-===//
//
// What the rewrite driver (../ImplicitGemm.cpp) calls to build the mma.sync
// family (sm_80 on): its gpu.funcs (Sm80Module.cpp). The launch on the GPU
// is the core's buildGpuLaunch; the twin is ../Twin's.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_SM80_SM80_H
#define CONVLOWER_TRANSFORMS_GPU_SM80_SM80_H

#include "Transforms/GPU/Core/Core.h"

namespace mlir::conv_lower::igemm {

/// The GEMM kernel for `p` in the module's kernel module, named
/// `conv2d_implicit_gemm_<index>`, with its launch recorded on it.
gpu::GPUFuncOp buildSm80GpuKernel(RewriterBase &b, ModuleOp module,
                                  int64_t index, const GemmProblem &p,
                                  const TileConfig &t, Location loc);

/// Explicit mode's first kernel, `conv2d_im2col_<index>`: one thread per
/// X_col element.
gpu::GPUFuncOp buildIm2colKernel(RewriterBase &b, ModuleOp module, int64_t index,
                                 const GemmProblem &p, const TileConfig &t,
                                 Location loc);

/// At `b`'s insertion point: the grid and the block body as host loops.
} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_SM80_SM80_H
