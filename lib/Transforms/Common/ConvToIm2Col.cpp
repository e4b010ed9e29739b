//===- ConvToIm2Col.cpp - linalg convs into im2col + GEMM + fold ----------===//
//
// Every supported convolution (1-D ones lifted to 2-D first; 2-D and 3-D)
// becomes
//
//   A = conv_lower.im2col(X)          [G, M, K]   (or [M, K] for one group)
//   B = reshape(W)                    filter dims regrouped as (g, f, k)
//   C = contraction(A, B)             [G, M, Fg]  (or [M, F])
//   Y = conv_lower.fold(C)            output layout
//
// A quantized convolution (linalg's `_q` ops, with zero points zx and zw)
// keeps the plain GEMM and corrects its result by the expansion
//
//   sum (x - zx)(w - zw) = sum x w - zw * sum x - zx * sum w + K * zx * zw
//
// with the window sums (sum x) reduced from A's rows and the filter sums
// (sum w) from B once: the O(M N K) work stays one integer GEMM.
//
// The forms differ only in data: where the spatial dims sit, how the filter
// regroups into B, and how grouped images collapse. That table is
// `getConvForms()`; the rewrite itself is form-agnostic.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Common/ChannelsLast.h"
#include "Transforms/Common/ConvAnalysis.h"
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"
#include "ConvLower/Transforms/Common/Im2Col.h"
#include "ConvLower/Transforms/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-im2col"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERIM2COL
#include "ConvLower/Transforms/Common/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

//===----------------------------------------------------------------------===//
// IR construction helpers
//===----------------------------------------------------------------------===//

Value collapseIfNeeded(OpBuilder &b, Location loc, Value v,
                       ArrayRef<ReassociationIndices> reassoc) {
  if (reassoc.empty())
    return v;
  return tensor::CollapseShapeOp::create(b, loc, v, reassoc);
}

Value expandIfNeeded(OpBuilder &b, Location loc, Value v, RankedTensorType type,
                     ArrayRef<ReassociationIndices> reassoc) {
  if (reassoc.empty())
    return v;
  return tensor::ExpandShapeOp::create(b, loc, type, v, reassoc);
}

/// `batch * factor` as an index value (batch may be dynamic).
SmallVector<Value> dynamicRows(OpBuilder &b, Location loc, Value image,
                               int64_t factor) {
  if (!cast<RankedTensorType>(image.getType()).isDynamicDim(0))
    return {};
  Value n = tensor::DimOp::create(b, loc, image, 0);
  Value f = arith::ConstantIndexOp::create(b, loc, factor);
  return {arith::MulIOp::create(b, loc, n, f)};
}

/// A tensor of `shape` holding the convolution's initial value, when that is
/// a fill; otherwise zeros (the original init is added back after the fold).
Value buildAccumulator(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       Type elementType, ValueRange dynSizes, Value init,
                       bool &initIsFill) {
  Value fillValue;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    fillValue = fill.getInputs()[0];
    initIsFill = true;
  } else {
    fillValue = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
    initIsFill = false;
  }
  Value empty = tensor::EmptyOp::create(b, loc, shape, elementType, dynSizes);
  return linalg::FillOp::create(b, loc, fillValue, empty).getResult(0);
}

SmallVector<AffineMap> makeMaps(MLIRContext *ctx,
                                ArrayRef<SmallVector<AffineExpr, 4>> exprs) {
  return AffineMap::inferFromExprList(exprs, ctx);
}

/// A linalg.generic multiply-accumulate: out += ext(a) * ext(b), signed.
Value buildGenericContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                              Value acc, ArrayRef<AffineMap> maps,
                              ArrayRef<utils::IteratorType> iterators) {
  auto body = [](OpBuilder &nb, Location nloc, ValueRange args) {
    Type accType = args[2].getType();
    Value a = convertScalarToDtype(nb, nloc, args[0], accType, false);
    Value c = convertScalarToDtype(nb, nloc, args[1], accType, false);
    Value r;
    if (isa<FloatType>(accType))
      r = arith::AddFOp::create(nb, nloc, args[2],
                                arith::MulFOp::create(nb, nloc, a, c));
    else
      r = arith::AddIOp::create(nb, nloc, args[2],
                                arith::MulIOp::create(nb, nloc, a, c));
    linalg::YieldOp::create(nb, nloc, r);
  };
  return linalg::GenericOp::create(b, loc, acc.getType(), ValueRange{lhs, rhs},
                                   ValueRange{acc}, maps, iterators, body)
      .getResult(0);
}

/// C[g, m, f] += A[g, m, k] * B[roles(g, f, k)]: a named matmul or
/// batch_matmul where the filter layout allows one, else a linalg.generic.
Value buildGemm(OpBuilder &b, Location loc, Value lhs, Value rhs, Value acc,
                ArrayRef<Role> roles) {
  MLIRContext *ctx = b.getContext();
  bool grouped = llvm::is_contained(roles, Role::G);
  auto resultType = acc.getType();
  if (!grouped) {
    // linalg.matmul: (m, n, k); B is [K, F] natively or [F, K] transposed.
    auto mm = linalg::MatmulOp::create(b, loc, TypeRange{resultType},
                                       ValueRange{lhs, rhs}, ValueRange{acc});
    if (roles.front() == Role::F) {
      AffineExpr m, n, k;
      bindDims(ctx, m, n, k);
      SmallVector<AffineMap> maps = makeMaps(ctx, {{m, k}, {n, k}, {m, n}});
      mm.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
    }
    return mm.getResult(0);
  }
  AffineExpr g, m, f, k;
  bindDims(ctx, g, m, f, k);
  if (roles.size() == 3 && roles[0] == Role::G) {
    auto bmm = linalg::BatchMatmulOp::create(
        b, loc, TypeRange{resultType}, ValueRange{lhs, rhs}, ValueRange{acc});
    if (roles[1] == Role::F) {
      SmallVector<AffineMap> maps = makeMaps(ctx, {{g, m, k}, {g, f, k}, {g, m, f}});
      bmm.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
    }
    return bmm.getResult(0);
  }
  SmallVector<AffineExpr, 4> rhsExprs;
  for (Role role : roles)
    rhsExprs.push_back(role == Role::G ? g : role == Role::F ? f : k);
  SmallVector<AffineMap> maps =
      makeMaps(ctx, {{g, m, k}, rhsExprs, {g, m, f}});
  using IT = utils::IteratorType;
  return buildGenericContraction(
      b, loc, lhs, rhs, acc, maps,
      {IT::parallel, IT::parallel, IT::parallel, IT::reduction});
}

/// Crops the input extent that the (smaller than maximal) output never reads.
Value cropImage(OpBuilder &b, Location loc, Value image, const ConvPlan &plan) {
  if (llvm::all_of(plan.crop, [](int64_t c) { return c == 0; }))
    return image;
  auto type = cast<RankedTensorType>(image.getType());
  SpatialImageDims dims = getImageDims(plan.form->layout, plan.spatialRank());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, image);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  for (auto [dim, crop] : llvm::zip(dims.spatial, plan.crop))
    sizes[dim] = b.getIndexAttr(type.getDimSize(dim) - crop);
  return tensor::ExtractSliceOp::create(b, loc, image, offsets, sizes, strides);
}

/// [N, C, S...] <-> [N, C, prod(S)]: the spatial dims of a channels-first
/// image as one.
SmallVector<ReassociationIndices> mergeSpatial(unsigned spatialRank) {
  ReassociationIndices spatial;
  for (unsigned i = 0; i < spatialRank; ++i)
    spatial.push_back(2 + i);
  return {{0}, {1}, spatial};
}

//===----------------------------------------------------------------------===//
// Zero points
//===----------------------------------------------------------------------===//

/// `sum_k ext(operand[..., k, ...])` into an `accType` tensor indexed by
/// `resultExprs` of the operand's loops (every other loop is reduced).
Value buildSum(OpBuilder &b, Location loc, Value operand,
               ArrayRef<AffineExpr> operandExprs,
               ArrayRef<AffineExpr> resultExprs, ArrayRef<int64_t> resultShape,
               ValueRange resultDynSizes, unsigned numLoops, Type accType) {
  MLIRContext *ctx = b.getContext();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(accType));
  Value empty =
      tensor::EmptyOp::create(b, loc, resultShape, accType, resultDynSizes);
  Value init = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  SmallVector<utils::IteratorType> iterators(numLoops,
                                             utils::IteratorType::reduction);
  for (AffineExpr e : resultExprs)
    iterators[cast<AffineDimExpr>(e).getPosition()] =
        utils::IteratorType::parallel;
  SmallVector<AffineMap> maps = {
      AffineMap::get(numLoops, 0, operandExprs, ctx),
      AffineMap::get(numLoops, 0, resultExprs, ctx)};
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{operand}, ValueRange{init},
             maps, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value x = convertScalarToDtype(nb, nloc, args[0], accType,
                                              /*isUnsignedCast=*/false);
               Value sum = arith::AddIOp::create(nb, nloc, args[1], x);
               linalg::YieldOp::create(nb, nloc, sum);
             })
      .getResult(0);
}

/// C - zw * rowsum(A) - zx * colsum(B) + K * zx * zw, elementwise over C
/// ([G, M, Fg], or [M, F] for one group): the plain GEMM C = sum x w made
/// the quantized convolution's sum (x - zx)(w - zw). A term whose zero
/// point is a constant 0 is left out with its sums: symmetric weights (zw
/// = 0, the usual int8 quantization) need no pass over A's rows per call.
/// `gemm` itself when both are.
Value subtractZeroPointTerms(OpBuilder &b, Location loc, Value gemm, Value lhs,
                             Value filterB, const ConvPlan &plan) {
  MLIRContext *ctx = b.getContext();
  auto cType = cast<RankedTensorType>(gemm.getType());
  Type accType = cType.getElementType();
  bool grouped = cType.getRank() == 3;
  bool rowTerm = !matchPattern(plan.filterZeroPoint, m_Zero());
  bool colTerm = !matchPattern(plan.inputZeroPoint, m_Zero());
  if (!rowTerm && !colTerm)
    return gemm;

  // Window sums: A is [G, M, K] (or [M, K]) -> [G, M] (or [M]).
  SmallVector<AffineExpr> aExprs, rowExprs;
  for (unsigned d = 0; d < cType.getRank(); ++d)
    aExprs.push_back(getAffineDimExpr(d, ctx));
  rowExprs.assign(aExprs.begin(), aExprs.end() - 1);
  SmallVector<int64_t> rowShape(cType.getShape().drop_back());
  SmallVector<Value> rowDyn;
  if (ShapedType::isDynamic(rowShape.back()))
    rowDyn.push_back(tensor::DimOp::create(b, loc, lhs, grouped ? 1 : 0));
  Value rowSums = rowTerm ? buildSum(b, loc, lhs, aExprs, rowExprs, rowShape,
                                     rowDyn, cType.getRank(), accType)
                          : Value();

  // Filter sums: B's dims play (g, f, k) -> [G, Fg], or (f, k) -> [F] for
  // one group (a form without an f role has Fg = 1).
  unsigned bLoops = grouped ? 3 : 2;
  AffineExpr g = getAffineDimExpr(0, ctx),
             f = getAffineDimExpr(bLoops - 2, ctx),
             k = getAffineDimExpr(bLoops - 1, ctx);
  SmallVector<AffineExpr> bExprs;
  for (Role role : plan.form->bRoles)
    bExprs.push_back(role == Role::G ? g : role == Role::F ? f : k);
  SmallVector<AffineExpr> colExprs =
      grouped ? SmallVector<AffineExpr>{g, f} : SmallVector<AffineExpr>{f};
  SmallVector<int64_t> colShape =
      grouped ? SmallVector<int64_t>{plan.groups, plan.filtersPerGroup}
              : SmallVector<int64_t>{cType.getShape().back()};
  Value colSums = colTerm ? buildSum(b, loc, filterB, bExprs, colExprs,
                                     colShape, {}, bLoops, accType)
                          : Value();

  // The combination, in C's iteration space (g, m, f) or (m, f).
  Value zx = convertScalarToDtype(b, loc, plan.inputZeroPoint, accType, false);
  Value zw = convertScalarToDtype(b, loc, plan.filterZeroPoint, accType, false);
  Value kzz = arith::MulIOp::create(
      b, loc,
      arith::MulIOp::create(
          b, loc,
          arith::ConstantOp::create(
              b, loc, b.getIntegerAttr(accType, plan.reductionSize())),
          zx),
      zw);
  unsigned rank = cType.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<Value> inputs = {gemm};
  SmallVector<AffineMap> maps = {identity};
  if (rowTerm) {
    inputs.push_back(rowSums);
    maps.push_back(identity.dropResult(rank - 1));
  }
  if (colTerm) {
    inputs.push_back(colSums);
    maps.push_back(identity.dropResult(rank - 2));
  }
  maps.push_back(identity);
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, cType, inputs, ValueRange{gemm}, maps, parallel,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value v = args[0];
               unsigned next = 1;
               if (rowTerm)
                 v = arith::SubIOp::create(
                     nb, nloc, v,
                     arith::MulIOp::create(nb, nloc, zw, args[next++]));
               if (colTerm)
                 v = arith::SubIOp::create(
                     nb, nloc, v,
                     arith::MulIOp::create(nb, nloc, zx, args[next++]));
               // K zx zw is 0 when either is.
               if (rowTerm && colTerm)
                 v = arith::AddIOp::create(nb, nloc, v, kzz);
               linalg::YieldOp::create(nb, nloc, v);
             })
      .getResult(0);
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

/// Below this many pixels an image's pointwise NCHW GEMM has too few
/// columns for the filters-first form (a 7x7 image's 49: one 32-wide tile
/// and a 17-wide remainder, 40 % of the CPU's peak on r50's 512 -> 2048
/// layer); the image is transposed instead (rowsFirstPointwiseNchw).
constexpr int64_t kFiltersFirstMinPixels = 64;

/// 1x1, stride 1, unpadded NCHW, one group, a small static image: the
/// channels-last GEMM Y^T = X^T . W^T, X^T [N * P, C] one transpose of the
/// (small) image and Y one of the result, so that the filters are the
/// GEMM's columns (a matmul with W as [F, K], packed like the NHWC
/// layers'). r50 1x1 512 -> 2048 7x7 on 2 Zen 4 cores: 1.1 -> 0.5 ms.
Value rowsFirstPointwiseNchw(OpBuilder &b, Location loc, Value x,
                             Value filterB, const ConvPlan &plan, Value init,
                             RankedTensorType imageOutType, bool &initIsFill,
                             Operation *&contraction) {
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t n = xType.getDimSize(0), pixels = xType.getDimSize(2),
          f = plan.filtersPerGroup;
  Value rows = tensor::CollapseShapeOp::create(
      b, loc, transposed(b, loc, x, {0, 2, 1}),
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
  Value acc = buildAccumulator(b, loc, {n * pixels, f},
                               imageOutType.getElementType(), {}, init,
                               initIsFill);
  Value y = buildGemm(b, loc, rows, filterB, acc, {Role::F, Role::K});
  contraction = y.getDefiningOp();
  Value perImage = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({n, pixels, f}, imageOutType.getElementType()),
      y, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  return tensor::ExpandShapeOp::create(
      b, loc, imageOutType, transposed(b, loc, perImage, {0, 2, 1}),
      mergeSpatial(plan.spatialRank()));
}

/// 1x1, stride 1, unpadded NCHW, one group: Y[n] = W . X[n] with X viewed as
/// [N, C, H*W] (any spatial rank). No im2col and no fold: the data never
/// moves.
Value rewritePointwiseNchw(OpBuilder &b, Location loc, Value image,
                           Value filterB, const ConvPlan &plan, Value init,
                           RankedTensorType imageOutType, bool &initIsFill,
                           Operation *&contraction) {
  MLIRContext *ctx = b.getContext();
  Value x = tensor::CollapseShapeOp::create(
      b, loc, image, mergeSpatial(plan.spatialRank()));
  int64_t pixels = plan.pixelsPerImage();
  if (!imageOutType.isDynamicDim(0) && !ShapedType::isDynamic(pixels) &&
      pixels < kFiltersFirstMinPixels)
    return rowsFirstPointwiseNchw(b, loc, x, filterB, plan, init,
                                  imageOutType, initIsFill, contraction);
  SmallVector<int64_t> accShape = {imageOutType.getDimSize(0),
                                   plan.filtersPerGroup, pixels};
  SmallVector<Value> dyn;
  if (imageOutType.isDynamicDim(0))
    dyn.push_back(tensor::DimOp::create(b, loc, image, 0));
  Value acc = buildAccumulator(b, loc, accShape, imageOutType.getElementType(),
                               dyn, init, initIsFill);
  AffineExpr n, f, p, c;
  bindDims(ctx, n, f, p, c);
  SmallVector<AffineMap> maps =
      makeMaps(ctx, {{f, c}, {n, c, p}, {n, f, p}});
  using IT = utils::IteratorType;
  // The filter is the left operand: then the contraction's M is F, N is the
  // pixel dimension (contiguous in both X and Y) and K is C, so every
  // operand is read in its natural row-major order.
  Value y = buildGenericContraction(
      b, loc, filterB, x, acc, maps,
      {IT::parallel, IT::parallel, IT::parallel, IT::reduction});
  contraction = y.getDefiningOp();
  return tensor::ExpandShapeOp::create(b, loc, imageOutType, y,
                                       mergeSpatial(plan.spatialRank()));
}

/// The GEMM's A operand: the im2col of the image, or the image itself
/// flattened when the im2col would only reshape it (NHWC pointwise).
Value buildLhs(OpBuilder &b, Location loc, Value image, const ConvPlan &plan,
               int64_t rows) {
  auto imageType = cast<RankedTensorType>(image.getType());
  int64_t k = plan.reductionSize();
  bool grouped = llvm::is_contained(plan.form->bRoles, Role::G);
  SmallVector<int64_t> shape =
      grouped ? SmallVector<int64_t>{plan.groups, rows, k}
              : SmallVector<int64_t>{rows, k};
  auto type = RankedTensorType::get(shape, imageType.getElementType());
  if (!grouped && plan.isPointwise() &&
      plan.form->layout == ImageLayout::nhwc)
    return tensor::CollapseShapeOp::create(
        b, loc, type, image, getImageRowsReassociation(plan.spatialRank()));
  return Im2ColOp::create(b, loc, type, image, plan.form->layout,
                          plan.kernel, plan.strides,
                          plan.dilations, plan.padding, plan.groups,
                          plan.form->kOrder);
}

Im2ColResult rewriteConv(RewriterBase &rewriter, const ConvPlan &plan) {
  Im2ColResult built;
  linalg::LinalgOp op = plan.op;
  const ConvForm &form = *plan.form;
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);

  Value init = op.getDpsInitOperand(0)->get();
  auto outType = cast<RankedTensorType>(init.getType());
  Type accElemType = outType.getElementType();
  Value filterB = collapseIfNeeded(rewriter, loc,
                                   op.getDpsInputOperand(1)->get(),
                                   form.filterToB);
  Value image = plan.inputIsImage ? plan.input
                                  : collapseIfNeeded(rewriter, loc, plan.input,
                                                     form.inputToImage);
  image = cropImage(rewriter, loc, image, plan);
  Value initImage = collapseIfNeeded(rewriter, loc, init, form.outputToImage);
  auto imageOutType = cast<RankedTensorType>(initImage.getType());

  bool initIsFill = false;
  Value result;
  if (plan.isPointwise() && form.layout == ImageLayout::nchw &&
      form.bRoles == ArrayRef<Role>{Role::F, Role::K} && !plan.isQuantized()) {
    result = rewritePointwiseNchw(rewriter, loc, image, filterB, plan, init,
                                  imageOutType, initIsFill, built.gemm);
  } else {
    int64_t n = imageOutType.getDimSize(0);
    int64_t rows = ShapedType::isDynamic(n) ? ShapedType::kDynamic
                                            : n * plan.pixelsPerImage();
    SmallVector<Value> dynRows =
        dynamicRows(rewriter, loc, image, plan.pixelsPerImage());
    Value lhs = buildLhs(rewriter, loc, image, plan, rows);
    built.im2col = lhs.getDefiningOp<Im2ColOp>();
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    SmallVector<int64_t> accShape = llvm::to_vector(lhsType.getShape());
    accShape.back() = lhsType.getRank() == 3
                          ? plan.filtersPerGroup
                          : plan.groups * plan.filtersPerGroup;
    Value acc = buildAccumulator(rewriter, loc, accShape, accElemType, dynRows,
                                 init, initIsFill);
    Value gemm = buildGemm(rewriter, loc, lhs, filterB, acc, form.bRoles);
    built.gemm = gemm.getDefiningOp();
    if (plan.isQuantized()) {
      Value corrected =
          subtractZeroPointTerms(rewriter, loc, gemm, lhs, filterB, plan);
      if (corrected != gemm)
        built.zeroPointCorrection = corrected.getDefiningOp();
      gemm = corrected;
    }
    result = FoldOp::create(rewriter, loc, imageOutType, gemm, form.layout,
                            plan.outSize);
  }
  result = expandIfNeeded(rewriter, loc, result, outType, form.outputToImage);
  if (!initIsFill) {
    // Linalg convolutions accumulate into their init: add it back.
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, init),
        accElemType);
    result = linalg::AddOp::create(rewriter, loc, TypeRange{outType},
                                   ValueRange{result, init}, ValueRange{empty})
                 .getResult(0);
  }
  rewriter.replaceOp(op, result);
  if (plan.absorbedExpand && plan.absorbedExpand->use_empty())
    rewriter.eraseOp(plan.absorbedExpand);
  if (plan.absorbedPad && plan.absorbedPad->use_empty())
    rewriter.eraseOp(plan.absorbedPad);
  built.replacement = result;
  return built;
}

struct ConvLowerIm2ColPass
    : conv_lower::impl::ConvLowerIm2ColBase<ConvLowerIm2ColPass> {
  using Base::Base;
  void runOnOperation() override {
    // One walk, one decision per convolution: the pass is deterministic and
    // each untouched op gets exactly one remark.
    SmallVector<linalg::LinalgOp> convs;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (looksLikeConvolution(op))
        convs.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : convs) {
      std::string whyNot;
      // Taken before the rewrite erases the op (used by LLVM_DEBUG only).
      [[maybe_unused]] Location loc = op.getLoc();
      std::string name = op->getName().getStringRef().str();
      bool rewritten = succeeded(rewriteToIm2Col(rewriter, op, &whyNot));
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] " << name << " at " << loc << ": "
                 << (rewritten ? std::string("im2col + GEMM")
                               : "left untouched: " + whyNot)
                 << "\n");
      if (!rewritten && emitRemarks)
        op.emitRemark() << "conv-lower-im2col: left untouched: " << whyNot;
    }
  }
};

} // namespace

FailureOr<Im2ColResult>
mlir::conv_lower::rewriteToIm2Col(RewriterBase &rewriter,
                                  linalg::LinalgOp conv, std::string *whyNot) {
  std::string reason;
  FailureOr<ConvPlan> plan = analyzeConv(conv, reason);
  if (failed(plan)) {
    if (whyNot)
      *whyNot = reason;
    return rewriter.notifyMatchFailure(conv, reason);
  }
  return rewriteConv(rewriter, *plan);
}
