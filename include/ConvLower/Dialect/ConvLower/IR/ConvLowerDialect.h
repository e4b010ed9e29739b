//===- ConvLowerDialect.h - conv_lower dialect ------------------*- C++ -*-===//

#ifndef CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWERDIALECT_H
#define CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWERDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

// ConvLowerDialect, with GridAttrHelper, BlockAttrHelper and TilesAttrHelper:
// the kernel launch attributes conv_lower.grid / block / tiles (see
// ConvLowerDialect.td), e.g.
//   ConvLowerDialect::GridAttrHelper(ctx).getAttr(kernel) -> DenseI64ArrayAttr

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOpsDialect.h.inc"

#endif
