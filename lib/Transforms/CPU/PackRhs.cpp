//===- PackRhs.cpp - transpose an [N, K] GEMM operand into [K, N] ---------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-pack-rhs"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPACKRHS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// The (m, n, k) maps of a matmul reading B as [N, K], with `batch` leading
/// batch dimensions.
SmallVector<AffineMap> transposedRhsMaps(MLIRContext *ctx, unsigned batch) {
  unsigned rank = batch + 3;
  SmallVector<AffineExpr> b, lhs, rhs, out;
  for (unsigned i = 0; i < batch; ++i)
    b.push_back(getAffineDimExpr(i, ctx));
  AffineExpr m = getAffineDimExpr(batch, ctx), n = getAffineDimExpr(batch + 1, ctx),
             k = getAffineDimExpr(batch + 2, ctx);
  lhs = b, rhs = b, out = b;
  lhs.append({m, k});
  rhs.append({n, k});
  out.append({m, n});
  return {AffineMap::get(rank, 0, lhs, ctx), AffineMap::get(rank, 0, rhs, ctx),
          AffineMap::get(rank, 0, out, ctx)};
}

/// Rewrites `op` (matmul or batch_matmul with B as [.., N, K]) to read a
/// transposed copy of B with the default maps.
template <typename OpTy>
LogicalResult packRhs(RewriterBase &rewriter, OpTy op, unsigned batch) {
  if (!op.hasPureTensorSemantics() ||
      op.getIndexingMapsArray() !=
          transposedRhsMaps(op.getContext(), batch))
    return failure();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value rhs = op.getDpsInputOperand(1)->get();
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  SmallVector<int64_t> perm;
  for (unsigned i = 0; i < batch; ++i)
    perm.push_back(i);
  perm.append({batch + 1, batch});
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, rhs);
  std::swap(sizes[batch], sizes[batch + 1]);
  Value empty = tensor::EmptyOp::create(rewriter, loc, sizes,
                                        rhsType.getElementType());
  Value packed =
      linalg::TransposeOp::create(rewriter, loc, rhs, empty, perm)
          .getResult()[0];
  auto packedOp = OpTy::create(rewriter, loc, op->getResultTypes(),
                               ValueRange{op.getDpsInputOperand(0)->get(), packed},
                               ValueRange{op.getDpsInitOperand(0)->get()});
  rewriter.replaceOp(op, packedOp->getResults());
  return success();
}

struct ConvLowerPackRhsPass
    : conv_lower::impl::ConvLowerPackRhsBase<ConvLowerPackRhsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> gemms;
    getOperation()->walk([&](Operation *op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        gemms.push_back(op);
    });
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] " << gemms.size() << " GEMMs to pack\n");
    for (Operation *op : gemms) {
      if (auto mm = dyn_cast<linalg::MatmulOp>(op))
        (void)packRhs(rewriter, mm, /*batch=*/0);
      else
        (void)packRhs(rewriter, cast<linalg::BatchMatmulOp>(op), /*batch=*/1);
    }
  }
};

} // namespace
