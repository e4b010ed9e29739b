//===- GPU/Passes.h - ConvLower's GPU passes --------------------*- C++ -*-===//
//
// The GPU room: the implicit-GEMM tensor-core kernels (the mma.sync family,
// the sm_90a TMA + wgmma family, the direct depthwise kernel) and their CPU
// twin, and the kernels' tensor-map parameters. Declared in GPU/Passes.td;
// the option enums and the chip check are in GPU/ImplicitGemm.h.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_PASSES_H
#define CONVLOWER_TRANSFORMS_GPU_PASSES_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Transforms/GPU/ImplicitGemm.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::conv_lower {

#define GEN_PASS_DECL
#include "ConvLower/Transforms/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ConvLower/Transforms/GPU/Passes.h.inc"

} // namespace mlir::conv_lower

#endif // CONVLOWER_TRANSFORMS_GPU_PASSES_H
