//===- MaxPoolRows.cpp - max pooling on CPU vectors, by output rows -------===//
//
// linalg.pooling_nhwc_max over a -inf padded image (what ConvModule builds
// for torch's max_pool2d) otherwise reaches the CPU pipeline's generic
// lowering: the padded copy of the whole image first, then scalar loops
// (ResNet-50's 3x3/2 pooling of 64 x 112 x 112 at batch 8: 8.2 ms, here
// 1.4-1.8; torch's 3.9-5.4 in the model, ONNX Runtime's 1.1). Here it is
// computed as the direct depthwise convolutions are
// (conv-lower-depthwise-direct, RowPieces.h): one scf.forall over (image,
// output row), each row cut into pieces whose windows keep the same taps in the
// image (the padding, -inf, never wins a maximum, so a border pixel's window
// simply drops the taps that land in it: no padded copy), each piece a pooling
// of the image itself tiled into register tiles of output columns x channels
// and one window row, which upstream's DownscaleSizeOneWindowed2DConvolution
// makes 1-D poolings and its vectorizer turns into maxima of channel vectors,
// the window's columns unrolled.
//
//===----------------------------------------------------------------------===//

#include "Transforms/CPU/DirectConvUtils.h"
#include "Transforms/CPU/RowPieces.h"
#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
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

/// A max pooling this pass takes: NHWC, 2-D, static shapes, float data,
/// its input an image or a -inf padding of one along H and W only.
struct PoolPlan {
  linalg::PoolingNhwcMaxOp op;
  Value image;
  tensor::PadOp pad;
  WindowGeometry window;
  std::array<int64_t, 2> imageSize;
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
  auto imageType = cast<RankedTensorType>(plan.image.getType());
  if (!imageType.hasStaticShape() ||
      !isa<FloatType>(imageType.getElementType()))
    return std::nullopt;
  plan.imageSize = {imageType.getDimSize(1), imageType.getDimSize(2)};
  auto strides = llvm::to_vector(op.getStrides().getValues<int64_t>());
  auto dilations = llvm::to_vector(op.getDilations().getValues<int64_t>());
  plan.window = {{outType.getDimSize(1), outType.getDimSize(2)},
                 {strides[0], strides[1]},
                 {dilations[0], dilations[1]},
                 {windowType.getDimSize(0), windowType.getDimSize(1)},
                 image->second,
                 imageType.getDimSize(3)};
  Value init = op.getDpsInitOperand(0)->get();
  plan.acc = init;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    plan.acc = fill.getOutputs()[0];
    plan.fillValue = fill.getInputs()[0];
  }
  return plan;
}

/// The pooling of `window` into `part` over the taps [tapBegin, tapEnd) of
/// each dimension (the window operand only gives their shape).
linalg::PoolingNhwcMaxOp poolPiece(OpBuilder &b, Location loc,
                                   const WindowGeometry &g, Value window,
                                   std::array<int64_t, 2> tapBegin,
                                   std::array<int64_t, 2> tapEnd, Value part) {
  Type element = getElementTypeOrSelf(part.getType());
  Value shape = tensor::EmptyOp::create(
      b, loc,
      ArrayRef<int64_t>{tapEnd[0] - tapBegin[0], tapEnd[1] - tapBegin[1]},
      element);
  return linalg::PoolingNhwcMaxOp::create(
      b, loc, TypeRange{part.getType()}, ValueRange{window, shape},
      ValueRange{part},
      {b.getNamedAttr("strides", b.getI64TensorAttr(g.strides)),
       b.getNamedAttr("dilations", b.getI64TensorAttr(g.dilations))});
}

/// Replaces the pooling by one scf.forall over (image, output row), each
/// row filled and then pooled in its pieces while it is in cache
/// (RowPieces.h); returns the pieces (one row each, still to be tiled into
/// registers).
SmallVector<linalg::PoolingNhwcMaxOp> rewriteInRows(RewriterBase &rewriter,
                                                    PoolPlan &plan) {
  rewriter.setInsertionPoint(plan.op);
  SmallVector<linalg::PoolingNhwcMaxOp> pieces;
  Value result = rowsInForall(
      rewriter, plan.op.getLoc(), plan.window, plan.image, plan.acc,
      plan.fillValue, tapRunsOf(plan.window, plan.imageSize),
      [&](OpBuilder &b, Location loc, Value window,
          std::array<int64_t, 2> tapBegin, std::array<int64_t, 2> tapEnd,
          Value part) -> Value {
        pieces.push_back(
            poolPiece(b, loc, plan.window, window, tapBegin, tapEnd, part));
        return pieces.back()->getResult(0);
      });
  rewriter.replaceOp(plan.op, result);
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
