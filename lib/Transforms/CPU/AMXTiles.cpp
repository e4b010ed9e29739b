//===- AMXTiles.cpp - register tiles in K groups on AMX tiles -------------===//
//
// A register tile of a GEMM in K groups of 32 bits (conv-lower-pack-vnni,
// then conv-lower-tile-and-vectorize) is one vector.contract
//
//   A [M, R, g] x B [R, N, g] + C [M, N],
//
// bf16 pairs into f32 (g = 2) or signed i8 quads into i32 (g = 4, pack-
// vnni's signed-i8 form): exactly AMX's TDPBF16PS and TDPBSSD operand
// layout. A tile row of A is R groups of one output row (64 bytes for R =
// 16), a tile row of B is one group of K for N columns. So the contraction
// becomes a grid of AMX tiles: A in blocks of at most 16 rows, B in blocks
// of at most 16 columns, R in chunks of at most 16 groups, the accumulator
// in blocks of at most 16 x 16 words, one amx.tile_mulf (bf16) or
// amx.tile_muli (i8) per block product.
//
// The register tile's K loop carries the accumulator as a vector: here it
// carries the accumulator tiles instead, made once before the loop (zeroed,
// or loaded from where the vector was read) and stored once after it. An
// operand read from a buffer with its groups contiguous is loaded from that
// buffer with its row stride (oneDNN's brgemm reads A and B alike); any
// other value goes through a stack buffer, allocated outside the loop in a
// memref.alloca_scope around the rewritten code.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "X86Dots.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-amx-tiles"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERAMXTILES
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// AMX's tile limits: 16 rows of 64 bytes; a tile of 32-bit words (f32 or
/// i32, bf16 pairs, i8 quads) is at most 16 wide.
constexpr int64_t kTileRows = 16;
constexpr int64_t kTileWords = 16;

/// A register tile in K groups: the contraction, its extents and its
/// group (2: bf16 pairs into f32, TDPBF16PS; 4: i8 quads into i32, both
/// signed, TDPBSSD).
struct GroupTile {
  mutable vector::ContractionOp op;
  int64_t m, r, n, group;
  bool isInteger() const { return group == 4; }
};

/// The group of a contraction's element types AMX multiplies: 2 for bf16 x
/// bf16 into f32, 4 for i8 x i8 into i32 (the contraction's promotion
/// sign-extends both); else 0.
int64_t amxGroupOf(Type lhs, Type rhs, Type acc) {
  if (lhs.isBF16() && rhs.isBF16() && acc.isF32())
    return 2;
  if (lhs.isInteger(8) && rhs.isInteger(8) && acc.isInteger(32))
    return 4;
  return 0;
}

/// `op` as A [M, R, g] x B [R, N, g] + C [M, N] in one of AMX's groups
/// (dimensions in any loop order), else nullopt.
std::optional<GroupTile> matchGroupTile(vector::ContractionOp op) {
  if (op.getKind() != vector::CombiningKind::ADD ||
      isa<vector::MaskOp>(op->getParentOp()))
    return std::nullopt;
  auto lhs = op.getLhsType(), rhs = op.getRhsType();
  auto acc = dyn_cast<VectorType>(op.getAccType());
  if (!acc || lhs.getRank() != 3 || rhs.getRank() != 3 || acc.getRank() != 2 ||
      lhs.isScalable() || rhs.isScalable() || acc.isScalable())
    return std::nullopt;
  int64_t group = amxGroupOf(lhs.getElementType(), rhs.getElementType(),
                             acc.getElementType());
  if (group == 0 || lhs.getDimSize(2) != group || rhs.getDimSize(2) != group)
    return std::nullopt;
  SmallVector<AffineMap, 3> maps = op.getIndexingMapsArray();
  if (maps[0].getNumDims() != 4)
    return std::nullopt;
  auto dim = [&](unsigned map, unsigned result) -> std::optional<unsigned> {
    if (auto d = dyn_cast<AffineDimExpr>(maps[map].getResult(result)))
      return d.getPosition();
    return std::nullopt;
  };
  std::optional<unsigned> m = dim(0, 0), r = dim(0, 1), p = dim(0, 2),
                          rB = dim(1, 0), n = dim(1, 1), pB = dim(1, 2),
                          mC = dim(2, 0), nC = dim(2, 1);
  if (!m || !r || !p || !n || r != rB || p != pB || m != mC || n != nC)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  if (iterators[*m] != vector::IteratorType::parallel ||
      iterators[*n] != vector::IteratorType::parallel ||
      iterators[*r] != vector::IteratorType::reduction ||
      iterators[*p] != vector::IteratorType::reduction || *m == *n || *r == *p)
    return std::nullopt;
  return GroupTile{op, lhs.getDimSize(0), lhs.getDimSize(1), rhs.getDimSize(1),
                   group};
}

/// The chunks of `extent` of at most `size`: (offset, length) each.
SmallVector<std::pair<int64_t, int64_t>> chunks(int64_t extent, int64_t size) {
  SmallVector<std::pair<int64_t, int64_t>> result;
  for (int64_t at = 0; at < extent; at += size)
    result.push_back({at, std::min(size, extent - at)});
  return result;
}

/// A matrix's rows in memory: row i of the value, seen as [rows, cols]
/// (groups flattened), starts at `base[indices]` plus i * `stride`
/// elements, with the row's elements contiguous. The indices address the
/// value's first element; `colDim` is the memref dimension that steps along
/// a row and `colScale` the elements of the row per step of it (the group
/// where the buffer keeps the groups as its own last dimension).
struct RowsInMemory {
  Value base;
  SmallVector<Value> indices;
  Value stride;
  unsigned rowDim, colDim;
  int64_t colScale;
};

/// The memref stride of `dim` of `base`: static, or read from its
/// descriptor.
Value strideOf(OpBuilder &b, Location loc, Value base, unsigned dim) {
  auto type = cast<MemRefType>(base.getType());
  auto [strides, offset] = type.getStridesAndOffset();
  if (!ShapedType::isDynamic(strides[dim]))
    return arith::ConstantIndexOp::create(b, loc, strides[dim]);
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, base);
  return metadata.getStrides()[dim];
}

/// Whether memory read at `from` still holds at `to`: the same block, no
/// op between them that may write.
bool unwrittenBetween(Operation *from, Operation *to) {
  if (from->getBlock() != to->getBlock() || !from->isBeforeInBlock(to))
    return false;
  for (Operation *op = from->getNextNode(); op != to; op = op->getNextNode()) {
    if (isMemoryEffectFree(op))
      continue;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects || effects.hasEffect<MemoryEffects::Write>() ||
        op->getNumRegions())
      return false;
  }
  return true;
}

/// Where `value` (a [X, Y, g] operand, or its accumulator [X, Y]) was read
/// from a buffer as whole contiguous rows: an in-bounds, unmasked
/// vector.transfer_read of the buffer's innermost dimensions, seen through
/// a vector.shape_cast that only splits or joins the groups. Else nullopt.
///
/// With `use`, the read must also still hold at `use`: in its block, with
/// nothing between them writing memory.
std::optional<RowsInMemory> rowsInMemory(OpBuilder &b, Value value,
                                         Operation *use = nullptr) {
  if (auto cast = value.getDefiningOp<vector::ShapeCastOp>()) {
    VectorType from = cast.getSourceVectorType();
    VectorType to = cast.getResultVectorType();
    // [X, gY] <-> [X, Y, g]: the same rows.
    if (from.getRank() < 2 || to.getRank() < 2 ||
        from.getDimSize(0) != to.getDimSize(0) ||
        from.getNumElements() != to.getNumElements())
      return std::nullopt;
    value = cast.getSource();
  }
  auto read = value.getDefiningOp<vector::TransferReadOp>();
  if (!read || read.getMask() || read.hasOutOfBoundsDim() ||
      !read.getPermutationMap().isMinorIdentity())
    return std::nullopt;
  if (use && !unwrittenBetween(read, use))
    return std::nullopt;
  auto memref = dyn_cast<MemRefType>(read.getBase().getType());
  if (!memref)
    return std::nullopt;
  VectorType vector = read.getVectorType();
  int64_t rank = memref.getRank(), vrank = vector.getRank();
  if (vrank < 2 || vrank > 3)
    return std::nullopt;
  auto [strides, offset] = memref.getStridesAndOffset();
  // The row contiguous: unit innermost stride, and for [X, Y, g] reads the
  // groups packed (stride g along Y).
  int64_t group = vrank == 3 ? vector.getDimSize(2) : 1;
  if (strides.back() != 1 || (vrank == 3 && strides[rank - 2] != group))
    return std::nullopt;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(read);
  unsigned rowDim = rank - vrank;
  return RowsInMemory{read.getBase(),
                      llvm::to_vector(read.getIndices()),
                      strideOf(b, read.getLoc(), read.getBase(), rowDim),
                      rowDim,
                      static_cast<unsigned>(rowDim + 1),
                      group};
}

/// `indices` moved by `rows` along the row dimension and `cols` elements
/// along a row.
SmallVector<Value> offsetIndices(OpBuilder &b, Location loc,
                                 const RowsInMemory &rows, int64_t rowOffset,
                                 int64_t colOffset) {
  SmallVector<Value> indices = rows.indices;
  auto add = [&](Value index, int64_t delta) -> Value {
    if (delta == 0)
      return index;
    return arith::AddIOp::create(b, loc, index,
                                 arith::ConstantIndexOp::create(b, loc, delta));
  };
  indices[rows.rowDim] = add(indices[rows.rowDim], rowOffset);
  assert(colOffset % rows.colScale == 0 && "a chunk starts on a group");
  indices[rows.colDim] = add(indices[rows.colDim], colOffset / rows.colScale);
  return indices;
}

/// The rows of a [rows, cols] stack buffer.
RowsInMemory bufferRows(OpBuilder &b, Location loc, memref::AllocaOp buffer) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  return RowsInMemory{
      buffer,
      {zero, zero},
      arith::ConstantIndexOp::create(b, loc, buffer.getType().getDimSize(1)),
      0,
      1,
      1};
}

/// A stack buffer [rows, cols] holding `value` (flattened to that shape),
/// written where the builder is, addressed as rows in memory.
RowsInMemory staged(OpBuilder &b, Location loc, Value value,
                    memref::AllocaOp buffer) {
  auto type = cast<VectorType>(value.getType());
  auto bufferType = buffer.getType();
  auto flat = VectorType::get(bufferType.getShape(), type.getElementType());
  if (flat != type)
    value = vector::ShapeCastOp::create(b, loc, flat, value);
  RowsInMemory rows = bufferRows(b, loc, buffer);
  vector::TransferWriteOp::create(b, loc, value, buffer, rows.indices,
                                  ArrayRef<bool>{true, true});
  return rows;
}

/// A stack buffer for a [X, Y(, g)] value, as [X, Y * g].
memref::AllocaOp stackBufferFor(OpBuilder &b, Location loc, VectorType type) {
  int64_t rows = type.getDimSize(0);
  int64_t cols = type.getNumElements() / rows;
  return memref::AllocaOp::create(
      b, loc, MemRefType::get({rows, cols}, type.getElementType()));
}

/// A tile [rows, cols] of `rows` at (rowOffset, colOffset).
Value loadTile(OpBuilder &b, Location loc, const RowsInMemory &rows,
               int64_t rowOffset, int64_t colOffset, int64_t tileRows,
               int64_t tileCols, Type element) {
  auto type = amx::TileType::get({tileRows, tileCols}, element);
  return amx::TileLoadOp::create(
      b, loc, type, rows.base,
      offsetIndices(b, loc, rows, rowOffset, colOffset), rows.stride);
}

/// The accumulator grid: ceil(M / 16) x ceil(N / 16) tiles, row-major.
struct Grid {
  SmallVector<std::pair<int64_t, int64_t>> rows, cols;
  size_t size() const { return rows.size() * cols.size(); }
  size_t at(size_t i, size_t j) const { return i * cols.size() + j; }
};

/// Whether `acc` is a zero constant (f32 or i32).
bool isZero(Value acc) {
  return matchPattern(acc, m_AnyZeroFloat()) || matchPattern(acc, m_Zero());
}

/// The accumulator tiles of `acc`: zeroed for a zero constant, else loaded
/// from its rows.
SmallVector<Value> accumulatorTiles(OpBuilder &b, Location loc,
                                    const Grid &grid, Value acc,
                                    const std::optional<RowsInMemory> &rows) {
  SmallVector<Value> tiles;
  Type word = getElementTypeOrSelf(acc.getType());
  bool zero = isZero(acc);
  for (auto [row, rowLength] : grid.rows)
    for (auto [col, colLength] : grid.cols) {
      if (zero)
        tiles.push_back(amx::TileZeroOp::create(
            b, loc, amx::TileType::get({rowLength, colLength}, word)));
      else
        tiles.push_back(
            loadTile(b, loc, *rows, row, col, rowLength, colLength, word));
    }
  return tiles;
}

/// One block product on an accumulator tile: TDPBF16PS for bf16 pairs,
/// TDPBSSD for i8 quads (both signed: tile_muli's default).
Value multiplyTile(OpBuilder &b, Location loc, const GroupTile &tile, Value a,
                   Value bt, Value c) {
  if (tile.isInteger())
    return amx::TileMulIOp::create(b, loc, c.getType(), a, bt, c,
                                   /*isZextLhs=*/false, /*isZextRhs=*/false);
  return amx::TileMulFOp::create(b, loc, c.getType(), a, bt, c);
}

/// One register tile's products on the accumulator tiles: per chunk of at
/// most 16 groups, A's row blocks and B's column blocks loaded once each,
/// then every block product.
SmallVector<Value> multiplyTiles(OpBuilder &b, Location loc, GroupTile tile,
                                 const Grid &grid, const RowsInMemory &a,
                                 const RowsInMemory &bt,
                                 SmallVector<Value> acc) {
  Type element = tile.op.getLhsType().getElementType();
  int64_t g = tile.group;
  for (auto [first, groups] : chunks(tile.r, kTileWords)) {
    SmallVector<Value> aTiles, bTiles;
    for (auto [row, rowLength] : grid.rows)
      aTiles.push_back(
          loadTile(b, loc, a, row, g * first, rowLength, g * groups, element));
    for (auto [col, colLength] : grid.cols)
      bTiles.push_back(
          loadTile(b, loc, bt, first, g * col, groups, g * colLength, element));
    for (size_t i = 0; i < grid.rows.size(); ++i)
      for (size_t j = 0; j < grid.cols.size(); ++j) {
        Value &c = acc[grid.at(i, j)];
        c = multiplyTile(b, loc, tile, aTiles[i], bTiles[j], c);
      }
  }
  return acc;
}

/// The accumulator tiles stored into `rows`.
void storeTiles(OpBuilder &b, Location loc, const Grid &grid,
                ArrayRef<Value> tiles, const RowsInMemory &rows) {
  for (size_t i = 0; i < grid.rows.size(); ++i)
    for (size_t j = 0; j < grid.cols.size(); ++j)
      amx::TileStoreOp::create(
          b, loc, rows.base,
          offsetIndices(b, loc, rows, grid.rows[i].first, grid.cols[j].first),
          tiles[grid.at(i, j)], rows.stride);
}

/// A buffer window the accumulator tiles can be stored into after
/// `producer` (the loop or the contraction): the in-bounds, unmasked
/// vector.transfer_write of a vector of the result's shape that follows
/// it in its block, into a buffer with unit innermost stride addressed by
/// values defined before `producer`, with every use of `result` before
/// it. `direct`: the write stores the result itself; else a pure epilogue
/// of it computed in between reads the tiles back from the window, which
/// the write then overwrites. The tiles are stored at `storeAt` (the
/// first use): between `producer` and there nothing may write memory,
/// between there and the write nothing may touch it.
struct ResultWindow {
  vector::TransferWriteOp write;
  Operation *storeAt;
  bool direct;
};

std::optional<ResultWindow> resultWindow(Value result, Operation *producer) {
  Block *block = producer->getBlock();
  auto definedBefore = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return !def || def->getBlock() != block || def->isBeforeInBlock(producer);
  };
  auto mayWrite = [](Operation *op) {
    if (isMemoryEffectFree(op))
      return false;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    return !effects || effects.hasEffect<MemoryEffects::Write>() ||
           op->getNumRegions() > 0;
  };
  Operation *firstUse = nullptr;
  for (Operation *op = producer->getNextNode(); op; op = op->getNextNode()) {
    bool uses = llvm::any_of(result.getUsers(), [&](Operation *user) {
      return op->isAncestor(user);
    });
    if (uses && !firstUse)
      firstUse = op;
    auto write = dyn_cast<vector::TransferWriteOp>(op);
    if (!write) {
      // Before the first use: no write; after it, nothing touching memory.
      if (firstUse ? !isMemoryEffectFree(op) : mayWrite(op))
        return std::nullopt;
      continue;
    }
    auto memref = dyn_cast<MemRefType>(write.getBase().getType());
    if (!firstUse || write.getVectorType() != result.getType() ||
        write.getMask() || write.hasOutOfBoundsDim() ||
        !write.getPermutationMap().isMinorIdentity() || !memref ||
        memref.getRank() < 2 || !definedBefore(write.getBase()) ||
        !llvm::all_of(write.getIndices(), definedBefore))
      return std::nullopt;
    auto [strides, offset] = memref.getStridesAndOffset();
    if (strides.back() != 1)
      return std::nullopt;
    bool usedAfter = llvm::any_of(result.getUsers(), [&](Operation *user) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      return !inBlock || write->isBeforeInBlock(inBlock);
    });
    if (usedAfter)
      return std::nullopt;
    return ResultWindow{write, firstUse, write.getVector() == result};
  }
  return std::nullopt;
}

/// The rows of `window`'s destination.
RowsInMemory windowRows(OpBuilder &b, Location loc,
                        vector::TransferWriteOp write) {
  unsigned rank = cast<MemRefType>(write.getBase().getType()).getRank();
  return RowsInMemory{write.getBase(),
                      llvm::to_vector(write.getIndices()),
                      strideOf(b, loc, write.getBase(), rank - 2),
                      rank - 2,
                      rank - 1,
                      1};
}

/// The result tiles back into the code where the builder is: stored where
/// the result was going to be written (a direct write is then removed; an
/// epilogue reads them back from there, the window it overwrites), else
/// into `buffer` and read back.
void finishTiles(IRRewriter &rewriter, Location loc, const Grid &grid,
                 ArrayRef<Value> tiles, Value result,
                 std::optional<ResultWindow> window, memref::AllocaOp buffer) {
  auto type = cast<VectorType>(result.getType());
  RowsInMemory rows = window ? windowRows(rewriter, loc, window->write)
                             : bufferRows(rewriter, loc, buffer);
  storeTiles(rewriter, loc, grid, tiles, rows);
  if (window && window->direct) {
    rewriter.eraseOp(window->write);
    return;
  }
  Value vector = vector::TransferReadOp::create(
      rewriter, loc, type, rows.base, rows.indices, /*padding=*/std::nullopt,
      SmallVector<bool>(type.getRank(), true));
  rewriter.replaceAllUsesWith(result, vector);
}

/// The K loop that carries `tile`'s accumulator: its only iter_arg is the
/// accumulator, used by the contraction alone, whose result it yields.
scf::ForOp carryingLoop(GroupTile tile) {
  auto arg = dyn_cast<BlockArgument>(tile.op.getAcc());
  if (!arg)
    return nullptr;
  auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
  if (!loop || loop.getNumRegionIterArgs() != 1 ||
      loop.getRegionIterArgs()[0] != arg || !arg.hasOneUse() ||
      tile.op->getParentOp() != loop.getOperation())
    return nullptr;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  if (yield.getOperand(0) != tile.op.getResult() ||
      !tile.op.getResult().hasOneUse())
    return nullptr;
  return loop;
}

/// How one register tile is rewritten: where its operands, accumulator
/// and result live. A value not in memory goes through a stack buffer.
struct TilePlan {
  GroupTile tile;
  mutable scf::ForOp loop; ///< the K loop carrying the accumulator, if any
  Value init, result;
  bool zeroInit = false;
  std::optional<RowsInMemory> initRows, lhsRows, rhsRows;
  std::optional<ResultWindow> window;
  /// Whether some value needs a stack buffer.
  bool needsStack() const {
    return (!zeroInit && !initRows) || !lhsRows || !rhsRows || !window;
  }
};

/// The plan for `tile`, decided before anything is rewritten (the checks
/// look at the code between reads and uses as it is).
TilePlan planTile(OpBuilder &b, GroupTile tile) {
  TilePlan plan;
  plan.tile = tile;
  plan.loop = carryingLoop(tile);
  Operation *producer =
      plan.loop ? plan.loop.getOperation() : tile.op.getOperation();
  plan.init = plan.loop ? plan.loop.getInitArgs()[0] : tile.op.getAcc();
  plan.result = plan.loop ? plan.loop.getResult(0) : tile.op.getResult();
  plan.zeroInit = isZero(plan.init);
  if (!plan.zeroInit)
    plan.initRows = rowsInMemory(b, plan.init, producer);
  plan.lhsRows = rowsInMemory(b, tile.op.getLhs(), tile.op);
  plan.rhsRows = rowsInMemory(b, tile.op.getRhs(), tile.op);
  plan.window = resultWindow(plan.result, producer);
  return plan;
}

/// The block whose start holds the stack buffers: the function's entry,
/// so that they are allocated once per call. None inside a parallel loop,
/// whose iterations would share them; no loop, so that the stack does not
/// grow per iteration.
Block *stackBlockFor(Operation *op) {
  if (op->getParentOfType<scf::ForallOp>() ||
      op->getParentOfType<scf::ParallelOp>())
    return nullptr;
  auto func = op->getParentOfType<FunctionOpInterface>();
  if (!func || func.getFunctionBody().empty())
    return nullptr;
  return &func.getFunctionBody().front();
}

/// The buffers a plan stages values through, allocated at the start of
/// `block`.
struct StackBuffers {
  memref::AllocaOp init, lhs, rhs, result;
};

StackBuffers allocateBuffers(IRRewriter &rewriter, Block *block,
                             const TilePlan &plan) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(block);
  Location loc = plan.tile.op.getLoc();
  auto accType = cast<VectorType>(plan.tile.op.getAccType());
  StackBuffers buffers;
  if (!plan.zeroInit && !plan.initRows)
    buffers.init = stackBufferFor(rewriter, loc, accType);
  if (!plan.lhsRows)
    buffers.lhs = stackBufferFor(rewriter, loc, plan.tile.op.getLhsType());
  if (!plan.rhsRows)
    buffers.rhs = stackBufferFor(rewriter, loc, plan.tile.op.getRhsType());
  if (!plan.window)
    buffers.result = stackBufferFor(rewriter, loc, accType);
  return buffers;
}

/// `value`'s rows where the builder is: from its buffer (re-derived for a
/// clone of its read), else written into its stack buffer there.
RowsInMemory rowsOf(OpBuilder &b, Location loc, Value value, bool inMemory,
                    memref::AllocaOp buffer) {
  if (inMemory)
    return *rowsInMemory(b, value);
  return staged(b, loc, value, buffer);
}

/// Rewrites a planned tile: the accumulator tiles made before it (and
/// carried by its K loop, rebuilt), the products in place of the
/// contraction, the result tiles stored after it.
void rewriteTile(IRRewriter &rewriter, const TilePlan &plan,
                 const StackBuffers &buffers) {
  GroupTile tile = plan.tile;
  Location loc = tile.op.getLoc();
  Grid grid{chunks(tile.m, kTileRows), chunks(tile.n, kTileWords)};
  Operation *producer =
      plan.loop ? plan.loop.getOperation() : tile.op.getOperation();
  Value lhs = tile.op.getLhs(), rhs = tile.op.getRhs();

  rewriter.setInsertionPoint(producer);
  std::optional<RowsInMemory> initRows = plan.initRows;
  if (!plan.zeroInit && !initRows)
    initRows = staged(rewriter, loc, plan.init, buffers.init);
  SmallVector<Value> inits =
      accumulatorTiles(rewriter, loc, grid, plan.init, initRows);

  SmallVector<Value> results;
  if (!plan.loop) {
    results = multiplyTiles(
        rewriter, loc, tile, grid,
        rowsOf(rewriter, loc, lhs, plan.lhsRows.has_value(), buffers.lhs),
        rowsOf(rewriter, loc, rhs, plan.rhsRows.has_value(), buffers.rhs),
        inits);
  } else {
    scf::ForOp loop = plan.loop;
    auto tiled = scf::ForOp::create(
        rewriter, loc, loop.getLowerBound(), loop.getUpperBound(),
        loop.getStep(), inits,
        [&](OpBuilder &b, Location, Value iv, ValueRange carried) {
          IRMapping map;
          map.map(loop.getInductionVar(), iv);
          // The old body up to the contraction (its operand reads), the
          // tile products in its place, then the rest.
          Block::iterator at = loop.getBody()->begin();
          for (; &*at != tile.op.getOperation(); ++at)
            b.clone(*at, map);
          SmallVector<Value> next =
              multiplyTiles(b, loc, tile, grid,
                            rowsOf(b, loc, map.lookupOrDefault(lhs),
                                   plan.lhsRows.has_value(), buffers.lhs),
                            rowsOf(b, loc, map.lookupOrDefault(rhs),
                                   plan.rhsRows.has_value(), buffers.rhs),
                            llvm::to_vector(carried));
          for (++at; &*at != loop.getBody()->getTerminator(); ++at)
            b.clone(*at, map);
          scf::YieldOp::create(b, loc, next);
        });
    results = llvm::to_vector_of<Value>(tiled.getResults());
  }
  if (plan.window)
    rewriter.setInsertionPoint(plan.window->storeAt);
  else
    rewriter.setInsertionPointAfter(producer);
  finishTiles(rewriter, loc, grid, results, plan.result, plan.window,
              buffers.result);
  rewriter.eraseOp(producer);
}

/// A tile the pass cannot place (a value to stage inside a parallel loop,
/// as an operand read before an earlier tile's store, which CSE merged)
/// runs on the dots the tiles' edges run on (VDPBF16PS, VPDPBUSD), else
/// keeps the standard lowering: its operands widened to the accumulator's
/// type (that lowering takes no mixed contraction of this rank; i8
/// sign-extended, the contraction's promotion), which unrolls a 32 x 32
/// tile into thousands of scalar reductions.
void placeOffTiles(IRRewriter &rewriter, GroupTile tile) {
  if (succeeded(conv_lower::lowerGroupTileToDots(rewriter, tile.op,
                                                 /*signedI8=*/true)))
    return;
  rewriter.setInsertionPoint(tile.op);
  Type word = getElementTypeOrSelf(tile.op.getAccType());
  auto widen = [&](Value v) -> Value {
    auto type = cast<VectorType>(v.getType()).clone(word);
    if (tile.isInteger())
      return arith::ExtSIOp::create(rewriter, tile.op.getLoc(), type, v);
    return arith::ExtFOp::create(rewriter, tile.op.getLoc(), type, v);
  };
  Value lhs = widen(tile.op.getLhs()), rhs = widen(tile.op.getRhs());
  rewriter.modifyOpInPlace(tile.op, [&] {
    tile.op.getLhsMutable().assign(lhs);
    tile.op.getRhsMutable().assign(rhs);
  });
}

struct ConvLowerAMXTilesPass
    : conv_lower::impl::ConvLowerAMXTilesBase<ConvLowerAMXTilesPass> {
  void runOnOperation() override {
    SmallVector<GroupTile> tiles;
    getOperation()->walk([&](vector::ContractionOp op) {
      if (std::optional<GroupTile> tile = matchGroupTile(op))
        tiles.push_back(*tile);
    });
    IRRewriter rewriter(&getContext());
    unsigned offTiles = 0;
    for (GroupTile tile : tiles) {
      TilePlan plan = planTile(rewriter, tile);
      Block *stack = nullptr;
      if (plan.needsStack() && !(stack = stackBlockFor(tile.op))) {
        placeOffTiles(rewriter, tile);
        ++offTiles;
        continue;
      }
      StackBuffers buffers;
      if (stack)
        buffers = allocateBuffers(rewriter, stack, plan);
      rewriteTile(rewriter, plan, buffers);
    }
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] " << tiles.size() - offTiles
               << " register tile(s) on AMX, " << offTiles << " not\n");
  }
};

} // namespace
