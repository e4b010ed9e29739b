//===- TileAndVectorize.cpp - register-tile GEMMs and vectorize them ------===//

#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERTILEANDVECTORIZE
#include "ConvLower/Transforms/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// The largest divisor of `extent` not above `size`: full tiles only, so every
/// tile is static and vectorizes without masks.
int64_t largestDividingTile(int64_t extent, int64_t size) {
  for (int64_t t = std::min(size, extent); t > 1; --t)
    if (extent % t == 0)
      return t;
  return 1;
}

/// Tile sizes for a contraction: the innermost m, n and k loops get the
/// requested sizes (shrunk to divide a static extent), every other loop 1.
/// A dynamic extent keeps the requested size; its partial last tile is
/// vectorized with masks.
SmallVector<int64_t> computeTileSizes(linalg::LinalgOp op,
                                      const linalg::ContractionDimensions &dims,
                                      int64_t tileM, int64_t tileN,
                                      int64_t tileK) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<int64_t> sizes(op.getNumLoops(), 1);
  auto setInnermost = [&](ArrayRef<unsigned> loops, int64_t size) {
    if (loops.empty())
      return;
    unsigned loop = loops.back();
    sizes[loop] = ShapedType::isDynamic(ranges[loop])
                      ? size
                      : largestDividingTile(ranges[loop], size);
  };
  setInnermost(dims.m, tileM);
  setInnermost(dims.n, tileN);
  setInnermost(dims.k, tileK);
  return sizes;
}

LogicalResult tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op,
                               int64_t tileM, int64_t tileN, int64_t tileK) {
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return failure();
  SmallVector<int64_t> sizes = computeTileSizes(op, *dims, tileM, tileN, tileK);

  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);

  for (Operation *tiledOp : tiled->tiledOps) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(tiledOp);
    if (!linalgOp)
      continue;
    // Partial boundary tiles have dynamic shapes: vectorize them with masks
    // at the full tile size.
    SmallVector<int64_t> vectorSizes;
    if (linalgOp.hasDynamicShape())
      vectorSizes = sizes;
    rewriter.setInsertionPoint(linalgOp);
    // Prefer a direct vector.contract (lowered to outer-product FMAs); fall
    // back to broadcast + multi_reduction for bodies it does not accept.
    FailureOr<linalg::VectorizationResult> result = linalg::vectorize(
        rewriter, linalgOp, vectorSizes, /*inputScalableVecDims=*/{},
        /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
        /*assumeDynamicDimsMatchVecSizes=*/false,
        /*createNamedContraction=*/true);
    if (failed(result))
      result = linalg::vectorize(rewriter, linalgOp, vectorSizes);
    if (failed(result))
      continue; // A scalar tile is still correct; later passes lower it.
    if (!result->replacements.empty())
      rewriter.replaceOp(linalgOp, result->replacements);
    else
      rewriter.eraseOp(linalgOp);
  }
  return success();
}

struct ConvLowerTileAndVectorizePass
    : conv_lower::impl::ConvLowerTileAndVectorizeBase<
          ConvLowerTileAndVectorizePass> {
  using Base::Base;
  void runOnOperation() override {
    if (tileM < 1 || tileN < 1 || tileK < 1) {
      getOperation()->emitError()
          << "conv-lower-tile-and-vectorize: tile sizes must be positive";
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> contractions;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && linalg::isaContractionOpInterface(op))
        contractions.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : contractions)
      (void)tileAndVectorize(rewriter, op, tileM, tileN, tileK);

    // Mixed-precision bodies vectorize as ext + mul + multi_reduction: fold
    // them back into vector.contract so that every tile is one contraction.
    RewritePatternSet patterns(&getContext());
    vector::populateVectorReductionToContractPatterns(patterns);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
