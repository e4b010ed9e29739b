//===- FillEmptyPads.cpp - a tensor.pad of an empty tensor as a fill ------===//
//
// See the pass description (Passes.td): MLIR 22 bufferizes such a pad into
// an out-of-bounds subview, so it becomes what it computes, a fill.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-fill-empty-pads"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERFILLEMPTYPADS
#include "ConvLower/Transforms/Common/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// Replaces `pad` (of an empty source) with a fill of its padding value;
/// leaves it when the padding is not one value.
void rewriteEmptyPad(RewriterBase &rewriter, tensor::PadOp pad) {
  Value value = pad.getConstantPaddingValue();
  if (!value)
    return;
  rewriter.setInsertionPoint(pad);

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
  Value fill = linalg::FillOp::create(rewriter, loc, value, empty).getResult(0);
  if (fill.getType() != resultType)
    fill = tensor::CastOp::create(rewriter, loc, resultType, fill);
  rewriter.replaceOp(pad, fill);
}

struct ConvLowerFillEmptyPadsPass
    : conv_lower::impl::ConvLowerFillEmptyPadsBase<ConvLowerFillEmptyPadsPass> {
  void runOnOperation() override {
    // A walk, not the greedy driver: nothing but these pads changes (no
    // folding of the rest of the module on the way to bufferization).
    SmallVector<tensor::PadOp> pads;
    getOperation()->walk([&](tensor::PadOp pad) {
      if (llvm::is_contained(pad.getSourceType().getShape(), 0))
        pads.push_back(pad);
    });
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << pads.size()
                            << " pads of empty sources\n");
    IRRewriter rewriter(&getContext());
    for (tensor::PadOp pad : pads)
      rewriteEmptyPad(rewriter, pad);
  }
};

} // namespace
