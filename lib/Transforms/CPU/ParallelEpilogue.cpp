//===- ParallelEpilogue.cpp - the ops after a convolution, fused, threaded -===//
//
// What a model applies to a convolution's output (ConvModule: a bias add,
// then a ReLU, each a linalg.generic with a fresh init) survives the
// convolution's rewrite as whole-tensor generics after the GEMM's threaded
// blocks: serial loops over the output, one pass over memory each. On
// memory-bound layers those passes cost more than the convolution's own
// threaded work (MobileNetV2's 32-channel 112x112 depthwise: 0.45 ms with
// the bias, 0.78 with the ReLU too). Fused into one generic and split into
// blocks for the threads, the epilogue is one parallel pass. Where the GEMM
// already runs in threaded blocks (an scf.forall whose result, reshaped, is
// the epilogue's input), the epilogue moves into those blocks instead: each
// applies it to its own result while that is in cache, and the layer runs
// one parallel region, not two.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "TilingUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-parallel-epilogue"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPARALLELEPILOGUE
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// An elementwise generic on static tensors: every loop parallel, projected
/// permutation maps, identity-like output maps, a scalar body.
bool isStaticElementwise(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.hasPureTensorSemantics() &&
         !generic.hasDynamicShape() && linalg::isElementwise(generic);
}

/// Fuses a producer into its consumer when both are static elementwise
/// generics and the consumer is the producer's only user (so nothing is
/// computed twice and no intermediate stays live).
bool fusesIntoConsumer(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  return isStaticElementwise(producer) &&
         isStaticElementwise(fused->getOwner()) &&
         producer->getResult(0).hasOneUse() && producer->getNumResults() == 1;
}

/// Fuses each static elementwise generic's producers of the same kind into
/// it, as long as one reads another alone. Upstream's fusion alone, not its
/// pattern set, whose RemoveOutsDependency gives every generic a fresh init
/// (a bias added in place on the GEMM's output then wrote a new buffer:
/// 1x1 64 -> 256 at 56x56, 0.60 -> 0.68 ms).
LogicalResult fuseChains(RewriterBase &rewriter, func::FuncOp func) {
  while (true) {
    OpOperand *fused = nullptr;
    func.walk([&](linalg::GenericOp consumer) {
      for (OpOperand *input : consumer.getDpsInputOperands()) {
        if (fusesIntoConsumer(input) &&
            linalg::areElementwiseOpsFusable(input)) {
          fused = input;
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (!fused)
      return success();
    Operation *producer = fused->get().getDefiningOp();
    Operation *consumer = fused->getOwner();
    rewriter.setInsertionPoint(consumer);
    FailureOr<linalg::ElementwiseOpFusionResult> result =
        linalg::fuseElementwiseOps(rewriter, fused);
    if (failed(result))
      return failure();
    // The consumer's results (and any the producer keeps) now come from the
    // fused op.
    for (auto [original, replacement] : result->replacements)
      rewriter.replaceAllUsesWith(original, replacement);
    rewriter.eraseOp(consumer);
    if (producer->use_empty())
      rewriter.eraseOp(producer);
  }
}

/// Whether `generic`'s body reads its init (a fresh init then changes what
/// it computes).
bool readsInit(linalg::GenericOp generic) {
  return llvm::any_of(generic.getDpsInitsMutable(), [&](OpOperand &init) {
    return generic.payloadUsesValueFromOperand(&init);
  });
}

/// A generic whose init is a fresh tensor.empty writes a new buffer; where an
/// input of the same type and map is read by it alone (the GEMM's output,
/// before its bias and ReLU), that input becomes the init: the epilogue runs
/// in place, one pass. A computed input is preferred to a function argument
/// (a residual operand): bufferization would copy an argument before
/// writing into it.
void reuseInputAsInit(RewriterBase &rewriter, linalg::GenericOp generic) {
  if (generic.getNumDpsInits() != 1 || readsInit(generic))
    return;
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>())
    return;
  AffineMap initMap = generic.getMatchingIndexingMap(init);
  OpOperand *chosen = nullptr;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    if (input->get().getType() != init->get().getType() ||
        generic.getMatchingIndexingMap(input) != initMap ||
        !input->get().hasOneUse())
      continue;
    if (!chosen || (isa<BlockArgument>(chosen->get()) &&
                    !isa<BlockArgument>(input->get())))
      chosen = input;
  }
  if (chosen)
    rewriter.modifyOpInPlace(generic, [&] { init->set(chosen->get()); });
}

/// In a block of an in-place epilogue (its init is an input), that input's
/// slice read from the shared output instead of from the value outside the
/// forall: the same elements, but bufferization then sees each block read
/// and write its own part of one buffer and computes it in place, where a
/// read from outside makes it copy the whole buffer first.
void readInputFromSharedOutput(RewriterBase &rewriter, linalg::LinalgOp tile) {
  if (tile.getNumDpsInits() != 1)
    return;
  auto initSlice =
      tile.getDpsInitOperand(0)->get().getDefiningOp<tensor::ExtractSliceOp>();
  auto shared = initSlice ? dyn_cast<BlockArgument>(initSlice.getSource())
                          : BlockArgument();
  auto forall = shared ? dyn_cast<scf::ForallOp>(shared.getOwner()->getParentOp())
                       : scf::ForallOp();
  if (!forall)
    return;
  Value outside = forall.getTiedOpOperand(shared)->get();
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

/// An epilogue operand as the collapsed generic reads it: the tensor and its
/// indexing map over the reassociation groups' loops.
struct CollapsedOperand {
  Value tensor;
  AffineMap map;
};

/// `operand` (read through `map`) over the loops of `groups`: an identity
/// read of the whole output is collapsed like it (a residual); a read of
/// loops that are groups of one (a per-channel bias) keeps its tensor and
/// reads the groups' loops. None for anything else (part of a group).
std::optional<CollapsedOperand>
collapseOperand(RewriterBase &rewriter, Location loc, Value operand,
                AffineMap map, ArrayRef<ReassociationIndices> groups) {
  MLIRContext *ctx = rewriter.getContext();
  unsigned collapsedLoops = groups.size();
  if (map.isIdentity()) {
    Value collapsed = operand;
    if (collapsedLoops != map.getNumDims())
      collapsed = tensor::CollapseShapeOp::create(rewriter, loc, operand, groups);
    return CollapsedOperand{
        collapsed, AffineMap::getMultiDimIdentityMap(collapsedLoops, ctx)};
  }
  SmallVector<AffineExpr> results;
  for (AffineExpr result : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(result);
    if (!dim)
      return std::nullopt;
    auto group = llvm::find_if(groups, [&](const ReassociationIndices &g) {
      return llvm::is_contained(g, dim.getPosition());
    });
    if (group == groups.end() || group->size() != 1)
      return std::nullopt;
    results.push_back(getAffineDimExpr(group - groups.begin(), ctx));
  }
  return CollapsedOperand{operand,
                          AffineMap::get(collapsedLoops, 0, results, ctx)};
}

/// The slice of `operand` that a block at `offsets` of `sizes` (over the
/// collapsed loops) reads through `map`.
Value blockSlice(RewriterBase &rewriter, Location loc, Value operand,
                 AffineMap map, ArrayRef<OpFoldResult> offsets,
                 ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> sliceOffsets, sliceSizes;
  for (AffineExpr result : map.getResults()) {
    unsigned loop = cast<AffineDimExpr>(result).getPosition();
    sliceOffsets.push_back(offsets[loop]);
    sliceSizes.push_back(sizes[loop]);
  }
  SmallVector<OpFoldResult> strides(map.getNumResults(),
                                    rewriter.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(rewriter, loc, operand, sliceOffsets,
                                        sliceSizes, strides);
}

/// Whether the blocks of `forall` written at `offset` with `size` cover the
/// whole `extent` of a dimension: all of it from 0, or one block per
/// iteration of a loop of the forall, `(0) to (extent) step (size)` with
/// the loop's value as the offset, or `in (extent / size)` with `iv * size`.
bool blocksCoverDimension(scf::ForallOp forall, OpFoldResult offset,
                          int64_t size, int64_t extent) {
  if (isConstantIntValue(offset, 0) && size == extent)
    return true;
  auto value = dyn_cast<Value>(offset);
  // `iv * size`: the loop counts blocks (step 1) rather than elements.
  bool countsBlocks = false;
  if (auto apply = value ? value.getDefiningOp<affine::AffineApplyOp>()
                         : affine::AffineApplyOp()) {
    AffineMap map = apply.getAffineMap();
    if (map.getNumResults() != 1 || map.getNumInputs() != 1 ||
        map.getResult(0) != getAffineDimExpr(0, map.getContext()) * size)
      return false;
    value = apply.getMapOperands()[0];
    countsBlocks = true;
  }
  auto iv = dyn_cast_or_null<BlockArgument>(value);
  if (!iv || iv.getOwner()->getParentOp() != forall.getOperation())
    return false;
  unsigned loop = iv.getArgNumber();
  std::optional<int64_t> lower =
      getConstantIntValue(forall.getMixedLowerBound()[loop]);
  std::optional<int64_t> upper =
      getConstantIntValue(forall.getMixedUpperBound()[loop]);
  std::optional<int64_t> step =
      getConstantIntValue(forall.getMixedStep()[loop]);
  if (lower != 0 || !upper)
    return false;
  if (countsBlocks)
    return step == 1 && *upper * size == extent;
  return step == size && *upper == extent;
}

/// The threaded blocks that make `epilogue`'s input (the GEMM's, Winograd's
/// output transform's): an scf.forall with one result, read by nothing
/// else, written by one parallel_insert_slice of static sizes whose blocks
/// cover the whole result (blocksCoverDimension), which is, as it is or
/// reshaped (an expand_shape), what the epilogue reads and writes in place.
struct ProducerBlocks {
  scf::ForallOp forall;
  tensor::ParallelInsertSliceOp insert;
  SmallVector<ReassociationIndices> groups; // epilogue dims per block dim
};
std::optional<ProducerBlocks> producerBlocks(linalg::GenericOp epilogue) {
  if (epilogue.getNumDpsInits() != 1)
    return std::nullopt;
  Value output = epilogue.getDpsInitOperand(0)->get();
  auto expand = output.getDefiningOp<tensor::ExpandShapeOp>();
  Value produced = expand ? expand.getSrc() : output;
  auto forall = produced.getDefiningOp<scf::ForallOp>();
  auto onlyEpilogueReads = [&](Value v) {
    return llvm::all_of(v.getUsers(),
                        [&](Operation *user) { return user == epilogue; });
  };
  if (!forall || forall.getNumResults() != 1 || !onlyEpilogueReads(output) ||
      (expand && !produced.hasOneUse()))
    return std::nullopt;
  auto inserts = forall.getTerminator().getYieldingOps();
  auto insert = inserts.empty()
                    ? tensor::ParallelInsertSliceOp()
                    : dyn_cast<tensor::ParallelInsertSliceOp>(&*inserts.begin());
  if (!insert || std::next(inserts.begin()) != inserts.end() ||
      !insert.hasUnitStride() ||
      insert.getSourceType().getRank() != insert.getDestType().getRank() ||
      !insert.getSourceType().hasStaticShape() ||
      !insert.getDestType().hasStaticShape())
    return std::nullopt;
  ArrayRef<int64_t> sizes = insert.getSourceType().getShape();
  ArrayRef<int64_t> extents = insert.getDestType().getShape();
  for (auto [offset, size, extent] :
       llvm::zip(insert.getMixedOffsets(), sizes, extents))
    if (!blocksCoverDimension(forall, offset, size, extent))
      return std::nullopt;
  SmallVector<ReassociationIndices> groups;
  if (expand) {
    groups = expand.getReassociationIndices();
  } else {
    for (int64_t d = 0; d < insert.getDestType().getRank(); ++d)
      groups.push_back({d});
  }
  return ProducerBlocks{forall, insert, groups};
}

/// Moves `epilogue` into the threaded blocks that produce its input
/// (producerBlocks): each block applies it to its own result, still in
/// cache, before inserting it, collapsed to the blocks' shape (the
/// expand's groups). A layer then runs one parallel region, not two, and reads its
/// output once less from memory. Fails (nothing changed) where the
/// operands do not collapse.
LogicalResult fuseIntoProducerBlocks(RewriterBase &rewriter,
                                     linalg::GenericOp epilogue) {
  std::optional<ProducerBlocks> blocks = producerBlocks(epilogue);
  if (!blocks)
    return failure();
  Value output = epilogue.getDpsInitOperand(0)->get();
  ArrayRef<ReassociationIndices> groups = blocks->groups;
  Location loc = epilogue.getLoc();
  // The epilogue's other operands over the GEMM's (collapsed) loops,
  // built before the forall.
  rewriter.setInsertionPoint(blocks->forall);
  SmallVector<std::optional<CollapsedOperand>> collapsed;
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    if (input->get() == output) {
      collapsed.push_back(std::nullopt); // the block itself
      continue;
    }
    std::optional<CollapsedOperand> operand =
        collapseOperand(rewriter, loc, input->get(),
                        epilogue.getMatchingIndexingMap(input), groups);
    if (!operand)
      return failure();
    collapsed.push_back(operand);
  }
  // In the block, just before its insert: the epilogue on the block's
  // result, which it then inserts instead.
  tensor::ParallelInsertSliceOp insert = blocks->insert;
  rewriter.setInsertionPoint(blocks->forall.getTerminator());
  Value block = insert.getSource();
  SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = insert.getMixedSizes();
  unsigned loops = groups.size();
  MLIRContext *ctx = rewriter.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(loops, ctx);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (const std::optional<CollapsedOperand> &operand : collapsed) {
    if (!operand) {
      inputs.push_back(block);
      maps.push_back(identity);
      continue;
    }
    inputs.push_back(blockSlice(rewriter, loc, operand->tensor, operand->map,
                                offsets, sizes));
    maps.push_back(operand->map);
  }
  maps.push_back(identity);
  SmallVector<utils::IteratorType> iterators(loops,
                                             utils::IteratorType::parallel);
  auto fused = linalg::GenericOp::create(rewriter, loc, block.getType(), inputs,
                                         ValueRange{block}, maps, iterators);
  rewriter.cloneRegionBefore(epilogue.getRegion(), fused.getRegion(),
                             fused.getRegion().begin());
  rewriter.modifyOpInPlace(insert, [&] {
    insert.getSourceMutable().assign(fused.getResult(0));
  });
  rewriter.replaceOp(epilogue, output);
  return success();
}

/// The dimension to split into blocks and its tile: the outermost whose
/// extent gives `blocks` blocks or more, else the largest extent; the tile
/// divides the extent (static tiles).
std::pair<int64_t, int64_t> blockDimension(ArrayRef<int64_t> ranges,
                                           int64_t blocks) {
  int64_t dim = 0;
  for (auto [d, extent] : llvm::enumerate(ranges)) {
    if (extent >= blocks) {
      dim = d;
      break;
    }
    if (extent > ranges[dim])
      dim = d;
  }
  int64_t extent = ranges[dim];
  int64_t tile = largestDividingTile(extent, llvm::divideCeil(extent, blocks));
  return {dim, tile};
}

struct ConvLowerParallelEpiloguePass
    : conv_lower::impl::ConvLowerParallelEpilogueBase<
          ConvLowerParallelEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (threads < 1 || minElements < 0) {
      func.emitError() << "conv-lower-parallel-epilogue: threads must be "
                          "positive and min-elements not negative";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    if (failed(fuseChains(rewriter, func)))
      return signalPassFailure();
    SmallVector<linalg::GenericOp> epilogues;
    for (Operation &op : func.getBody().front())
      if (isStaticElementwise(&op))
        epilogues.push_back(cast<linalg::GenericOp>(op));
    for (linalg::GenericOp generic : epilogues) {
      reuseInputAsInit(rewriter, generic);
      if (succeeded(fuseIntoProducerBlocks(rewriter, generic)))
        continue;
      SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
      int64_t elements = ShapedType::getNumElements(ranges);
      if (threads == 1 || ranges.empty() || elements == 0 ||
          elements < minElements)
        continue; // one serial pass (or nothing to do)
      auto [dim, tile] = blockDimension(ranges, 4 * threads);
      if (tile == ranges[dim])
        continue; // one block
      SmallVector<int64_t> sizes(ranges.size(), 0);
      sizes[dim] = tile;
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << elements
                              << " elements in blocks of " << tile
                              << " along dimension " << dim << "\n");
      FailureOr<linalg::LinalgOp> tiled = tileInPlace(
          rewriter, generic, sizes, scf::SCFTilingOptions::LoopType::ForallOp);
      if (failed(tiled))
        return signalPassFailure();
      readInputFromSharedOutput(rewriter, *tiled);
    }
  }
};

} // namespace
