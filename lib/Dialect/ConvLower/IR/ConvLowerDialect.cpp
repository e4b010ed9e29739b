//===- ConvLowerDialect.cpp - conv_lower dialect --------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::conv_lower;

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOpsDialect.cpp.inc"
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerAttrs.cpp.inc"

void ConvLowerDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.cpp.inc"
      >();
}
