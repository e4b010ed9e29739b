//===- DepthwiseDirect.cpp - depthwise convolutions on CPU vectors --------===//
//
// A depthwise convolution (one channel and one filter per group) through the
// im2col rewrite is a GEMM with K = KH * KW = 9 and one filter per group: on
// the MobileNetV2 layer it ran 15x behind oneDNN. Here it is computed
// directly, as upstream vectorizes it: the convolution written as
// linalg.depthwise_conv_2d_nhwc_hwc (channels-first images transposed to
// channels last and back: the layer is memory-bound, two passes more of a
// small image), inside one scf.forall over output rows (what threads
// share), each row computed in pieces whose windows take the same taps (the
// padding is not materialized: each piece reads the image with the taps
// that land in it), tiled into register tiles of output columns x 16
// channels with one kernel row each, which upstream's decomposition makes
// 1-D depthwise convolutions and its vectorizer turns into FMAs on channel
// vectors, the filter taps unrolled. (As separate loops over the output,
// the pieces cost 4 to 9 parallel regions a layer and a second pass over
// rows gone from the cache: MobileNetV2's 144 x 56 x 56 layer 0.081 ->
// 0.074 ms, its 960 x 7 x 7 0.017 -> 0.012.)
//
// Channels-first layers skip both transposes instead: each (image,
// channel) plane is a single-channel linalg.conv_2d on its own zero-padded
// copy, vectorized along the output row (upstream's DownscaleConv2DOp and
// its 1-D convolution vectorizer), the taps scalars; a strided one is split
// into its phases first (PlaneLayout), each a unit-stride conv_2d.
// MobileNetV2's 144 x 56 x 56 layer: 0.87-1.23 -> 0.57-0.60 ms on one
// thread; its 96 x 112 x 112 stride-2 layer 1.01 -> about 0.5 ms on two
// (docs/performance-journal.md, 2026-12-04 and 2026-12-05).
//
// A quantized (i8) depthwise convolution runs the same way on its data
// shifted by the zero points into i32: through im2col it was a K = 9 GEMM
// per channel, 3.75 ms on the 144 x 56 x 56 layer against 0.12 directly.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Common/ChannelsLast.h"
#include "Transforms/CPU/DirectConvUtils.h"
#include "Transforms/CPU/RowPieces.h"
#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
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

/// Whether a quantized depthwise convolution can run on its shifted data
/// (x - zx, w - zw, widened to i32): integer data of at most 16 bits into
/// i32, and no absorbed padding unless zx is 0 (the absorbed padding reads
/// 0; what is left of torch's padding, zx, is in the image and shifts to 0).
bool isShiftableQuantized(const ConvPlan &plan) {
  linalg::LinalgOp op = plan.op;
  auto narrowInteger = [](Value v) {
    auto type = dyn_cast<IntegerType>(getElementTypeOrSelf(v.getType()));
    return type && type.getWidth() <= 16;
  };
  bool padded = llvm::any_of(plan.padding, [](int64_t p) { return p != 0; });
  return narrowInteger(op.getDpsInputOperand(0)->get()) &&
         narrowInteger(op.getDpsInputOperand(1)->get()) &&
         getElementTypeOrSelf(op.getDpsInitOperand(0)->get()).isInteger(32) &&
         (!padded || matchPattern(plan.inputZeroPoint, m_Zero()));
}

/// Depthwise, as this pass takes it: 2-D, one channel and one filter per
/// group, static shapes, float data or a quantized convolution it can shift
/// (isShiftableQuantized).
bool isDirectDepthwise(const ConvPlan &plan) {
  linalg::LinalgOp op = plan.op;
  auto floating = [](Value v) {
    return isa<FloatType>(getElementTypeOrSelf(v.getType()));
  };
  bool elementsTaken = plan.isQuantized()
                           ? isShiftableQuantized(plan)
                           : floating(op.getDpsInputOperand(0)->get()) &&
                                 floating(op.getDpsInputOperand(1)->get()) &&
                                 floating(op.getDpsInitOperand(0)->get());
  return plan.spatialRank() == 2 && elementsTaken &&
         plan.groups == plan.channels && plan.filtersPerGroup == 1 &&
         !op.hasDynamicShape() &&
         cast<ShapedType>(plan.input.getType()).hasStaticShape();
}

/// `v` - `zeroPoint` in i32 (v: integers, sign-extended): a quantized
/// convolution's data as the plain convolution it computes, sum (x - zx) *
/// (w - zw). Identity for a convolution that is not quantized (null
/// zeroPoint).
Value shiftedByZeroPoint(OpBuilder &b, Location loc, Value v, Value zeroPoint) {
  if (!zeroPoint)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  Type i32 = b.getI32Type();
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), i32);
  SmallVector<AffineMap> maps(
      2, AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext()));
  return linalg::GenericOp::create(
             b, loc, TypeRange{empty.getType()}, ValueRange{v},
             ValueRange{empty}, maps,
             SmallVector<utils::IteratorType>(type.getRank(),
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value wide = arith::ExtSIOp::create(nb, l, i32, args[0]);
               Value zp = zeroPoint.getType() == i32
                              ? zeroPoint
                              : arith::ExtSIOp::create(nb, l, i32, zeroPoint);
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::SubIOp::create(nb, l, wide, zp)});
             })
      .getResult(0);
}

/// A block of output pixels, rows [begin[0], end[0]) x columns [begin[1],
/// end[1]), whose windows all take the same taps, [tapBegin[d], tapEnd[d])
/// along each dimension: those that land in the image; or, `padded`, all
/// taps on a zero-padded copy of its window.
struct OutputPiece {
  std::array<int64_t, 2> begin, end, tapBegin, tapEnd;
  bool padded = false;
};

/// Above this many pieces of distinct taps (a pad of 3 or more on a side:
/// 7 x 7 pieces and up, each a vectorized convolution of its own in the
/// code), the border strips pad their windows instead.
constexpr size_t kMaxTapPieces = 25;

/// The interior, whose windows lie inside the image, and the border strips
/// (top, bottom, left, right: one output row or column per padded input row
/// or column), each on a zero-padded copy of its window. One piece when no
/// output pixel's window is inside.
SmallVector<OutputPiece> paddedStrips(const ConvPlan &plan,
                                      ArrayRef<int64_t> imageSize) {
  std::array<int64_t, 2> lo, hi, all = {plan.kernel[0], plan.kernel[1]};
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
    return {OutputPiece{{0, 0}, {rows, cols}, {0, 0}, all, true}};
  SmallVector<OutputPiece> pieces = {
      {{lo[0], lo[1]}, {hi[0], hi[1]}, {0, 0}, all, false}, // the interior
      {{0, 0}, {lo[0], cols}, {0, 0}, all, true},           // top
      {{hi[0], 0}, {rows, cols}, {0, 0}, all, true},        // bottom
      {{lo[0], 0}, {hi[0], lo[1]}, {0, 0}, all, true},      // left
      {{lo[0], hi[1]}, {hi[0], cols}, {0, 0}, all, true},   // right
  };
  llvm::erase_if(pieces, [](const OutputPiece &piece) {
    return piece.begin[0] >= piece.end[0] || piece.begin[1] >= piece.end[1];
  });
  return pieces;
}

/// A 2-D plan's window (its low padding: top, left).
WindowGeometry geometryOf(const ConvPlan &plan) {
  return {{plan.outSize[0], plan.outSize[1]},
          {plan.strides[0], plan.strides[1]},
          {plan.dilations[0], plan.dilations[1]},
          {plan.kernel[0], plan.kernel[1]},
          {plan.padding[0], plan.padding[1]},
          plan.channels};
}

/// The runs of outputs with the same taps along rows and columns (tapRuns),
/// where the output is computed by rows of pieces (rewriteDepthwiseRows);
/// nothing where they make more than kMaxTapPieces pieces.
std::optional<std::array<SmallVector<TapRun>, 2>>
tapRunsByDimension(const ConvPlan &plan, ArrayRef<int64_t> imageSize) {
  std::array<SmallVector<TapRun>, 2> runs =
      tapRunsOf(geometryOf(plan), {imageSize[0], imageSize[1]});
  if (runs[0].size() * runs[1].size() > kMaxTapPieces)
    return std::nullopt;
  return runs;
}

/// The image window a padded piece reads, zero-padded where it lies
/// outside.
Value paddedWindow(OpBuilder &b, Location loc, const ConvPlan &plan,
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

/// The image window `piece` reads with its taps: inside the image (or, for a
/// padded piece, its padded copy).
Value pieceWindow(OpBuilder &b, Location loc, const ConvPlan &plan,
                  Value image, const OutputPiece &piece) {
  if (piece.padded)
    return paddedWindow(b, loc, plan, image, piece);
  auto type = cast<RankedTensorType>(image.getType());
  SmallVector<int64_t> offsets = {0, 0, 0, 0},
                       sizes = llvm::to_vector(type.getShape());
  for (int d = 0; d < 2; ++d)
    std::tie(offsets[d + 1], sizes[d + 1]) =
        windowSpan(geometryOf(plan), d, piece.begin[d], piece.end[d],
                   piece.tapBegin[d], piece.tapEnd[d]);
  if (sizes == type.getShape())
    return image;
  return tensor::ExtractSliceOp::create(
      b, loc, image, getAsIndexOpFoldResult(b.getContext(), offsets),
      getAsIndexOpFoldResult(b.getContext(), sizes),
      getAsIndexOpFoldResult(b.getContext(), {1, 1, 1, 1}));
}

/// The taps [tapBegin, tapEnd) (rows, columns): their slice of the [KH, KW,
/// C] filter.
Value tapSlice(OpBuilder &b, Location loc, Value taps,
               std::array<int64_t, 2> tapBegin, std::array<int64_t, 2> tapEnd) {
  auto type = cast<RankedTensorType>(taps.getType());
  SmallVector<int64_t> offsets = {tapBegin[0], tapBegin[1], 0};
  SmallVector<int64_t> sizes = {tapEnd[0] - tapBegin[0],
                                tapEnd[1] - tapBegin[1], type.getDimSize(2)};
  if (sizes == type.getShape())
    return taps;
  return tensor::ExtractSliceOp::create(
      b, loc, taps, getAsIndexOpFoldResult(b.getContext(), offsets),
      getAsIndexOpFoldResult(b.getContext(), sizes),
      getAsIndexOpFoldResult(b.getContext(), {1, 1, 1}));
}

/// The filter regrouped into B (roles G, K and a unit F; with one channel
/// per group K is (kh, kw) in any K order), its roles transposed into
/// `order` (G before F), the unit F merged into G: [K, C] or [C, K].
Value filterInRoleOrder(OpBuilder &b, Location loc, ConvPlan &plan,
                        ArrayRef<Role> order) {
  const ConvForm &form = *plan.form;
  Value filter =
      collapsed(b, loc, plan.op.getDpsInputOperand(1)->get(), form.filterToB);
  SmallVector<int64_t> perm;
  SmallVector<ReassociationIndices> merged;
  bool afterG = false;
  for (Role role : order) {
    const Role *it = llvm::find(form.bRoles, role);
    if (it == form.bRoles.end())
      continue;
    // F joins G's group (an ungrouped form has no G: F is the channels).
    if (role == Role::F && afterG)
      merged.back().push_back(perm.size());
    else
      merged.push_back({static_cast<int64_t>(perm.size())});
    afterG = role == Role::G;
    perm.push_back(it - form.bRoles.begin());
  }
  if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    filter = transposed(b, loc, filter, perm);
  if (merged.size() < perm.size())
    filter = collapsed(b, loc, filter, merged);
  return filter;
}

/// The filter as [KH, KW, C] (the channels-last route's taps by channel)
/// or, `byPlane`, [C, KH, KW] (the planar route's taps of each plane): K
/// split into (KH, KW).
Value depthwiseTaps(OpBuilder &b, Location loc, ConvPlan &plan, bool byPlane) {
  Value filter = filterInRoleOrder(
      b, loc, plan,
      byPlane ? ArrayRef<Role>{Role::G, Role::F, Role::K}
              : ArrayRef<Role>{Role::K, Role::G, Role::F});
  SmallVector<int64_t> shape = {plan.kernel[0], plan.kernel[1]};
  SmallVector<ReassociationIndices> split = {{0, 1}, {2}};
  if (byPlane) {
    shape.insert(shape.begin(), plan.channels);
    split = {{0}, {1, 2}};
  } else {
    shape.push_back(plan.channels);
  }
  auto type = cast<RankedTensorType>(filter.getType());
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), filter,
      split);
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

/// The depthwise convolution of `window` (an [N, H, W, C] slice of the
/// image) with `kernel` ([KH, KW, C] taps) into `part`, at the plan's
/// strides and dilations.
linalg::LinalgOp depthwiseConv(OpBuilder &b, Location loc, const ConvPlan &plan,
                               Value window, Value kernel, Value part) {
  return linalg::DepthwiseConv2DNhwcHwcOp::create(
      b, loc, TypeRange{part.getType()}, ValueRange{window, kernel},
      ValueRange{part},
      {b.getNamedAttr("strides", b.getI64TensorAttr(plan.strides)),
       b.getNamedAttr("dilations", b.getI64TensorAttr(plan.dilations))});
}

/// Border strips (more runs of distinct taps than kMaxTapPieces): the
/// interior and each strip its own direct convolution into `acc`, each
/// strip on a zero-padded copy of its window; returns the result and the
/// convolutions (each still to be tiled into rows for the threads).
Value depthwiseInStrips(RewriterBase &rewriter, Location loc,
                        const ConvPlan &plan, Value image, Value taps,
                        Value acc, Value fillValue,
                        SmallVector<linalg::LinalgOp> &convs) {
  auto imageType = cast<RankedTensorType>(image.getType());
  MLIRContext *ctx = rewriter.getContext();
  int64_t n = imageType.getDimSize(0);
  for (const OutputPiece &piece : paddedStrips(
           plan, {imageType.getDimSize(1), imageType.getDimSize(2)})) {
    SmallVector<OpFoldResult> offsets =
        getAsIndexOpFoldResult(ctx, {0, piece.begin[0], piece.begin[1], 0});
    SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(
        ctx, {n, piece.end[0] - piece.begin[0], piece.end[1] - piece.begin[1],
              plan.channels});
    SmallVector<OpFoldResult> unit = getAsIndexOpFoldResult(ctx, {1, 1, 1, 1});
    Value part = tensor::ExtractSliceOp::create(rewriter, loc, acc, offsets,
                                                sizes, unit);
    if (fillValue)
      part = linalg::FillOp::create(rewriter, loc, fillValue, part).getResult(0);
    linalg::LinalgOp conv =
        depthwiseConv(rewriter, loc, plan, pieceWindow(rewriter, loc, plan, image, piece),
                      tapSlice(rewriter, loc, taps, piece.tapBegin,
                               piece.tapEnd),
                      part);
    convs.push_back(conv);
    acc = tensor::InsertSliceOp::create(rewriter, loc, conv->getResult(0), acc,
                                        offsets, sizes, unit);
  }
  return acc;
}

/// The output as one scf.forall over (image, output row), what the threads
/// share, each row computed in its pieces of distinct taps while it is in
/// cache, its fill first (RowPieces.h): each piece a direct convolution
/// with the taps its windows keep, reading the image itself (no padding).
/// As separate loops over the output, the pieces had been one parallel
/// region each (4 to 9 a layer), the edge rows' regions a thread's work
/// alone, and the edge columns' a second pass over rows gone from the
/// cache: MobileNetV2's 144 x 56 x 56 layer took 0.096 ms, its interior
/// alone (no padding) 0.053. Returns the result and the convolutions (one
/// row each, still to be tiled into registers).
Value depthwiseInRows(RewriterBase &rewriter, Location loc,
                      const ConvPlan &plan, Value image, Value taps,
                      Value acc, Value fillValue,
                      const std::array<SmallVector<TapRun>, 2> &runs,
                      SmallVector<linalg::LinalgOp> &convs) {
  return rowsInForall(
      rewriter, loc, geometryOf(plan), image, acc, fillValue, runs,
      [&](OpBuilder &b, Location l, Value window,
          std::array<int64_t, 2> tapBegin, std::array<int64_t, 2> tapEnd,
          Value part) -> Value {
        linalg::LinalgOp conv =
            depthwiseConv(b, l, plan, window,
                          tapSlice(b, l, taps, tapBegin, tapEnd), part);
        convs.push_back(conv);
        return conv->getResult(0);
      });
}

/// The direct convolutions replacing a plan, and whether they are already
/// rows inside the threads' loop (depthwiseInRows) or still whole pieces.
struct DirectConvs {
  SmallVector<linalg::LinalgOp> convs;
  bool inRows = false;
};

/// Replaces `plan.op` by direct convolutions on a channels-last image: by
/// rows of pieces of distinct taps (depthwiseInRows), or, where the taps
/// take too many pieces, in padded border strips (depthwiseInStrips).
DirectConvs rewriteDepthwise(RewriterBase &rewriter, ConvPlan &plan) {
  Location loc = plan.op.getLoc();
  rewriter.setInsertionPoint(plan.op);
  Value image = shiftedByZeroPoint(rewriter, loc,
                                   channelsLastImage(rewriter, loc, plan),
                                   plan.inputZeroPoint);
  Value taps = shiftedByZeroPoint(
      rewriter, loc, depthwiseTaps(rewriter, loc, plan, /*byPlane=*/false),
      plan.filterZeroPoint);
  auto [acc, fillValue] = channelsLastInit(rewriter, loc, plan);
  auto imageType = cast<RankedTensorType>(image.getType());
  DirectConvs direct;
  Value result;
  if (auto runs = tapRunsByDimension(
          plan, {imageType.getDimSize(1), imageType.getDimSize(2)})) {
    result = depthwiseInRows(rewriter, loc, plan, image, taps, acc, fillValue,
                             *runs, direct.convs);
    direct.inRows = true;
  } else {
    result = depthwiseInStrips(rewriter, loc, plan, image, taps, acc,
                               fillValue, direct.convs);
  }
  if (plan.form->layout == ImageLayout::nchw)
    result = transposed(rewriter, loc, result, {0, 3, 1, 2});
  replaceWithImage(rewriter, plan, result);
  return direct;
}

/// Tiles one output row's direct convolution (loops n, oh, ow, c, kh, kw,
/// n and oh of extent 1) into register tiles of `columns` output columns x
/// `channels` channels and one kernel row, each a 1-D depthwise
/// convolution that is vectorized.
LogicalResult tileRowAndVectorize(RewriterBase &rewriter, linalg::LinalgOp conv,
                                  int64_t columns, int64_t channels) {
  SmallVector<int64_t> ranges = conv.getStaticLoopRanges();
  // Full tiles only (divisors), so that every tile is static and vectorizes.
  FailureOr<linalg::LinalgOp> reg =
      tileInPlace(rewriter, conv,
                  {0, 0, largestDividingTile(ranges[2], columns),
                   largestDividingTile(ranges[3], channels), 1, 0});
  if (failed(reg))
    return failure();
  // One output row and one kernel row: a 1-D depthwise convolution.
  return downscaleAndVectorize<linalg::DownscaleDepthwiseConv2DNhwcHwcOp,
                               linalg::DepthwiseConv1DNwcWcOp>(rewriter, *reg);
}

/// Tiles a whole piece's direct convolution (a border strip): an scf.forall
/// over (n, oh), the fill fused, then tileRowAndVectorize.
LogicalResult tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp conv,
                               int64_t columns, int64_t channels) {
  // Each output row is zeroed just before it is accumulated (in cache), not
  // in a serial pass first.
  FailureOr<linalg::LinalgOp> row = tileInPlaceFusingFill(
      rewriter, conv, {1, 1, 0, 0, 0, 0},
      scf::SCFTilingOptions::LoopType::ForallOp);
  if (failed(row))
    return failure();
  return tileRowAndVectorize(rewriter, *row, columns, channels);
}

//===----------------------------------------------------------------------===//
// Channels first, stride 1: one single-channel 2-D convolution per plane.
//===----------------------------------------------------------------------===//

/// Whether `plan` takes the planar route: a channels-first image at unit
/// dilations (linalg.conv_2d has none), of the output's element type,
/// whose cropped and padded planes are exactly what the output reads.
bool takesPlanes(const ConvPlan &plan) {
  auto one = [](int64_t v) { return v == 1; };
  if (plan.form->layout != ImageLayout::nchw ||
      !llvm::all_of(plan.dilations, one))
    return false;
  // One element type: upstream's vectorization of a 1-D linalg.conv_1d
  // with f16 data into f32 builds an invalid vector.outerproduct (its lhs
  // and result types differ).
  linalg::LinalgOp op = plan.op;
  // (A quantized convolution's data are shifted into its i32 output type.)
  Type element = getElementTypeOrSelf(op.getDpsInitOperand(0)->get());
  if (!plan.isQuantized() &&
      (getElementTypeOrSelf(op.getDpsInputOperand(0)->get()) != element ||
       getElementTypeOrSelf(op.getDpsInputOperand(1)->get()) != element))
    return false;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(plan.input.getType()).getShape();
  SmallVector<int64_t> image =
      plan.inputIsImage ? llvm::to_vector(shape)
                        : collapseShape(shape, plan.form->inputToImage);
  for (int d = 0; d < 2; ++d) {
    int64_t padded = image[d + 2] - plan.crop[d] + plan.padding[d] +
                     plan.padding[d + 2];
    if (padded != (plan.outSize[d] - 1) * plan.strides[d] + plan.kernel[d])
      return false;
  }
  return true;
}

/// Whether dropping the leading dimensions of `sizes` down to the trailing
/// `rank` would be ambiguous: a kept dimension of extent 1 (a one-row
/// plane) looks like a dropped one. Bufferized, such a rank-reducing slice
/// is a memref.subview on which upstream's expand-strided-metadata crashes
/// in getDroppedDims (conv-fuzz: an f16 plane of 1 x 2); those slices keep
/// their rank and are reshaped instead.
bool ambiguousReduction(ArrayRef<int64_t> sizes, int64_t rank) {
  return llvm::is_contained(sizes.take_back(rank), 1);
}

/// The reassociation that folds the leading dimensions of a rank-`full`
/// shape into the first of its trailing `rank`.
SmallVector<ReassociationIndices> leadingFolded(int64_t full, int64_t rank) {
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t d = 0; d <= full - rank; ++d)
    groups.front().push_back(d);
  for (int64_t d = full - rank + 1; d < full; ++d)
    groups.push_back({d});
  return groups;
}

/// The slice [offsets..., sizes...] of `v` with `strides` (unit where
/// empty), its leading unit dimensions dropped (rank-reduced to the
/// trailing `rank`; sliced whole and reshaped where that is ambiguous).
Value reducedSlice(OpBuilder &b, Location loc, Value v,
                   ArrayRef<OpFoldResult> offsets, ArrayRef<int64_t> sizes,
                   int64_t rank, ArrayRef<int64_t> strides = {}) {
  auto type = cast<RankedTensorType>(v.getType());
  auto reduced = RankedTensorType::get(sizes.take_back(rank),
                                       type.getElementType());
  // A unit dimension takes a unit stride: its stride means nothing, and a
  // rank-reduced memref.subview with strided unit dimensions crashes
  // upstream's getDroppedDims (it cannot tell which ones were dropped).
  SmallVector<int64_t> steps(sizes.size(), 1);
  for (auto [i, stride] : llvm::enumerate(strides))
    steps[i] = sizes[i] == 1 ? 1 : stride;
  SmallVector<OpFoldResult> sizeValues =
      getAsIndexOpFoldResult(b.getContext(), sizes);
  SmallVector<OpFoldResult> stepValues =
      getAsIndexOpFoldResult(b.getContext(), steps);
  if (!ambiguousReduction(sizes, rank))
    return tensor::ExtractSliceOp::create(b, loc, reduced, v, offsets,
                                          sizeValues, stepValues);
  Value whole = tensor::ExtractSliceOp::create(b, loc, v, offsets, sizeValues,
                                               stepValues);
  return tensor::CollapseShapeOp::create(
      b, loc, reduced, whole, leadingFolded(sizes.size(), rank));
}

/// `part` (the trailing `rank` dimensions of `sizes`) inserted into `dest`
/// at [offsets..., sizes...], unit strides: reducedSlice's inverse.
Value insertReduced(OpBuilder &b, Location loc, Value part, Value dest,
                    ArrayRef<OpFoldResult> offsets, ArrayRef<int64_t> sizes,
                    int64_t rank) {
  SmallVector<OpFoldResult> sizeValues =
      getAsIndexOpFoldResult(b.getContext(), sizes);
  SmallVector<OpFoldResult> unit(sizes.size(), b.getIndexAttr(1));
  if (ambiguousReduction(sizes, rank)) {
    auto type = cast<RankedTensorType>(part.getType());
    part = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(sizes, type.getElementType()), part,
        leadingFolded(sizes.size(), rank));
  }
  return tensor::InsertSliceOp::create(b, loc, part, dest, offsets, sizeValues,
                                       unit);
}

/// How a plane is laid out for its unit-stride convolutions. At stride
/// (sh, sw) the padded plane P is split into its sh x sw phases, Q[pr, pc,
/// y, x] = P[y * sh + pr, x * sw + pc], and the strided convolution is the
/// sum over phases of unit-stride convolutions of each phase with the taps
/// of that phase, f[jh * sh + pr, jw * sw + pc]: every tap is still used
/// once, and every read is contiguous along the row. (Read strided
/// directly, a row's vector is a gather; copied strided, each element is a
/// scalar load and store: measured slower than the transposes it replaces.)
/// The phase split is a linalg.transpose of P viewed as [hq, sh, wq, sw]
/// to [sh, sw, hq, wq], which conv-lower-vectorize-transposes makes
/// 16 x 2 -> 2 x 16 shuffles.
struct PlaneLayout {
  int64_t strides[2];
  int64_t padded[2]; // the padded plane P's extents
  int64_t phase[2];  // a phase's extents (strided only)

  PlaneLayout(const ConvPlan &plan)
      : strides{plan.strides[0], plan.strides[1]} {
    for (int d = 0; d < 2; ++d) {
      int64_t reads = (plan.outSize[d] - 1) * strides[d] + plan.kernel[d];
      phase[d] = llvm::divideCeil(reads, strides[d]);
      // A phase's rows are whole transpose tiles (the zero columns past
      // what the output reads are never read back).
      if (d == 1 && strided())
        phase[d] = llvm::alignTo(phase[d], kVectorLanes);
      padded[d] = strided() ? phase[d] * strides[d] : reads;
    }
  }
  bool strided() const { return strides[0] > 1 || strides[1] > 1; }
  /// The taps of phase (pr, pc) along dimension d: ceil((k - p) / s).
  int64_t phaseTaps(const ConvPlan &plan, int d, int64_t p) const {
    return plan.kernel[d] > p ? llvm::divideCeil(plan.kernel[d] - p, strides[d])
                              : 0;
  }
};

/// Replaces `plan.op` by an scf.forall over (image, block of channels),
/// each block an scf.for over its planes, each computing its [Ho, Wo]
/// output plane by linalg.conv_2d ops of its taps over a zero-padded copy
/// of its image plane (a few KiB, in cache: the whole-image pad the
/// channels-last route avoids is one plane at a time here): one conv_2d of
/// the [KH, KW] taps at unit strides, one per phase (PlaneLayout) when
/// strided; returns those conv_2d ops.
SmallVector<linalg::Conv2DOp> rewritePlanes(RewriterBase &rewriter,
                                            ConvPlan &plan) {
  Location loc = plan.op.getLoc();
  const ConvForm &form = *plan.form;
  rewriter.setInsertionPoint(plan.op);
  Value image = shiftedByZeroPoint(rewriter, loc,
                                   croppedImage(rewriter, loc, plan),
                                   plan.inputZeroPoint);
  auto imageType = cast<RankedTensorType>(image.getType());
  int64_t n = imageType.getDimSize(0), c = plan.channels;
  int64_t h = imageType.getDimSize(2), w = imageType.getDimSize(3);
  int64_t ho = plan.outSize[0], wo = plan.outSize[1];
  ArrayRef<int64_t> pad = plan.padding; // top, left, bottom, right
  PlaneLayout layout(plan);
  assert(h + pad[0] + pad[2] == (ho - 1) * layout.strides[0] + plan.kernel[0] &&
         w + pad[1] + pad[3] == (wo - 1) * layout.strides[1] + plan.kernel[1] &&
         "takesPlanes");
  Value taps = shiftedByZeroPoint(
      rewriter, loc, depthwiseTaps(rewriter, loc, plan, /*byPlane=*/true),
      plan.filterZeroPoint);
  Value init = plan.op.getDpsInitOperand(0)->get();
  Type element = cast<RankedTensorType>(init.getType()).getElementType();
  Value acc, fillValue;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    acc = tensor::EmptyOp::create(rewriter, loc, {n, c, ho, wo}, element);
    fillValue = fill.getInputs()[0];
  } else {
    acc = collapsed(rewriter, loc, init, form.outputToImage);
  }

  // Blocks of planes: about 16 an image (what threads share), each with
  // one padded plane buffer, zeroed once, whose interior each plane of the
  // block overwrites (an allocation, a fill and a copy per plane cost
  // more than the plane's FMAs), and, strided, one buffer of its phases.
  MLIRContext *ctx = rewriter.getContext();
  int64_t perBlock = largestDividingTile(c, std::max<int64_t>(1, c / 16));
  SmallVector<OpFoldResult> counts =
      getAsIndexOpFoldResult(ctx, {n, c / perBlock});
  auto forall = scf::ForallOp::create(rewriter, loc, counts, ValueRange{acc},
                                      /*mapping=*/std::nullopt);
  rewriter.setInsertionPointToStart(forall.getBody());
  Value in = forall.getInductionVar(0), blk = forall.getInductionVar(1);
  Value shared = forall.getRegionIterArgs()[0];
  OpFoldResult zero = rewriter.getIndexAttr(0);
  AffineExpr d0;
  bindDims(ctx, d0);
  OpFoldResult first = affine::makeComposedFoldedAffineApply(
      rewriter, loc, d0 * perBlock, {blk});
  SmallVector<OpFoldResult> blockOffsets = {in, first, zero, zero};
  SmallVector<int64_t> blockSizes = {1, perBlock, ho, wo};
  Value blockOut = tensor::ExtractSliceOp::create(
      rewriter, loc, shared, blockOffsets,
      getAsIndexOpFoldResult(ctx, blockSizes),
      SmallVector<OpFoldResult>(4, rewriter.getIndexAttr(1)));
  bool strided = layout.strided();
  bool buffered =
      strided || llvm::any_of(pad, [](int64_t p) { return p != 0; });
  Type imageElement = imageType.getElementType();
  SmallVector<Value> carried = {blockOut};
  if (buffered) {
    Value buffer = tensor::EmptyOp::create(
        rewriter, loc, {layout.padded[0], layout.padded[1]}, imageElement);
    Value zeroValue = arith::ConstantOp::create(
        rewriter, loc, rewriter.getZeroAttr(imageElement));
    carried.push_back(
        linalg::FillOp::create(rewriter, loc, zeroValue, buffer).getResult(0));
  }
  if (strided)
    carried.push_back(tensor::EmptyOp::create(
        rewriter, loc,
        {layout.strides[0], layout.strides[1], layout.phase[0],
         layout.phase[1]},
        imageElement));
  Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value ub = arith::ConstantIndexOp::create(rewriter, loc, perBlock);
  Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<linalg::Conv2DOp> convs;
  auto planes = scf::ForOp::create(
      rewriter, loc, lb, ub, step, carried,
      [&](OpBuilder &b, Location loc, Value j, ValueRange args) {
        Value ch = affine::makeComposedAffineApply(
            b, loc, d0 + AffineExpr(getAffineDimExpr(1, ctx)),
            {getAsOpFoldResult(j), first});
        // An image cropped to nothing (every column it has lies past what
        // a strided output reads, say) leaves the zeroed buffer as it is: a
        // slice at offset 0 of an empty dimension does not verify.
        bool empty = h == 0 || w == 0;
        Value plane = buffered && empty
                          ? args[1]
                          : reducedSlice(b, loc, image, {in, ch, zero, zero},
                                         {1, 1, h, w}, 2);
        if (buffered && !empty)
          plane = tensor::InsertSliceOp::create(
              b, loc, plane, args[1],
              getAsIndexOpFoldResult(ctx, {pad[0], pad[1]}),
              getAsIndexOpFoldResult(ctx, {h, w}),
              getAsIndexOpFoldResult(ctx, {1, 1}));
        Value phases;
        if (strided) {
          Value split = tensor::ExpandShapeOp::create(
              b, loc,
              RankedTensorType::get({layout.phase[0], layout.strides[0],
                                     layout.phase[1], layout.strides[1]},
                                    imageElement),
              plane, SmallVector<ReassociationIndices>{{0, 1}, {2, 3}});
          phases = linalg::TransposeOp::create(b, loc, split, args[2],
                                               ArrayRef<int64_t>{1, 3, 0, 2})
                       .getResult()[0];
        }
        SmallVector<OpFoldResult> outOffsets = {zero, j, zero, zero};
        Value outPlane =
            reducedSlice(b, loc, args[0], outOffsets, {1, 1, ho, wo}, 2);
        if (fillValue)
          outPlane =
              linalg::FillOp::create(b, loc, fillValue, outPlane).getResult(0);
        for (int64_t pr = 0; pr < layout.strides[0]; ++pr) {
          for (int64_t pc = 0; pc < layout.strides[1]; ++pc) {
            int64_t kh = layout.phaseTaps(plan, 0, pr);
            int64_t kw = layout.phaseTaps(plan, 1, pc);
            if (kh == 0 || kw == 0)
              continue;
            Value source = plane;
            if (strided)
              source = reducedSlice(
                  b, loc, phases,
                  getAsIndexOpFoldResult(ctx, {pr, pc, 0, 0}),
                  {1, 1, ho + kh - 1, wo + kw - 1}, 2);
            Value kernel = reducedSlice(
                b, loc, taps, {ch, b.getIndexAttr(pr), b.getIndexAttr(pc)},
                {1, kh, kw}, 2, {1, layout.strides[0], layout.strides[1]});
            auto conv = linalg::Conv2DOp::create(
                b, loc, TypeRange{outPlane.getType()},
                ValueRange{source, kernel}, ValueRange{outPlane});
            convs.push_back(conv);
            outPlane = conv.getResult(0);
          }
        }
        SmallVector<Value> yielded = {insertReduced(
            b, loc, outPlane, args[0], outOffsets, {1, 1, ho, wo}, 2)};
        if (buffered)
          yielded.push_back(plane);
        if (strided)
          yielded.push_back(phases);
        scf::YieldOp::create(b, loc, yielded);
      });
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(
      rewriter, loc, planes.getResult(0), shared, blockOffsets,
      getAsIndexOpFoldResult(ctx, blockSizes),
      SmallVector<OpFoldResult>(4, rewriter.getIndexAttr(1)));

  rewriter.setInsertionPointAfter(forall);
  Value result = forall.getResult(0);
  replaceWithImage(rewriter, plan, result);
  return convs;
}

/// Tiles a plane's conv_2d (loops oh, ow, kh, kw) into one output row x
/// `columns` output columns (the largest divisor not above it) x one kernel
/// row: a 1-D convolution (upstream's DownscaleConv2DOp) that the
/// vectorizer turns into FMAs of the taps (scalars) on shifted vectors of
/// the image row.
LogicalResult tileAndVectorizePlane(RewriterBase &rewriter,
                                    linalg::Conv2DOp conv, int64_t columns) {
  SmallVector<int64_t> ranges = conv.getStaticLoopRanges();
  FailureOr<linalg::LinalgOp> tile = tileInPlace(
      rewriter, conv, {1, largestDividingTile(ranges[1], columns), 1, 0});
  if (failed(tile))
    return failure();
  return downscaleAndVectorize<linalg::DownscaleConv2DOp, linalg::Conv1DOp>(
      rewriter, *tile);
}

struct ConvLowerDepthwiseDirectPass
    : conv_lower::impl::ConvLowerDepthwiseDirectBase<
          ConvLowerDepthwiseDirectPass> {
  using Base::Base;
  void runOnOperation() override {
    if (tileColumns < 1 || tileChannels < 1 || planeColumns < 1) {
      getOperation()->emitError() << "conv-lower-depthwise-direct: the tile "
                                     "sizes must be positive";
      return signalPassFailure();
    }
    SmallVector<ConvPlan, 2> plans = collectPlans(
        getOperation(), isDirectDepthwise, DEBUG_TYPE, "direct depthwise");
    IRRewriter rewriter(&getContext());
    for (ConvPlan &plan : plans) {
      if (takesPlanes(plan)) {
        for (linalg::Conv2DOp conv : rewritePlanes(rewriter, plan))
          (void)tileAndVectorizePlane(rewriter, conv, planeColumns);
        continue;
      }
      DirectConvs direct = rewriteDepthwise(rewriter, plan);
      for (linalg::LinalgOp conv : direct.convs)
        (void)(direct.inRows ? tileRowAndVectorize(rewriter, conv, tileColumns,
                                                   tileChannels)
                             : tileAndVectorize(rewriter, conv, tileColumns,
                                                tileChannels));
    }
  }
};

} // namespace
