//===- EpilogueInRegisterTile.cpp - the epilogue on the accumulators ------===//
//
// After conv-lower-parallel-epilogue the epilogue (bias, residual add, ReLU
// or clamp: one elementwise generic) runs in each thread's block, but as a
// second pass over the block's output once the GEMM's register tiles have
// stored it: on a layer with a small K and a large output (MobileNetV2's
// 16 -> 96 1x1 at 112x112, K = 16) that pass was 0.06 ms of 0.33. Here, where
// the block's output is exactly what a register-tile loop nest writes (the
// loops' tiles stored by one vector.transfer_write each) and the epilogue
// reads it in place, the epilogue's body is applied to the accumulator
// vector before that store, its other operands (a bias, a residual) read as
// vectors of the same tile, and the separate pass is gone: what the GEMM
// libraries' output stage does.
//
// A block whose rows the register tile does not divide is two nests (the
// partial last row of tiles peeled into a second one, which starts from
// the first one's result): the epilogue goes into both where together they
// store every element once. Such a chain also still starts from the fill
// its tiles read their accumulators from (tiling fuses the fill only where
// the tiles divide the block): those reads become splats of the fill's
// value and the fill goes. An epilogue that reads the nests' result
// through a collapse_shape (filter panels made inside a block) is expanded
// into their shape first.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-epilogue-in-register-tile"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWEREPILOGUEINREGISTERTILE
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// The store of one register tile into the loop nest's result: the vector
/// written, and where its tile lies in the result (offsets and sizes; the
/// vector holds the dimensions of size above 1, in order).
struct TileStore {
  vector::TransferWriteOp write;
  SmallVector<OpFoldResult> offsets;
  SmallVector<int64_t> sizes;
};

/// The span [begin, end) of a dimension that a nest's tiles at `offset` of
/// `size` cover: one tile at a constant offset, or one tile per iteration
/// of one of `loops`, `lb to ub step size` with (ub - lb) a multiple of the
/// size, its induction variable the offset (each loop used once: `used`
/// counts them).
using Span = std::pair<int64_t, int64_t>;
std::optional<Span> tilesSpan(OpFoldResult offset, int64_t size,
                              ArrayRef<scf::ForOp> loops,
                              SmallVectorImpl<bool> &used) {
  if (std::optional<int64_t> at = getConstantIntValue(offset))
    return Span{*at, *at + size};
  auto iv = dyn_cast_or_null<BlockArgument>(dyn_cast<Value>(offset));
  for (auto [i, constLoop] : llvm::enumerate(loops)) {
    scf::ForOp loop = constLoop;
    if (!iv || iv != loop.getInductionVar() || used[i])
      continue;
    used[i] = true;
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    if (!lb || !ub || getConstantIntValue(loop.getStep()) != size ||
        (*ub - *lb) % size != 0)
      return std::nullopt;
    return Span{*lb, *ub};
  }
  return std::nullopt;
}

/// One register-tile loop nest: its outermost loop, the store of its
/// tiles, the box of the result they cover (a span per dimension) and the
/// tensor the nest starts from (the outermost loop's init).
struct NestStore {
  scf::ForOp outer;
  TileStore store;
  SmallVector<Span> box;
  Value init;
};

/// Follows `value` (the result of a loop nest over a tensor) down to the
/// one vector.transfer_write that produces each of its tiles: scf.for
/// results through their yields, then tensor.insert_slice chains (unit
/// strides, static sizes, the inner ones at offset 0) ending at a full
/// in-bounds write at index 0 of a vector whose shape is the tile's without
/// its unit dimensions; each loop places one dimension's tiles (tilesSpan),
/// so that every element of the box passes through that write once.
std::optional<NestStore> nestStoreOf(Value value) {
  auto resultType = cast<RankedTensorType>(value.getType());
  auto rank = resultType.getRank();
  SmallVector<OpFoldResult> offsets;
  SmallVector<int64_t> sizes;
  SmallVector<scf::ForOp> loops;
  Value init;
  while (auto loop = value.getDefiningOp<scf::ForOp>()) {
    unsigned index = cast<OpResult>(value).getResultNumber();
    if (loops.empty())
      init = loop.getInits()[index];
    loops.push_back(loop);
    value = loop.getBody()->getTerminator()->getOperand(index);
  }
  bool outermost = true;
  while (auto insert = value.getDefiningOp<tensor::InsertSliceOp>()) {
    if (!insert.hasUnitStride() || insert.getDestType().getRank() != rank ||
        ShapedType::isDynamicShape(insert.getStaticSizes()))
      return std::nullopt;
    if (outermost) {
      offsets = insert.getMixedOffsets();
      sizes = llvm::to_vector(insert.getStaticSizes());
      outermost = false;
    } else if (!llvm::all_of(insert.getMixedOffsets(), isZeroInteger) ||
               insert.getStaticSizes() != ArrayRef<int64_t>(sizes)) {
      return std::nullopt;
    }
    value = insert.getSource();
    rank = insert.getSourceType().getRank();
  }
  auto write = value.getDefiningOp<vector::TransferWriteOp>();
  if (outermost || !write || write.getMask() ||
      !write.getPermutationMap().isMinorIdentity() ||
      llvm::any_of(write.getInBoundsValues(), [](bool b) { return !b; }) ||
      !llvm::all_of(write.getIndices(), [](Value v) {
        return isZeroInteger(getAsOpFoldResult(v));
      }))
    return std::nullopt;
  SmallVector<int64_t> kept;
  for (int64_t size : sizes)
    if (size != 1)
      kept.push_back(size);
  if (write.getVectorType().getShape() != ArrayRef<int64_t>(kept) ||
      !resultType.hasStaticShape())
    return std::nullopt;
  SmallVector<bool> used(loops.size(), false);
  SmallVector<Span> box;
  for (auto [offset, size, extent] :
       llvm::zip(offsets, sizes, resultType.getShape())) {
    std::optional<Span> span = tilesSpan(offset, size, loops, used);
    if (!span || span->first < 0 || span->second > extent)
      return std::nullopt;
    box.push_back(*span);
  }
  // A loop no tile offset uses revisits every tile (K in blocks around the
  // register tiles): the epilogue would be applied once a visit.
  if (!llvm::all_of(used, [](bool u) { return u; }))
    return std::nullopt;
  return NestStore{loops.front(), TileStore{write, offsets, sizes}, box, init};
}

/// The stores of the register-tile loop nests that produce `value`, each
/// nest starting from the one before's result (a partial last row of tiles
/// peeled into a second nest: ResNet-50's 1x1 layers at 392 rows a thread
/// block, 65 six-row tiles and a two-row one), and the tensor the first
/// starts from; only where their boxes partition the result, so that every
/// element passes through one store exactly once, and the results between
/// them are read by the next nest alone. First nest last.
struct NestChain {
  SmallVector<NestStore> nests;
  Value init;
};
std::optional<NestChain> nestChainOf(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  NestChain chain;
  while (value.getDefiningOp<scf::ForOp>()) {
    if (!chain.nests.empty() && !value.hasOneUse())
      return std::nullopt;
    std::optional<NestStore> nest = nestStoreOf(value);
    if (!nest)
      return std::nullopt;
    chain.nests.push_back(*nest);
    value = nest->init;
  }
  if (chain.nests.empty() || !type.hasStaticShape())
    return std::nullopt;
  chain.init = value;
  auto volume = [](ArrayRef<Span> box) {
    int64_t v = 1;
    for (auto [begin, end] : box)
      v *= end - begin;
    return v;
  };
  auto overlap = [](ArrayRef<Span> a, ArrayRef<Span> b) {
    for (auto [x, y] : llvm::zip(a, b))
      if (x.second <= y.first || y.second <= x.first)
        return false;
    return true;
  };
  int64_t covered = 0;
  for (auto [i, nest] : llvm::enumerate(chain.nests)) {
    covered += volume(nest.box);
    for (const NestStore &other : ArrayRef(chain.nests).take_front(i))
      if (overlap(nest.box, other.box))
        return std::nullopt;
  }
  if (covered != type.getNumElements())
    return std::nullopt;
  return chain;
}

/// The read a nest's register tile starts its accumulators from: the K
/// loop's init, an in-bounds read of the tile the store then writes.
vector::TransferReadOp accumulatorRead(vector::TransferWriteOp write) {
  auto result = dyn_cast<OpResult>(write.getValueToStore());
  auto kLoop = result ? dyn_cast<scf::ForOp>(result.getOwner()) : scf::ForOp();
  if (!kLoop)
    return {};
  auto read = kLoop.getInits()[result.getResultNumber()]
                  .getDefiningOp<vector::TransferReadOp>();
  if (!read || read.getBase() != write.getBase() || read.getMask() ||
      read.hasOutOfBoundsDim() || read.getVectorType() != write.getVectorType() ||
      read.getPermutationMap() != write.getPermutationMap() ||
      read.getIndices() != write.getIndices())
    return {};
  return read;
}

/// The chain of nests that starts from `fill` (its one use), followed to
/// the last nest, whose result is not another nest's init.
std::optional<NestChain> chainFromFill(linalg::FillOp fill) {
  Value filled = fill->getResult(0);
  if (!filled.hasOneUse())
    return std::nullopt;
  auto nest = dyn_cast<scf::ForOp>(filled.getUses().begin()->getOwner());
  if (!nest)
    return std::nullopt;
  Value last = nest->getResult(0);
  while (last.hasOneUse()) {
    auto next = dyn_cast<scf::ForOp>(last.getUses().begin()->getOwner());
    if (!next)
      break;
    last = next->getResult(0);
  }
  std::optional<NestChain> chain = nestChainOf(last);
  if (!chain || chain->init != filled)
    return std::nullopt;
  return chain;
}

/// Where the nests of a chain start from a linalg.fill: every tile's
/// accumulators start as a splat of the fill's value (each tile is written
/// once, and read just before, so what it read was the fill's), and the
/// fill, a pass over the whole block (1.8 MB for MobileNetV2's 24 -> 144
/// 1x1 at batch 8), goes. Where the tiles divide the block, tiling fuses
/// the fill already (conv-lower-tile-and-vectorize); this takes the peeled
/// form. Returns whether it did.
bool startTilesFromFill(RewriterBase &rewriter, const NestChain &chain) {
  auto fill = chain.init.getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics() || !chain.init.hasOneUse())
    return false;
  Value value = fill.getInputs()[0];
  SmallVector<vector::TransferReadOp> reads;
  for (const NestStore &nest : chain.nests) {
    vector::TransferReadOp read = accumulatorRead(nest.store.write);
    if (!read || read.getVectorType().getElementType() != value.getType())
      return false;
    reads.push_back(read);
  }
  for (vector::TransferReadOp read : reads) {
    rewriter.setInsertionPoint(read);
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(read, read.getVectorType(),
                                                     value);
  }
  rewriter.replaceOp(fill, fill.getOutputs()[0]);
  return true;
}

/// The epilogue this pass takes: an elementwise generic whose init is the
/// loop nest's result `acc`, read in place (identity maps), whose other
/// inputs are read through projected permutations, and whose body is
/// elementwise arithmetic on the element type (and constants).
bool isTileEpilogue(linalg::GenericOp op, Value acc) {
  if (op.getNumDpsInits() != 1 || op.getDpsInits()[0] != acc ||
      op.getNumParallelLoops() != op.getNumLoops() ||
      !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
    return false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isProjectedPermutation() ||
        (input->get() == acc && !map.isIdentity()))
      return false;
  }
  Type element = getElementTypeOrSelf(acc.getType());
  for (Operation &inner : op.getBody()->without_terminator())
    if (!isa<arith::ConstantOp>(inner) &&
        !(inner.hasTrait<OpTrait::Elementwise>() &&
          llvm::all_of(inner.getResultTypes(),
                       [&](Type t) { return t == element; })))
      return false;
  return true;
}

/// Reads the tile `store` covers of `operand`, indexed through `map`, as a
/// vector of the accumulator's shape (dimensions the operand lacks
/// broadcast) and the operand's element type (a bf16 or f16 bias of an f32
/// accumulator stays bf16 for the body's extf: read as f32, the extf was
/// invalid IR and the layer failed to compile).
Value readTileOf(RewriterBase &rewriter, Location loc, Value operand,
                 AffineMap map, const TileStore &store) {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  SmallVector<int64_t> shape;
  for (AffineExpr result : map.getResults()) {
    unsigned d = cast<AffineDimExpr>(result).getPosition();
    offsets.push_back(store.offsets[d]);
    sizes.push_back(rewriter.getIndexAttr(store.sizes[d]));
    strides.push_back(rewriter.getIndexAttr(1));
    shape.push_back(store.sizes[d]);
  }
  Value slice = tensor::ExtractSliceOp::create(
      rewriter, loc,
      RankedTensorType::get(shape, getElementTypeOrSelf(operand.getType())),
      operand, offsets, sizes, strides);
  // The vector's dimensions: the loops with more than one element in the
  // tile; each is the operand's dimension reading it, or a broadcast.
  SmallVector<AffineExpr> vectorDims;
  MLIRContext *ctx = rewriter.getContext();
  for (auto [d, size] : llvm::enumerate(store.sizes)) {
    if (size == 1)
      continue;
    std::optional<unsigned> position =
        map.getResultPosition(getAffineDimExpr(d, ctx));
    vectorDims.push_back(position ? getAffineDimExpr(*position, ctx)
                                  : getAffineConstantExpr(0, ctx));
  }
  auto permutation = AffineMap::get(map.getNumResults(), 0, vectorDims, ctx);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Type element = getElementTypeOrSelf(operand.getType());
  Value pad = ub::PoisonOp::create(rewriter, loc, element);
  SmallVector<bool> inBounds(vectorDims.size(), true);
  auto tileType = VectorType::get(
      vector::TransferWriteOp(store.write).getVectorType().getShape(), element);
  return vector::TransferReadOp::create(
      rewriter, loc, tileType, slice, SmallVector<Value>(shape.size(), zero),
      pad, permutation, inBounds);
}

/// The epilogue's body on vectors of the accumulator's type, before the
/// store: each block argument a tile (the accumulator for the output and
/// the in-place input), each value from outside or constant broadcast.
Value applyBody(RewriterBase &rewriter, Location loc, linalg::GenericOp op,
                ArrayRef<Value> arguments, VectorType type) {
  IRMapping mapping;
  for (auto [arg, value] : llvm::zip(op.getBody()->getArguments(), arguments))
    mapping.map(arg, value);
  auto vectorOf = [&](Value v) -> Value {
    Value mapped = mapping.lookupOrDefault(v);
    if (isa<VectorType>(mapped.getType()))
      return mapped;
    return vector::BroadcastOp::create(
        rewriter, loc, VectorType::get(type.getShape(), mapped.getType()),
        mapped);
  };
  for (Operation &inner : op.getBody()->without_terminator()) {
    if (isa<arith::ConstantOp>(inner)) {
      rewriter.clone(inner, mapping);
      continue;
    }
    OperationState state(loc, inner.getName());
    for (Value operand : inner.getOperands())
      state.addOperands(vectorOf(operand));
    state.addAttributes(inner.getAttrs());
    for (Type t : inner.getResultTypes())
      state.addTypes(VectorType::get(type.getShape(), t));
    Operation *vectorized = rewriter.create(state);
    mapping.map(inner.getResults(), vectorized->getResults());
  }
  return vectorOf(op.getBody()->getTerminator()->getOperand(0));
}

/// Moves the ops defining `value` (pure ones, recursively) before `point`
/// where they come after it: a bias slice taken after the loop nest.
bool hoistBefore(Value value, Operation *point, DominanceInfo &dominance) {
  if (dominance.properlyDominates(value, point))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || !isPure(def) ||
      def->getBlock() != point->getBlock())
    return false;
  for (Value operand : def->getOperands())
    if (!hoistBefore(operand, point, dominance))
      return false;
  def->moveBefore(point);
  return true;
}

/// Applies `op` in the register tiles of the loop nests producing its init
/// (nestChainOf); returns whether it did.
bool applyInRegisterTiles(RewriterBase &rewriter, linalg::GenericOp op,
                          DominanceInfo &dominance) {
  Value acc = op.getDpsInits().empty() ? Value() : op.getDpsInits()[0];
  if (!acc || !acc.getDefiningOp<scf::ForOp>() || !isTileEpilogue(op, acc) ||
      !llvm::all_of(acc.getUsers(), [&](Operation *u) { return u == op; }))
    return false;
  std::optional<NestChain> chain = nestChainOf(acc);
  if (!chain)
    return false;
  for (NestStore &nest : chain->nests)
    if (nest.store.write.getVectorType().getElementType() !=
        getElementTypeOrSelf(acc.getType()))
      return false;
  // Every other operand must exist before the first nest.
  Operation *first = chain->nests.back().outer;
  for (Value input : op.getDpsInputs())
    if (input != acc && !hoistBefore(input, first, dominance))
      return false;
  Location loc = op.getLoc();
  for (NestStore &nest : chain->nests) {
    vector::TransferWriteOp write = nest.store.write;
    rewriter.setInsertionPoint(write);
    VectorType type = write.getVectorType();
    SmallVector<Value> arguments;
    for (OpOperand *input : op.getDpsInputOperands())
      arguments.push_back(
          input->get() == acc
              ? write.getValueToStore()
              : readTileOf(rewriter, loc, input->get(),
                           op.getMatchingIndexingMap(input), nest.store));
    arguments.push_back(write.getValueToStore()); // the output's value: in place
    Value result = applyBody(rewriter, loc, op, arguments, type);
    rewriter.modifyOpInPlace(
        write, [&] { write.getValueToStoreMutable().assign(result); });
  }
  rewriter.replaceOp(op, acc);
  return true;
}

/// Whether `operand` is a loop nest's result seen through a collapse_shape,
/// read by an elementwise generic (an epilogue).
bool readsCollapsedNests(OpOperand *operand) {
  auto collapse = operand->get().getDefiningOp<tensor::CollapseShapeOp>();
  auto generic = dyn_cast<linalg::GenericOp>(operand->getOwner());
  return collapse && collapse.getSrc().getDefiningOp<scf::ForOp>() &&
         generic && linalg::isElementwise(generic);
}

/// Epilogues that read their nests' result through a collapse_shape (a
/// block of conv-lower-im2col-panels whose GEMM pack-filter-panels made
/// [rows, F / w, w] inside the block: the stem, strided 3x3s, seen as [rows,
/// F]) expanded into the nests' shape, upstream's fusion of a reshape by
/// expansion (a bias [F] read as [F / w, w]), so that applyInRegisterTiles
/// finds the nests. Only those epilogues and the reshapes made for them are
/// rewritten.
void expandOverCollapsedNests(Operation *root) {
  MLIRContext *ctx = root->getContext();
  SmallVector<Operation *> epilogues;
  llvm::SmallDenseSet<Operation *, 4> collapses;
  root->walk([&](linalg::GenericOp op) {
    bool reads = false;
    for (OpOperand &operand : op->getOpOperands())
      if (readsCollapsedNests(&operand)) {
        collapses.insert(operand.get().getDefiningOp());
        reads = true;
      }
    if (reads)
      epilogues.push_back(op);
  });
  if (epilogues.empty())
    return;
  RewritePatternSet patterns(ctx);
  linalg::populateFoldReshapeOpsByExpansionPatterns(patterns,
                                                    readsCollapsedNests);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  (void)applyOpPatternsGreedily(epilogues, std::move(patterns), config);
  // The collapses they read before, now unused: the nests' result must be
  // read by its epilogue alone (a walk visits only the ops still there).
  root->walk([&](tensor::CollapseShapeOp collapse) {
    if (collapse->use_empty() && collapses.contains(collapse))
      collapse->erase();
  });
}

struct ConvLowerEpilogueInRegisterTilePass
    : conv_lower::impl::ConvLowerEpilogueInRegisterTileBase<
          ConvLowerEpilogueInRegisterTilePass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Before the epilogues, which change what the tiles store.
    SmallVector<linalg::FillOp> fills;
    getOperation()->walk([&](linalg::FillOp fill) { fills.push_back(fill); });
    int splats = 0;
    for (linalg::FillOp fill : fills)
      if (std::optional<NestChain> chain = chainFromFill(fill))
        splats += startTilesFromFill(rewriter, *chain);
    expandOverCollapsedNests(getOperation());
    SmallVector<linalg::GenericOp> epilogues;
    getOperation()->walk([&](linalg::GenericOp op) { epilogues.push_back(op); });
    DominanceInfo dominance(getOperation());
    int applied = 0;
    for (linalg::GenericOp op : epilogues)
      applied += applyInRegisterTiles(rewriter, op, dominance);
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << applied << " of "
                            << epilogues.size()
                            << " generics applied in register tiles; "
                            << splats << " fills as accumulator splats\n");
  }
};

} // namespace
