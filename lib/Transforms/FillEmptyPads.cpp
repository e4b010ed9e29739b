//===- FillEmptyPads.cpp - a tensor.pad of an empty tensor as a fill ------===//
//
// See the pass description (Passes.td): MLIR 22 bufferizes such a pad into
// an out-of-bounds subview, so it becomes what it computes, a fill.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERFILLEMPTYPADS
#include "ConvLower/Transforms/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

struct EmptyPadToFill : OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::PadOp pad,
                                PatternRewriter &rewriter) const override {
    RankedTensorType sourceType = pad.getSourceType();
    if (!llvm::is_contained(sourceType.getShape(), 0))
      return rewriter.notifyMatchFailure(pad, "the source is not empty");
    Value value = pad.getConstantPaddingValue();
    if (!value)
      return rewriter.notifyMatchFailure(pad, "the padding is not one value");

    // Result size per dim: static where the type says so, else
    // dim(source) + low + high.
    Location loc = pad.getLoc();
    RankedTensorType resultType = pad.getResultType();
    SmallVector<OpFoldResult> low = pad.getMixedLowPad();
    SmallVector<OpFoldResult> high = pad.getMixedHighPad();
    SmallVector<OpFoldResult> sizes;
    for (int64_t i = 0; i < resultType.getRank(); ++i) {
      if (!resultType.isDynamicDim(i)) {
        sizes.push_back(rewriter.getIndexAttr(resultType.getDimSize(i)));
        continue;
      }
      Value size = tensor::DimOp::create(rewriter, loc, pad.getSource(), i);
      for (OpFoldResult amount : {low[i], high[i]})
        size = arith::AddIOp::create(
            rewriter, loc, size,
            getValueOrCreateConstantIndexOp(rewriter, loc, amount));
      sizes.push_back(size);
    }
    Value empty = tensor::EmptyOp::create(rewriter, loc, sizes,
                                          resultType.getElementType());
    Value fill =
        linalg::FillOp::create(rewriter, loc, value, empty).getResult(0);
    if (fill.getType() != resultType)
      fill = tensor::CastOp::create(rewriter, loc, resultType, fill);
    rewriter.replaceOp(pad, fill);
    return success();
  }
};

struct ConvLowerFillEmptyPadsPass
    : conv_lower::impl::ConvLowerFillEmptyPadsBase<
          ConvLowerFillEmptyPadsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<EmptyPadToFill>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
