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

//===----------------------------------------------------------------------===//
// Kernel launch attributes (conv_lower.grid / block / tiles)
//===----------------------------------------------------------------------===//

/// A launch dimension: three positive extents.
static LogicalResult verifyDim3(Operation *op, NamedAttribute attr) {
  auto dims = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
  if (!dims || dims.size() != 3 ||
      llvm::any_of(dims.asArrayRef(), [](int64_t d) { return d < 1; }))
    return op->emitOpError()
           << "'" << attr.getName().getValue()
           << "' must be an array<i64> of three positive extents";
  return success();
}

LogicalResult
ConvLowerDialect::verifyOperationAttribute(Operation *op,
                                           NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == GridAttrHelper::getNameStr() ||
      name == BlockAttrHelper::getNameStr())
    return verifyDim3(op, attr);
  if (name == TilesAttrHelper::getNameStr()) {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a dictionary";
    return success();
  }
  if (name == SharedMemoryAttrHelper::getNameStr()) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getInt() < 0)
      return op->emitOpError()
             << "'" << name << "' must be a non-negative integer (bytes)";
    return success();
  }
  if (name == TensorMapsAttrHelper::getNameStr()) {
    auto maps = dyn_cast<ArrayAttr>(attr.getValue());
    if (!maps || !llvm::all_of(maps, [](Attribute a) {
          auto map = dyn_cast<DictionaryAttr>(a);
          return map && map.get("argument") && map.get("mode") &&
                 map.get("dims") && map.get("box");
        }))
      return op->emitOpError()
             << "'" << name
             << "' must be an array of tensor map dictionaries (with "
                "argument, mode, dims and box)";
    return success();
  }
  if (name == WinogradAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  return op->emitOpError() << "unknown conv_lower attribute '" << name << "'";
}
