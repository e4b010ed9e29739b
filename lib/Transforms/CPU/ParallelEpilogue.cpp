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
#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/RegionUtils.h"

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

Value convertedInput(linalg::GenericOp epilogue);

/// A generic whose init is a fresh tensor.empty writes a new buffer; where an
/// input of the same type and map is read by it alone (the GEMM's output,
/// before its bias and ReLU), that input becomes the init: the epilogue runs
/// in place, one pass. A computed input is preferred to a function argument
/// (a residual operand): bufferization would copy an argument before
/// writing into it. An epilogue that changes the element type keeps its
/// fresh init for the blocks of its input to write: a bf16 residual
/// argument is not taken for it (a bf16 residual into an f32 output is
/// computed in place on the f32 result as usual).
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
  if (!chosen || (isa<BlockArgument>(chosen->get()) && convertedInput(generic)))
    return;
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
  readInitSliceInstead(rewriter, tile, initSlice, outside);
}

/// An epilogue operand as the generic in the blocks reads it: the tensor
/// and its indexing map over the blocks' loops.
struct CollapsedOperand {
  Value tensor;
  AffineMap map;
};

/// How the epilogue's output and the blocks' result are one tensor seen
/// two ways: through a middle shape, each of whose dimensions is a group of
/// output dimensions (`outGroups`, an expand_shape's) and a group of the
/// blocks' dimensions (`blockGroups`, a collapse_shape's: pack-filter-panels'
/// [M, N / w, w] result seen as [M, N]); groups of one where there is no
/// reshape.
struct ReshapeChain {
  SmallVector<ReassociationIndices> outGroups, blockGroups;
  SmallVector<int64_t> blockShape;
};

bool allSingletons(ArrayRef<ReassociationIndices> groups) {
  return llvm::all_of(groups,
                      [](const ReassociationIndices &g) { return g.size() == 1; });
}

/// Whether collapseOperand takes a read through `map`: the whole output,
/// or output dimensions that are middle dimensions of their own.
bool readsWholeGroups(AffineMap map, const ReshapeChain &chain) {
  if (map.isIdentity())
    return true;
  return llvm::all_of(map.getResults(), [&](AffineExpr result) {
    auto dim = dyn_cast<AffineDimExpr>(result);
    return dim && llvm::any_of(chain.outGroups, [&](const ReassociationIndices &g) {
             return g.size() == 1 && g.front() == dim.getPosition();
           });
  });
}

/// `operand` (read through `map`) over the blocks' loops: an identity read
/// of the whole output is reshaped like it (a residual); a read of output
/// dimensions that are middle dimensions of their own (a per-channel bias)
/// is expanded into those dimensions' block groups (a bias [96] read as
/// [3, 32] by panels of 32). Only for reads readsWholeGroups takes.
CollapsedOperand
collapseOperand(RewriterBase &rewriter, Location loc, Value operand,
                AffineMap map, const ReshapeChain &chain) {
  MLIRContext *ctx = rewriter.getContext();
  unsigned blockLoops = chain.blockShape.size();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(blockLoops, ctx);
  if (map.isIdentity()) {
    Value v = operand;
    if (!allSingletons(chain.outGroups))
      v = tensor::CollapseShapeOp::create(rewriter, loc, v, chain.outGroups);
    if (!allSingletons(chain.blockGroups)) {
      auto type = RankedTensorType::get(
          chain.blockShape, getElementTypeOrSelf(operand.getType()));
      v = tensor::ExpandShapeOp::create(rewriter, loc, type, v,
                                        chain.blockGroups);
    }
    return CollapsedOperand{v, identity};
  }
  SmallVector<AffineExpr> results;
  SmallVector<ReassociationIndices> expansion;
  SmallVector<int64_t> expandedShape;
  for (AffineExpr result : map.getResults()) {
    auto dim = cast<AffineDimExpr>(result);
    auto group = llvm::find_if(chain.outGroups, [&](const ReassociationIndices &g) {
      return llvm::is_contained(g, dim.getPosition());
    });
    const ReassociationIndices &blockDims =
        chain.blockGroups[group - chain.outGroups.begin()];
    ReassociationIndices expanded;
    for (int64_t d : blockDims) {
      expanded.push_back(results.size());
      results.push_back(getAffineDimExpr(d, ctx));
      expandedShape.push_back(chain.blockShape[d]);
    }
    expansion.push_back(expanded);
  }
  Value v = operand;
  if (!allSingletons(expansion)) {
    auto type = RankedTensorType::get(expandedShape,
                                      getElementTypeOrSelf(operand.getType()));
    v = tensor::ExpandShapeOp::create(rewriter, loc, type, v, expansion);
  }
  return CollapsedOperand{v, AffineMap::get(blockLoops, 0, results, ctx)};
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

/// The threaded blocks that make `epilogue`'s input (the GEMM's, filter
/// panels', Winograd's output transform's): an scf.forall with one result,
/// read by nothing else, written by one parallel_insert_slice of static
/// sizes whose blocks cover the whole result (blocksCoverDestination),
/// which is, as it is or reshaped (an expand_shape, after a collapse_shape
/// or not), `output`: what the epilogue reads and writes in place, or, for
/// an epilogue that changes the element type, reads (convertedInput).
struct ProducerBlocks {
  scf::ForallOp forall;
  tensor::ParallelInsertSliceOp insert;
  ReshapeChain chain;
  tensor::CollapseShapeOp collapse; // the reshapes between, where there are
  tensor::ExpandShapeOp expand;
};
std::optional<ProducerBlocks> producerBlocks(linalg::GenericOp epilogue,
                                             Value output) {
  if (epilogue.getNumDpsInits() != 1 || !output)
    return std::nullopt;
  auto expand = output.getDefiningOp<tensor::ExpandShapeOp>();
  Value middle = expand ? expand.getSrc() : output;
  auto collapse = middle.getDefiningOp<tensor::CollapseShapeOp>();
  Value produced = collapse ? collapse.getSrc() : middle;
  auto forall = produced.getDefiningOp<scf::ForallOp>();
  auto onlyEpilogueReads = [&](Value v) {
    return llvm::all_of(v.getUsers(),
                        [&](Operation *user) { return user == epilogue; });
  };
  if (!forall || forall.getNumResults() != 1 || !onlyEpilogueReads(output) ||
      (expand && !middle.hasOneUse()) || (collapse && !produced.hasOneUse()))
    return std::nullopt;
  auto inserts = forall.getTerminator().getYieldingOps();
  auto insert = inserts.empty()
                    ? tensor::ParallelInsertSliceOp()
                    : dyn_cast<tensor::ParallelInsertSliceOp>(&*inserts.begin());
  if (!insert || std::next(inserts.begin()) != inserts.end() ||
      !blocksCoverDestination(forall, insert))
    return std::nullopt;
  auto singletons = [](int64_t rank) {
    SmallVector<ReassociationIndices, 4> groups;
    for (int64_t d = 0; d < rank; ++d)
      groups.push_back({d});
    return groups;
  };
  int64_t middleRank = cast<RankedTensorType>(middle.getType()).getRank();
  ReshapeChain chain;
  chain.outGroups = expand ? expand.getReassociationIndices()
                           : singletons(middleRank);
  chain.blockGroups = collapse ? collapse.getReassociationIndices()
                               : singletons(middleRank);
  chain.blockShape = llvm::to_vector(insert.getDestType().getShape());
  return ProducerBlocks{forall, insert, chain, collapse, expand};
}

/// An epilogue that changes the element type (a bf16 output rounded from
/// the f32 math): its init a tensor.empty of another element type than a
/// computed input of the same shape read through the identity, which is
/// returned (the blocks' result, for producerBlocks), or null.
Value convertedInput(linalg::GenericOp epilogue) {
  if (epilogue.getNumDpsInits() != 1)
    return Value();
  OpOperand *init = epilogue.getDpsInitOperand(0);
  auto initType = dyn_cast<RankedTensorType>(init->get().getType());
  if (!initType || !init->get().getDefiningOp<tensor::EmptyOp>() ||
      readsInit(epilogue))
    return Value();
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (type && !isa<BlockArgument>(input->get()) &&
        type.getShape() == initType.getShape() &&
        type.getElementType() != initType.getElementType() &&
        epilogue.getMatchingIndexingMap(input).isIdentity())
      return input->get();
  }
  return Value();
}

/// Whether `value` holds no values: a tensor.empty, or one reshaped (the
/// filter panels' [M, N / w, w] destination, expanded from [M, N]).
bool isFreshTensor(Value value) {
  while (true) {
    Operation *def = value.getDefiningOp();
    if (isa_and_nonnull<tensor::EmptyOp>(def))
      return true;
    if (!isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
      return false;
    value = def->getOperand(0);
  }
}

/// Whether the blocks can write the epilogue's element type instead: their
/// destination is a fresh tensor (no values to keep) that the body reads
/// only through static slices, each of which can then be a fresh block.
bool blocksCanBeRetyped(ProducerBlocks blocks) {
  scf::ForallOp forall = blocks.forall;
  if (!isFreshTensor(forall.getOutputs().front()))
    return false;
  BlockArgument shared = forall.getRegionIterArgs().front();
  return llvm::all_of(shared.getUsers(), [&](Operation *user) {
    if (user == blocks.insert.getOperation())
      return true;
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    return slice && slice.getType().hasStaticShape();
  });
}

/// The blocks write `element` in place of their own type: the destination
/// is a fresh tensor of it, each block computes into a fresh tensor of its
/// own (bufferized as a block buffer, in cache), and the result and the
/// reshapes after it change type with it.
void retypeBlocks(RewriterBase &rewriter, ProducerBlocks blocks, Type element) {
  scf::ForallOp forall = blocks.forall;
  BlockArgument shared = forall.getRegionIterArgs().front();
  for (Operation *user : llvm::to_vector(shared.getUsers())) {
    auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
    if (!slice)
      continue;
    rewriter.setInsertionPoint(slice);
    rewriter.replaceOpWithNewOp<tensor::EmptyOp>(
        slice, slice.getType().getShape(), slice.getType().getElementType());
  }
  auto retype = [&](Value v) {
    v.setType(cast<RankedTensorType>(v.getType()).clone(element));
  };
  rewriter.setInsertionPoint(forall);
  auto destType = cast<RankedTensorType>(forall.getOutputs().front().getType());
  Value dest = tensor::EmptyOp::create(rewriter, forall.getLoc(),
                                       destType.getShape(), element);
  rewriter.modifyOpInPlace(forall, [&] {
    forall.getOutputsMutable()[0].assign(dest);
    retype(shared);
    retype(forall.getResult(0));
  });
  if (blocks.collapse)
    rewriter.modifyOpInPlace(blocks.collapse,
                             [&] { retype(blocks.collapse.getResult()); });
  if (blocks.expand)
    rewriter.modifyOpInPlace(blocks.expand,
                             [&] { retype(blocks.expand.getResult()); });
}

/// Moves `epilogue` into the threaded blocks that produce its input
/// (producerBlocks): each block applies it to its own result, still in
/// cache, before inserting it, its operands reshaped to the blocks' shape
/// (collapseOperand). A layer then runs one parallel region, not two, and
/// reads its output once less from memory. An epilogue that changes the
/// element type (a bf16 output) makes the blocks write its type: each
/// block's f32 result stays a block of its own, in cache, and only the
/// rounded one reaches memory (unfused, a whole f32 output was written and
/// read again: MobileNetV2's 144-channel 56x56 depthwise 0.071 -> 0.085 ms
/// for a bf16 output). Fails, with nothing changed, where an operand does
/// not reshape or is made after the blocks.
LogicalResult fuseIntoProducerBlocks(RewriterBase &rewriter,
                                     linalg::GenericOp epilogue) {
  if (epilogue.getNumDpsInits() != 1)
    return failure();
  Value output = epilogue.getDpsInitOperand(0)->get();
  std::optional<ProducerBlocks> blocks = producerBlocks(epilogue, output);
  // Else an epilogue that changes the type, over blocks that can take it.
  bool converting = false;
  if (!blocks) {
    output = convertedInput(epilogue);
    blocks = producerBlocks(epilogue, output);
    if (!blocks || !blocksCanBeRetyped(*blocks))
      return failure();
    converting = true;
  }
  // Every other operand, and every value its body uses from outside (a
  // ReLU's zero), must exist before the blocks run (an i8 layer's
  // zero-point correction is computed after the GEMM).
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(epilogue.getRegion(), captured);
  captured.insert_range(epilogue.getDpsInputs());
  DominanceInfo dominance(epilogue->getParentOp());
  for (Value value : captured)
    if (value != output && !dominance.properlyDominates(value, blocks->forall))
      return failure();
  for (OpOperand *input : epilogue.getDpsInputOperands())
    if (input->get() != output &&
        !readsWholeGroups(epilogue.getMatchingIndexingMap(input), blocks->chain))
      return failure();
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
    collapsed.push_back(collapseOperand(rewriter, loc, input->get(),
                                        epilogue.getMatchingIndexingMap(input),
                                        blocks->chain));
  }
  // In the block, just before its insert: the epilogue on the block's
  // result, which it then inserts instead (in place, or into its slice of
  // the retyped destination).
  tensor::ParallelInsertSliceOp insert = blocks->insert;
  Type element = getElementTypeOrSelf(epilogue.getResult(0).getType());
  if (converting)
    retypeBlocks(rewriter, *blocks, element);
  rewriter.setInsertionPoint(blocks->forall.getTerminator());
  Value block = insert.getSource();
  SmallVector<OpFoldResult> offsets = insert.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = insert.getMixedSizes();
  Value init = block;
  if (converting)
    init =
        tensor::ExtractSliceOp::create(rewriter, loc, insert.getDest(), offsets,
                                       sizes, insert.getMixedStrides());
  unsigned loops = blocks->chain.blockShape.size();
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
  auto fused = linalg::GenericOp::create(rewriter, loc, init.getType(), inputs,
                                         ValueRange{init}, maps, iterators);
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
