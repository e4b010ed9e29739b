//===- Decompose.cpp - conv_lower ops into linalg + tensor ----------------===//
//
// im2col = zero tensor.pad + a copy-like linalg.generic whose input map is the
// convolution's affine access (oh*sh + kh*dh, ...), reshaped to [G, M, K].
// fold   = reshape + linalg.transpose (+ reshape).
//
// After this pass any linalg backend, including upstream's loop lowering,
// runs the module.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERDECOMPOSE
#include "ConvLower/Transforms/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// Zero-pads the spatial dims of the image; no-op without padding.
Value padImage(OpBuilder &b, Location loc, Im2ColOp op) {
  ArrayRef<int64_t> p = op.getPadding();
  if (llvm::all_of(p, [](int64_t v) { return v == 0; }))
    return op.getInput();
  ImageDims dims = getImageDims(op.getLayout());
  unsigned hDim = dims.h, wDim = dims.w;
  SmallVector<OpFoldResult> low(4, b.getIndexAttr(0)), high(4, b.getIndexAttr(0));
  low[hDim] = b.getIndexAttr(p[0]);
  low[wDim] = b.getIndexAttr(p[1]);
  high[hDim] = b.getIndexAttr(p[2]);
  high[wDim] = b.getIndexAttr(p[3]);
  Type elementType = op.getInput().getType().getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  auto inType = op.getInput().getType();
  SmallVector<int64_t> shape = llvm::to_vector(inType.getShape());
  shape[hDim] += p[0] + p[2];
  shape[wDim] += p[1] + p[3];
  if (inType.getDimSize(hDim) == 0 || inType.getDimSize(wDim) == 0) {
    // An image with no rows or columns (the rewrite crops them all away when
    // the output reads only padding) pads to zeros alone. Built as a fill:
    // the bufferization of a tensor.pad of an empty source inserts it at
    // offset `low`, which is the padded extent when nothing is padded after
    // it, and memref.subview rejects that offset even for an empty view.
    SmallVector<Value> dyn;
    if (inType.isDynamicDim(0))
      dyn.push_back(tensor::DimOp::create(b, loc, op.getInput(), 0));
    Value empty = tensor::EmptyOp::create(b, loc, shape, elementType, dyn);
    return linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  }
  return tensor::PadOp::create(b, loc,
                               RankedTensorType::get(shape, elementType),
                               op.getInput(), low, high, zero);
}

struct DecomposeIm2Col : OpRewritePattern<Im2ColOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Im2ColOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<std::pair<int64_t, int64_t>> outSize = op.getOutputSpatialSize();
    if (failed(outSize))
      return rewriter.notifyMatchFailure(op, "kernel does not fit");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value padded = padImage(rewriter, loc, op);

    int64_t groups = op.getGroups();
    int64_t cg = op.getInputChannels() / groups;
    ArrayRef<int64_t> ks = op.getKernelSize(), s = op.getStrides(),
                      d = op.getDilations();
    // Iteration space (g, n, oh, ow, c, kh, kw).
    AffineExpr g, n, oh, ow, c, kh, kw;
    bindDims(ctx, g, n, oh, ow, c, kh, kw);
    AffineExpr ch = g * cg + c;
    AffineExpr ih = oh * s[0] + kh * d[0], iw = ow * s[1] + kw * d[1];
    bool nchw = op.getLayout() == ImageLayout::nchw;
    SmallVector<AffineExpr> inExprs =
        nchw ? SmallVector<AffineExpr>{n, ch, ih, iw}
             : SmallVector<AffineExpr>{n, ih, iw, ch};
    bool chw = op.getKOrder() == KOrder::chw;
    SmallVector<AffineExpr> outExprs =
        chw ? SmallVector<AffineExpr>{g, n, oh, ow, c, kh, kw}
            : SmallVector<AffineExpr>{g, n, oh, ow, kh, kw, c};
    int64_t batch = op.getInput().getType().getDimSize(0);
    SmallVector<int64_t> patchShape =
        chw ? SmallVector<int64_t>{groups, batch, outSize->first,
                                   outSize->second, cg, ks[0], ks[1]}
            : SmallVector<int64_t>{groups, batch, outSize->first,
                                   outSize->second, ks[0], ks[1], cg};
    Type elementType = op.getInput().getType().getElementType();
    SmallVector<Value> dyn;
    if (ShapedType::isDynamic(batch))
      dyn.push_back(tensor::DimOp::create(rewriter, loc, op.getInput(), 0));
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, patchShape, elementType, dyn);
    SmallVector<AffineMap> maps =
        AffineMap::inferFromExprList({inExprs, outExprs}, ctx);
    SmallVector<utils::IteratorType> iterators(7,
                                               utils::IteratorType::parallel);
    auto copy = linalg::GenericOp::create(
        rewriter, loc, empty.getType(), ValueRange{padded}, ValueRange{empty},
        maps, iterators, [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });
    SmallVector<ReassociationIndices> reassoc =
        op.getResult().getType().getRank() == 3
            ? SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4, 5, 6}}
            : SmallVector<ReassociationIndices>{{0, 1, 2, 3}, {4, 5, 6}};
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, op.getResult().getType(), copy.getResult(0), reassoc);
    return success();
  }
};

struct DecomposeFold : OpRewritePattern<FoldOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FoldOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType inType = op.getInput().getType();
    RankedTensorType outType = op.getResult().getType();
    Type elementType = inType.getElementType();
    bool nchw = op.getLayout() == ImageLayout::nchw;
    int64_t batch = outType.getDimSize(0);
    int64_t ho = op.getOutputSize()[0], wo = op.getOutputSize()[1];
    int64_t groups = op.getGroups();
    int64_t perGroup = inType.getShape().back();

    // [G, M, Fg] -> [G, N, Ho, Wo, Fg]   (a rank-2 input has G = 1)
    SmallVector<int64_t> expandedShape = {groups, batch, ho, wo, perGroup};
    SmallVector<ReassociationIndices> expandReassoc =
        inType.getRank() == 3
            ? SmallVector<ReassociationIndices>{{0}, {1, 2, 3}, {4}}
            : SmallVector<ReassociationIndices>{{0, 1, 2, 3}, {4}};
    Value expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(expandedShape, elementType),
        op.getInput(), expandReassoc);

    // -> [N, G, Fg, Ho, Wo] (nchw) or [N, Ho, Wo, G, Fg] (nhwc)
    SmallVector<int64_t> perm = nchw ? SmallVector<int64_t>{1, 0, 4, 2, 3}
                                     : SmallVector<int64_t>{1, 2, 3, 0, 4};
    SmallVector<int64_t> permutedShape;
    for (int64_t p : perm)
      permutedShape.push_back(expandedShape[p]);
    SmallVector<Value> dyn;
    if (ShapedType::isDynamic(batch))
      dyn.push_back(tensor::DimOp::create(rewriter, loc, expanded, 1));
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, permutedShape, elementType, dyn);
    Value transposed =
        linalg::TransposeOp::create(rewriter, loc, expanded, empty, perm)
            .getResult()[0];

    SmallVector<ReassociationIndices> collapse =
        nchw ? SmallVector<ReassociationIndices>{{0}, {1, 2}, {3}, {4}}
             : SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}};
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, outType,
                                                         transposed, collapse);
    return success();
  }
};

struct ConvLowerDecomposePass
    : conv_lower::impl::ConvLowerDecomposeBase<ConvLowerDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeConvLowerPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void mlir::conv_lower::populateDecomposeConvLowerPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeIm2Col, DecomposeFold>(patterns.getContext());
}
