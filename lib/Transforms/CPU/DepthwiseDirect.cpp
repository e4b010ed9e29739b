//===- DepthwiseDirect.cpp - depthwise convolutions on CPU vectors --------===//
//
// A depthwise convolution (one channel and one filter per group) through the
// im2col rewrite is a GEMM with K = KH * KW = 9 and one filter per group: on
// the MobileNetV2 layer it ran 15x behind oneDNN. Here it is computed
// directly, as upstream vectorizes it: the convolution written as
// linalg.depthwise_conv_2d_nhwc_hwc (channels-first images transposed to
// channels last and back: the layer is memory-bound, two passes more of a
// small image; the padding is not materialized for the whole image, only
// for the border strips of the output), tiled into an scf.forall over output
// rows (what threads
// share) and register tiles of output columns x 16 channels with one kernel
// row each, which upstream's decomposition makes 1-D depthwise convolutions
// and its vectorizer turns into FMAs on channel vectors, the filter taps
// unrolled.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Common/ChannelsLast.h"
#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <array>

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-depthwise-direct"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERDEPTHWISEDIRECT
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// Depthwise, as this pass takes it: 2-D, one channel and one filter per
/// group, float data, static shapes, not quantized.
bool isDirectDepthwise(const ConvPlan &plan) {
  linalg::LinalgOp op = plan.op;
  auto floating = [](Value v) {
    return isa<FloatType>(getElementTypeOrSelf(v.getType()));
  };
  return plan.spatialRank() == 2 && !plan.isQuantized() &&
         plan.groups == plan.channels && plan.filtersPerGroup == 1 &&
         !op.hasDynamicShape() &&
         cast<ShapedType>(plan.input.getType()).hasStaticShape() &&
         floating(op.getDpsInputOperand(0)->get()) &&
         floating(op.getDpsInputOperand(1)->get()) &&
         floating(op.getDpsInitOperand(0)->get());
}

/// A block of output pixels: rows [begin[0], end[0]) x columns [begin[1],
/// end[1]).
struct OutputPiece {
  std::array<int64_t, 2> begin, end;
};

/// The pieces the output is computed in. Padding a whole image costs a fill
/// and a copy of it before the convolution reads it again (on the
/// MobileNetV2 layer, 144 x 56 x 56, more than half the time); instead the
/// interior, whose windows lie inside the image, reads the image itself, and
/// only the border strips (top, bottom, left, right: one output row or
/// column per padded input row or column) pad their small windows. One piece
/// when no output pixel's window is inside.
SmallVector<OutputPiece> outputPieces(const ConvPlan &plan,
                                      ArrayRef<int64_t> imageSize) {
  std::array<int64_t, 2> lo, hi;
  for (int d = 0; d < 2; ++d) {
    // o is interior when o*s - padLow >= 0 and o*s - padLow + dl*(k-1) is
    // a row (column) of the image.
    int64_t stride = plan.strides[d], padLow = plan.padding[d];
    int64_t last =
        imageSize[d] - 1 - plan.dilations[d] * (plan.kernel[d] - 1) + padLow;
    lo[d] = llvm::divideCeilSigned(padLow, stride);
    hi[d] = last < 0 ? 0 : std::min(plan.outSize[d], last / stride + 1);
  }
  int64_t rows = plan.outSize[0], cols = plan.outSize[1];
  if (lo[0] >= hi[0] || lo[1] >= hi[1])
    return {OutputPiece{{0, 0}, {rows, cols}}};
  SmallVector<OutputPiece> pieces = {
      {{lo[0], lo[1]}, {hi[0], hi[1]}}, // the interior
      {{0, 0}, {lo[0], cols}},          // top
      {{hi[0], 0}, {rows, cols}},       // bottom
      {{lo[0], 0}, {hi[0], lo[1]}},     // left
      {{lo[0], hi[1]}, {hi[0], cols}},  // right
  };
  llvm::erase_if(pieces, [](const OutputPiece &piece) {
    return piece.begin[0] >= piece.end[0] || piece.begin[1] >= piece.end[1];
  });
  return pieces;
}

/// The image window `piece` reads, zero-padded where it lies outside.
Value pieceWindow(OpBuilder &b, Location loc, const ConvPlan &plan,
                  Value image, const OutputPiece &piece) {
  auto type = cast<RankedTensorType>(image.getType());
  SmallVector<int64_t> offsets = {0, 0, 0, 0}, sizes = llvm::to_vector(
                                                   type.getShape());
  SmallVector<int64_t> low = {0, 0, 0, 0}, high = {0, 0, 0, 0};
  for (int d = 0; d < 2; ++d) {
    int64_t first = piece.begin[d] * plan.strides[d] - plan.padding[d];
    int64_t end = (piece.end[d] - 1) * plan.strides[d] - plan.padding[d] +
                  plan.dilations[d] * (plan.kernel[d] - 1) + 1;
    int64_t inFirst = std::max<int64_t>(first, 0);
    int64_t inEnd = std::min(end, type.getDimSize(d + 1));
    // A window all in the padding (a pad wider than the taps reach) takes
    // none of the image: an empty slice, all of it padding.
    if (inEnd <= inFirst)
      inFirst = inEnd = 0;
    offsets[d + 1] = inFirst;
    sizes[d + 1] = inEnd - inFirst;
    low[d + 1] = inEnd > inFirst ? inFirst - first : end - first;
    high[d + 1] = inEnd > inFirst ? end - inEnd : 0;
  }
  Value window = image;
  if (sizes != type.getShape())
    window = tensor::ExtractSliceOp::create(
        b, loc, image, getAsIndexOpFoldResult(b.getContext(), offsets),
        getAsIndexOpFoldResult(b.getContext(), sizes),
        getAsIndexOpFoldResult(b.getContext(), {1, 1, 1, 1}));
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return window;
  SmallVector<int64_t> shape = sizes;
  for (int i = 1; i < 3; ++i)
    shape[i] += low[i] + high[i];
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), window,
      getAsIndexOpFoldResult(b.getContext(), low),
      getAsIndexOpFoldResult(b.getContext(), high), zero);
}

/// The filter as [KH, KW, C]: regrouped into B (roles G, K and a unit F;
/// with one channel per group K is (kh, kw) in any K order), then ordered
/// (K, G, F), the unit F merged into G and K split into (KH, KW).
Value tapsByChannel(OpBuilder &b, Location loc, ConvPlan &plan) {
  const ConvForm &form = *plan.form;
  Value filter =
      collapsed(b, loc, plan.op.getDpsInputOperand(1)->get(), form.filterToB);
  SmallVector<int64_t> perm;
  for (Role role : {Role::K, Role::G, Role::F})
    if (const Role *it = llvm::find(form.bRoles, role);
        it != form.bRoles.end())
      perm.push_back(it - form.bRoles.begin());
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    filter = transposed(b, loc, filter, perm);
  if (perm.size() == 3)
    filter = collapsed(b, loc, filter, {{0}, {1, 2}});
  auto type = cast<RankedTensorType>(filter.getType());
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({plan.kernel[0], plan.kernel[1], plan.channels},
                            type.getElementType()),
      filter, SmallVector<ReassociationIndices>{{0, 1}, {2}});
}

/// The accumulator as [N, Ho, Wo, C], which the pieces update in place: an
/// empty tensor and the fill's value where the init is a fill (each piece
/// fills its own part), else the init reordered.
std::pair<Value, Value> channelsLastInit(OpBuilder &b, Location loc,
                                         ConvPlan &plan) {
  const ConvForm &form = *plan.form;
  Value init = plan.op.getDpsInitOperand(0)->get();
  bool nchw = form.layout == ImageLayout::nchw;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    auto type = cast<RankedTensorType>(init.getType());
    int64_t n = type.getDimSize(0);
    Value empty = tensor::EmptyOp::create(
        b, loc,
        {n, plan.outSize[0], plan.outSize[1], plan.channels},
        type.getElementType());
    return {empty, fill.getInputs()[0]};
  }
  Value image = collapsed(b, loc, init, form.outputToImage);
  return {nchw ? transposed(b, loc, image, {0, 2, 3, 1}) : image, Value()};
}

/// Replaces `plan.op` by direct convolutions, one per output piece; returns
/// them.
SmallVector<linalg::LinalgOp> rewriteDepthwise(RewriterBase &rewriter,
                                               ConvPlan &plan) {
  Location loc = plan.op.getLoc();
  rewriter.setInsertionPoint(plan.op);
  Value image = channelsLastImage(rewriter, loc, plan);
  Value taps = tapsByChannel(rewriter, loc, plan);
  auto [acc, fillValue] = channelsLastInit(rewriter, loc, plan);
  auto imageType = cast<RankedTensorType>(image.getType());
  int64_t n = imageType.getDimSize(0);
  SmallVector<linalg::LinalgOp> convs;
  for (const OutputPiece &piece : outputPieces(
           plan, {imageType.getDimSize(1), imageType.getDimSize(2)})) {
    SmallVector<OpFoldResult> offsets = getAsIndexOpFoldResult(
        rewriter.getContext(), {0, piece.begin[0], piece.begin[1], 0});
    SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(
        rewriter.getContext(), {n, piece.end[0] - piece.begin[0],
                                piece.end[1] - piece.begin[1], plan.channels});
    SmallVector<OpFoldResult> unit =
        getAsIndexOpFoldResult(rewriter.getContext(), {1, 1, 1, 1});
    Value part = tensor::ExtractSliceOp::create(rewriter, loc, acc, offsets,
                                                sizes, unit);
    if (fillValue)
      part = linalg::FillOp::create(rewriter, loc, fillValue, part).getResult(0);
    auto conv = linalg::DepthwiseConv2DNhwcHwcOp::create(
        rewriter, loc, TypeRange{part.getType()},
        ValueRange{pieceWindow(rewriter, loc, plan, image, piece), taps},
        ValueRange{part},
        {rewriter.getNamedAttr("strides",
                               rewriter.getI64TensorAttr(plan.strides)),
         rewriter.getNamedAttr("dilations",
                               rewriter.getI64TensorAttr(plan.dilations))});
    convs.push_back(conv);
    acc = tensor::InsertSliceOp::create(rewriter, loc, conv.getResult(0), acc,
                                        offsets, sizes, unit);
  }
  Value result = acc;
  const ConvForm &form = *plan.form;
  if (form.layout == ImageLayout::nchw)
    result = transposed(rewriter, loc, result, {0, 3, 1, 2});
  if (!form.outputToImage.empty())
    result = tensor::ExpandShapeOp::create(
        rewriter, loc, plan.op->getResult(0).getType(), result,
        form.outputToImage);
  rewriter.replaceOp(plan.op, result);
  if (plan.absorbedExpand && plan.absorbedExpand->use_empty())
    rewriter.eraseOp(plan.absorbedExpand);
  if (plan.absorbedPad && plan.absorbedPad->use_empty())
    rewriter.eraseOp(plan.absorbedPad);
  return convs;
}

/// The scf.forall over (n, oh) with the accumulator's fill fused into it:
/// each output row is zeroed just before it is accumulated (in cache), not
/// in a serial pass over the whole output first.
FailureOr<linalg::LinalgOp> tileRowsFusingFill(RewriterBase &rewriter,
                                               linalg::LinalgOp conv) {
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(
      getAsIndexOpFoldResult(rewriter.getContext(), {1, 1, 0, 0, 0, 0}));
  tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn(
      [](tensor::ExtractSliceOp, OpResult producer, bool)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (!isa<linalg::FillOp>(producer.getOwner()))
          return std::nullopt;
        return scf::SCFTileAndFuseOptions::ControlFnResult{};
      });
  rewriter.setInsertionPoint(conv);
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(conv.getOperation()), options);
  if (failed(tiled) || tiled->tiledAndFusedOps.empty())
    return failure();
  auto replacement = tiled->replacements.find(conv->getResult(0));
  if (replacement == tiled->replacements.end())
    return failure();
  rewriter.replaceAllUsesWith(conv->getResult(0), replacement->second);
  rewriter.eraseOp(conv);
  return cast<linalg::LinalgOp>(tiled->tiledAndFusedOps.front());
}

/// Tiles the direct convolution (loops n, oh, ow, c, kh, kw): an scf.forall
/// over (n, oh) (the fill fused), then register tiles of `columns` output
/// columns x `channels` channels and one kernel row, each a 1-D depthwise
/// convolution that is vectorized.
LogicalResult tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp conv,
                               int64_t columns, int64_t channels) {
  SmallVector<int64_t> ranges = conv.getStaticLoopRanges();
  FailureOr<linalg::LinalgOp> row = tileRowsFusingFill(rewriter, conv);
  if (failed(row))
    return failure();
  // Full tiles only (divisors), so that every tile is static and vectorizes.
  FailureOr<linalg::LinalgOp> reg =
      tileInPlace(rewriter, *row,
                  {0, 0, largestDividingTile(ranges[2], columns),
                   largestDividingTile(ranges[3], channels), 1, 0});
  if (failed(reg))
    return failure();
  // One output row and one kernel row: a 1-D depthwise convolution.
  Operation *rows = reg->getOperation()->getParentOfType<scf::ForallOp>();
  RewritePatternSet patterns(rewriter.getContext());
  patterns.add<linalg::DownscaleDepthwiseConv2DNhwcHwcOp>(
      rewriter.getContext());
  if (failed(applyOpPatternsGreedily({reg->getOperation()},
                                     std::move(patterns))))
    return failure();
  SmallVector<linalg::DepthwiseConv1DNwcWcOp> convs;
  rows->walk([&](linalg::DepthwiseConv1DNwcWcOp op) { convs.push_back(op); });
  for (linalg::DepthwiseConv1DNwcWcOp conv1d : convs)
    vectorizeOrKeep(rewriter, conv1d);
  return success();
}

struct ConvLowerDepthwiseDirectPass
    : conv_lower::impl::ConvLowerDepthwiseDirectBase<
          ConvLowerDepthwiseDirectPass> {
  using Base::Base;
  void runOnOperation() override {
    if (tileColumns < 1 || tileChannels < 1) {
      getOperation()->emitError() << "conv-lower-depthwise-direct: the tile "
                                     "sizes must be positive";
      return signalPassFailure();
    }
    SmallVector<ConvPlan, 2> plans;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (!looksLikeConvolution(op))
        return;
      std::string whyNot;
      FailureOr<ConvPlan> plan = analyzeConv(op, whyNot);
      bool direct = succeeded(plan) && isDirectDepthwise(*plan);
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << op->getName() << " at "
                 << op.getLoc() << ": "
                 << (direct         ? "direct depthwise"
                     : failed(plan) ? "left alone: " + whyNot
                                    : std::string("left alone: not a "
                                                  "direct depthwise form"))
                 << "\n");
      if (direct)
        plans.push_back(*plan);
    });
    IRRewriter rewriter(&getContext());
    for (ConvPlan &plan : plans) {
      for (linalg::LinalgOp direct : rewriteDepthwise(rewriter, plan))
        (void)tileAndVectorize(rewriter, direct, tileColumns, tileChannels);
    }
  }
};

} // namespace
