//===- PrefetchEpilogueOperands.cpp - the next row tile's residual, early -===//
//
// A register tile's epilogue (conv-lower-epilogue-in-register-tile) reads
// an operand of the output's shape, a ResNet block's residual, once per
// tile, right after the tile's K loop. At batch 8 that operand is past the
// caches (25.7 MB for r50's 128 -> 256 1x1 layer at 56x56), and each tile
// waits for its 8 rows from memory after a K loop of ~70 ns: that layer
// took 8.3 ms without the residual and 10.2 with it. This pass prefetches,
// before each tile's K loop, the lines the same tile one row tile on will
// read: a whole row of tiles (every panel) of work ahead, enough to hide
// the memory's latency.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-prefetch-epilogue-operands"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPREFETCHEPILOGUEOPERANDS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

constexpr int64_t kLineBytes = 64;
// More lines than this a tile is not a register tile's epilogue read.
constexpr int64_t kMaxPrefetches = 64;

/// A register tile's K loop: an scf.for carrying vectors (the
/// accumulators).
bool isRegisterTileLoop(Operation *op) {
  auto loop = dyn_cast<scf::ForOp>(op);
  return loop && loop.getNumResults() > 0 &&
         llvm::all_of(loop.getResultTypes(),
                      [](Type t) { return isa<VectorType>(t); });
}

/// The register tile's K loop whose epilogue `read` is part of: one that
/// precedes it in its block and whose accumulators reach an op that takes
/// the read's value too (the residual's add), or null.
scf::ForOp precedingRegisterTileLoop(vector::TransferReadOp read) {
  for (Operation *op = read->getPrevNode(); op; op = op->getPrevNode()) {
    if (!isRegisterTileLoop(op))
      continue;
    SetVector<Operation *> epilogue;
    getForwardSlice(op, &epilogue);
    if (llvm::any_of(read->getUsers(),
                     [&](Operation *user) { return epilogue.contains(user); }))
      return cast<scf::ForOp>(op);
    return {};
  }
  return {};
}

/// The outermost scf.for between `read` and the enclosing scf.forall (or
/// function) whose induction variable the read's address depends on: the
/// row tiles, one step of which is a whole row of tiles' work.
scf::ForOp outermostAddressLoop(vector::TransferReadOp read,
                                const SetVector<Operation *> &slice,
                                ArrayRef<Value> indices) {
  scf::ForOp outermost;
  for (Operation *op = read->getParentOp();
       op && !isa<scf::ForallOp, FunctionOpInterface>(op);
       op = op->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop)
      continue;
    Value iv = loop.getInductionVar();
    bool used = llvm::is_contained(indices, iv) ||
                llvm::any_of(slice, [&](Operation *s) {
                  return llvm::is_contained(s->getOperands(), iv);
                });
    if (used)
      outermost = loop;
  }
  return outermost;
}

/// Adds to `slice` the ops inside `scope` that `value` is computed from, in
/// order (loop IVs are values of the loops around, not ops).
LogicalResult sliceWithin(Value value, Operation *scope,
                          SetVector<Operation *> &slice) {
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitBlockArguments = true;
  options.filter = [&](Operation *op) { return scope->isProperAncestor(op); };
  Operation *def = value.getDefiningOp();
  if (!def || !scope->isProperAncestor(def))
    return success();
  return getBackwardSlice(def, &slice, options);
}

/// The ops `value` is computed from inside `loop`'s body (views and index
/// arithmetic), in order; false where one is not side-effect free or is
/// the register tile's loop or inside it.
bool addressSlice(Value value, scf::ForOp loop, scf::ForOp kLoop,
                  SetVector<Operation *> &slice) {
  if (failed(sliceWithin(value, loop, slice)))
    return false;
  return llvm::all_of(slice, [&](Operation *op) {
    return isMemoryEffectFree(op) && op != kLoop.getOperation() &&
           !kLoop->isProperAncestor(op) && op->getNumRegions() == 0;
  });
}

/// The cache lines a read (a projected permutation of its memref's dims)
/// takes: for each memref dim, its extent and the step between lines (a
/// line's elements along the contiguous last dim, 1 elsewhere).
struct LineGrid {
  SmallVector<int64_t> extent, step;
  int64_t count() const {
    int64_t lines = 1;
    for (auto [e, s] : llvm::zip(extent, step))
      lines *= llvm::divideCeil(e, s);
    return lines;
  }
};

LineGrid lineGrid(vector::TransferReadOp read, MemRefType type) {
  LineGrid grid{SmallVector<int64_t>(type.getRank(), 1),
                SmallVector<int64_t>(type.getRank(), 1)};
  for (auto [i, result] :
       llvm::enumerate(read.getPermutationMap().getResults()))
    grid.extent[cast<AffineDimExpr>(result).getPosition()] =
        read.getVectorType().getDimSize(i);
  grid.step.back() =
      std::max<int64_t>(1, kLineBytes * 8 / type.getElementTypeBitWidth());
  return grid;
}

/// memref.prefetch of every cache line `read` reads, with its base and
/// indices taken through `mapping`.
void prefetchLines(OpBuilder &b, Location loc, vector::TransferReadOp read,
                   IRMapping &mapping) {
  Value base = mapping.lookupOrDefault(read.getBase());
  auto type = cast<MemRefType>(base.getType());
  SmallVector<Value> indices = llvm::map_to_vector(
      read.getIndices(), [&](Value v) { return mapping.lookupOrDefault(v); });
  LineGrid grid = lineGrid(read, type);
  SmallVector<int64_t> &extent = grid.extent, &step = grid.step;
  SmallVector<int64_t> position(type.getRank(), 0);
  std::function<void(unsigned)> emit = [&](unsigned d) {
    if (d == position.size()) {
      SmallVector<Value> at;
      for (auto [index, offset] : llvm::zip(indices, position))
        at.push_back(offset == 0
                         ? index
                         : b.createOrFold<arith::AddIOp>(
                               loc, index,
                               arith::ConstantIndexOp::create(b, loc, offset)));
      memref::PrefetchOp::create(b, loc, base, at, /*isWrite=*/false,
                                 /*localityHint=*/3, /*isDataCache=*/true);
      return;
    }
    for (position[d] = 0; position[d] < extent[d]; position[d] += step[d])
      emit(d + 1);
    position[d] = 0;
  };
  emit(0);
}

/// The lines `read` will read one iteration of `loop` on, clamped to its
/// last iteration, prefetched before `kLoop`.
LogicalResult prefetchAhead(vector::TransferReadOp read, scf::ForOp kLoop) {
  auto type = dyn_cast<MemRefType>(read.getBase().getType());
  // An operand of the output's shape (no broadcast: a bias row is in cache).
  if (!type || type.getRank() == 0 ||
      !read.getPermutationMap().isProjectedPermutation())
    return failure();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return failure();
  int64_t lines = lineGrid(read, type).count();
  if (lines > kMaxPrefetches)
    return failure();

  SetVector<Operation *> slice;
  SmallVector<Value> indices(read.getIndices());
  // The loop one step of which is far enough ahead: found from the views
  // the read's base comes from inside the loops around it.
  scf::ForOp ahead;
  {
    Operation *forall = read->getParentOfType<scf::ForallOp>();
    Operation *top =
        forall ? forall
               : read->getParentOfType<FunctionOpInterface>().getOperation();
    SetVector<Operation *> all;
    (void)sliceWithin(read.getBase(), top, all);
    ahead = outermostAddressLoop(read, all, indices);
  }
  if (!ahead || ahead == kLoop || kLoop->isProperAncestor(ahead))
    return failure();
  std::optional<int64_t> lb = getConstantIntValue(ahead.getLowerBound()),
                         ub = getConstantIntValue(ahead.getUpperBound()),
                         st = getConstantIntValue(ahead.getStep());
  if (!lb || !ub || !st || *ub - *lb < 2 * *st)
    return failure();
  if (!addressSlice(read.getBase(), ahead, kLoop, slice))
    return failure();
  for (Value index : indices)
    if (Operation *def = index.getDefiningOp();
        def && ahead->isProperAncestor(def) &&
        !addressSlice(index, ahead, kLoop, slice))
      return failure();

  OpBuilder b(kLoop);
  Location loc = read.getLoc();
  // The next iteration's IV; the last iteration prefetches its own lines
  // again (no address past the loop's range).
  int64_t last = *lb + (*ub - *lb - 1) / *st * *st;
  Value next =
      arith::AddIOp::create(b, loc, ahead.getInductionVar(),
                            arith::ConstantIndexOp::create(b, loc, *st));
  Value clamped = arith::MinSIOp::create(
      b, loc, next, arith::ConstantIndexOp::create(b, loc, last));
  IRMapping mapping;
  mapping.map(ahead.getInductionVar(), clamped);
  // Clone the views in the order they appear (a backward slice is
  // topologically sorted).
  for (Operation *op : slice)
    b.clone(*op, mapping);
  prefetchLines(b, loc, read, mapping);
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << lines
                          << " lines prefetched one row tile ahead for " << read
                          << "\n");
  return success();
}

struct ConvLowerPrefetchEpilogueOperandsPass
    : conv_lower::impl::ConvLowerPrefetchEpilogueOperandsBase<
          ConvLowerPrefetchEpilogueOperandsPass> {
  void runOnOperation() override {
    SmallVector<std::pair<vector::TransferReadOp, scf::ForOp>> reads;
    getOperation()->walk([&](vector::TransferReadOp read) {
      if (scf::ForOp kLoop = precedingRegisterTileLoop(read))
        reads.emplace_back(read, kLoop);
    });
    for (auto [read, kLoop] : reads)
      (void)prefetchAhead(read, kLoop);
  }
};

} // namespace
