//===- TilingUtils.h - small helpers of the CPU tiling passes ----*- C++ -*-===//
//
// What the passes that tile and vectorize for the CPU (tile-and-vectorize,
// im2col-panels, depthwise-direct, vectorize-transposes, vectorize-gathers)
// share.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_TILINGUTILS_H
#define CONVLOWER_TRANSFORMS_TILINGUTILS_H

#include "mlir/Analysis/FlatLinearValueConstraints.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>

namespace mlir::conv_lower {

/// The f32 lanes a vector tile is made of: an AVX-512 register, two AVX2
/// ones. An N extent that is no multiple of it leaves a peeled remainder.
inline constexpr int64_t kVectorLanes = 16;

/// The largest divisor of `extent` not above `size` (at least 1): full tiles
/// only, so every tile of a static extent is static and vectorizes without
/// masks.
inline int64_t largestDividingTile(int64_t extent, int64_t size) {
  for (int64_t t = std::min(size, extent); t > 1; --t)
    if (extent % t == 0)
      return t;
  return 1;
}

/// A copy as conv-lower-decompose writes the im2col (on tensors, or the
/// same op bufferized): every loop parallel, one input and one init, the
/// body yields the input element.
inline bool isPlainCopy(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  Block &body = op.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 && yield &&
         yield.getNumOperands() == 1 &&
         yield.getOperand(0) == body.getArgument(0);
}

/// The loop of the K group in a contraction that conv-lower-pack-vnni
/// rewrote, and the group's size: the last loop, a reduction of static
/// extent 2 (bf16 pairs) or 4 (i8 quads) that both inputs index last. A
/// tile must keep it whole (it is one dot product).
struct DotGroupLoop {
  unsigned loop;
  int64_t size;
};
inline std::optional<DotGroupLoop> dotGroupLoop(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  if (loops == 0 || op.getNumDpsInputs() != 2 ||
      op.getIteratorTypesArray().back() != utils::IteratorType::reduction)
    return std::nullopt;
  int64_t size = op.getStaticLoopRanges().back();
  AffineExpr last = getAffineDimExpr(loops - 1, op.getContext());
  for (OpOperand *input : op.getDpsInputOperands()) {
    Type element = getElementTypeOrSelf(input->get());
    bool grouped = (size == 2 && element.isBF16()) ||
                   (size == 4 && element.isInteger(8));
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!grouped || map.getNumResults() == 0 ||
        map.getResults().back() != last)
      return std::nullopt;
  }
  return DotGroupLoop{loops - 1, size};
}

/// conv-lower-pack-vnni's i8 GEMM in K quads, whose body reads A's bytes
/// with their sign bits flipped, sum(extui(a ^ 0x80) * extsi(b)): a
/// contraction but for the flip, which linalg's contraction interface does
/// not take.
inline bool isSignFlippedI8Contraction(linalg::LinalgOp op) {
  if (!dotGroupLoop(op) || op.getNumDpsInits() != 1)
    return false;
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddIOp>();
  if (!add || add.getLhs() != body->getArgument(2))
    return false;
  auto mul = add.getRhs().getDefiningOp<arith::MulIOp>();
  auto a = mul ? mul.getLhs().getDefiningOp<arith::ExtUIOp>() : nullptr;
  auto b = mul ? mul.getRhs().getDefiningOp<arith::ExtSIOp>() : nullptr;
  auto flip = a ? a.getIn().getDefiningOp<arith::XOrIOp>() : nullptr;
  APInt bits;
  return b && flip && b.getIn() == body->getArgument(1) &&
         flip.getLhs() == body->getArgument(0) &&
         matchPattern(flip.getRhs(), m_ConstantInt(&bits)) &&
         bits.isSignMask();
}

/// Tiles `op` by `sizes` (0: untiled) with loops of `loopType` and replaces
/// it; returns the one tiled op, or failure with `op` left as it was.
inline FailureOr<linalg::LinalgOp>
tileInPlace(RewriterBase &rewriter, linalg::LinalgOp op,
            ArrayRef<int64_t> sizes,
            scf::SCFTilingOptions::LoopType loopType =
                scf::SCFTilingOptions::LoopType::ForOp) {
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  options.setLoopType(loopType);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  return cast<linalg::LinalgOp>(tiled->tiledOps.front());
}

/// An accumulator that is a reshape of a linalg.fill read by nothing else
/// (conv-lower-pack-filter-panels' [M, N / w, w] view of the filled
/// output) becomes the fill of the reshaped tensor, so that the fill can
/// be fused into the tiles; returns `op`'s init, changed or not.
inline Value fillAfterReshape(RewriterBase &rewriter, linalg::LinalgOp op) {
  OpOperand *init = op.getDpsInitOperand(0);
  Operation *reshape = init->get().getDefiningOp();
  if (!isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(reshape) ||
      !reshape->hasOneUse())
    return init->get();
  auto fill = reshape->getOperand(0).getDefiningOp<linalg::FillOp>();
  if (!fill || !fill->hasOneUse() || !fill.hasPureTensorSemantics())
    return init->get();
  rewriter.setInsertionPoint(reshape);
  Operation *emptyReshape = rewriter.clone(*reshape);
  emptyReshape->setOperand(0, fill.getOutputs()[0]);
  auto reshaped = linalg::FillOp::create(rewriter, fill.getLoc(),
                                         fill.getInputs()[0],
                                         emptyReshape->getResult(0));
  rewriter.modifyOpInPlace(op, [&] { init->set(reshaped.getResult(0)); });
  rewriter.eraseOp(reshape);
  rewriter.eraseOp(fill);
  return init->get();
}

/// tileInPlace, with the accumulator's linalg.fill (where the init is one)
/// fused into the loops: each tile zeroes its own part of the output just
/// before it accumulates there (in cache, on its own thread), not in a
/// serial pass over the whole output first. Only where every tiled loop is
/// parallel (a fill inside a reduction loop would zero each partial sum);
/// otherwise, and where nothing fuses, it tiles as tileInPlace does.
inline FailureOr<linalg::LinalgOp>
tileInPlaceFusingFill(RewriterBase &rewriter, linalg::LinalgOp op,
                      ArrayRef<int64_t> sizes,
                      scf::SCFTilingOptions::LoopType loopType =
                          scf::SCFTilingOptions::LoopType::ForOp) {
  bool tilesReduction = false;
  for (auto [size, type] : llvm::zip(sizes, op.getIteratorTypesArray()))
    tilesReduction |= size != 0 && type == utils::IteratorType::reduction;
  Value init = op.getNumDpsInits() == 1 ? op.getDpsInitOperand(0)->get()
                                        : Value();
  if (!tilesReduction && init)
    init = fillAfterReshape(rewriter, op);
  if (tilesReduction || !init || !init.getDefiningOp<linalg::FillOp>())
    return tileInPlace(rewriter, op, sizes, loopType);
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), sizes));
  tiling.setLoopType(loopType);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn(
      [](tensor::ExtractSliceOp, OpResult producer, bool)
          -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        if (!isa<linalg::FillOp>(producer.getOwner()))
          return std::nullopt;
        return scf::SCFTileAndFuseOptions::ControlFnResult{};
      });
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTileAndFuseResult> tiled =
      scf::tileConsumerAndFuseProducersUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->tiledAndFusedOps.empty())
    return failure();
  auto replacement = tiled->replacements.find(op->getResult(0));
  if (replacement == tiled->replacements.end())
    return failure();
  rewriter.replaceAllUsesWith(op->getResult(0), replacement->second);
  rewriter.eraseOp(op);
  return cast<linalg::LinalgOp>(tiled->tiledAndFusedOps.front());
}

/// The constant bounds of the loop of `forall` whose induction variable
/// `value` is (each unset where not constant); none where `value` is not
/// one of its induction variables.
struct ForallLoopBounds {
  std::optional<int64_t> lower, upper, step;
};
inline std::optional<ForallLoopBounds> forallLoopBounds(scf::ForallOp forall,
                                                        Value value) {
  auto iv = dyn_cast_or_null<BlockArgument>(value);
  if (!iv || iv.getOwner()->getParentOp() != forall.getOperation())
    return std::nullopt;
  unsigned loop = iv.getArgNumber();
  return ForallLoopBounds{
      getConstantIntValue(forall.getMixedLowerBound()[loop]),
      getConstantIntValue(forall.getMixedUpperBound()[loop]),
      getConstantIntValue(forall.getMixedStep()[loop])};
}

/// The number of iterations of `forall`'s loop `iv` where it counts blocks:
/// from 0 by 1 to a constant.
inline std::optional<int64_t> blockCount(scf::ForallOp forall, Value value) {
  std::optional<ForallLoopBounds> bounds = forallLoopBounds(forall, value);
  if (!bounds || bounds->lower != 0 || bounds->step != 1 || !bounds->upper)
    return std::nullopt;
  return bounds->upper;
}

/// Whether `apply` (an offset) places one block of `size` per iteration of
/// some block-counting loops of `forall` (blockCount), linearized: the sum
/// of each loop's value times a stride, the strides a mixed radix over the
/// loops' counts (the smallest `size`, each next the one before times its
/// loop's count) that ends at `extent`. iv * size is the one-loop case; an
/// image and a row block, (n * O_0 + blk * bh) * R, conv-lower-im2col-
/// panels' blocks of rows of a batch, the two-loop one.
inline bool linearizedBlocksCover(scf::ForallOp forall,
                                  affine::AffineApplyOp apply, int64_t size,
                                  int64_t extent) {
  AffineMap map = apply.getAffineMap();
  // Flattened: a coefficient per dimension, then the constant; no symbols,
  // and no local (floordiv, mod) terms between them.
  unsigned dims = map.getNumDims();
  SmallVector<int64_t> flat;
  if (map.getNumResults() != 1 || map.getNumSymbols() != 0 ||
      failed(getFlattenedAffineExpr(map.getResult(0), dims, 0, &flat)) ||
      flat.size() != dims + 1 || flat.back() != 0)
    return false;
  // (stride, count) of each loop, each loop once.
  SmallVector<std::pair<int64_t, int64_t>> radix;
  llvm::SmallDenseSet<Value, 4> loops;
  for (auto [operand, coefficient] :
       llvm::zip(apply.getMapOperands(), ArrayRef(flat).drop_back())) {
    std::optional<int64_t> count = blockCount(forall, operand);
    if (!count || !loops.insert(operand).second)
      return false;
    if (*count == 1)
      continue; // its one iteration adds nothing
    radix.push_back({coefficient, *count});
  }
  llvm::sort(radix);
  int64_t stride = size;
  for (auto [coefficient, count] : radix) {
    if (coefficient != stride)
      return false;
    stride *= count;
  }
  return stride == extent;
}

/// Whether the blocks of `forall` written at `offset` with `size` cover the
/// whole `extent` of a dimension: all of it from 0, or one block per
/// iteration of a loop of the forall, `(0) to (extent) step (size)` with
/// the loop's value as the offset, or one per iteration of loops that count
/// blocks, linearized (linearizedBlocksCover: `iv * size`, or an image's
/// row blocks within a batch).
inline bool blocksCoverDimension(scf::ForallOp forall, OpFoldResult offset,
                                 int64_t size, int64_t extent) {
  if (isConstantIntValue(offset, 0) && size == extent)
    return true;
  auto value = dyn_cast<Value>(offset);
  if (!value)
    return false;
  if (auto apply = value.getDefiningOp<affine::AffineApplyOp>())
    return linearizedBlocksCover(forall, apply, size, extent);
  std::optional<ForallLoopBounds> bounds = forallLoopBounds(forall, value);
  return bounds && bounds->lower == 0 && bounds->step == size &&
         bounds->upper == extent;
}

/// Whether the blocks that `insert` writes, one per iteration of its
/// scf.forall, cover the whole destination (blocksCoverDimension on every
/// dimension; static sizes, unit strides).
inline bool blocksCoverDestination(scf::ForallOp forall,
                                   tensor::ParallelInsertSliceOp insert) {
  if (!insert.hasUnitStride() || !insert.getSourceType().hasStaticShape() ||
      !insert.getDestType().hasStaticShape() ||
      insert.getSourceType().getRank() != insert.getDestType().getRank())
    return false;
  for (auto [offset, size, extent] :
       llvm::zip(insert.getMixedOffsets(), insert.getSourceType().getShape(),
                 insert.getDestType().getShape()))
    if (!blocksCoverDimension(forall, offset, size, extent))
      return false;
  return true;
}

/// An in-place tile (its init a slice of the tensor it writes) whose
/// inputs include the same slice of `outside`, the value that tensor
/// started from before the loops: those inputs read `initSlice` instead,
/// the same elements, so that bufferization sees the tile read and write
/// its own part of one buffer and keeps it in place (read from `outside`,
/// it copies the whole buffer first).
inline void readInitSliceInstead(RewriterBase &rewriter, linalg::LinalgOp tile,
                                 tensor::ExtractSliceOp initSlice,
                                 Value outside) {
  for (OpOperand *input : tile.getDpsInputOperands()) {
    auto slice = input->get().getDefiningOp<tensor::ExtractSliceOp>();
    if (slice && slice.getSource() == outside &&
        slice.getMixedOffsets() == initSlice.getMixedOffsets() &&
        slice.getMixedSizes() == initSlice.getMixedSizes() &&
        slice.getMixedStrides() == initSlice.getMixedStrides() &&
        slice.getType() == initSlice.getType())
      rewriter.modifyOpInPlace(tile, [&] { input->set(initSlice); });
  }
}

/// Whether upstream's convolution vectorizer (linalg::vectorize's 1-D
/// Conv1DGenerator) builds valid IR for `op`'s element types. It extends
/// narrower operands into the accumulator but never truncates: an
/// accumulator narrower than an operand (f32 data into f16) crashes it
/// (LLVM 22, Operation::erase of an op it never built), and the channel-less
/// linalg.conv_1d with any mix builds a vector.outerproduct that does not
/// verify. Other ops, and convolutions of one element type, always do.
inline bool convVectorizerTakesTypes(linalg::LinalgOp op) {
  if (!linalg::isaConvolutionOpInterface(op))
    return true;
  Type acc = getElementTypeOrSelf(op.getDpsInitOperand(0)->get());
  bool channelless = isa<linalg::Conv1DOp>(op.getOperation());
  return llvm::all_of(op.getDpsInputOperands(), [&](OpOperand *input) {
    Type type = getElementTypeOrSelf(input->get());
    if (type == acc)
      return true;
    return !channelless && type.isIntOrFloat() && acc.isIntOrFloat() &&
           type.getIntOrFloatBitWidth() < acc.getIntOrFloatBitWidth();
  });
}

/// Vectorizes `op` in place (linalg::vectorize with its defaults); where it
/// does not vectorize (or upstream's vectorizer would fail on its types:
/// convVectorizerTakesTypes), the scalar op is left, still right.
inline void vectorizeOrKeep(RewriterBase &rewriter, linalg::LinalgOp op) {
  if (!convVectorizerTakesTypes(op))
    return;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::VectorizationResult> vectorized =
      linalg::vectorize(rewriter, op);
  if (succeeded(vectorized))
    rewriter.replaceOp(op, vectorized->replacements);
}

} // namespace mlir::conv_lower

#endif
