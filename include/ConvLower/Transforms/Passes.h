//===- Passes.h - ConvLower passes ------------------------------*- C++ -*-===//

#ifndef CONVLOWER_TRANSFORMS_PASSES_H
#define CONVLOWER_TRANSFORMS_PASSES_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace conv_lower {

#define GEN_PASS_DECL
#include "ConvLower/Transforms/Passes.h.inc"

/// The chips the implicit-GEMM kernels target (tensor cores with cp.async,
/// ldmatrix and mma.sync bf16/tf32: sm_80 and later).
bool isSupportedChip(llvm::StringRef chip);

/// Why `features` (e.g. "+ptx80") cannot compile the kernels for `chip`, or
/// "" when it can: LLVM aborts on a PTX version below the chip's minimum.
std::string checkPtxFeatures(llvm::StringRef chip, llvm::StringRef features);

/// Patterns lowering conv_lower.im2col / conv_lower.fold to linalg + tensor.
void populateDecomposeConvLowerPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "ConvLower/Transforms/Passes.h.inc"

} // namespace conv_lower
} // namespace mlir

#endif
