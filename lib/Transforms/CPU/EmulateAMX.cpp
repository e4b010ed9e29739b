//===- EmulateAMX.cpp - AMX tile operations in vector code
//-----------------===//
//
// The AMX route's CPU twin. Each tile value becomes a vector of the tile's
// shape, each tile operation its architectural definition (Intel's SDM,
// "Intel AMX Instruction Set Reference") in vector code:
//
//   tilezero            every element 0
//   tileloadd/tilestored row i: `cols` contiguous elements at base + i *
//                       stride (the stride in elements here, bytes there)
//   tdpbf16ps           C[m][n] += A[m][2k] B[k][2n] + A[m][2k+1] B[k][2n+1]
//                       over the k of A's row (products and sums in f32)
//   tdpbssd (and the    C[m][n] += sum over j < 4 of A[m][4k+j] B[k][4n+j],
//   unsigned forms)     bytes extended to i32 (signed, or zero-extended per
//                       the op's zext), sums in wrapping i32
//
// so conv-lower-amx-tiles' tile program (its grid, its operand addressing,
// its edge tiles and its loop-carried accumulators) runs, and is checked
// against the float64 reference, on a CPU without AMX. What it cannot
// check is LLVM's tile configuration and register allocation, which the
// lit tests cover by compiling the real intrinsics.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "AMXTypeConversion.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWEREMULATEAMX
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// A tile as the vector of its shape.
VectorType vectorOf(amx::TileType tile) {
  return VectorType::get(tile.getShape(), tile.getElementType());
}

/// The tile rows' addressing: the buffer as a flat 1-D memref of its
/// elements, the index of the tile's first element in it and the stride
/// between rows (the explicit one, else that of the buffer's second
/// innermost dimension).
struct FlatRows {
  Value flat, first, stride;
};

FlatRows flatRows(OpBuilder &b, Location loc, Value base, ValueRange indices,
                  Value stride) {
  auto type = cast<MemRefType>(base.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, base);
  Value first = metadata.getOffset();
  for (auto [index, dimStride] : llvm::zip(indices, metadata.getStrides()))
    first = arith::AddIOp::create(
        b, loc, first, arith::MulIOp::create(b, loc, index, dimStride));
  if (!stride)
    stride = metadata.getStrides()[type.getRank() - 2];
  // The extent is not checked by the loads and stores below; the largest
  // index is as good as any.
  Value extent = arith::ConstantIndexOp::create(
      b, loc, std::numeric_limits<int32_t>::max());
  auto flatType =
      MemRefType::get({ShapedType::kDynamic}, type.getElementType());
  Value flat = memref::ReinterpretCastOp::create(
      b, loc, flatType, metadata.getBaseBuffer(), b.getIndexAttr(0),
      ArrayRef<OpFoldResult>{extent},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  return {flat, first, stride};
}

/// The start of row `row` in `rows`.
Value rowStart(OpBuilder &b, Location loc, const FlatRows &rows, int64_t row) {
  if (row == 0)
    return rows.first;
  Value offset = arith::MulIOp::create(
      b, loc, rows.stride, arith::ConstantIndexOp::create(b, loc, row));
  return arith::AddIOp::create(b, loc, rows.first, offset);
}

/// Calls `visit` for each of the tile's `count` rows in order, with the
/// flat buffer and a builder of the row's start (base[indices] + row *
/// stride, made where `visit` asks for it): the row loop of tileloadd and
/// tilestored.
void forEachTileRow(
    OpBuilder &b, Location loc, Value base, ValueRange indices, Value stride,
    int64_t count,
    function_ref<void(Value, function_ref<Value()>, int64_t)> visit) {
  FlatRows rows = flatRows(b, loc, base, indices, stride);
  for (int64_t row = 0; row < count; ++row)
    visit(
        rows.flat, [&] { return rowStart(b, loc, rows, row); }, row);
}

struct TileZeroToVector : OpConversionPattern<amx::TileZeroOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(amx::TileZeroOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    VectorType type = vectorOf(op.getTileType());
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type,
                                                   rewriter.getZeroAttr(type));
    return success();
  }
};

struct TileLoadToVector : OpConversionPattern<amx::TileLoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(amx::TileLoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    VectorType type = vectorOf(op.getTileType());
    auto rowType = VectorType::get({type.getDimSize(1)}, type.getElementType());
    Value tile = arith::ConstantOp::create(rewriter, loc, type,
                                           rewriter.getZeroAttr(type));
    forEachTileRow(rewriter, loc, adaptor.getBase(), adaptor.getIndices(),
                   adaptor.getStride(), type.getDimSize(0),
                   [&](Value flat, function_ref<Value()> start, int64_t row) {
                     Value values = vector::LoadOp::create(
                         rewriter, loc, rowType, flat, ValueRange{start()});
                     tile = vector::InsertOp::create(rewriter, loc, values,
                                                     tile, row);
                   });
    rewriter.replaceOp(op, tile);
    return success();
  }
};

struct TileStoreToVector : OpConversionPattern<amx::TileStoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(amx::TileStoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    VectorType type = vectorOf(op.getTileType());
    forEachTileRow(rewriter, loc, adaptor.getBase(), adaptor.getIndices(),
                   adaptor.getStride(), type.getDimSize(0),
                   [&](Value flat, function_ref<Value()> start, int64_t row) {
                     Value values = vector::ExtractOp::create(
                         rewriter, loc, adaptor.getVal(), row);
                     vector::StoreOp::create(rewriter, loc, values, flat,
                                             ValueRange{start()});
                   });
    rewriter.eraseOp(op);
    return success();
  }
};

/// `v` widened to `type`: floats extended, integers zero- or sign-extended.
Value widen(OpBuilder &b, Location loc, Value v, VectorType type, bool zext) {
  if (isa<FloatType>(type.getElementType()))
    return arith::ExtFOp::create(b, loc, type, v);
  if (zext)
    return arith::ExtUIOp::create(b, loc, type, v);
  return arith::ExtSIOp::create(b, loc, type, v);
}

/// A tile product as a contraction: A [M, gK] and B [K, gN] split into
/// their groups [M, K, g] and [K, N, g], each widened to the accumulator's
/// type (`zextLhs`, `zextRhs`: integers zero-extended, else sign-extended),
/// contracted over (k, group member) into C [M, N].
Value contractGroups(OpBuilder &b, Location loc, Value lhs, Value rhs,
                     Value acc, int64_t group, bool zextLhs, bool zextRhs) {
  auto accType = cast<VectorType>(acc.getType());
  int64_t m = cast<VectorType>(lhs.getType()).getDimSize(0);
  auto rhsType = cast<VectorType>(rhs.getType());
  int64_t k = rhsType.getDimSize(0), n = rhsType.getDimSize(1) / group;
  auto groups = [&](Value v, int64_t rows, int64_t cols, bool zext) {
    Type element = cast<VectorType>(v.getType()).getElementType();
    Value split = vector::ShapeCastOp::create(
        b, loc, VectorType::get({rows, cols, group}, element), v);
    return widen(b, loc, split,
                 VectorType::get({rows, cols, group}, accType.getElementType()),
                 zext);
  };
  Value a = groups(lhs, m, k, zextLhs);
  Value w = groups(rhs, k, n, zextRhs);
  MLIRContext *ctx = b.getContext();
  AffineExpr dm, dn, dk, dp;
  bindDims(ctx, dm, dn, dk, dp);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {dm, dk, dp}, ctx),
                                 AffineMap::get(4, 0, {dk, dn, dp}, ctx),
                                 AffineMap::get(4, 0, {dm, dn}, ctx)};
  auto parallel = vector::IteratorType::parallel;
  auto reduction = vector::IteratorType::reduction;
  return vector::ContractionOp::create(
      b, loc, a, w, acc, b.getAffineMapArrayAttr(maps),
      b.getArrayAttr({vector::IteratorTypeAttr::get(ctx, parallel),
                      vector::IteratorTypeAttr::get(ctx, parallel),
                      vector::IteratorTypeAttr::get(ctx, reduction),
                      vector::IteratorTypeAttr::get(ctx, reduction)}));
}

/// TDPBF16PS: A [M, 2K] and B [K, 2N] as pairs [M, K, 2] and [K, N, 2],
/// widened to f32, contracted over (k, pair) into C [M, N].
struct TileMulFToVector : OpConversionPattern<amx::TileMulFOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(amx::TileMulFOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, contractGroups(rewriter, op.getLoc(),
                                          adaptor.getLhs(), adaptor.getRhs(),
                                          adaptor.getAcc(), 2, false, false));
    return success();
  }
};

/// TDPB[SU][SU]D: A [M, 4K] and B [K, 4N] as quads [M, K, 4] and [K, N,
/// 4], each side sign- or zero-extended to i32 as the op says, contracted
/// over (k, byte) into C [M, N] (i32 arithmetic, wrapping like the
/// instruction's).
struct TileMulIToVector : OpConversionPattern<amx::TileMulIOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(amx::TileMulIOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, contractGroups(rewriter, op.getLoc(), adaptor.getLhs(),
                           adaptor.getRhs(), adaptor.getAcc(), 4,
                           op.getIsZextLhs(), op.getIsZextRhs()));
    return success();
  }
};

struct ConvLowerEmulateAMXPass
    : conv_lower::impl::ConvLowerEmulateAMXBase<ConvLowerEmulateAMXPass> {
  void runOnOperation() override {
    auto addTileOps = [](const TypeConverter &types,
                         RewritePatternSet &patterns,
                         ConversionTarget &target) {
      target.addIllegalDialect<amx::AMXDialect>();
      patterns.add<TileZeroToVector, TileLoadToVector, TileStoreToVector,
                   TileMulFToVector, TileMulIToVector>(types,
                                                       patterns.getContext());
    };
    if (failed(
            conv_lower::retypeAMXTiles(getOperation(), vectorOf, addTileOps)))
      signalPassFailure();
  }
};

} // namespace
