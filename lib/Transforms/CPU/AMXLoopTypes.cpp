//===- AMXLoopTypes.cpp - loops carry x86_amx, not amx.tile
//----------------===//
//
// AMX's LLVM lowering (convert-vector-to-llvm with AMX) converts the tile
// operations and leaves `builtin.unrealized_conversion_cast`s to
// `!amx.tile` where a value crosses into an scf loop's iter_args. The
// conversions after it have no tile type in their type converters: scf to
// cf would make branch operands of `!amx.tile` that cf-to-llvm cannot
// convert, and OpenMP's region legality fails on them. Here the loops
// carry `!llvm.x86_amx` instead (scf's structural type conversion); the
// casts around them then cancel in reconcile-unrealized-casts.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "AMXTypeConversion.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERAMXLOOPTYPES
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

struct ConvLowerAMXLoopTypesPass
    : conv_lower::impl::ConvLowerAMXLoopTypesBase<ConvLowerAMXLoopTypesPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    auto x86amx = [ctx](amx::TileType) -> Type {
      return LLVM::LLVMX86AMXType::get(ctx);
    };
    if (failed(conv_lower::retypeAMXTiles(getOperation(), x86amx)))
      signalPassFailure();
  }
};

} // namespace
