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
#include "mlir/Dialect/Arith/IR/Arith.h"
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
/// the whole transpose where null) of W^T = transpose(W [N, K]); `padded`:
/// N is no multiple of nr and the last panel is filled with zero columns.
struct FilterOperand {
  linalg::TransposeOp transpose;
  tensor::ExtractSliceOp slice;
  bool padded = false;
};

/// The most rows a GEMM whose filter columns are no multiple of nr may have
/// for its panels to be padded: its result is computed [M, N rounded up]
/// and sliced, a copy of M rows and no epilogue in its blocks (and a row
/// block of the im2col panels of a convolution would copy every block). A
/// batch-1 linear layer (M = 1; 1000 classes) streams its filter from memory in
/// a network, where W^T's strided rows cost most: 1280 -> 1000 after a 32 MB
/// write 0.21-0.33 ms, the same filter as panels (1280 -> 1024) 0.10-0.22;
/// conv-run, N1: 0.050 -> 0.030 ms.
constexpr int64_t kMaxPaddedRows = 16;

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
FailureOr<FilterOperand> matchFilterOperand(linalg::MatmulOp gemm, int64_t nr) {
  FilterOperand f;
  int64_t rows =
      cast<RankedTensorType>(gemm.getDpsInitOperand(0)->get().getType())
          .getDimSize(0);
  Value b = gemm.getDpsInputOperand(1)->get();
  f.slice = b.getDefiningOp<tensor::ExtractSliceOp>();
  if (f.slice) {
    if (!f.slice.hasUnitStride() || f.slice.getSourceType().getRank() != 2 ||
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
  if (!wType.hasStaticShape())
    return failure();
  // Columns that fill no whole panel: the whole filter of a GEMM of a few
  // rows only (kMaxPaddedRows), and the zero filters at most an eighth of
  // the real ones (1000 -> 1024; 2 filters padded to 32 would be 16x the
  // work).
  int64_t n = wType.getDimSize(0);
  f.padded = n % nr != 0;
  if (f.padded && (f.slice || rows > kMaxPaddedRows ||
                   8 * (static_cast<int64_t>(llvm::alignTo(n, nr)) - n) > n))
    return failure();
  return f;
}

/// `v` with zeros appended at the high end of each dimension up to `shape`.
Value zeroPaddedTo(OpBuilder &b, Location loc, Value v,
                   ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  SmallVector<int64_t> high;
  for (auto [extent, wanted] : llvm::zip(type.getShape(), shape))
    high.push_back(wanted - extent);
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v,
      getAsIndexOpFoldResult(b.getContext(),
                             SmallVector<int64_t>(shape.size(), 0)),
      getAsIndexOpFoldResult(b.getContext(), high), zero);
}

/// Wp [ceil(N / nr), K, nr] from W [N, K] (zero filters appended to a whole
/// panel): an expand_shape and one transpose, right after pack-rhs's
/// transpose of the same W.
Value packPanels(RewriterBase &rewriter, linalg::TransposeOp transpose,
                 int64_t nr) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(transpose);
  Location loc = transpose.getLoc();
  Value w = transpose.getInput();
  auto wType = cast<RankedTensorType>(w.getType());
  int64_t n = llvm::alignTo(wType.getDimSize(0), nr), k = wType.getDimSize(1);
  w = zeroPaddedTo(rewriter, loc, w, {n, k}); // W's rows are the filters
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
Value panelsOperand(RewriterBase &rewriter, Location loc, FilterOperand f,
                    Value packed, int64_t nr) {
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
/// column, k), the matmul's own body. With padded panels C' has the whole
/// panels' columns, C zero-padded into it, and C is its slice.
void rewriteGemm(RewriterBase &rewriter, linalg::MatmulOp gemm, Value panels,
                 int64_t nr) {
  Location loc = gemm.getLoc();
  rewriter.setInsertionPoint(gemm);
  Value init = gemm.getDpsInitOperand(0)->get();
  auto initType = cast<RankedTensorType>(init.getType());
  auto panelsType = cast<RankedTensorType>(panels.getType());
  int64_t m = initType.getDimSize(0), strips = panelsType.getDimSize(0);
  Value initAll = zeroPaddedTo(rewriter, loc, init, {m, strips * nr});
  auto allType = cast<RankedTensorType>(initAll.getType());
  SmallVector<ReassociationIndices> split = {{0}, {1, 2}};
  Value initPanels = tensor::ExpandShapeOp::create(
      rewriter, loc,
      RankedTensorType::get({m, strips, nr}, initType.getElementType()),
      initAll, split);
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
  Value result = tensor::CollapseShapeOp::create(rewriter, loc, allType,
                                                 generic.getResult(0), split);
  if (allType != initType)
    result = tensor::ExtractSliceOp::create(
        rewriter, loc, initType, result,
        getAsIndexOpFoldResult(rewriter.getContext(), {0, 0}),
        getAsIndexOpFoldResult(rewriter.getContext(),
                               {m, initType.getDimSize(1)}),
        getAsIndexOpFoldResult(rewriter.getContext(), {1, 1}));
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
        LLVM_DEBUG(llvm::dbgs()
                   << "[" DEBUG_TYPE "] left alone: " << gemm << "\n");
        continue;
      }
      Value &wp = packed[f->transpose];
      if (!wp)
        wp = packPanels(rewriter, f->transpose, panelWidth);
      rewriter.setInsertionPoint(gemm);
      Value panels = panelsOperand(rewriter, gemm.getLoc(), *f, wp, panelWidth);
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
