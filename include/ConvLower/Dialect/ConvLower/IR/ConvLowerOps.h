//===- ConvLowerOps.h - conv_lower ops --------------------------*- C++ -*-===//

#ifndef CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWEROPS_H
#define CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWEROPS_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerEnums.h.inc"

namespace mlir::conv_lower {
/// Positions of the channel, height and width dimensions of a rank-4 image
/// in `layout` (the batch is always dimension 0).
struct ImageDims {
  unsigned c, h, w;
};
inline ImageDims getImageDims(ImageLayout layout) {
  return layout == ImageLayout::nchw ? ImageDims{1, 2, 3} : ImageDims{3, 1, 2};
}
} // namespace mlir::conv_lower

#define GET_ATTRDEF_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerAttrs.h.inc"

#define GET_OP_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h.inc"

#endif
