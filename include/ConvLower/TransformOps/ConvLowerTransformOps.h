//===- ConvLowerTransformOps.h - transform ops of ConvLower -----*- C++ -*-===//
//
// transform.conv_lower.im2col and transform.conv_lower.implicit_gemm: the
// rewrites of --conv-lower-im2col and --conv-lower-implicit-gemm as
// transform-dialect ops (ConvLowerTransformOps.td has their docs).
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMOPS_CONVLOWERTRANSFORMOPS_H
#define CONVLOWER_TRANSFORMOPS_CONVLOWERTRANSFORMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/IR/OpImplementation.h"

#define GET_OP_CLASSES
#include "ConvLower/TransformOps/ConvLowerTransformOps.h.inc"

namespace mlir {
class DialectRegistry;
namespace conv_lower {
/// Adds the ops to the transform dialect when it is loaded.
void registerTransformDialectExtension(DialectRegistry &registry);
} // namespace conv_lower
} // namespace mlir

#endif // CONVLOWER_TRANSFORMOPS_CONVLOWERTRANSFORMOPS_H
