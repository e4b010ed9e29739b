//===- ConvLowerDialect.h - conv_lower dialect ------------------*- C++ -*-===//

#ifndef CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWERDIALECT_H
#define CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWERDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOpsDialect.h.inc"

#endif
