//===- ImplicitGemmSteps.h - the steps of the implicit-GEMM rewrite -*- C++ -*-===//
//
// rewriteToImplicitGemm (ImplicitGemm.cpp) is these steps in order, one file
// each:
//
//   ImplicitGemmProblem.cpp   the convolution as sizes and element strides
//   ImplicitGemmTiles.cpp     the CTA tiles: heuristic, overrides, checks
//   ImplicitGemmEpilogue.cpp  a bias add and a ReLU fused into the store
//   ImplicitGemmModule.cpp    the gpu.module, the kernels' gpu.funcs and the
//                             launch attributes the dialect declares
//   ImplicitGemmLaunch.cpp    host side: gpu.launch_func on managed copies,
//                             or the twin's grid loops
//
// and ImplicitGemmKernel.{h,cpp} is the body of one CTA that both the
// kernel and the twin emit.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_IMPLICITGEMMSTEPS_H
#define CONVLOWER_TRANSFORMS_IMPLICITGEMMSTEPS_H

#include "Transforms/Common/ConvAnalysis.h"
#include "HopperKernel.h"
#include "ImplicitGemmKernel.h"

#include "ConvLower/Transforms/GPU/ImplicitGemm.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::conv_lower::igemm {

// CUDA's grid limits (x: pixel tiles; y: filter tiles; z: groups).
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;

//===----------------------------------------------------------------------===//
// Problem (ImplicitGemmProblem.cpp)
//===----------------------------------------------------------------------===//

/// The kernel's view of the analyzed convolution, or failure with `whyNot`
/// saying what the kernel cannot take (types, dynamic shapes, init, groups).
FailureOr<GemmProblem> buildProblem(const ConvPlan &plan, std::string &whyNot);

//===----------------------------------------------------------------------===//
// Tiles (ImplicitGemmTiles.cpp)
//===----------------------------------------------------------------------===//

/// The heuristic's tiles for `p`, with the non-zero overrides applied.
TileConfig chooseTiles(const GemmProblem &p, const ImplicitGemmTiles &o);

/// Why `t` cannot be built for `p`, or "" when it can.
std::string checkTiles(const TileConfig &t, const GemmProblem &p);
/// The direct depthwise kernel's configuration (directDepthwiseVector).
TileConfig directTiles(const GemmProblem &p);

/// The grid: pixel tiles x filter tiles x groups.
Launch launchShape(const GemmProblem &p, const TileConfig &t);

//===----------------------------------------------------------------------===//
// Epilogue fusion (ImplicitGemmEpilogue.cpp)
//===----------------------------------------------------------------------===//

/// The ops after the convolution that the kernel's epilogue absorbs, in
/// order: a collapse of the grouped dims, a per-channel bias add, a ReLU.
struct FusedEpilogue {
  SmallVector<Operation *> ops;
  Value bias;
  bool relu = false;
};

/// What follows `conv` that the epilogue can do: [collapse] bias [ReLU], or
/// a ReLU alone. Nothing is fused that anything else reads.
FusedEpilogue matchEpilogue(linalg::LinalgOp conv, const ConvForm &form);

//===----------------------------------------------------------------------===//
// Kernels (ImplicitGemmModule.cpp)
//===----------------------------------------------------------------------===//

/// Threads per block of explicit mode's im2col kernel.
constexpr int64_t kIm2colThreads = 256;

/// The shared-memory ring of one operand: [stages, rows, blockK] (A with a
/// pixel-run gather: [stages, blockK, blockM], M-major), in workgroup memory
/// on the GPU, plain memory for the twin.
MemRefType sharedType(const GemmProblem &p, const TileConfig &t, Operand op,
                      bool twin);

/// The staged epilogue's tiles ([warps, rows, stride] of the output type,
/// epilogueStaging's): a view of the shared buffer on the GPU, plain memory
/// for the twin.
MemRefType stagingType(const GemmProblem &p, const TileConfig &t,
                       const EpilogueStaging &s, bool twin);

/// The GEMM kernel for `p` in the module's kernel module, named
/// `conv2d_implicit_gemm_<index>`, with its launch recorded on it.
gpu::GPUFuncOp buildGpuKernel(RewriterBase &b, ModuleOp module, int64_t index,
                              const GemmProblem &p, const TileConfig &t,
                              Location loc);

/// The sm_90a family's kernel for `p` (HopperKernel.h), named as above,
/// its launch, dynamic shared memory and tensor maps recorded on it.
gpu::GPUFuncOp buildHopperGpuKernel(RewriterBase &b, ModuleOp module,
                                    int64_t index, const GemmProblem &p,
                                    const HopperTiles &t, Location loc);

/// Explicit mode's first kernel, `conv2d_im2col_<index>`: one thread per
/// X_col element.
gpu::GPUFuncOp buildIm2colKernel(RewriterBase &b, ModuleOp module, int64_t index,
                                 const GemmProblem &p, const TileConfig &t,
                                 Location loc);

/// The first index whose kernel name is free in `module`'s kernel module, so
/// that each rewrite names its kernels _0, _1, ... in order.
int64_t nextKernelIndex(ModuleOp module);

/// A constant global in `symbolTableOp` (the kernel module or the host
/// module) holding `p`'s tap table, and its value at the builder's point;
/// null when the problem takes none or (`budgetBytes` > 0) the globals
/// already in `symbolTableOp` plus this one would exceed it. `memorySpace`:
/// 4 (PTX .const) on the GPU, 0 on the host.
Value createTapTable(OpBuilder &b, Operation *symbolTableOp,
                     const GemmProblem &p, const TileConfig &t,
                     unsigned memorySpace, int64_t budgetBytes, Location loc);
/// The same for a table built by the caller (the sm_90a producer's); 1 (PTX
/// .global) is a memory space too.
Value createTapTable(OpBuilder &b, Operation *symbolTableOp,
                     ArrayRef<int32_t> table, unsigned memorySpace,
                     int64_t budgetBytes, Location loc);

//===----------------------------------------------------------------------===//
// Host side (ImplicitGemmLaunch.cpp)
//===----------------------------------------------------------------------===//

struct GpuLaunch {
  Value result;
  gpu::LaunchFuncOp launch, im2colLaunch;
};

/// At `b`'s insertion point: operands into managed memory, the launches, the
/// result copied back into a tensor of `outputType`.
GpuLaunch buildGpuLaunch(OpBuilder &b, Location loc, gpu::GPUFuncOp kernel,
                         gpu::GPUFuncOp im2colKernel, const GemmProblem &p,
                         const TileConfig &t, Value input, Value filter,
                         Value bias, RankedTensorType outputType);

struct TwinLoops {
  Value result;
  scf::ForOp grid;
};

/// target=cuda for the sm_90a family: as buildGpuLaunch, with the tensor
/// maps encoded on the host (mgpuConvLowerEncodeTensorMap, a device copy of
/// each) and the dynamic shared memory the kernel records.
GpuLaunch buildHopperGpuLaunch(OpBuilder &b, Location loc,
                               gpu::GPUFuncOp kernel, const GemmProblem &p,
                               const HopperTiles &t, Value input, Value filter,
                               Value bias, RankedTensorType outputType);

/// The sm_90a family's twin: the grid as host loops around its CTA body,
/// the output poisoned with NaN where the emulated protocol would hang.
TwinLoops buildHopperTwin(OpBuilder &b, Location loc, const GemmProblem &p,
                          const HopperTiles &t, Value input, Value filter,
                          Value bias, RankedTensorType outputType);

/// At `b`'s insertion point: the grid and the block body as host loops.
TwinLoops buildTwin(OpBuilder &b, Location loc, const GemmProblem &p,
                    const TileConfig &t, Value input, Value filter, Value bias,
                    RankedTensorType outputType);

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_IMPLICITGEMMSTEPS_H
