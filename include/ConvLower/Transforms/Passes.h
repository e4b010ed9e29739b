//===- Passes.h - ConvLower passes ------------------------------*- C++ -*-===//

#ifndef CONVLOWER_TRANSFORMS_PASSES_H
#define CONVLOWER_TRANSFORMS_PASSES_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Transforms/ImplicitGemm.h"
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

// isSupportedChip and checkPtxFeatures: ConvLower/Transforms/ImplicitGemm.h.

/// Patterns lowering conv_lower.im2col / conv_lower.fold to linalg + tensor.
void populateDecomposeConvLowerPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "ConvLower/Transforms/Passes.h.inc"

} // namespace conv_lower
} // namespace mlir

#endif
