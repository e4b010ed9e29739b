//===- LegalizeBF16.cpp - bf16 as i16 bits, bf16 arithmetic in f32 --------===//
//
// LLVM's x86 backend aborts ("Do not know how to soft promote this
// operator's operand!") on some bf16 vectors where AVX512-BF16 makes bf16
// vectors legal types: a <9 x bfloat>, <17 x bfloat> or <33 x bfloat> loaded
// in one block and stored in another is enough (llc -mcpu=cooperlake; the
// same IR compiles for x86-64-v3 and skylake-avx512). The im2col copies of a
// convolution with 17 channels make exactly those vectors. So the CPU
// pipeline hands LLVM no bf16 at all, the way IREE's CPU backend does
// (bf16 buffers as i16, bf16 arithmetic in f32):
//
//  1. every LLVM operation that computes on bf16 (llvm.intr.fmuladd of a
//     bf16 accumulator, fadd, fcmp, ...) computes in f32 between an fpext of
//     its operands and an fptrunc of its results: what the backend's soft
//     promotion does, so the numbers do not change;
//  2. fpext from bf16 becomes integer code (the 16 bits shifted into the
//     top half of an f32, exact), fptrunc to bf16 integer rounding to nearest
//     even (NaNs stay quiet NaNs);
//  3. every remaining bf16 (loads, stores, shuffles, phis, constants, memref
//     element types) becomes i16: the same bits, moved as integers.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-legalize-bf16"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERLEGALIZEBF16
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// bf16, or a vector of bf16.
bool isBF16Elementwise(Type type) {
  return isa<BFloat16Type>(getElementTypeOrSelf(type));
}

/// Whether bf16 appears anywhere in `type` (aggregates and function types
/// included).
bool mentionsBF16(Type type) {
  bool found = false;
  type.walk([&](BFloat16Type) { found = true; });
  return found;
}

bool mentionsBF16(Operation *op) {
  return llvm::any_of(op->getOperandTypes(),
                      [](Type t) { return mentionsBF16(t); }) ||
         llvm::any_of(op->getResultTypes(),
                      [](Type t) { return mentionsBF16(t); });
}

/// `type` with its (element) type replaced by `element`.
Type withElementType(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(element);
  return element;
}

/// Operations that only move bf16 bits (or are rewritten by step 2): they
/// stay as they are and get i16 types in step 3.
bool movesBitsOnly(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::GEPOp, LLVM::AllocaOp,
             LLVM::InsertElementOp, LLVM::ExtractElementOp,
             LLVM::ShuffleVectorOp, LLVM::InsertValueOp, LLVM::ExtractValueOp,
             LLVM::SelectOp, LLVM::FreezeOp, LLVM::BitcastOp, LLVM::BrOp,
             LLVM::CondBrOp, LLVM::SwitchOp, LLVM::ReturnOp, LLVM::ConstantOp,
             LLVM::PoisonOp, LLVM::UndefOp, LLVM::ZeroOp, LLVM::FPExtOp,
             LLVM::FPTruncOp, LLVM::MaskedLoadOp, LLVM::MaskedStoreOp,
             LLVM::masked_gather, LLVM::masked_scatter, LLVM::masked_expandload,
             LLVM::masked_compressstore, LLVM::vector_insert,
             LLVM::vector_extract, LLVM::GlobalOp, LLVM::AddressOfOp,
             LLVM::LLVMFuncOp>(op);
}

/// An AVX512-BF16 intrinsic (conv-lower-x86-dot-product's VDPBF16PS):
/// bf16 vectors are its operand types, legal where it is emitted. It is
/// neither widened nor given i16 operands (restoreIntrinsicOperands).
bool isBF16Intrinsic(Operation *op) {
  auto call = dyn_cast<LLVM::CallIntrinsicOp>(op);
  return call && call.getIntrin().starts_with("llvm.x86.avx512bf16.");
}

/// Step 1: `op` computes in f32 instead of bf16. Only scalar and vector
/// operands and results can be widened; anything else is reported.
LogicalResult widenToF32(Operation *op) {
  auto isWidenable = [](Type t) {
    return !mentionsBF16(t) || (isBF16Elementwise(t) &&
                                (isa<BFloat16Type>(t) || isa<VectorType>(t)));
  };
  if (!isa_and_nonnull<LLVM::LLVMDialect>(op->getDialect()) ||
      op->getNumRegions() != 0 || op->getNumSuccessors() != 0 ||
      isa<LLVM::CallOp, LLVM::InvokeOp, LLVM::CallIntrinsicOp>(op) ||
      !llvm::all_of(op->getOperandTypes(), isWidenable) ||
      !llvm::all_of(op->getResultTypes(), isWidenable))
    return op->emitOpError("computes on bf16 in a form that cannot be "
                           "widened to f32 for LLVM's x86 backend");
  OpBuilder builder(op);
  Type f32 = builder.getF32Type();
  IRMapping mapping;
  for (Value operand : op->getOperands())
    if (isBF16Elementwise(operand.getType()) && !mapping.contains(operand))
      mapping.map(operand,
                  LLVM::FPExtOp::create(builder, op->getLoc(),
                                        withElementType(operand.getType(), f32),
                                        operand));
  Operation *wide = builder.clone(*op, mapping);
  for (OpResult result : wide->getResults())
    if (isBF16Elementwise(result.getType()))
      result.setType(withElementType(result.getType(), f32));
  for (auto [narrow, result] :
       llvm::zip_equal(op->getResults(), wide->getResults())) {
    Value replacement = result;
    if (narrow.getType() != result.getType())
      replacement = LLVM::FPTruncOp::create(builder, op->getLoc(),
                                            narrow.getType(), result);
    narrow.replaceAllUsesWith(replacement);
  }
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] computing in f32: "
                          << op->getName() << "\n");
  op->erase();
  return success();
}

/// A constant of integer `type` (a splat where `type` is a vector).
Value intConstant(OpBuilder &builder, Location loc, Type type, uint64_t value) {
  auto element = cast<IntegerType>(getElementTypeOrSelf(type));
  APInt bits(element.getWidth(), value);
  if (auto vector = dyn_cast<VectorType>(type))
    return LLVM::ConstantOp::create(builder, loc, vector,
                                    DenseElementsAttr::get(vector, bits));
  return LLVM::ConstantOp::create(builder, loc, type,
                                  builder.getIntegerAttr(type, bits));
}

/// Step 2: bf16 -> f32 (or wider) as integer code: the 16 bits are the top
/// half of the f32, exactly.
void expandExtension(LLVM::FPExtOp ext) {
  OpBuilder builder(ext);
  Location loc = ext.getLoc();
  Type type = ext.getArg().getType();
  Type i16 = withElementType(type, builder.getI16Type());
  Type i32 = withElementType(type, builder.getI32Type());
  Type f32 = withElementType(type, builder.getF32Type());
  Value bits = LLVM::BitcastOp::create(builder, loc, i16, ext.getArg());
  Value wide = LLVM::ZExtOp::create(builder, loc, i32, bits);
  Value shifted = LLVM::ShlOp::create(builder, loc, i32, wide,
                                      intConstant(builder, loc, i32, 16));
  Value result = LLVM::BitcastOp::create(builder, loc, f32, shifted);
  if (f32 != ext.getType())
    result = LLVM::FPExtOp::create(builder, loc, ext.getType(), result);
  ext.replaceAllUsesWith(result);
  ext.erase();
}

/// Step 2: f32 (or narrower) -> bf16 as integer code, rounding to nearest
/// even: add 0x7fff plus the lowest kept bit, keep the top 16 bits. A NaN
/// keeps its sign and top payload bits and is made quiet (0x40).
LogicalResult expandTruncation(LLVM::FPTruncOp trunc) {
  OpBuilder builder(trunc);
  Location loc = trunc.getLoc();
  Value source = trunc.getArg();
  Type sourceElement = getElementTypeOrSelf(source.getType());
  // From f64 the two roundings (f64 -> f32 -> bf16) could differ from one;
  // nothing in the CPU pipeline truncates f64 to bf16.
  if (!sourceElement.isF32() && !sourceElement.isF16())
    return trunc.emitOpError("truncates ")
           << sourceElement << " to bf16; only f32 and f16 are expanded";
  Type type = trunc.getType();
  Type i16 = withElementType(type, builder.getI16Type());
  Type i32 = withElementType(type, builder.getI32Type());
  Type f32 = withElementType(type, builder.getF32Type());
  if (!sourceElement.isF32()) // f16 -> f32 is exact
    source = LLVM::FPExtOp::create(builder, loc, f32, source);
  Value bits = LLVM::BitcastOp::create(builder, loc, i32, source);
  Value top = LLVM::LShrOp::create(builder, loc, i32, bits,
                                   intConstant(builder, loc, i32, 16));
  Value lowestKept = LLVM::AndOp::create(builder, loc, i32, top,
                                         intConstant(builder, loc, i32, 1));
  Value bias = LLVM::AddOp::create(builder, loc, i32, lowestKept,
                                   intConstant(builder, loc, i32, 0x7fff));
  Value rounded = LLVM::LShrOp::create(
      builder, loc, i32, LLVM::AddOp::create(builder, loc, i32, bits, bias),
      intConstant(builder, loc, i32, 16));
  Value quietNaN = LLVM::OrOp::create(builder, loc, i32, top,
                                      intConstant(builder, loc, i32, 0x40));
  Value isNaN = LLVM::FCmpOp::create(builder, loc, LLVM::FCmpPredicate::uno,
                                     source, source);
  Value result = LLVM::TruncOp::create(
      builder, loc, i16,
      LLVM::SelectOp::create(builder, loc, isNaN, quietNaN, rounded));
  trunc.replaceAllUsesWith(
      LLVM::BitcastOp::create(builder, loc, type, result).getResult());
  trunc.erase();
  return success();
}

/// Step 2 with AVX512-BF16: an f32 vector of 8k lanes rounded by
/// VCVTNEPS2BF16, 16 lanes an instruction (`.512`; a last 8 with `.256`,
/// AVX512-VL's, which every AVX512-BF16 CPU has), the pieces taken out and
/// put back with llvm.vector.extract/insert. The calls' bf16 results are
/// bitcast to i16 at once; `calls` receives them, for step 3 to leave their
/// result types bf16. Returns false, with nothing changed, for another type.
bool truncateOnVCVTNEPS2BF16(LLVM::FPTruncOp trunc,
                             SmallVectorImpl<LLVM::CallIntrinsicOp> &calls) {
  auto source = dyn_cast<VectorType>(trunc.getArg().getType());
  if (!source || !source.getElementType().isF32() || source.isScalable() ||
      source.getRank() != 1 || source.getNumElements() % 8 != 0)
    return false;
  OpBuilder builder(trunc);
  Location loc = trunc.getLoc();
  int64_t lanes = source.getNumElements();
  Type i16 = builder.getI16Type(), bf16 = builder.getBF16Type();
  Value result =
      LLVM::PoisonOp::create(builder, loc, VectorType::get({lanes}, i16));
  for (int64_t offset = 0; offset < lanes;) {
    int64_t width = lanes - offset >= 16 ? 16 : 8;
    Value piece = trunc.getArg();
    if (width != lanes)
      piece = LLVM::vector_extract::create(
          builder, loc, VectorType::get({width}, builder.getF32Type()), piece,
          uint64_t(offset));
    auto call = LLVM::CallIntrinsicOp::create(
        builder, loc, VectorType::get({width}, bf16),
        builder.getStringAttr(width == 16
                                  ? "llvm.x86.avx512bf16.cvtneps2bf16.512"
                                  : "llvm.x86.avx512bf16.cvtneps2bf16.256"),
        ValueRange{piece});
    calls.push_back(call);
    Value bits = LLVM::BitcastOp::create(
        builder, loc, VectorType::get({width}, i16), call.getResult(0));
    result = width == lanes
                 ? bits
                 : LLVM::vector_insert::create(builder, loc, result.getType(),
                                               result, bits, uint64_t(offset))
                       .getResult();
    offset += width;
  }
  trunc.replaceAllUsesWith(
      LLVM::BitcastOp::create(builder, loc, trunc.getType(), result)
          .getResult());
  trunc.erase();
  return true;
}

/// After step 3: the result of a VCVTNEPS2BF16 call (now i16) made bf16
/// again, the intrinsic's type, and bitcast to i16 for its users.
void restoreIntrinsicResult(LLVM::CallIntrinsicOp call) {
  Value result = call.getResult(0);
  auto type = cast<VectorType>(result.getType());
  OpBuilder builder(call->getContext());
  builder.setInsertionPointAfter(call);
  result.setType(type.clone(builder.getBF16Type()));
  auto bits = LLVM::BitcastOp::create(builder, call.getLoc(), type, result);
  result.replaceAllUsesExcept(bits.getResult(), bits);
}

/// After step 3: the bf16 operand types of `call` (recorded before it, in
/// `types`), now i16, made bf16 again by a bitcast of the same bits.
void restoreIntrinsicOperands(LLVM::CallIntrinsicOp call,
                              ArrayRef<Type> types) {
  OpBuilder builder(call);
  for (auto [operand, type] : llvm::zip_equal(call->getOpOperands(), types))
    if (operand.get().getType() != type)
      operand.set(LLVM::BitcastOp::create(builder, call.getLoc(), type,
                                          operand.get()));
}

/// Step 3: bf16 -> i16 in every type and attribute of `module`.
void storeAsI16(ModuleOp module) {
  MLIRContext *context = module.getContext();
  Type i16 = IntegerType::get(context, 16);
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](BFloat16Type) -> Type { return i16; });
  replacer.addReplacement(
      [&](FloatAttr attr) -> std::optional<std::pair<Attribute, WalkResult>> {
        if (!isa<BFloat16Type>(attr.getType()))
          return std::nullopt;
        return std::make_pair(
            IntegerAttr::get(i16, attr.getValue().bitcastToAPInt()),
            WalkResult::skip());
      });
  replacer.addReplacement(
      [&](DenseFPElementsAttr attr)
          -> std::optional<std::pair<Attribute, WalkResult>> {
        if (!isa<BFloat16Type>(attr.getElementType()))
          return std::nullopt;
        return std::make_pair(Attribute(attr.bitcast(i16)), WalkResult::skip());
      });
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  // The bitcasts between bf16 and i16 that steps 1 and 2 made are now
  // i16 -> i16.
  module.walk([](LLVM::BitcastOp cast) {
    if (cast.getArg().getType() == cast.getType()) {
      cast.replaceAllUsesWith(cast.getArg());
      cast.erase();
    }
  });
}

struct ConvLowerLegalizeBF16Pass
    : conv_lower::impl::ConvLowerLegalizeBF16Base<ConvLowerLegalizeBF16Pass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A bf16 in the signature of a function another module sees is an ABI
    // (xmm registers, not general ones): it cannot become i16 here.
    WalkResult signatures = module.walk([](LLVM::LLVMFuncOp func) {
      if (func.isPrivate() || !mentionsBF16(func.getFunctionType()))
        return WalkResult::advance();
      func.emitOpError("has bf16 in its signature, which other modules "
                       "see: conv-lower-legalize-bf16 keeps ABIs as they are");
      return WalkResult::interrupt();
    });
    if (signatures.wasInterrupted())
      return signalPassFailure();

    SmallVector<Operation *> arithmetic;
    SmallVector<std::pair<LLVM::CallIntrinsicOp, SmallVector<Type>>>
        intrinsics;
    module.walk([&](Operation *op) {
      if (isBF16Intrinsic(op))
        intrinsics.emplace_back(cast<LLVM::CallIntrinsicOp>(op),
                                llvm::to_vector(op->getOperandTypes()));
      else if (!movesBitsOnly(op) && mentionsBF16(op))
        arithmetic.push_back(op);
    });
    for (Operation *op : arithmetic)
      if (failed(widenToF32(op)))
        return signalPassFailure();

    SmallVector<LLVM::FPExtOp> extensions;
    SmallVector<LLVM::FPTruncOp> truncations;
    module.walk([&](Operation *op) {
      if (auto ext = dyn_cast<LLVM::FPExtOp>(op);
          ext && isBF16Elementwise(ext.getArg().getType()))
        extensions.push_back(ext);
      if (auto trunc = dyn_cast<LLVM::FPTruncOp>(op);
          trunc && isBF16Elementwise(trunc.getType()))
        truncations.push_back(trunc);
    });
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << arithmetic.size()
                            << " ops widened to f32, " << extensions.size()
                            << " extensions and " << truncations.size()
                            << " truncations expanded\n");
    for (LLVM::FPExtOp ext : extensions)
      expandExtension(ext);
    SmallVector<LLVM::CallIntrinsicOp> conversions;
    for (LLVM::FPTruncOp trunc : truncations) {
      if (avx512BF16 && truncateOnVCVTNEPS2BF16(trunc, conversions))
        continue;
      if (failed(expandTruncation(trunc)))
        return signalPassFailure();
    }

    storeAsI16(module);
    for (auto &[call, types] : intrinsics)
      restoreIntrinsicOperands(call, types);
    for (LLVM::CallIntrinsicOp call : conversions)
      restoreIntrinsicResult(call);
  }
};

} // namespace
