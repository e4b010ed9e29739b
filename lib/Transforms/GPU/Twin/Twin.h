//===- Twin.h - the GPU kernels as host loops (target=cpu-twin) -*- C++ -*-===//
//
// The twin runs a family's kernel body on the CPU: the grid and each CTA's
// threads as host loops, the hardware's instructions emulated as the PTX
// ISA defines them (Sm80Twin: cp.async, ldmatrix, mma.sync; Sm90Twin: TMA,
// mbarrier, the 128-byte swizzle, wgmma). The body is the family's own
// builder, the very code that emits the GPU kernel, so the twin checks the
// kernel's indexing, tiling and protocol on any machine, against the same
// float64 reference as every other route. This folder depends on the
// families (Sm80, Sm90, Depthwise) and the core; nothing but the rewrite
// driver (../ImplicitGemm.cpp) depends on it.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_TWIN_TWIN_H
#define CONVLOWER_TRANSFORMS_GPU_TWIN_TWIN_H

#include "Transforms/GPU/Core/Core.h"
#include "Transforms/GPU/Sm90/Sm90Kernel.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::conv_lower::igemm {

/// The twin's result tensor and the outermost loop of its grid.
struct TwinLoops {
  Value result;
  scf::ForOp grid;
};

/// At `b`'s insertion point, each family's twin of the convolution (the
/// flat operands with the epilogue's bias and residual, the grid of CTAs,
/// the result as a tensor of `outputType`).
TwinLoops buildSm80Twin(OpBuilder &b, Location loc, const GemmProblem &p,
                        const TileConfig &t, Value input, Value filter,
                        const FusedEpilogue &epilogue,
                        RankedTensorType outputType);
TwinLoops buildDepthwiseTwin(OpBuilder &b, Location loc, const GemmProblem &p,
                             const TileConfig &t, Value input, Value filter,
                             const FusedEpilogue &epilogue,
                             RankedTensorType outputType);
TwinLoops buildSm90Twin(OpBuilder &b, Location loc, const GemmProblem &p,
                        const Sm90Tiles &t, Value input, Value filter,
                        const FusedEpilogue &epilogue,
                        RankedTensorType outputType);

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_TWIN_TWIN_H
