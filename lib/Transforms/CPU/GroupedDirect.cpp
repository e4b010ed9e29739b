//===- GroupedDirect.cpp - few-channel grouped convolutions on vectors ----===//
//
// A grouped convolution with few filters per group (ResNeXt: 32 groups of
// 8 channels into 8 filters) through the im2col rewrite is one GEMM per
// group with N = 8 filters: half of AVX2's 16-column register tile, behind
// an im2col gather per call (ResNeXt g32 3x3 256 28x28: 0.59x ONNX Runtime
// NCHW, 0.79x NHWC). Here each group is a channels-last
// linalg.conv_2d_nhwc_hwcf on its slice of the padded image (no gather), in
// an scf.forall over (image, group), tiled to one output row x a run of
// columns x one tap x one channel: a 1-D convolution (upstream's
// DownscaleSizeOneWindowed2DConvolution) that the vectorizer makes one FMA
// per column, a broadcast pixel on the vector of the group's filters, with
// the columns' accumulators held in registers across every tap and channel
// (14 columns on AVX2: 14 accumulators, the filter row and the broadcast).
// The same layer: NHWC 0.48 -> 0.36 ms, NCHW 0.81 -> 0.56 ms (min of 5,
// docs/performance-journal.md, 2026-12-04).
//
//===----------------------------------------------------------------------===//

#include "Transforms/Common/ChannelsLast.h"
#include "Transforms/CPU/DirectConvUtils.h"
#include "Transforms/CPU/TilingUtils.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-grouped-direct"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERGROUPEDDIRECT
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// f32 lanes of the vector registers the accumulator budget counts (AVX2).
constexpr int64_t kRegisterLanes = 8;

/// The convolutions this pass takes: 2-D, grouped with more than one
/// channel a group (depthwise is conv-lower-depthwise-direct's), fewer than
/// `maxFilters` filters a group (a full GEMM register tile wastes nothing;
/// strided, as many: ResNeXt-50's 1024-channel stride-2 layer, 32 filters a
/// group, took 0.49 ms at batch 1 and 3.41 at batch 8 as per-group GEMMs,
/// 0.27 and 2.24 here; at stride 1 the GEMMs won at batch 8, 1.92 against
/// 2.10) and a whole number of `lanes`-filter vectors, f32 throughout,
/// static, not quantized, unit dilations.
bool takesGrouped(const ConvPlan &plan, int64_t maxFilters, int64_t lanes) {
  linalg::LinalgOp op = plan.op;
  auto f32 = [](Value v) { return getElementTypeOrSelf(v.getType()).isF32(); };
  auto one = [](int64_t v) { return v == 1; };
  int64_t cg = plan.channels / plan.groups;
  StringRef axes = plan.form->axes.w;
  bool strided = llvm::any_of(plan.strides, [](int64_t v) { return v > 1; });
  return plan.spatialRank() == 2 && !plan.isQuantized() && plan.groups > 1 &&
         cg > 1 &&
         (plan.filtersPerGroup < maxFilters ||
          (strided && plan.filtersPerGroup == maxFilters)) &&
         plan.filtersPerGroup % lanes == 0 &&
         llvm::all_of(plan.dilations, one) && !op.hasDynamicShape() &&
         cast<ShapedType>(plan.input.getType()).hasStaticShape() &&
         axes.contains('g') && axes.contains('c') && axes.contains('f') &&
         f32(op.getDpsInputOperand(0)->get()) &&
         f32(op.getDpsInputOperand(1)->get()) &&
         f32(op.getDpsInitOperand(0)->get());
}

/// The filter as [G, KH, KW, Cg, Fg]: each group's HWCF taps.
Value groupTaps(OpBuilder &b, Location loc, ConvPlan &plan) {
  StringRef axes = plan.form->axes.w;
  SmallVector<int64_t> perm;
  for (char axis : StringRef("grscf"))
    perm.push_back(axes.find(axis));
  return transposed(b, loc, plan.op.getDpsInputOperand(1)->get(), perm);
}

/// `image` ([N, H, W, C], or a slice of it) zero-padded as the convolution
/// reads it.
Value zeroPadded(OpBuilder &b, Location loc, Value image, ConvPlan &plan) {
  ArrayRef<int64_t> pad = plan.padding; // top, left, bottom, right
  if (llvm::all_of(pad, [](int64_t p) { return p == 0; }))
    return image;
  auto type = cast<RankedTensorType>(image.getType());
  SmallVector<int64_t> shape = llvm::to_vector(type.getShape());
  shape[1] += pad[0] + pad[2];
  shape[2] += pad[1] + pad[3];
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), image,
      getAsIndexOpFoldResult(b.getContext(), {0, pad[0], pad[1], 0}),
      getAsIndexOpFoldResult(b.getContext(), {0, pad[2], pad[3], 0}), zero);
}

/// A channels-first group slice ([1, Cg, H, W]) transposed into the
/// interior of a zero-padded channels-last buffer ([1, Hp, Wp, Cg]), the
/// transpose writing there itself.
Value paddedChannelsLast(OpBuilder &b, Location loc, Value slice,
                         ConvPlan &plan) {
  auto type = cast<RankedTensorType>(slice.getType());
  int64_t cg = type.getDimSize(1), h = type.getDimSize(2),
          w = type.getDimSize(3);
  ArrayRef<int64_t> pad = plan.padding; // top, left, bottom, right
  Value buffer = tensor::EmptyOp::create(
      b, loc, {1, h + pad[0] + pad[2], w + pad[1] + pad[3], cg},
      type.getElementType());
  bool padded = llvm::any_of(pad, [](int64_t p) { return p != 0; });
  if (padded) {
    Value zero =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
    buffer = linalg::FillOp::create(b, loc, zero, buffer).getResult(0);
  }
  SmallVector<OpFoldResult> offsets =
      getAsIndexOpFoldResult(b.getContext(), {0, pad[0], pad[1], 0});
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(b.getContext(), {1, h, w, cg});
  SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
  Value interior =
      padded ? tensor::ExtractSliceOp::create(b, loc, buffer, offsets, sizes,
                                              unit)
                   .getResult()
             : buffer;
  Value image = linalg::TransposeOp::create(b, loc, slice, interior,
                                            ArrayRef<int64_t>{0, 2, 3, 1})
                    ->getResult(0);
  if (!padded)
    return image;
  return tensor::InsertSliceOp::create(b, loc, image, buffer, offsets, sizes,
                                       unit);
}

/// How many groups a channels-last task takes: enough that its channels of
/// a pixel fill a 64-byte cache line (ResNeXt's 8 channels a group: 2), so
/// that its reads of the image and writes of the result are whole lines;
/// one where the groups do not split so.
int64_t groupsPerTask(int64_t groups, int64_t channelsPerGroup,
                      int64_t elementBytes) {
  int64_t block = std::max<int64_t>(1, 64 / (channelsPerGroup * elementBytes));
  return groups % block == 0 ? block : 1;
}

/// The convolutions of a task's `block` groups (from group `grp` * block):
/// each reads its channels of the task's padded image `input` and writes
/// its filters of `out` (a loop over the groups when there are several);
/// returns the result and sets `conv` to the (one) convolution op.
Value convolveBlock(OpBuilder &b, Location loc, ConvPlan &plan, Value input,
                    Value taps, Value grp, int64_t block, Value out,
                    linalg::Conv2DNhwcHwcfOp &conv) {
  MLIRContext *ctx = b.getContext();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto outType = cast<RankedTensorType>(out.getType());
  int64_t cg = inputType.getDimSize(3) / block,
          fg = outType.getDimSize(3) / block;
  int64_t kh = plan.kernel[0], kw = plan.kernel[1];
  Type element = outType.getElementType();
  OpFoldResult zero = b.getIndexAttr(0);
  SmallVector<OpFoldResult> units4(4, b.getIndexAttr(1));
  // Group j of the block: its channels, taps and filters, convolved.
  auto convolve = [&](OpBuilder &nb, Value j, Value into) -> Value {
    AffineExpr d0, d1;
    bindDims(ctx, d0, d1);
    OpFoldResult group = affine::makeComposedFoldedAffineApply(
        nb, loc, d0 * block + d1, {grp, j});
    OpFoldResult channel =
        affine::makeComposedFoldedAffineApply(nb, loc, d0 * cg, {j});
    OpFoldResult filterAt =
        affine::makeComposedFoldedAffineApply(nb, loc, d0 * fg, {j});
    Value x = block == 1 ? input
                         : tensor::ExtractSliceOp::create(
                               nb, loc, input, {zero, zero, zero, channel},
                               getAsIndexOpFoldResult(
                                   ctx, {1, inputType.getDimSize(1),
                                         inputType.getDimSize(2), cg}),
                               units4)
                               .getResult();
    Value w = tensor::ExtractSliceOp::create(
        nb, loc, RankedTensorType::get({kh, kw, cg, fg}, element), taps,
        {group, zero, zero, zero, zero},
        getAsIndexOpFoldResult(ctx, {1, kh, kw, cg, fg}),
        SmallVector<OpFoldResult>(5, b.getIndexAttr(1)));
    SmallVector<OpFoldResult> yOffsets = {zero, zero, zero, filterAt};
    SmallVector<OpFoldResult> ySizes = getAsIndexOpFoldResult(
        ctx, {1, outType.getDimSize(1), outType.getDimSize(2), fg});
    Value y = block == 1 ? into
                         : tensor::ExtractSliceOp::create(nb, loc, into,
                                                          yOffsets, ySizes,
                                                          units4)
                               .getResult();
    conv = linalg::Conv2DNhwcHwcfOp::create(
        nb, loc, TypeRange{y.getType()}, ValueRange{x, w}, ValueRange{y},
        {nb.getNamedAttr("strides", nb.getI64TensorAttr(plan.strides)),
         nb.getNamedAttr("dilations", nb.getI64TensorAttr(plan.dilations))});
    if (block == 1)
      return conv.getResult(0);
    return tensor::InsertSliceOp::create(nb, loc, conv.getResult(0), into,
                                         yOffsets, ySizes, units4)
        .getResult();
  };
  if (block == 1)
    return convolve(b, arith::ConstantIndexOp::create(b, loc, 0), out);
  auto loop = scf::ForOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, 0),
      arith::ConstantIndexOp::create(b, loc, block),
      arith::ConstantIndexOp::create(b, loc, 1), ValueRange{out},
      [&](OpBuilder &nb, Location, Value j, ValueRange iter) {
        scf::YieldOp::create(nb, loc, convolve(nb, j, iter[0]));
      });
  return loop.getResult(0);
}

/// Replaces `plan.op` by an scf.forall over (image, group) (what threads
/// share; marked conv_lower.grouped_direct; channels-last tasks take
/// groupsPerTask groups, one after the other) of linalg.conv_2d_nhwc_hwcf
/// ops, each reading its group's channels of the channels-last image,
/// zero-padded by the task itself, and writing its filters of the result;
/// returns that conv. (The whole batch padded before the loop was one
/// serial pass, read back from memory by the tasks: ResNeXt's g32 3x3
/// stride 2 on 256 channels at 56x56 took 0.53 ms at N1, 10.1 at N8.)
/// A channels-first layer whose init is a fill has each task transpose its
/// own slice in (into its padded buffer) and its result out (into the
/// channels-first output): transposing the whole image in and the whole
/// result out were two more serial passes over memory (the g32 128-channel
/// 56x56 layer at batch 8: 4.6 ms NHWC, 7.9 NCHW).
linalg::Conv2DNhwcHwcfOp rewriteGroups(RewriterBase &rewriter, ConvPlan &plan) {
  Location loc = plan.op.getLoc();
  const ConvForm &form = *plan.form;
  MLIRContext *ctx = rewriter.getContext();
  rewriter.setInsertionPoint(plan.op);
  Value init = plan.op.getDpsInitOperand(0)->get();
  Type element = getElementTypeOrSelf(init);
  auto fill = init.getDefiningOp<linalg::FillOp>();
  bool nchw = form.layout == ImageLayout::nchw;
  bool perTaskTranspose = nchw && fill;
  Value image = perTaskTranspose ? croppedImage(rewriter, loc, plan)
                                 : channelsLastImage(rewriter, loc, plan);
  Value taps = groupTaps(rewriter, loc, plan);
  auto imageType = cast<RankedTensorType>(image.getType());
  unsigned hDim = perTaskTranspose ? 2 : 1;
  int64_t n = imageType.getDimSize(0), h = imageType.getDimSize(hDim),
          w = imageType.getDimSize(hDim + 1);
  int64_t g = plan.groups, cg = plan.channels / g, fg = plan.filtersPerGroup;
  int64_t ho = plan.outSize[0], wo = plan.outSize[1];
  Value acc, fillValue;
  if (perTaskTranspose) {
    acc = tensor::EmptyOp::create(rewriter, loc, {n, g * fg, ho, wo}, element);
    fillValue = fill.getInputs()[0];
  } else if (fill) {
    acc = tensor::EmptyOp::create(rewriter, loc, {n, ho, wo, g * fg}, element);
    fillValue = fill.getInputs()[0];
  } else {
    acc = collapsed(rewriter, loc, init, form.outputToImage);
    if (nchw)
      acc = transposed(rewriter, loc, acc, {0, 2, 3, 1});
  }
  int64_t block =
      perTaskTranspose
          ? 1
          : groupsPerTask(g, cg, element.getIntOrFloatBitWidth() / 8);
  auto forall = scf::ForallOp::create(
      rewriter, loc, getAsIndexOpFoldResult(ctx, {n, g / block}),
      ValueRange{acc}, /*mapping=*/std::nullopt);
  ConvLowerDialect::GroupedDirectAttrHelper(ctx).setAttr(
      forall, rewriter.getUnitAttr());
  rewriter.setInsertionPointToStart(forall.getBody());
  Value in = forall.getInductionVar(0), grp = forall.getInductionVar(1);
  Value shared = forall.getRegionIterArgs()[0];
  AffineExpr d0;
  bindDims(ctx, d0);
  OpFoldResult zero = rewriter.getIndexAttr(0), unit = rewriter.getIndexAttr(1);
  OpFoldResult firstChannel = affine::makeComposedFoldedAffineApply(
      rewriter, loc, d0 * (block * cg), {grp});
  OpFoldResult firstFilter = affine::makeComposedFoldedAffineApply(
      rewriter, loc, d0 * (block * fg), {grp});
  SmallVector<OpFoldResult> units(4, unit);
  Value input =
      perTaskTranspose
          ? paddedChannelsLast(
                rewriter, loc,
                tensor::ExtractSliceOp::create(
                    rewriter, loc, image, {in, firstChannel, zero, zero},
                    getAsIndexOpFoldResult(ctx, {1, cg, h, w}), units),
                plan)
          : zeroPadded(rewriter, loc,
                       tensor::ExtractSliceOp::create(
                           rewriter, loc, image, {in, zero, zero, firstChannel},
                           getAsIndexOpFoldResult(ctx, {1, h, w, block * cg}),
                           units),
                       plan);
  SmallVector<OpFoldResult> outOffsets =
      perTaskTranspose ? SmallVector<OpFoldResult>{in, firstFilter, zero, zero}
                       : SmallVector<OpFoldResult>{in, zero, zero, firstFilter};
  SmallVector<OpFoldResult> outSizes = getAsIndexOpFoldResult(
      ctx, perTaskTranspose ? ArrayRef<int64_t>{1, fg, ho, wo}
                            : ArrayRef<int64_t>{1, ho, wo, block * fg});
  // The task's part of the shared result (a channels-first task computes
  // into a buffer of its own, transposed into that part).
  Value part = tensor::ExtractSliceOp::create(rewriter, loc, shared,
                                              outOffsets, outSizes, units);
  Value out = perTaskTranspose
                  ? tensor::EmptyOp::create(rewriter, loc, {1, ho, wo, fg},
                                            element)
                        .getResult()
                  : part;
  if (fillValue)
    out = linalg::FillOp::create(rewriter, loc, fillValue, out).getResult(0);
  linalg::Conv2DNhwcHwcfOp conv;
  Value computed = convolveBlock(rewriter, loc, plan, input, taps, grp, block,
                                 out, conv);
  if (perTaskTranspose)
    computed = linalg::TransposeOp::create(rewriter, loc, computed, part,
                                           ArrayRef<int64_t>{0, 3, 1, 2})
                   ->getResult(0);
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(rewriter, loc, computed, shared,
                                        outOffsets, outSizes, units);
  rewriter.setInsertionPointAfter(forall);
  Value result = forall.getResult(0);
  if (nchw && !perTaskTranspose)
    result = transposed(rewriter, loc, result, {0, 3, 1, 2});
  replaceWithImage(rewriter, plan, result);
  return conv;
}

/// Tiles a group's conv (loops n, oh, ow, f, kh, kw, c) to one output row x
/// as many output columns as `accumulators` vectors hold with all the
/// group's filters (the largest divisor of the row not above that) x one
/// tap x one channel: a 1-D convolution that the vectorizer makes one FMA
/// per column (a broadcast pixel, the tap's filter vector), its accumulator
/// tile hoisted out of the tap and channel loops so it stays in registers.
/// (Vectorized whole, the taps' [KW, Cg, Fg] contraction extracts and
/// broadcasts pixels from registers: slower than the GEMM it replaces.)
LogicalResult tileAndVectorizeGroup(RewriterBase &rewriter,
                                    linalg::Conv2DNhwcHwcfOp conv,
                                    int64_t accumulators) {
  SmallVector<int64_t> ranges = conv.getStaticLoopRanges();
  // Registers a column's filters take: AVX2 vectors of 8 floats, whatever
  // multiple of `lanes` a group is (4 filters fill half of one).
  int64_t vectorsPerColumn = llvm::divideCeil(ranges[3], kRegisterLanes);
  int64_t columns = largestDividingTile(
      ranges[2], std::max<int64_t>(1, accumulators / vectorsPerColumn));
  FailureOr<linalg::LinalgOp> tile =
      tileInPlace(rewriter, conv, {1, 1, columns, 0, 1, 1, 1});
  if (failed(tile))
    return failure();
  Operation *loop = (*tile)->getParentOfType<scf::ForallOp>();
  if (failed(downscaleAndVectorize<
             linalg::DownscaleSizeOneWindowed2DConvolution<
                 linalg::Conv2DNhwcHwcfOp, linalg::Conv1DNwcWcfOp>,
             linalg::Conv1DNwcWcfOp>(rewriter, *tile)))
    return failure();
  // The accumulator tile read and written whole each step (its slices
  // folded, so the read and the write match), then hoisted out of the tap
  // and channel loops, innermost first, so it climbs as far as its indices
  // allow.
  RewritePatternSet cleanup(rewriter.getContext());
  tensor::ExtractSliceOp::getCanonicalizationPatterns(cleanup,
                                                      rewriter.getContext());
  vector::TransferReadOp::getCanonicalizationPatterns(cleanup,
                                                      rewriter.getContext());
  vector::TransferWriteOp::getCanonicalizationPatterns(cleanup,
                                                       rewriter.getContext());
  (void)applyPatternsGreedily(loop->getRegion(0), std::move(cleanup));
  SmallVector<scf::ForOp> loops;
  loop->walk([&](scf::ForOp l) { loops.push_back(l); });
  for (scf::ForOp l : loops)
    (void)hoistLoopInvariantSubsets(rewriter, l);
  return success();
}

struct ConvLowerGroupedDirectPass
    : conv_lower::impl::ConvLowerGroupedDirectBase<ConvLowerGroupedDirectPass> {
  using Base::Base;
  void runOnOperation() override {
    if (accumulators < 1 || maxFilters < 1 || filterLanes < 1) {
      getOperation()->emitError() << "conv-lower-grouped-direct: the sizes "
                                     "must be positive";
      return signalPassFailure();
    }
    SmallVector<ConvPlan, 2> plans = collectPlans(
        getOperation(),
        [&](const ConvPlan &plan) {
          return takesGrouped(plan, maxFilters, filterLanes);
        },
        DEBUG_TYPE, "grouped direct");
    IRRewriter rewriter(&getContext());
    for (ConvPlan &plan : plans)
      (void)tileAndVectorizeGroup(rewriter, rewriteGroups(rewriter, plan),
                                  accumulators);
  }
};

} // namespace
