//===- ConvLowerDialect.cpp - conv_lower dialect --------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

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
    if (!isa<KernelTilesAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' must be a #conv_lower.tiles attribute";
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
    if (!maps || !llvm::all_of(maps, llvm::IsaPred<TensorMapAttr>))
      return op->emitOpError()
             << "'" << name << "' must be an array of #conv_lower.tensor_map";
    return success();
  }
  if (name == WinogradAttrHelper::getNameStr() ||
      name == GroupedDirectAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  if (name == PackedAttrHelper::getNameStr()) {
    auto types = dyn_cast<ArrayAttr>(attr.getValue());
    auto isStaticMemRef = [](Attribute a) {
      auto type = dyn_cast<TypeAttr>(a);
      auto memref = type ? dyn_cast<MemRefType>(type.getValue()) : nullptr;
      return memref && memref.hasStaticShape();
    };
    if (!types || !llvm::all_of(types, isStaticMemRef))
      return op->emitOpError()
             << "'" << name << "' must be an array of static memref types";
    return success();
  }
  if (name == ConstantAttrHelper::getNameStr())
    return op->emitOpError() << "'" << name
                             << "' marks a function argument, not an op";
  return op->emitOpError() << "unknown conv_lower attribute '" << name << "'";
}

LogicalResult ConvLowerDialect::verifyRegionArgAttribute(
    Operation *op, unsigned regionIndex, unsigned argIndex,
    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != ConstantAttrHelper::getNameStr())
    return op->emitOpError() << "unknown conv_lower argument attribute '"
                             << name << "'";
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitOpError() << "'" << name << "' must be a unit attribute";
  return success();
}

//===----------------------------------------------------------------------===//
// KernelTilesAttr
//===----------------------------------------------------------------------===//

namespace {
/// Which of the optional parameters a family takes.
struct TilesFields {
  bool block, warps, warpgroups, stages, vectorized, storeVector, pixelRun,
      gathered, channelsPerThread;
};
} // namespace

static TilesFields fieldsOf(KernelFamily family) {
  switch (family) {
  case KernelFamily::mma_sync:
    return {true, true, false, true, true, true, true, false, false};
  case KernelFamily::sm90a_tma_wgmma:
    return {true, false, true, true, false, true, false, true, false};
  case KernelFamily::direct_depthwise:
    return {false, false, false, false, false, false, false, false, true};
  }
  llvm_unreachable("unknown kernel family");
}

static bool allPositive(ArrayRef<int64_t> values) {
  return llvm::all_of(values, [](int64_t v) { return v > 0; });
}

LogicalResult
KernelTilesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        KernelFamily family, ArrayRef<int64_t> block,
                        ArrayRef<int64_t> warps, ArrayRef<int64_t> warpgroups,
                        std::optional<int64_t> stages, BoolAttr aVectorized,
                        BoolAttr bVectorized,
                        std::optional<int64_t> storeVector,
                        std::optional<int64_t> aPixelRun, BoolAttr aGathered,
                        std::optional<int64_t> channelsPerThread) {
  StringRef familyName = stringifyKernelFamily(family);
  TilesFields takes = fieldsOf(family);
  // Each parameter: present where the family requires it, absent where it
  // takes none.
  auto field = [&](StringRef name, bool present, bool allowed,
                   bool required) -> LogicalResult {
    if (present && !allowed)
      return emitError() << "'" << name << "' is not a parameter of the "
                         << familyName << " family";
    if (!present && required)
      return emitError() << "the " << familyName << " family needs '" << name
                         << "'";
    return success();
  };
  bool gemm = family != KernelFamily::direct_depthwise;
  if (failed(field("block", !block.empty(), takes.block, gemm)) ||
      failed(field("warps", !warps.empty(), takes.warps, takes.warps)) ||
      failed(field("warpgroups", !warpgroups.empty(), takes.warpgroups,
                   takes.warpgroups)) ||
      failed(field("stages", stages.has_value(), takes.stages, gemm)) ||
      failed(field("a_vectorized", bool(aVectorized), takes.vectorized,
                   takes.vectorized)) ||
      failed(field("b_vectorized", bool(bVectorized), takes.vectorized,
                   takes.vectorized)) ||
      failed(field("store_vector", storeVector.has_value(), takes.storeVector,
                   false)) ||
      failed(field("a_pixel_run", aPixelRun.has_value(), takes.pixelRun,
                   false)) ||
      failed(field("a_gathered", bool(aGathered), takes.gathered, false)) ||
      failed(field("channels_per_thread", channelsPerThread.has_value(),
                   takes.channelsPerThread, takes.channelsPerThread)))
    return failure();
  if (!block.empty() && (block.size() != 3 || !allPositive(block)))
    return emitError() << "'block' must be three positive extents [M, N, K]";
  if (!warps.empty()) {
    if (warps.size() != 2 || !allPositive(warps))
      return emitError() << "'warps' must be two positive counts [M, N]";
    if (block[0] % warps[0] || block[1] % warps[1])
      return emitError() << "'warps' must divide the block's M and N";
  }
  if (!warpgroups.empty() && (warpgroups.size() != 2 || warpgroups[0] != 1 ||
                              warpgroups[1] < 1 ||
                              block[0] % (64 * warpgroups[1])))
    return emitError() << "'warpgroups' must be [1, consumers], each "
                          "consumer 64 rows of the block";
  if (stages && *stages < 2)
    return emitError() << "'stages' must be at least 2 (a ring)";
  if (storeVector && (*storeVector < 1 || !llvm::isPowerOf2_64(*storeVector)))
    return emitError() << "'store_vector' must be a positive power of two";
  if (aPixelRun && *aPixelRun < 1)
    return emitError() << "'a_pixel_run' must be positive";
  if (channelsPerThread && *channelsPerThread < 1)
    return emitError() << "'channels_per_thread' must be positive";
  return success();
}

//===----------------------------------------------------------------------===//
// TensorMapAttr
//===----------------------------------------------------------------------===//

LogicalResult TensorMapAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef name,
    StringRef argument, TensorMapMode mode, StringRef dtype,
    ArrayRef<int64_t> dims, ArrayRef<int64_t> stridesBytes,
    ArrayRef<int64_t> box, ArrayRef<int64_t> elementStrides,
    ArrayRef<int64_t> lowerCorner, ArrayRef<int64_t> upperCorner,
    StringRef swizzle) {
  bool im2col = mode == TensorMapMode::im2col;
  size_t rank = dims.size();
  // The driver's bounds (cuTensorMapEncodeTiled / Im2col).
  if (rank < (im2col ? 3u : 1u) || rank > 5)
    return emitError() << "tensor map '" << name << "': "
                       << (im2col ? "3 to 5" : "1 to 5")
                       << " dimensions, not " << rank;
  if (!allPositive(dims))
    return emitError() << "tensor map '" << name << "': 'dims' must be positive";
  if (stridesBytes.size() != rank - 1 || !allPositive(stridesBytes))
    return emitError() << "tensor map '" << name
                       << "': 'strides_bytes' must hold the rank - 1 outer "
                          "dimensions' positive strides";
  if (elementStrides.size() != rank || !allPositive(elementStrides))
    return emitError() << "tensor map '" << name
                       << "': 'element_strides' must hold one positive "
                          "stride per dimension";
  if (box.size() != (im2col ? 2 : rank) || !allPositive(box))
    return emitError() << "tensor map '" << name << "': 'box' must hold "
                       << (im2col ? "[channels per pixel, pixels per column]"
                                  : "one positive extent per dimension");
  if (im2col && (lowerCorner.size() != rank - 2 ||
                 upperCorner.size() != rank - 2))
    return emitError() << "tensor map '" << name
                       << "': an im2col map needs 'lower_corner' and "
                          "'upper_corner' of rank - 2 entries";
  if (!im2col && (!lowerCorner.empty() || !upperCorner.empty()))
    return emitError() << "tensor map '" << name
                       << "': only an im2col map has corners";
  if (!llvm::is_contained({"f16", "bf16", "f32", "i8", "i32"}, dtype))
    return emitError() << "tensor map '" << name << "': dtype '" << dtype
                       << "' is not f16, bf16, f32, i8 or i32";
  if (!llvm::is_contained({"none", "32B", "64B", "128B"}, swizzle))
    return emitError() << "tensor map '" << name << "': swizzle '" << swizzle
                       << "' is not none, 32B, 64B or 128B";
  if (argument.empty())
    return emitError() << "tensor map '" << name << "': no argument";
  return success();
}
