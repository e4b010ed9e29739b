//===- Common/Passes.h - ConvLower's target-independent passes -*- C++ -*-===//
//
// The passes every target runs: the analysis-driven lift and im2col rewrite
// of any linalg convolution, the decomposition of conv_lower.im2col/fold,
// and the bufferization fix-up. Declared in Common/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_COMMON_PASSES_H
#define CONVLOWER_TRANSFORMS_COMMON_PASSES_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace conv_lower {

#define GEN_PASS_DECL
#include "ConvLower/Transforms/Common/Passes.h.inc"

/// Patterns lowering conv_lower.im2col / conv_lower.fold to linalg + tensor.
void populateDecomposeConvLowerPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "ConvLower/Transforms/Common/Passes.h.inc"

} // namespace conv_lower
} // namespace mlir

#endif // CONVLOWER_TRANSFORMS_COMMON_PASSES_H
