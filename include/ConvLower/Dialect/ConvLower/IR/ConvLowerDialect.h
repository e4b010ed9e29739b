//===- ConvLowerDialect.h - conv_lower dialect ------------------*- C++ -*-===//

#ifndef CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWERDIALECT_H
#define CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWERDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::conv_lower {
/// The attributes' integer lists, in brackets: [64, 32, 32].
inline FailureOr<SmallVector<int64_t>> parseI64List(AsmParser &parser) {
  SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        return parser.parseInteger(values.emplace_back());
      }))
    return failure();
  return values;
}
inline void printI64List(AsmPrinter &printer, ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}
} // namespace mlir::conv_lower

// The dialect's enums and attributes come first: the discardable attribute
// helpers below name KernelTilesAttr.
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerAttrs.h.inc"

// ConvLowerDialect, with GridAttrHelper, BlockAttrHelper and TilesAttrHelper:
// the kernel launch attributes conv_lower.grid / block / tiles (see
// ConvLowerDialect.td; tiles is a KernelTilesAttr), e.g.
//   ConvLowerDialect::GridAttrHelper(ctx).getAttr(kernel) -> DenseI64ArrayAttr

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOpsDialect.h.inc"

#endif
