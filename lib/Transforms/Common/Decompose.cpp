//===- Decompose.cpp - conv_lower ops into linalg + tensor ----------------===//
//
// im2col = zero tensor.pad + a copy-like linalg.generic whose input map is the
// convolution's affine access (oh*sh + kh*dh, ...), reshaped to [G, M, K];
// any spatial rank (1-D, 2-D, 3-D).
// fold   = reshape + linalg.transpose (+ reshape).
//
// After this pass any linalg backend, including upstream's loop lowering,
// runs the module.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"
#include "ConvLower/Transforms/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-decompose"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERDECOMPOSE
#include "ConvLower/Transforms/Common/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// Zero-pads the spatial dims of the image; no-op without padding.
Value padImage(OpBuilder &b, Location loc, Im2ColOp op) {
  ArrayRef<int64_t> p = op.getPadding();
  if (llvm::all_of(p, [](int64_t v) { return v == 0; }))
    return op.getInput();
  unsigned rank = op.getSpatialRank();
  SpatialImageDims dims = getImageDims(op.getLayout(), rank);
  auto inType = op.getInput().getType();
  SmallVector<OpFoldResult> low(inType.getRank(), b.getIndexAttr(0)),
      high(inType.getRank(), b.getIndexAttr(0));
  SmallVector<int64_t> shape = llvm::to_vector(inType.getShape());
  bool empty = false;
  for (auto [i, dim] : llvm::enumerate(dims.spatial)) {
    low[dim] = b.getIndexAttr(p[i]);
    high[dim] = b.getIndexAttr(p[rank + i]);
    empty |= shape[dim] == 0;
    shape[dim] += p[i] + p[rank + i];
  }
  Type elementType = inType.getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
  if (empty) {
    // An image with no rows or columns (the rewrite crops them all away when
    // the output reads only padding) pads to zeros alone. Built as a fill:
    // the bufferization of a tensor.pad of an empty source inserts it at
    // offset `low`, which is the padded extent when nothing is padded after
    // it, and memref.subview rejects that offset even for an empty view.
    SmallVector<Value> dyn;
    if (inType.isDynamicDim(0))
      dyn.push_back(tensor::DimOp::create(b, loc, op.getInput(), 0));
    Value fill = tensor::EmptyOp::create(b, loc, shape, elementType, dyn);
    return linalg::FillOp::create(b, loc, zero, fill).getResult(0);
  }
  return tensor::PadOp::create(b, loc,
                               RankedTensorType::get(shape, elementType),
                               op.getInput(), low, high, zero);
}

/// [G] [N, O_0..] [the rest] of a [G, N, O_0.., ...] tensor of `numDims`
/// dims as the GEMM's [G, M, ...]; without a group dim (a rank-2 GEMM
/// operand) G joins the rows.
SmallVector<ReassociationIndices> gemmReassociation(int64_t spatialRank,
                                                    int64_t numDims,
                                                    bool groupDim) {
  ReassociationIndices rows, rest;
  for (int64_t i = groupDim ? 1 : 0; i <= spatialRank + 1; ++i)
    rows.push_back(i);
  for (int64_t i = spatialRank + 2; i < numDims; ++i)
    rest.push_back(i);
  if (!groupDim)
    return {rows, rest};
  return {{0}, rows, rest};
}

/// im2col as a copy: over (g, n, o_0.., c, k_0..), read X at the window
/// position, write [G, N, O_0.., Cg, K_0..] (chw) or [G, N, O_0.., K_0.., Cg]
/// (hwc), then collapse to [G, M, K] (or [M, K]).
struct DecomposeIm2Col : OpRewritePattern<Im2ColOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Im2ColOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<SmallVector<int64_t>> outSize = op.getOutputSpatialSize();
    if (failed(outSize))
      return rewriter.notifyMatchFailure(op, "kernel does not fit");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value padded = padImage(rewriter, loc, op);

    unsigned rank = op.getSpatialRank();
    int64_t groups = op.getGroups();
    int64_t cg = op.getInputChannels() / groups;
    ArrayRef<int64_t> ks = op.getKernelSize(), s = op.getStrides(),
                      d = op.getDilations();
    // Loops: g, n, o_0 .. o_{rank-1}, c, k_0 .. k_{rank-1}.
    unsigned numLoops = 3 + 2 * rank;
    auto loop = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineExpr g = loop(0), n = loop(1), c = loop(2 + rank);
    auto out = [&](unsigned i) { return loop(2 + i); };
    auto tap = [&](unsigned i) { return loop(3 + rank + i); };

    SpatialImageDims dims = getImageDims(op.getLayout(), rank);
    SmallVector<AffineExpr> inExprs(rank + 2);
    inExprs[0] = n;
    inExprs[dims.c] = g * cg + c;
    for (unsigned i = 0; i < rank; ++i)
      inExprs[dims.spatial[i]] = out(i) * s[i] + tap(i) * d[i];

    bool chw = op.getKOrder() == KOrder::chw;
    int64_t batch = op.getInput().getType().getDimSize(0);
    SmallVector<AffineExpr> outExprs = {g, n};
    SmallVector<int64_t> patchShape = {groups, batch};
    for (unsigned i = 0; i < rank; ++i) {
      outExprs.push_back(out(i));
      patchShape.push_back((*outSize)[i]);
    }
    if (chw) {
      outExprs.push_back(c);
      patchShape.push_back(cg);
    }
    for (unsigned i = 0; i < rank; ++i) {
      outExprs.push_back(tap(i));
      patchShape.push_back(ks[i]);
    }
    if (!chw) {
      outExprs.push_back(c);
      patchShape.push_back(cg);
    }
    Type elementType = op.getInput().getType().getElementType();
    SmallVector<Value> dyn;
    if (ShapedType::isDynamic(batch))
      dyn.push_back(tensor::DimOp::create(rewriter, loc, op.getInput(), 0));
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, patchShape, elementType, dyn);
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inExprs, ctx),
                                   AffineMap::get(numLoops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(numLoops,
                                               utils::IteratorType::parallel);
    auto copy = linalg::GenericOp::create(
        rewriter, loc, empty.getType(), ValueRange{padded}, ValueRange{empty},
        maps, iterators, [](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, args[0]);
        });
    // [G] [N, O..] [K..] -> [G, M, K], or [M, K] for a rank-2 result.
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, op.getResult().getType(), copy.getResult(0),
        gemmReassociation(rank, patchShape.size(),
                          op.getResult().getType().getRank() == 3));
    return success();
  }
};

/// fold = expand [G, M, Fg] to [G, N, O.., Fg], transpose to the layout's
/// order ([N, G, Fg, O..] or [N, O.., G, Fg]), collapse (G, Fg) into F.
struct DecomposeFold : OpRewritePattern<FoldOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FoldOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType inType = op.getInput().getType();
    RankedTensorType outType = op.getResult().getType();
    Type elementType = inType.getElementType();
    bool nchw = op.getLayout() == ImageLayout::nchw;
    int64_t rank = outType.getRank() - 2;
    int64_t batch = outType.getDimSize(0);
    int64_t groups = op.getGroups();
    int64_t perGroup = inType.getShape().back();

    // [G, M, Fg] -> [G, N, O_0.., Fg]   (a rank-2 input has G = 1)
    SmallVector<int64_t> expandedShape = {groups, batch};
    llvm::append_range(expandedShape, op.getOutputSize());
    expandedShape.push_back(perGroup);
    Value expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(expandedShape, elementType),
        op.getInput(),
        gemmReassociation(rank, expandedShape.size(), inType.getRank() == 3));

    // -> [N, G, Fg, O..] (nchw) or [N, O.., G, Fg] (nhwc)
    SmallVector<int64_t> perm = {1};
    SmallVector<int64_t> spatial;
    for (int64_t i = 0; i < rank; ++i)
      spatial.push_back(2 + i);
    if (nchw) {
      perm.append({0, rank + 2});
      llvm::append_range(perm, spatial);
    } else {
      llvm::append_range(perm, spatial);
      perm.append({0, rank + 2});
    }
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

    // Merge (G, Fg): dims 1-2 (nchw) or the last two (nhwc).
    SmallVector<ReassociationIndices> collapse;
    int64_t channel = nchw ? 1 : rank + 1;
    for (int64_t i = 0, d = 0; i < rank + 2; ++i) {
      if (i == channel) {
        collapse.push_back({d, d + 1});
        d += 2;
      } else {
        collapse.push_back({d++});
      }
    }
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
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) {
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] "
                              << "the greedy driver did not converge\n");
      return signalPassFailure();
    }
  }
};

} // namespace

void mlir::conv_lower::populateDecomposeConvLowerPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DecomposeIm2Col, DecomposeFold>(patterns.getContext());
}
