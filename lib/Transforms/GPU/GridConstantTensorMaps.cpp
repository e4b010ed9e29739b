//===- GridConstantTensorMaps.cpp - tensor maps as by-value parameters ----===//
//
// See the pass description (Passes.td): a kernel's TMA tensor maps become
// 64-byte aligned, 128-byte __grid_constant__ parameters.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Transforms/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-grid-constant-tensor-maps"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERGRIDCONSTANTTENSORMAPS
#include "ConvLower/Transforms/GPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

// cuda.h: CU_TENSOR_MAP_NUM_QWORDS * 8 bytes; the driver wants 64-byte
// alignment.
constexpr int64_t kTensorMapBytes = 128, kTensorMapAlignment = 64;

struct ConvLowerGridConstantTensorMapsPass
    : conv_lower::impl::ConvLowerGridConstantTensorMapsBase<
          ConvLowerGridConstantTensorMapsPass> {
  void runOnOperation() override {
    LLVM::LLVMFuncOp fn = getOperation();
    MLIRContext *ctx = &getContext();
    auto maps = ConvLowerDialect::TensorMapsAttrHelper(ctx).getAttr(fn);
    if (!maps)
      return;
    unsigned count = maps.size(), arguments = fn.getNumArguments();
    if (!fn->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
        count > arguments) {
      fn.emitError() << "conv-lower-grid-constant-tensor-maps: expected a "
                        "kernel with at least "
                     << count << " arguments for its tensor maps";
      return signalPassFailure();
    }
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] " << fn.getName() << ": the last " << count
               << " arguments are tensor maps\n");
    Builder b(ctx);
    Type bytes = LLVM::LLVMArrayType::get(b.getI8Type(), kTensorMapBytes);
    for (unsigned i = arguments - count; i < arguments; ++i) {
      if (!isa<LLVM::LLVMPointerType>(fn.getArgument(i).getType())) {
        fn.emitError() << "conv-lower-grid-constant-tensor-maps: argument "
                       << i << " (a tensor map) is not a pointer";
        return signalPassFailure();
      }
      fn.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                    TypeAttr::get(bytes));
      fn.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    b.getI64IntegerAttr(kTensorMapAlignment));
      fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                    b.getUnitAttr());
    }
  }
};

} // namespace
