//===- DepthwiseKernel.h - the direct depthwise kernel ----------*- C++ -*-===//
//
// The third kernel: a depthwise convolution (one channel, one filter per
// group, 2-D) on CUDA cores with no K padding (directDepthwiseVector says
// which take it). No GEMM, no shared ring, no tap table: it shares only the
// mma.sync family's output store and arithmetic helpers, so it derives from
// that builder.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_DEPTHWISE_DEPTHWISEKERNEL_H
#define CONVLOWER_TRANSFORMS_GPU_DEPTHWISE_DEPTHWISEKERNEL_H

#include "Transforms/GPU/Core/Core.h"
#include "Transforms/GPU/Sm80/Sm80Kernel.h"

namespace mlir::conv_lower::igemm {

class DepthwiseKernelBuilder : public Sm80KernelBuilder {
public:
  using Sm80KernelBuilder::Sm80KernelBuilder;

  /// Block `block` (t.directVector != 0): each thread's channels of one
  /// output pixel, summed over the taps in the accumulator type, then init,
  /// bias, ReLU and narrowing.
  void emitBlock(Value block, Value x, Value w, Value y);
};

/// The direct kernel for `p` (tiles: the core's directTiles), named as the
/// core's kernels are, with its launch recorded on it.
gpu::GPUFuncOp buildDepthwiseGpuKernel(RewriterBase &b, ModuleOp module,
                                       int64_t index, const GemmProblem &p,
                                       const TileConfig &t, Location loc);

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_DEPTHWISE_DEPTHWISEKERNEL_H
