//===- FuseMultiplyAdd.cpp - vector multiply-adds as vector.fma ------------===//
//
// The vectorized GEMMs' register tiles come out of linalg's vectorizer (and
// the canonicalization of their unit-K contractions) as arith.mulf feeding
// arith.addf. Without fast-math flags LLVM must round both, so the x86
// backend emits vmulps + vaddps where one vfmadd does the work: on the NCHW
// 1x1 tile (6 x 16, AVX2) 24 arithmetic instructions per K step instead of
// 12. On Intel cores, where additions issue on the FMA ports, that halves
// the GEMM's peak; on AMD's it doubles the micro-ops. A multiply whose only
// user is an addition of the same vector type becomes one vector.fma (one
// rounding: as compilers do under -ffp-contract=fast, and closer to the
// exact result than two).
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERFUSEMULTIPLYADD
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// f32 and f64 vectors only: 16-bit float FMAs need AVX512-FP16 (f16) or
/// have no x86 instruction at all (bf16), and LegalizeBF16 does not know
/// the intrinsic.
bool fusesOnHost(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  return vector && (vector.getElementType().isF32() || vector.getElementType().isF64()) &&
         !vector.isScalable();
}

/// addf(mulf(a, b), c) or addf(c, mulf(a, b)) -> vector.fma(a, b, c), where
/// the product has no other user.
struct AddOfProductToFma : OpRewritePattern<arith::AddFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::AddFOp add,
                                PatternRewriter &rewriter) const override {
    if (!fusesOnHost(add.getType()))
      return failure();
    for (int i = 0; i < 2; ++i) {
      auto mul = add->getOperand(i).getDefiningOp<arith::MulFOp>();
      if (!mul || !mul->hasOneUse())
        continue;
      rewriter.replaceOpWithNewOp<vector::FMAOp>(
          add, mul.getLhs(), mul.getRhs(), add->getOperand(1 - i));
      rewriter.eraseOp(mul);
      return success();
    }
    return failure();
  }
};

struct ConvLowerFuseMultiplyAddPass
    : conv_lower::impl::ConvLowerFuseMultiplyAddBase<
          ConvLowerFuseMultiplyAddPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AddOfProductToFma>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
