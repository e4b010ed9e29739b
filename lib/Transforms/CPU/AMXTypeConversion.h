//===- AMXTypeConversion.h - retyping AMX tiles, loops included --*- C++
//-*-===//
//
// conv-lower-emulate-amx (tiles as vectors) and conv-lower-amx-loop-types
// (tiles as LLVM's x86_amx) both retype `!amx.tile` values, including those
// an scf loop carries; this is their one conversion driver.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_LIB_TRANSFORMS_CPU_AMXTYPECONVERSION_H
#define CONVLOWER_LIB_TRANSFORMS_CPU_AMXTYPECONVERSION_H

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::conv_lower {

/// Converts `root` with every `!amx.tile` retyped by `retype` (other types
/// kept): scf loops carrying tiles are rebuilt on the new types, and
/// `addPatterns` adds the patterns (and legality) for the tile operations
/// themselves, if any. Unrealized casts are left where retyped and
/// unconverted values meet (reconcile-unrealized-casts folds them later).
inline LogicalResult
retypeAMXTiles(Operation *root, function_ref<Type(amx::TileType)> retype,
               function_ref<void(const TypeConverter &, RewritePatternSet &,
                                 ConversionTarget &)>
                   addPatterns = nullptr) {
  MLIRContext *ctx = root->getContext();
  TypeConverter types;
  types.addConversion([](Type type) { return type; });
  types.addConversion([retype](amx::TileType tile) { return retype(tile); });
  // Where a retyped loop meets tile values still of the old type.
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  types.addSourceMaterialization(cast);
  types.addTargetMaterialization(cast);
  ConversionTarget target(*ctx);
  target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
  RewritePatternSet patterns(ctx);
  if (addPatterns)
    addPatterns(types, patterns, target);
  scf::populateSCFStructuralTypeConversionsAndLegality(types, patterns, target);
  return applyPartialConversion(root, target, std::move(patterns));
}

} // namespace mlir::conv_lower

#endif // CONVLOWER_LIB_TRANSFORMS_CPU_AMXTYPECONVERSION_H
