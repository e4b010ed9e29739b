//===- Core.h - the implicit-GEMM core shared by every family ---*- C++ -*-===//
//
// rewriteToImplicitGemm (../ImplicitGemm.cpp, the only place that picks a
// kernel family) takes these steps, one file each in this folder:
//
//   Problem.cpp   the convolution as sizes and element strides
//   Tiles.cpp     the CTA tiles: heuristic, overrides, checks
//   Epilogue.cpp  bias, residual add and ReLU / clamp fused into the store
//   TapTable.cpp  the layout decisions (vectorized copies, tap table, pixel
//                 runs, the staged epilogue's shape)
//   Module.cpp    the gpu.module, empty kernels, shared buffer types
//   Launch.cpp    host side: gpu.launch_func on managed copies
//
// and then one family builds the kernel body, once, for the hardware it is
// given (its Sm80Hardware / Sm90Hardware interface):
//
//   ../Sm80       mma.sync (sm_80 on): gather, ring main loop, staged epilogue
//   ../Sm90       sm_90a: TMA, mbarrier ring, wgmma, warp specialization
//   ../Depthwise  the direct depthwise kernel on CUDA cores
//   ../Twin       that hardware on the CPU: the families' bodies as host
//                 loops, their instructions emulated (target=cpu-twin)
//
// Nothing here includes a header of those folders.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_CORE_CORE_H
#define CONVLOWER_TRANSFORMS_GPU_CORE_CORE_H

#include "Transforms/Common/ConvAnalysis.h"
#include "Transforms/GPU/Core/GemmProblem.h"

#include "ConvLower/Transforms/GPU/ImplicitGemm.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::conv_lower::igemm {

// CUDA's grid limits (x: pixel tiles; y: filter tiles; z: groups).
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;

//===----------------------------------------------------------------------===//
// Problem (Problem.cpp)
//===----------------------------------------------------------------------===//

/// The kernel's view of the analyzed convolution, or failure with `whyNot`
/// saying what the kernel cannot take (types, dynamic shapes, init, groups).
FailureOr<GemmProblem> buildProblem(const ConvPlan &plan, std::string &whyNot);

//===----------------------------------------------------------------------===//
// Tiles (Tiles.cpp)
//===----------------------------------------------------------------------===//

/// The heuristic's tiles for `p`, with the non-zero overrides applied.
TileConfig chooseTiles(const GemmProblem &p, const ImplicitGemmTiles &o);

/// Whether `t` can be built for `p`; failure says why in `why`.
LogicalResult checkTiles(const TileConfig &t, const GemmProblem &p,
                         Refusal &why);
/// The direct depthwise kernel's configuration (directDepthwiseVector).
TileConfig directTiles(const GemmProblem &p);

/// The grid: pixel tiles x filter tiles x groups.
Launch launchShape(const GemmProblem &p, const TileConfig &t);

//===----------------------------------------------------------------------===//
// Epilogue fusion (Epilogue.cpp)
//===----------------------------------------------------------------------===//

/// The ops after the convolution that the kernel's epilogue absorbs, in
/// order: a collapse of the grouped dims, a per-channel bias add, a residual
/// add, a ReLU or a clamp.
struct FusedEpilogue {
  SmallVector<Operation *> ops;
  Value bias, residual;
  Activation activation;
};

/// What follows `conv` that the epilogue can do: [[collapse] bias]
/// [residual add] [ReLU | clamp], a prefix of that chain (the collapse only
/// with a bias or residual after it). Nothing is fused that anything else
/// reads.
FusedEpilogue matchEpilogue(linalg::LinalgOp conv, const ConvForm &form);

//===----------------------------------------------------------------------===//
// Kernels (Module.cpp)
//===----------------------------------------------------------------------===//

/// Threads per block of explicit mode's im2col kernel.
constexpr int64_t kIm2colThreads = 256;

/// The GPU's shared memory space (#gpu.address_space<workgroup>); the
/// twin's stand-ins for it are plain memory (no memory space).
Attribute workgroupMemory(MLIRContext *ctx);

/// The shared-memory ring of one operand: [stages, rows, blockK] (A with a
/// pixel-run gather: [stages, blockK, blockM], M-major), in `memorySpace`.
MemRefType sharedType(const GemmProblem &p, const TileConfig &t, Operand op,
                      Attribute memorySpace);

/// The staged epilogue's tiles ([warps, rows, stride] of the output type,
/// epilogueStaging's), in `memorySpace`: a view of the shared buffer on the
/// GPU, the twin's own memory.
MemRefType stagingType(const GemmProblem &p, const TileConfig &t,
                       const EpilogueStaging &s, Attribute memorySpace);

/// PTX's constant space is 64 KiB per module; the tap tables leave room for
/// the kernel parameters and what else the module holds.
constexpr int64_t kConstantBudgetBytes = 48 * 1024;

/// The kernels' names: `conv2d_implicit_gemm_<index>` and explicit mode's
/// `conv2d_im2col_<index>`.
std::string gemmKernelName(int64_t index);
std::string im2colKernelName(int64_t index);

/// An empty kernel `name` in the module's kernel module, launched with
/// `threads` threads per block; `b` is left at the start of its body.
gpu::GPUFuncOp createKernel(RewriterBase &b, ModuleOp module, StringRef name,
                            TypeRange args, TypeRange workgroup,
                            int64_t threads, Location loc);

/// Records the launch on `kernel` (conv_lower.grid and conv_lower.block):
/// for readers of the IR and for conv-run, which launches the binary itself.
void recordLaunch(gpu::GPUFuncOp kernel, const Launch &launch,
                  int64_t threads);

/// The kernel's arguments: input (or X_col), filter, [bias,] [residual,]
/// output, flat; the runtime manifest's order.
SmallVector<Type> gemmKernelArguments(const GemmProblem &p);
/// The bias's and the residual's places among them (when fused).
inline unsigned biasArgument(const GemmProblem &) { return 2; }
inline unsigned residualArgument(const GemmProblem &p) {
  return p.biasType ? 3 : 2;
}

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
// Host side (Launch.cpp)
//===----------------------------------------------------------------------===//

struct GpuLaunch {
  Value result;
  gpu::LaunchFuncOp launch, im2colLaunch;
};

/// At `b`'s insertion point: operands (and the epilogue's bias and residual)
/// into managed memory, the launches, the result copied back into a tensor
/// of `outputType` (the mma.sync and the direct depthwise kernels: their
/// launch is their TileConfig's).
GpuLaunch buildGpuLaunch(OpBuilder &b, Location loc, gpu::GPUFuncOp kernel,
                         gpu::GPUFuncOp im2colKernel, const GemmProblem &p,
                         const TileConfig &t, Value input, Value filter,
                         const FusedEpilogue &epilogue,
                         RankedTensorType outputType);

/// The host-side pieces every family's launch and twin use (Launch.cpp).
/// A flat memref of a tensor operand's elements.
Value flatBuffer(OpBuilder &b, Location loc, Value tensor);
/// A new host buffer for the result and its flat view.
std::pair<Value, Value> allocateResult(OpBuilder &b, Location loc,
                                       RankedTensorType type);
/// The tensor of a host buffer.
Value toTensor(OpBuilder &b, Location loc, RankedTensorType type,
               Value buffer);
/// A launch's grid and (1-D) block as index constants.
std::pair<gpu::KernelDim3, gpu::KernelDim3>
launchDims(OpBuilder &b, Location loc, const Launch &l, int64_t threads);
/// The kernel's buffer arguments in the manifest's order: managed copies of
/// input, filter [, bias] [, residual], then the managed output (last).
SmallVector<Value> managedOperands(OpBuilder &b, Location loc,
                                   const GemmProblem &p, Value input,
                                   Value filter, const FusedEpilogue &epilogue);
/// After the launch: the output `y` copied into a new host tensor of
/// `outputType`, then the device buffers freed; returns the tensor.
Value copyBackAndFree(OpBuilder &b, Location loc, Value y, ValueRange freed,
                      RankedTensorType outputType);

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_CORE_CORE_H
