//===- DepthwiseModule.cpp - the direct depthwise kernel ------------------===//
//
// The direct kernel as a gpu.func (registers only: no shared buffer, no tap
// table), with its launch recorded on it. Its GPU launch is the core's
// buildGpuLaunch, its twin ../Twin/TwinLaunch.cpp's.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Depthwise/DepthwiseKernel.h"
#include "Transforms/GPU/Sm80/Sm80Hardware.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <tuple>

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

/// Records the launch and the channels per thread on the kernel, for readers
/// of the IR and for conv-run, which launches the binary itself.
static void annotateKernel(gpu::GPUFuncOp kernel, const GemmProblem &p,
                           const TileConfig &t) {
  MLIRContext *ctx = kernel.getContext();
  Builder b(ctx);
  recordLaunch(kernel, launchShape(p, t), t.threads());
  ConvLowerDialect::TilesAttrHelper(ctx).setAttr(
      kernel, KernelTilesAttr::get(ctx, KernelFamily::direct_depthwise,
                                   /*block=*/{}, /*warps=*/{},
                                   /*warpgroups=*/{}, /*stages=*/std::nullopt,
                                   /*a_vectorized=*/{}, /*b_vectorized=*/{},
                                   /*store_vector=*/std::nullopt,
                                   /*a_pixel_run=*/std::nullopt,
                                   /*a_gathered=*/{}, t.directVector));
}

gpu::GPUFuncOp igemm::buildDepthwiseGpuKernel(RewriterBase &b, ModuleOp module,
                                              int64_t index,
                                              const GemmProblem &p,
                                              const TileConfig &t,
                                              Location loc) {
  assert(t.directVector && "not the direct depthwise kernel's tiles");
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Type> args = gemmKernelArguments(p);
  gpu::GPUFuncOp fn = createKernel(b, module, gemmKernelName(index), args,
                                   /*workgroup=*/{}, t.threads(), loc);
  Block &body = fn.getBody().front();
  Sm80Gpu gpu;
  DepthwiseKernelBuilder kb(b, loc, p, t, gpu);
  // The grid's three ids, as the mma.sync kernels read them; the direct
  // kernel's grid is 1-D (pixel vectors) and reads x alone.
  Value bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  if (p.biasType)
    kb.setBias(body.getArgument(biasArgument(p)));
  if (p.residual)
    kb.setResidual(body.getArgument(residualArgument(p)));
  kb.emitBlock(bm, body.getArgument(0), body.getArgument(1),
               body.getArgument(args.size() - 1));
  gpu::ReturnOp::create(b, loc);
  annotateKernel(fn, p, t);
  return fn;
}
