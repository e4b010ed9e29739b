//===- MaxPoolRows.cpp - max pooling on CPU vectors, by output rows -------===//
//
// linalg.pooling_nhwc_max over a -inf padded image (what ConvModule builds
// for torch's max_pool2d) otherwise reaches the CPU pipeline's generic
// lowering: the padded copy of the whole image first, then scalar loops
// (ResNet-50's 3x3/2 pooling of 64 x 112 x 112 at batch 2: 1.45 ms, torch
// 0.5 at batch 1, ONNX Runtime 0.11). Here it is computed as the direct
// depthwise convolutions are (conv-lower-depthwise-direct): one scf.forall
// over (image, output row), each row cut into pieces whose windows keep
// the same taps in the image (the padding, -inf, never wins a maximum, so
// a border pixel's window simply drops the taps that land in it: no padded
// copy), each piece a pooling of the image itself tiled into register
// tiles of output columns x channels and one window row, which upstream's
// DownscaleSizeOneWindowed2DConvolution makes 1-D poolings and its
// vectorizer turns into maxima of channel vectors, the window's columns
// unrolled.
//
//===----------------------------------------------------------------------===//

#include "Transforms/CPU/DirectConvUtils.h"
#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#include <array>

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERMAXPOOLROWS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// A run of outputs [begin, end) along one dimension whose windows keep the
/// same taps [tapBegin, tapEnd) in the image (empty: all padding).
struct TapRun {
  int64_t begin, end, tapBegin, tapEnd;
};

/// One dimension's runs: the interior keeps every tap, each border output
/// those its window does not lose to the padding.
SmallVector<TapRun> tapRuns(int64_t outSize, int64_t imageSize, int64_t stride,
                            int64_t dilation, int64_t padLow, int64_t kernel) {
  SmallVector<TapRun> runs;
  for (int64_t o = 0; o < outSize; ++o) {
    int64_t first = kernel, last = -1;
    for (int64_t k = 0; k < kernel; ++k) {
      int64_t at = o * stride - padLow + k * dilation;
      if (at >= 0 && at < imageSize) {
        first = std::min(first, k);
        last = k;
      }
    }
    int64_t tapBegin = last < 0 ? 0 : first, tapEnd = last < 0 ? 0 : last + 1;
    if (!runs.empty() && runs.back().tapBegin == tapBegin &&
        runs.back().tapEnd == tapEnd) {
      runs.back().end = o + 1;
      continue;
    }
    runs.push_back({o, o + 1, tapBegin, tapEnd});
  }
  return runs;
}

/// A max pooling this pass takes: NHWC, 2-D, static shapes, float data,
/// its input an image or a -inf padding of one along H and W only.
struct PoolPlan {
  linalg::PoolingNhwcMaxOp op;
  Value image;
  tensor::PadOp pad;
  int64_t n, height, width, channels;
  std::array<int64_t, 2> strides, dilations, kernel, outSize, padLow;
  /// The accumulator, and the value its fill writes (null: no fill).
  Value acc, fillValue;
};

bool isNegativeInfinity(Value v) {
  FloatAttr attr;
  return matchPattern(v, m_Constant(&attr)) && attr.getValue().isInfinity() &&
         attr.getValue().isNegative();
}

/// The image under a -inf pad of H and W with static amounts, and those
/// amounts; or `input` itself with none.
std::optional<std::pair<Value, std::array<int64_t, 2>>>
paddedImage(Value input, tensor::PadOp &pad) {
  pad = input.getDefiningOp<tensor::PadOp>();
  if (!pad)
    return std::make_pair(input, std::array<int64_t, 2>{0, 0});
  ArrayRef<int64_t> low = pad.getStaticLow(), high = pad.getStaticHigh();
  if (ShapedType::isDynamicShape(low) || ShapedType::isDynamicShape(high) ||
      low[0] || high[0] || low[3] || high[3] ||
      !isNegativeInfinity(pad.getConstantPaddingValue()))
    return std::nullopt;
  return std::make_pair(pad.getSource(),
                        std::array<int64_t, 2>{low[1], low[2]});
}

std::optional<PoolPlan> planPool(linalg::PoolingNhwcMaxOp op) {
  auto outType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  auto windowType =
      dyn_cast<RankedTensorType>(op.getDpsInputOperand(1)->get().getType());
  if (!outType || !windowType || !outType.hasStaticShape() ||
      !windowType.hasStaticShape() || op.hasDynamicShape() ||
      !isa<FloatType>(outType.getElementType()))
    return std::nullopt;
  PoolPlan plan;
  plan.op = op;
  auto image = paddedImage(op.getDpsInputOperand(0)->get(), plan.pad);
  if (!image)
    return std::nullopt;
  plan.image = image->first;
  plan.padLow = image->second;
  auto imageType = cast<RankedTensorType>(plan.image.getType());
  if (!imageType.hasStaticShape() ||
      !isa<FloatType>(imageType.getElementType()))
    return std::nullopt;
  plan.n = imageType.getDimSize(0), plan.height = imageType.getDimSize(1);
  plan.width = imageType.getDimSize(2), plan.channels = imageType.getDimSize(3);
  auto strides = llvm::to_vector(op.getStrides().getValues<int64_t>());
  auto dilations = llvm::to_vector(op.getDilations().getValues<int64_t>());
  plan.strides = {strides[0], strides[1]};
  plan.dilations = {dilations[0], dilations[1]};
  plan.kernel = {windowType.getDimSize(0), windowType.getDimSize(1)};
  plan.outSize = {outType.getDimSize(1), outType.getDimSize(2)};
  Value init = op.getDpsInitOperand(0)->get();
  plan.acc = init;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    plan.acc = fill.getOutputs()[0];
    plan.fillValue = fill.getInputs()[0];
  }
  return plan;
}

/// The pooling of `window` into `part` over the taps [tapBegin, tapEnd) of
/// each dimension (the window operand only gives its shape).
linalg::PoolingNhwcMaxOp poolPiece(OpBuilder &b, Location loc,
                                   const PoolPlan &plan, Value window,
                                   std::array<int64_t, 2> taps, Value part) {
  Type element = getElementTypeOrSelf(part.getType());
  Value shape = tensor::EmptyOp::create(b, loc, taps, element);
  return linalg::PoolingNhwcMaxOp::create(
      b, loc, TypeRange{part.getType()}, ValueRange{window, shape},
      ValueRange{part},
      {b.getNamedAttr("strides", b.getI64TensorAttr(plan.strides)),
       b.getNamedAttr("dilations", b.getI64TensorAttr(plan.dilations))});
}

/// The first input row or column and the extent that `count` outputs from
/// `first` read with taps [tapBegin, tapEnd) along dimension d.
std::pair<int64_t, int64_t> windowSpan(const PoolPlan &plan, int d,
                                       int64_t first, int64_t count,
                                       int64_t tapBegin, int64_t tapEnd) {
  int64_t start =
      first * plan.strides[d] - plan.padLow[d] + tapBegin * plan.dilations[d];
  int64_t extent = (count - 1) * plan.strides[d] +
                   (tapEnd - tapBegin - 1) * plan.dilations[d] + 1;
  return {start, extent};
}

/// Output row `oh` of image `in`, [1, 1, Wo, C], in the row run `rows`:
/// each column run a pooling of the image with the taps both runs keep.
Value rowOfPieces(OpBuilder &b, Location loc, const PoolPlan &plan, Value in,
                  Value oh, Value row, const TapRun &rows,
                  ArrayRef<TapRun> columns,
                  SmallVector<linalg::PoolingNhwcMaxOp> &pieces) {
  if (rows.tapBegin >= rows.tapEnd)
    return row;
  MLIRContext *ctx = b.getContext();
  AffineExpr d0;
  bindDims(ctx, d0);
  auto [rowZero, windowRows] =
      windowSpan(plan, 0, 0, 1, rows.tapBegin, rows.tapEnd);
  OpFoldResult firstRow = affine::makeComposedFoldedAffineApply(
      b, loc, d0 * plan.strides[0] + rowZero, {getAsOpFoldResult(oh)});
  SmallVector<OpFoldResult> unit = getAsIndexOpFoldResult(ctx, {1, 1, 1, 1});
  for (const TapRun &cols : columns) {
    if (cols.tapBegin >= cols.tapEnd)
      continue;
    int64_t width = cols.end - cols.begin;
    SmallVector<OpFoldResult> partOffsets =
        getAsIndexOpFoldResult(ctx, {0, 0, cols.begin, 0});
    SmallVector<OpFoldResult> partSizes =
        getAsIndexOpFoldResult(ctx, {1, 1, width, plan.channels});
    Value part = tensor::ExtractSliceOp::create(b, loc, row, partOffsets,
                                                partSizes, unit);
    auto [firstColumn, windowColumns] =
        windowSpan(plan, 1, cols.begin, width, cols.tapBegin, cols.tapEnd);
    Value window = tensor::ExtractSliceOp::create(
        b, loc, plan.image,
        {getAsOpFoldResult(in), firstRow, b.getIndexAttr(firstColumn),
         b.getIndexAttr(0)},
        getAsIndexOpFoldResult(ctx,
                               {1, windowRows, windowColumns, plan.channels}),
        unit);
    auto piece = poolPiece(
        b, loc, plan, window,
        {rows.tapEnd - rows.tapBegin, cols.tapEnd - cols.tapBegin}, part);
    pieces.push_back(piece);
    row = tensor::InsertSliceOp::create(b, loc, piece->getResult(0), row,
                                        partOffsets, partSizes, unit);
  }
  return row;
}

/// Output row `oh` by the row run it falls in: nested scf.if on oh.
Value rowByRun(OpBuilder &b, Location loc, const PoolPlan &plan, Value in,
               Value oh, Value row, ArrayRef<TapRun> rowRuns,
               ArrayRef<TapRun> columns,
               SmallVector<linalg::PoolingNhwcMaxOp> &pieces) {
  if (rowRuns.size() == 1)
    return rowOfPieces(b, loc, plan, in, oh, row, rowRuns.front(), columns,
                       pieces);
  Value end = arith::ConstantIndexOp::create(b, loc, rowRuns.front().end);
  Value inFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, oh, end);
  auto branch = scf::IfOp::create(
      b, loc, inFirst,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(tb, l,
                             rowOfPieces(tb, l, plan, in, oh, row,
                                         rowRuns.front(), columns, pieces));
      },
      [&](OpBuilder &eb, Location l) {
        scf::YieldOp::create(eb, l,
                             rowByRun(eb, l, plan, in, oh, row,
                                      rowRuns.drop_front(), columns, pieces));
      });
  return branch.getResult(0);
}

/// Replaces the pooling by one scf.forall over (image, output row), each
/// row filled and then pooled in its pieces while it is in cache; returns
/// the pieces (one row each, still to be tiled into registers).
SmallVector<linalg::PoolingNhwcMaxOp> rewriteInRows(RewriterBase &rewriter,
                                                    PoolPlan &plan) {
  MLIRContext *ctx = rewriter.getContext();
  Location loc = plan.op.getLoc();
  std::array<SmallVector<TapRun>, 2> runs;
  for (int d = 0; d < 2; ++d)
    runs[d] =
        tapRuns(plan.outSize[d], d ? plan.width : plan.height, plan.strides[d],
                plan.dilations[d], plan.padLow[d], plan.kernel[d]);
  rewriter.setInsertionPoint(plan.op);
  auto forall = scf::ForallOp::create(
      rewriter, loc, getAsIndexOpFoldResult(ctx, {plan.n, plan.outSize[0]}),
      ValueRange{plan.acc}, /*mapping=*/std::nullopt);
  SmallVector<linalg::PoolingNhwcMaxOp> pieces;
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(forall.getBody());
    Value in = forall.getInductionVar(0), oh = forall.getInductionVar(1);
    Value shared = forall.getRegionIterArgs()[0];
    SmallVector<OpFoldResult> rowOffsets = {in, oh, rewriter.getIndexAttr(0),
                                            rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> rowSizes =
        getAsIndexOpFoldResult(ctx, {1, 1, plan.outSize[1], plan.channels});
    SmallVector<OpFoldResult> unit = getAsIndexOpFoldResult(ctx, {1, 1, 1, 1});
    Value row = tensor::ExtractSliceOp::create(rewriter, loc, shared,
                                               rowOffsets, rowSizes, unit);
    if (plan.fillValue)
      row = linalg::FillOp::create(rewriter, loc, plan.fillValue, row)
                .getResult(0);
    row = rowByRun(rewriter, loc, plan, in, oh, row, runs[0], runs[1], pieces);
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, row, shared,
                                          rowOffsets, rowSizes, unit);
  }
  rewriter.replaceOp(plan.op, forall.getResult(0));
  if (plan.pad && plan.pad->use_empty())
    rewriter.eraseOp(plan.pad);
  return pieces;
}

/// Tiles one row's piece (loops n, oh, ow, c, kh, kw; n and oh of extent
/// 1) into register tiles of `columns` output columns x `channels` channels
/// and one window row: 1-D poolings, vectorized.
LogicalResult tileRowAndVectorize(RewriterBase &rewriter,
                                  linalg::PoolingNhwcMaxOp piece,
                                  int64_t columns, int64_t channels) {
  SmallVector<int64_t> ranges =
      cast<linalg::LinalgOp>(piece.getOperation()).getStaticLoopRanges();
  // Full tiles only (divisors), so that every tile is static and vectorizes.
  FailureOr<linalg::LinalgOp> reg =
      tileInPlace(rewriter, cast<linalg::LinalgOp>(piece.getOperation()),
                  {0, 0, largestDividingTile(ranges[2], columns),
                   largestDividingTile(ranges[3], channels), 1, 0});
  if (failed(reg))
    return failure();
  return downscaleAndVectorize<
      linalg::DownscaleSizeOneWindowed2DConvolution<linalg::PoolingNhwcMaxOp,
                                                    linalg::PoolingNwcMaxOp>,
      linalg::PoolingNwcMaxOp>(rewriter, *reg);
}

struct ConvLowerMaxPoolRowsPass
    : conv_lower::impl::ConvLowerMaxPoolRowsBase<ConvLowerMaxPoolRowsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (tileColumns < 1 || tileChannels < 1) {
      getOperation()->emitError() << "conv-lower-max-pool-rows: the tile "
                                     "sizes must be positive";
      return signalPassFailure();
    }
    SmallVector<PoolPlan> plans;
    getOperation()->walk([&](linalg::PoolingNhwcMaxOp op) {
      if (auto plan = planPool(op))
        plans.push_back(*plan);
    });
    IRRewriter rewriter(&getContext());
    for (PoolPlan &plan : plans)
      for (linalg::PoolingNhwcMaxOp piece : rewriteInRows(rewriter, plan))
        (void)tileRowAndVectorize(rewriter, piece, tileColumns, tileChannels);
  }
};

} // namespace
