//===- VectorizeEpilogue.cpp - the epilogue in vectors along the rows -----===//
//
// The epilogue after a convolution (bias, residual add, ReLU or clamp: one
// elementwise generic once conv-lower-parallel-epilogue has fused it, in
// blocks for the threads) used to reach LLVM as scalar loops. Where the
// innermost dimension is short (a channels-last output of 16 or 32
// channels) LLVM unrolls it fully and vectorizes the loop around it, across
// pixels, with gathers and scatters 64 bytes apart: the bias made
// MobileNetV2's 32 -> 16 1x1 projection at 112x112 2.2x slower (0.065 ->
// 0.143 ms), a 32 -> 32 one 2.4x (0.151 -> 0.369 ms). Here each such generic
// is tiled with scf.for loops into tiles of its innermost dimension (and
// the one before it, when the innermost is short) and each tile vectorized:
// contiguous vector reads and writes of the output's rows, the bias read
// once per row tile.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "TilingUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-vectorize-epilogue"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERVECTORIZEEPILOGUE
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// Whether `map` reads its operand in the loops' order: a projection whose
/// results are loop dimensions in increasing order (the output itself, a
/// residual, a per-channel bias), not a transpose, whose vector read would
/// gather.
bool readsInLoopOrder(AffineMap map) {
  if (!map.isProjectedPermutation())
    return false;
  int64_t previous = -1;
  for (AffineExpr result : map.getResults()) {
    int64_t dim = cast<AffineDimExpr>(result).getPosition();
    if (dim <= previous)
      return false;
    previous = dim;
  }
  return true;
}

/// A bufferizable epilogue: an elementwise generic on static tensors with
/// one result in the loops' order, every input read in that order, and
/// some arithmetic in its body (a plain copy is an im2col or layout copy,
/// which other passes vectorize).
bool isEpilogue(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.hasDynamicShape() ||
      !linalg::isElementwise(op) || op.getNumDpsInits() != 1 ||
      op.getNumLoops() == 0 || isPlainCopy(op))
    return false;
  return llvm::all_of(op.getIndexingMapsArray(), readsInLoopOrder) &&
         op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity();
}

/// The innermost tile: the largest divisor of `extent` not above `lanes`
/// that is a multiple of kVectorLanes (whole registers), else the largest
/// divisor not above it (a 24-channel row: 16 + 8 lanes).
int64_t innermostTile(int64_t extent, int64_t lanes) {
  for (int64_t t = std::min(lanes, extent); t >= kVectorLanes; --t)
    if (extent % t == 0 && t % kVectorLanes == 0)
      return t;
  return largestDividingTile(extent, lanes);
}

/// Tile sizes of a vector tile of about `lanes` elements: the innermost
/// dimension by innermostTile, the one before it by what fills the rest
/// (16 channels: 4 pixels), every other one by 1.
SmallVector<int64_t> vectorTileSizes(ArrayRef<int64_t> ranges, int64_t lanes) {
  SmallVector<int64_t> sizes(ranges.size(), 1);
  int64_t inner = ranges.size() - 1;
  sizes[inner] = innermostTile(ranges[inner], lanes);
  if (inner > 0)
    sizes[inner - 1] = largestDividingTile(
        ranges[inner - 1], std::max<int64_t>(1, lanes / sizes[inner]));
  return sizes;
}

/// The value a loop nest's iteration argument starts from: through the
/// iter_args of the enclosing scf.for loops, to the tensor outside them.
Value valueBeforeLoops(Value value) {
  while (auto arg = dyn_cast<BlockArgument>(value)) {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (!loop || arg.getArgNumber() == 0)
      break;
    value = loop.getTiedLoopInit(arg)->get();
  }
  return value;
}

/// An epilogue computed in place (its init is also an input, as
/// conv-lower-parallel-epilogue leaves it) reads, once tiled, its input
/// tile from the tensor before the loops and writes it through their
/// iter_args: bufferization then copies the whole block first. Reading the
/// tile from the init's own slice (the same elements) keeps it in place.
void readInputFromInitTile(RewriterBase &rewriter, linalg::LinalgOp tile) {
  auto initSlice =
      tile.getDpsInitOperand(0)->get().getDefiningOp<tensor::ExtractSliceOp>();
  if (!initSlice)
    return;
  Value outside = valueBeforeLoops(initSlice.getSource());
  readInitSliceInstead(rewriter, tile, initSlice, outside);
}

struct ConvLowerVectorizeEpiloguePass
    : conv_lower::impl::ConvLowerVectorizeEpilogueBase<
          ConvLowerVectorizeEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    if (lanes < 1) {
      getOperation()->emitError()
          << "conv-lower-vectorize-epilogue: lanes must be positive";
      return signalPassFailure();
    }
    SmallVector<linalg::GenericOp> epilogues;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (isEpilogue(op))
        epilogues.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : epilogues) {
      SmallVector<int64_t> sizes =
          vectorTileSizes(op.getStaticLoopRanges(), lanes);
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] tiles of "
                              << llvm::interleaved(sizes) << "\n");
      FailureOr<linalg::LinalgOp> tiled = tileInPlace(rewriter, op, sizes);
      if (failed(tiled))
        continue; // the scalar generic stays, still right
      readInputFromInitTile(rewriter, *tiled);
      vectorizeOrKeep(rewriter, *tiled);
    }
  }
};

} // namespace
