//===- RowPieces.h - windowed ops by output rows of same-tap pieces -*- C++
//-*-//
//
// What conv-lower-depthwise-direct and conv-lower-max-pool-rows share: a
// 2-D windowed op over a channels-last image ([N, H, W, C] in, [N, Ho, Wo,
// C] out) computed as one scf.forall over (image, output row), each row
// filled in cache and then cut into pieces whose windows keep the same
// taps inside the image. A piece reads the image itself with those taps,
// so the padding is never materialized: for a convolution the padded taps
// add 0, for max pooling they never win. Each pass builds its own piece op
// (a depthwise convolution with its slice of the filter, a pooling over
// its window shape).
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_CPU_ROWPIECES_H
#define CONVLOWER_TRANSFORMS_CPU_ROWPIECES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/Support/MathExtras.h"

#include <array>

namespace mlir::conv_lower {

/// The window of a 2-D op along (rows, columns): the output's size, the
/// strides, dilations, kernel and the low padding (the high padding only
/// shows in which taps land in the image).
struct WindowGeometry {
  std::array<int64_t, 2> outSize, strides, dilations, kernel, padLow;
  int64_t channels;
};

/// A run of outputs [begin, end) along one dimension whose windows keep the
/// same taps [tapBegin, tapEnd) in the image (empty: all padding).
struct TapRun {
  int64_t begin, end, tapBegin, tapEnd;
};

/// One dimension's runs: the interior (every tap) and, at each edge, one run
/// per output whose window reaches into the padding (its taps there
/// dropped).
inline SmallVector<TapRun> tapRuns(int64_t outSize, int64_t imageSize,
                                   int64_t stride, int64_t padLow,
                                   int64_t dilation, int64_t kernel) {
  SmallVector<TapRun> runs;
  for (int64_t o = 0; o < outSize; ++o) {
    // Tap k reads row o * stride - padLow + k * dilation.
    int64_t first = o * stride - padLow;
    int64_t k0 = first >= 0 ? 0 : llvm::divideCeil(-first, dilation);
    int64_t k1 = std::min<int64_t>(
        kernel,
        first >= imageSize
            ? 0
            : llvm::divideFloorSigned(imageSize - 1 - first, dilation) + 1);
    k0 = std::min(k0, kernel);
    if (k1 < k0)
      k1 = k0;
    if (!runs.empty() && runs.back().tapBegin == k0 && runs.back().tapEnd == k1)
      runs.back().end = o + 1;
    else
      runs.push_back({o, o + 1, k0, k1});
  }
  return runs;
}

/// The runs along rows and columns of an image of `imageSize` (H, W).
inline std::array<SmallVector<TapRun>, 2>
tapRunsOf(const WindowGeometry &g, std::array<int64_t, 2> imageSize) {
  std::array<SmallVector<TapRun>, 2> runs;
  for (int d = 0; d < 2; ++d)
    runs[d] = tapRuns(g.outSize[d], imageSize[d], g.strides[d], g.padLow[d],
                      g.dilations[d], g.kernel[d]);
  return runs;
}

/// The image rows (d = 0) or columns (d = 1) that outputs [begin, end) read
/// with taps [tapBegin, tapEnd) along d: the first (tap k of output o reads
/// o * stride - padLow + k * dilation) and how many.
inline std::pair<int64_t, int64_t> windowSpan(const WindowGeometry &g, int d,
                                              int64_t begin, int64_t end,
                                              int64_t tapBegin,
                                              int64_t tapEnd) {
  int64_t dilation = g.dilations[d], stride = g.strides[d];
  return {begin * stride - g.padLow[d] + tapBegin * dilation,
          (end - begin - 1) * stride + (tapEnd - tapBegin - 1) * dilation + 1};
}

/// Builds one piece: the op over `window` (the image slice its outputs read
/// with taps [tapBegin, tapEnd) of each dimension) into `part` ([1, 1,
/// columns, C] of the row); returns its result.
using PieceBuilder = llvm::function_ref<Value(
    OpBuilder &, Location, Value window, std::array<int64_t, 2> tapBegin,
    std::array<int64_t, 2> tapEnd, Value part)>;

/// Output row `oh` of image `in` ([1, 1, Wo, C] `row`) in the row run
/// `rows`: each column run's piece, reading the image with the taps both
/// runs keep. Pieces whose windows lie all in the padding keep the row's
/// init.
inline Value rowOfPieces(OpBuilder &b, Location loc, const WindowGeometry &g,
                         Value image, Value in, Value oh, Value row,
                         const TapRun &rows, ArrayRef<TapRun> columns,
                         PieceBuilder buildPiece) {
  if (rows.tapBegin >= rows.tapEnd)
    return row;
  MLIRContext *ctx = b.getContext();
  AffineExpr d0;
  bindDims(ctx, d0);
  // Output row oh's window starts oh * sh below output row 0's.
  auto [rowZero, windowRows] =
      windowSpan(g, 0, 0, 1, rows.tapBegin, rows.tapEnd);
  OpFoldResult firstRow = affine::makeComposedFoldedAffineApply(
      b, loc, d0 * g.strides[0] + rowZero, {getAsOpFoldResult(oh)});
  SmallVector<OpFoldResult> unit = getAsIndexOpFoldResult(ctx, {1, 1, 1, 1});
  for (const TapRun &cols : columns) {
    if (cols.tapBegin >= cols.tapEnd)
      continue;
    int64_t width = cols.end - cols.begin;
    SmallVector<OpFoldResult> partOffsets =
        getAsIndexOpFoldResult(ctx, {0, 0, cols.begin, 0});
    SmallVector<OpFoldResult> partSizes =
        getAsIndexOpFoldResult(ctx, {1, 1, width, g.channels});
    Value part = tensor::ExtractSliceOp::create(b, loc, row, partOffsets,
                                                partSizes, unit);
    auto [firstColumn, windowColumns] =
        windowSpan(g, 1, cols.begin, cols.end, cols.tapBegin, cols.tapEnd);
    Value window = tensor::ExtractSliceOp::create(
        b, loc, image,
        {getAsOpFoldResult(in), firstRow, b.getIndexAttr(firstColumn),
         b.getIndexAttr(0)},
        getAsIndexOpFoldResult(ctx, {1, windowRows, windowColumns, g.channels}),
        unit);
    Value piece = buildPiece(b, loc, window, {rows.tapBegin, cols.tapBegin},
                             {rows.tapEnd, cols.tapEnd}, part);
    row = tensor::InsertSliceOp::create(b, loc, piece, row, partOffsets,
                                        partSizes, unit);
  }
  return row;
}

/// Output row `oh` by the row run it falls in: nested scf.if on oh, one
/// branch per run (rowOfPieces).
inline Value rowByRun(OpBuilder &b, Location loc, const WindowGeometry &g,
                      Value image, Value in, Value oh, Value row,
                      ArrayRef<TapRun> rowRuns, ArrayRef<TapRun> columns,
                      PieceBuilder buildPiece) {
  if (rowRuns.size() == 1)
    return rowOfPieces(b, loc, g, image, in, oh, row, rowRuns.front(), columns,
                       buildPiece);
  Value end = arith::ConstantIndexOp::create(b, loc, rowRuns.front().end);
  Value inFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, oh, end);
  auto branch = scf::IfOp::create(
      b, loc, inFirst,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(tb, l,
                             rowOfPieces(tb, l, g, image, in, oh, row,
                                         rowRuns.front(), columns, buildPiece));
      },
      [&](OpBuilder &eb, Location l) {
        scf::YieldOp::create(eb, l,
                             rowByRun(eb, l, g, image, in, oh, row,
                                      rowRuns.drop_front(), columns,
                                      buildPiece));
      });
  return branch.getResult(0);
}

/// The output as one scf.forall over (image, output row), what the threads
/// share, each row filled with `fillValue` (null: `acc` as it is) and then
/// computed in its pieces (rowByRun) while it is in cache. One forall whose
/// blocks cover the output also takes the epilogue into its rows
/// (conv-lower-parallel-epilogue). Returns the forall's result.
inline Value rowsInForall(RewriterBase &rewriter, Location loc,
                          const WindowGeometry &g, Value image, Value acc,
                          Value fillValue,
                          const std::array<SmallVector<TapRun>, 2> &runs,
                          PieceBuilder buildPiece) {
  MLIRContext *ctx = rewriter.getContext();
  int64_t n = cast<RankedTensorType>(image.getType()).getDimSize(0);
  auto forall = scf::ForallOp::create(
      rewriter, loc, getAsIndexOpFoldResult(ctx, {n, g.outSize[0]}),
      ValueRange{acc}, /*mapping=*/std::nullopt);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  Value in = forall.getInductionVar(0), oh = forall.getInductionVar(1);
  Value shared = forall.getRegionIterArgs()[0];
  SmallVector<OpFoldResult> rowOffsets = {in, oh, rewriter.getIndexAttr(0),
                                          rewriter.getIndexAttr(0)};
  SmallVector<OpFoldResult> rowSizes =
      getAsIndexOpFoldResult(ctx, {1, 1, g.outSize[1], g.channels});
  SmallVector<OpFoldResult> unit = getAsIndexOpFoldResult(ctx, {1, 1, 1, 1});
  Value row = tensor::ExtractSliceOp::create(rewriter, loc, shared, rowOffsets,
                                             rowSizes, unit);
  if (fillValue)
    row = linalg::FillOp::create(rewriter, loc, fillValue, row).getResult(0);
  row = rowByRun(rewriter, loc, g, image, in, oh, row, runs[0], runs[1],
                 buildPiece);
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(rewriter, loc, row, shared, rowOffsets,
                                        rowSizes, unit);
  return forall.getResult(0);
}

} // namespace mlir::conv_lower

#endif
