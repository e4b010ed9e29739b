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

#define GET_ATTRDEF_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerAttrs.h.inc"

#define GET_OP_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h.inc"

#endif
