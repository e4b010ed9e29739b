//===- GPU/Passes.td - ConvLower GPU passes ---*- tablegen -*-===//
//
// The GPU room: the implicit-GEMM tensor-core kernels (mma.sync,
// sm_90a TMA + wgmma) and their CPU twin, and the kernels' tensor-map
// parameters.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_PASSES_TD
#define CONVLOWER_TRANSFORMS_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"
include "ConvLower/Transforms/PassOptions.td"

def ConvLowerGridConstantTensorMaps
    : Pass<"conv-lower-grid-constant-tensor-maps", "::mlir::LLVM::LLVMFuncOp"> {
  let summary = "Pass a kernel's TMA tensor maps by value, as __grid_constant__ parameters";
  let description = [{
    The sm_90a kernels of --conv-lower-implicit-gemm take their tensor maps
    as the last `conv_lower.tensor_maps`-many arguments, generic pointers
    that `cp.async.bulk.tensor` reads the 128-byte CUtensorMap through. MLIR
    host code (gpu.launch_func) passes pointers to device copies, which is
    what the arguments are by default. The runtime (bundles, conv-run)
    passes the maps by value instead, as CUTLASS does: no allocation or copy
    per launch, and the map sits in the kernel's parameter (constant) bank.
    This pass, run on the kernels after their conversion to the LLVM
    dialect, marks those arguments `llvm.byval = !llvm.array<128 x i8>`,
    `llvm.align = 64` and `nvvm.grid_constant`: NVPTX then declares each as
    `.param .align 64 .b8 [128]` and takes its address with `cvta.param`.
    (The attributes cannot be set on the gpu.func: NVVM accepts
    `nvvm.grid_constant` on kernel llvm.funcs only, and gpu-to-nvvm drops
    `llvm.byval`.)
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def ConvLowerImplicitGemm : Pass<"conv-lower-implicit-gemm", "::mlir::ModuleOp"> {
  let summary = "Rewrite linalg convolutions into implicit-GEMM tensor-core kernels";
  let description = [{
    Every convolution the im2col rewrite accepts (same forms, same analysis:
    strides, dilations, groups, depthwise, absorbed zero padding) with
    f16/bf16 data (mma.sync m16n8k16, f32 accumulation), f32 data (tf32,
    m16n8k8) or i8 data (s8 m16n8k32, i32 accumulation, zero points),
    static shapes and a constant-fill init becomes one CTA-tiled
    kernel: the im2col is fused into the global->shared copy of the A tile
    (cp.async with zero-fill for padding and bounds, 16-byte chunks where
    the layout allows, an element gather where not), a ring of `stages`
    swizzled shared-memory buffers, ldmatrix + mma.sync per warp with the
    accumulators in registers, and an epilogue that writes each result to
    its place in the output layout (the fold) plus the init value.

    `target=cuda`: the kernel goes into `gpu.module @conv_lower_kernels`
    (attributes `conv_lower.grid`, `conv_lower.block`, `conv_lower.tiles`
    record the launch) and the convolution becomes a `gpu.launch_func` on
    managed copies of its operands. `target=cpu-twin`: the same block body
    as host loops (threads and warps become loops, cp.async a predicated
    vector copy, ldmatrix and mma.sync emulated lane by lane as the PTX ISA
    defines them, from the GPU code's own addresses), so the kernel's
    indexing can be run and checked on any machine.

    A per-channel bias add (a `linalg.generic` reading `bias[channel]`,
    also after the collapse of a grouped output) and a ReLU (`max(x, 0)`)
    that only the convolution feeds are fused into the epilogue.
    `im2col=explicit` instead emits an im2col kernel storing X_col [M, G, K]
    and a GEMM kernel reading it, for comparison.

    Depthwise convolutions (one channel and one filter per group) get a
    direct kernel instead (`conv_lower.tiles = {direct_depthwise, ...}`):
    CUDA cores, no K padding, each thread 16 bytes of channels of one
    output pixel (one channel where channels are not innermost), the taps
    unrolled, the same epilogue. Tile options select the GEMM kernel.

    `chip=sm_90a` builds the Hopper family where it applies (a producer
    warpgroup loading by TMA, or gathering the A tiles TMA cannot load, and
    two consumer warpgroups issuing wgmma; `conv_lower.tiles` names it);
    what it cannot take gets the mma.sync family, with a remark saying why.

    Tile sizes come from a per-problem heuristic (2x2 warps, blockK = 64
    bytes, 3 stages; smaller blocks where the problem is narrow) unless
    overridden. Other convolutions are left untouched (remarks with
    `emit-remarks`).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::conv_lower::ConvLowerDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = !listconcat([ImplicitGemmTargetOption], ImplicitGemmKernelOptions, [
    Option<"emitRemarks", "emit-remarks", "bool", /*default=*/"false",
           "Emit a remark on every convolution left untouched, saying why">,
  ]);
}

#endif // CONVLOWER_TRANSFORMS_GPU_PASSES_TD
