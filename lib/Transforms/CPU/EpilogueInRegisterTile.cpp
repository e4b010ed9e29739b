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
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// Whether tiles at `offset` of `size` along a dimension of `extent` cover
/// it: all of it at 0, or one tile per iteration of one of `loops`,
/// `0 to extent step size`, its induction variable the offset (each loop
/// used once: `used` counts them).
bool tilesCover(OpFoldResult offset, int64_t size, int64_t extent,
                ArrayRef<scf::ForOp> loops, SmallVectorImpl<bool> &used) {
  if (isZeroInteger(offset) && size == extent)
    return true;
  auto iv = dyn_cast_or_null<BlockArgument>(dyn_cast<Value>(offset));
  for (auto [i, constLoop] : llvm::enumerate(loops)) {
    scf::ForOp loop = constLoop;
    if (!iv || iv != loop.getInductionVar() || used[i])
      continue;
    used[i] = true;
    return getConstantIntValue(loop.getLowerBound()) == 0 &&
           getConstantIntValue(loop.getUpperBound()) == extent &&
           getConstantIntValue(loop.getStep()) == size;
  }
  return false;
}

/// Follows `value` (a result of a loop nest over a tensor) down to the one
/// vector.transfer_write that produces each of its tiles: scf.for results
/// through their yields, then tensor.insert_slice chains (unit strides,
/// static sizes, the inner ones at offset 0) ending at a full in-bounds
/// write at index 0 of a vector whose shape is the tile's without its unit
/// dimensions; the tiles must cover the whole result (tilesCover), each
/// loop placing one dimension's tiles, so that every element passes through
/// that write exactly once.
std::optional<TileStore> tileStoreOf(Value value) {
  auto resultType = cast<RankedTensorType>(value.getType());
  auto rank = resultType.getRank();
  SmallVector<OpFoldResult> offsets;
  SmallVector<int64_t> sizes;
  SmallVector<scf::ForOp> loops;
  while (auto loop = value.getDefiningOp<scf::ForOp>()) {
    unsigned index = cast<OpResult>(value).getResultNumber();
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
  for (auto [offset, size, extent] :
       llvm::zip(offsets, sizes, resultType.getShape()))
    if (!tilesCover(offset, size, extent, loops, used))
      return std::nullopt;
  // A loop no tile offset uses revisits every tile (K in blocks around the
  // register tiles): the epilogue would be applied once a visit.
  if (!llvm::all_of(used, [](bool u) { return u; }))
    return std::nullopt;
  return TileStore{write, offsets, sizes};
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

/// Applies `op` in the register tiles of the loop nest producing its init;
/// returns whether it did.
bool applyInRegisterTiles(RewriterBase &rewriter, linalg::GenericOp op,
                          DominanceInfo &dominance) {
  Value acc = op.getDpsInits().empty() ? Value() : op.getDpsInits()[0];
  auto loop = acc ? acc.getDefiningOp<scf::ForOp>() : scf::ForOp();
  if (!loop || !isTileEpilogue(op, acc) ||
      !llvm::all_of(acc.getUsers(), [&](Operation *u) { return u == op; }))
    return false;
  std::optional<TileStore> store = tileStoreOf(acc);
  if (!store || store->write.getVectorType().getElementType() !=
                    getElementTypeOrSelf(acc.getType()))
    return false;
  // Every other operand must exist before the loop nest.
  for (Value input : op.getDpsInputs())
    if (input != acc && !hoistBefore(input, loop, dominance))
      return false;
  vector::TransferWriteOp write = store->write;
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(write);
  VectorType type = write.getVectorType();
  SmallVector<Value> arguments;
  for (OpOperand *input : op.getDpsInputOperands())
    arguments.push_back(
        input->get() == acc
            ? write.getValueToStore()
            : readTileOf(rewriter, loc, input->get(),
                         op.getMatchingIndexingMap(input), *store));
  arguments.push_back(write.getValueToStore()); // the output's value: in place
  Value result = applyBody(rewriter, loc, op, arguments, type);
  rewriter.modifyOpInPlace(
      write, [&] { write.getValueToStoreMutable().assign(result); });
  rewriter.replaceOp(op, acc);
  return true;
}

struct ConvLowerEpilogueInRegisterTilePass
    : conv_lower::impl::ConvLowerEpilogueInRegisterTileBase<
          ConvLowerEpilogueInRegisterTilePass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> epilogues;
    getOperation()->walk([&](linalg::GenericOp op) { epilogues.push_back(op); });
    IRRewriter rewriter(&getContext());
    DominanceInfo dominance(getOperation());
    int applied = 0;
    for (linalg::GenericOp op : epilogues)
      applied += applyInRegisterTiles(rewriter, op, dominance);
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << applied << " of "
                            << epilogues.size()
                            << " generics applied in register tiles\n");
  }
};

} // namespace
