//===- PackFilterPanels.cpp - W^T as contiguous [K, nr] column panels -----===//
//
// conv-lower-pack-rhs leaves a GEMM's filter operand as W^T [K, F], rows
// F floats apart. The register tile reads a [K, nr] column strip of it: one
// nr-wide vector row per K step, each F * 4 bytes from the last. At F = 512
// that stride is 2 KB, and every row of the strip falls into the same two of
// the L1 cache's 64 sets (and 32 of L2's 1024): the strip cannot stay in
// cache while the row tiles re-read it. This pass gives the filter the GEMM
// libraries' packed-B layout instead, Wp [F / nr, K, nr], made from W with
// one transpose in place of pack-rhs's (so it costs no more per call, and
// is hoisted with the constant weights), and rewrites the GEMM to read its
// column panels: each strip contiguous, K * nr floats.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-pack-filter-panels"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPACKFILTERPANELS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// A GEMM's B operand traced back to pack-rhs's transpose: B is `slice` (or
/// the whole transpose where null) of W^T = transpose(W [N, K]).
struct FilterOperand {
  linalg::TransposeOp transpose;
  tensor::ExtractSliceOp slice;
};

/// Whether `v` (an index) is a multiple of `factor`: a constant, or an
/// affine.apply whose expression is (an index times a multiple of it).
bool isMultipleOf(OpFoldResult v, int64_t factor) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return *c % factor == 0;
  auto apply = dyn_cast_if_present<affine::AffineApplyOp>(
      dyn_cast<Value>(v).getDefiningOp());
  return apply && apply.getAffineMap().getNumResults() == 1 &&
         apply.getAffineMap().getResult(0).isMultipleOf(factor);
}

/// The filter operand of `gemm` where its columns can be read as whole
/// panels of `nr`: a unit-stride slice (or none) of a 2-D [1, 0] transpose
/// with static shapes, whose columns (offset and size) are multiples of nr.
FailureOr<FilterOperand> matchFilterOperand(linalg::MatmulOp gemm,
                                            int64_t nr) {
  FilterOperand f;
  Value b = gemm.getDpsInputOperand(1)->get();
  f.slice = b.getDefiningOp<tensor::ExtractSliceOp>();
  if (f.slice) {
    if (!f.slice.hasUnitStride() ||
        f.slice.getSourceType().getRank() != 2 ||
        f.slice.getResultType().getRank() != 2 ||
        !isMultipleOf(f.slice.getMixedOffsets()[1], nr) ||
        !isMultipleOf(f.slice.getMixedSizes()[1], nr))
      return failure();
    b = f.slice.getSource();
  }
  f.transpose = b.getDefiningOp<linalg::TransposeOp>();
  if (!f.transpose || f.transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return failure();
  auto wType = cast<RankedTensorType>(f.transpose.getInput().getType());
  if (!wType.hasStaticShape() || wType.getDimSize(0) % nr != 0)
    return failure();
  return f;
}

/// Wp [N / nr, K, nr] from W [N, K]: an expand_shape and one transpose,
/// right after pack-rhs's transpose of the same W.
Value packPanels(RewriterBase &rewriter, linalg::TransposeOp transpose,
                 int64_t nr) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(transpose);
  Location loc = transpose.getLoc();
  Value w = transpose.getInput();
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t n = wType.getDimSize(0), k = wType.getDimSize(1);
  auto strips = tensor::ExpandShapeOp::create(
      rewriter, loc,
      RankedTensorType::get({n / nr, nr, k}, wType.getElementType()), w,
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
  Value empty = tensor::EmptyOp::create(rewriter, loc, {n / nr, k, nr},
                                        wType.getElementType());
  return linalg::TransposeOp::create(rewriter, loc, strips.getResult(), empty,
                                     ArrayRef<int64_t>{0, 2, 1})
      .getResult()[0];
}

/// `v` divided by `nr` (a multiple of it).
OpFoldResult dividedBy(RewriterBase &rewriter, Location loc, OpFoldResult v,
                       int64_t nr) {
  AffineExpr d0 = rewriter.getAffineDimExpr(0);
  return affine::makeComposedFoldedAffineApply(rewriter, loc, d0.floorDiv(nr),
                                               {v});
}

/// The GEMM's [K, n] filter operand as its [n / nr, K, nr] slice of Wp.
Value panelsOperand(RewriterBase &rewriter, Location loc,
                    FilterOperand f, Value packed, int64_t nr) {
  if (!f.slice)
    return packed;
  SmallVector<OpFoldResult> offsets = f.slice.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = f.slice.getMixedSizes();
  SmallVector<OpFoldResult> panelOffsets = {
      dividedBy(rewriter, loc, offsets[1], nr), offsets[0],
      rewriter.getIndexAttr(0)};
  SmallVector<OpFoldResult> panelSizes = {
      dividedBy(rewriter, loc, sizes[1], nr), sizes[0],
      rewriter.getIndexAttr(nr)};
  SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(rewriter, loc, packed, panelOffsets,
                                        panelSizes, strides);
}

/// C [M, n] += A [M, K] x B [K, n] as a contraction over the panels:
/// C' [M, n / nr, nr] += A [M, K] x Bp [n / nr, K, nr], its loops (m, panel,
/// column, k), the matmul's own body.
void rewriteGemm(RewriterBase &rewriter, linalg::MatmulOp gemm, Value panels,
                 int64_t nr) {
  Location loc = gemm.getLoc();
  rewriter.setInsertionPoint(gemm);
  Value init = gemm.getDpsInitOperand(0)->get();
  auto initType = cast<RankedTensorType>(init.getType());
  auto panelsType = cast<RankedTensorType>(panels.getType());
  int64_t m = initType.getDimSize(0), strips = panelsType.getDimSize(0);
  SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
  Value initPanels = tensor::ExpandShapeOp::create(
      rewriter, loc,
      RankedTensorType::get({m, strips, nr}, initType.getElementType()), init,
      split);
  MLIRContext *ctx = rewriter.getContext();
  AffineExpr dm, dp, dn, dk;
  bindDims(ctx, dm, dp, dn, dk);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {dm, dk}, ctx),
                                 AffineMap::get(4, 0, {dp, dk, dn}, ctx),
                                 AffineMap::get(4, 0, {dm, dp, dn}, ctx)};
  SmallVector<utils::IteratorType> iterators = {
      utils::IteratorType::parallel, utils::IteratorType::parallel,
      utils::IteratorType::parallel, utils::IteratorType::reduction};
  auto generic = linalg::GenericOp::create(
      rewriter, loc, initPanels.getType(),
      ValueRange{gemm.getDpsInputOperand(0)->get(), panels},
      ValueRange{initPanels}, maps, iterators);
  IRMapping mapping;
  gemm->getRegion(0).cloneInto(&generic.getRegion(), mapping);
  Value result = tensor::CollapseShapeOp::create(
      rewriter, loc, initType, generic.getResult(0), split);
  rewriter.replaceOp(gemm, result);
}

struct ConvLowerPackFilterPanelsPass
    : conv_lower::impl::ConvLowerPackFilterPanelsBase<
          ConvLowerPackFilterPanelsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (panelWidth < 1) {
      getOperation()->emitError()
          << "conv-lower-pack-filter-panels: panel-width must be positive";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::MatmulOp> gemms;
    getOperation()->walk([&](linalg::MatmulOp op) {
      if (op.hasPureTensorSemantics() && !op.hasDynamicShape() &&
          op.getIndexingMapsArray() ==
              linalg::MatmulOp::getDefaultIndexingMaps(op.getContext()))
        gemms.push_back(op);
    });
    // One Wp per W^T, however many GEMMs (row blocks) read it.
    llvm::DenseMap<Operation *, Value> packed;
    llvm::SetVector<tensor::ExtractSliceOp> slices;
    for (linalg::MatmulOp gemm : gemms) {
      FailureOr<FilterOperand> f = matchFilterOperand(gemm, panelWidth);
      if (failed(f)) {
        LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] left alone: " << gemm
                                << "\n");
        continue;
      }
      Value &wp = packed[f->transpose];
      if (!wp)
        wp = packPanels(rewriter, f->transpose, panelWidth);
      rewriter.setInsertionPoint(gemm);
      Value panels =
          panelsOperand(rewriter, gemm.getLoc(), *f, wp, panelWidth);
      rewriteGemm(rewriter, gemm, panels, panelWidth);
      if (f->slice)
        slices.insert(f->slice);
    }
    // pack-rhs's W^T and its slices, now unread.
    for (tensor::ExtractSliceOp slice : slices)
      if (slice->use_empty())
        rewriter.eraseOp(slice);
    for (auto &[transpose, wp] : packed)
      if (transpose->use_empty())
        rewriter.eraseOp(transpose);
  }
};

} // namespace
