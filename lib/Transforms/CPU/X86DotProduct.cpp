//===- X86DotProduct.cpp - register tiles in K groups on x86 dot products -===//
//
// A register tile of a GEMM in K groups (conv-lower-pack-vnni, then
// conv-lower-tile-and-vectorize) is one vector.contract
//
//   A [M, R, g] x B [R, N, g] + C [M, N],
//
// R groups of K, the group innermost in both: bf16 pairs into f32, or i8
// quads into i32 (A's bytes zero-extended, B's sign-extended; with
// signed-i8 also both sign-extended, conv-lower-pack-vnni's form for AMX,
// whose partial tiles land here). Each row m
// of A holds, per group, 32 bits, broadcast to every lane; each run of L
// columns of B is L groups side by side, exactly the dot instructions'
// second source. So the tile becomes, per group r and row m, N / L dot
// products on the accumulator's lanes (L = 16: zmm; 8 and 4 where N allows
// no more, the AVX512VL forms): x86vector.avx512.dot (VDPBF16PS) for bf16,
// conv_lower.avx512.dot.u8s8 (VPDPBUSD) for i8, the way oneDNN's
// brgemm and MLAS's kernels run them. The accumulators stay one
// vector<M x N> value, so the tile's K loop still carries them in
// registers.
//
// Contractions of any other form (no group, N not a multiple of 4, masked)
// are left as they are: the standard lowering widens them.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"

#include "X86Dots.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-x86-dot-product"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERX86DOTPRODUCT
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// Which dot instruction a tile runs on. S8S8 (both operands signed) runs
/// on VPDPBUSD too: A's bytes flipped (a + 128, unsigned), less 128 x B's
/// sum over the tile's K, which one more dot per B vector computes.
enum class DotKind { BF16, U8S8, S8S8 };

/// The extents of a group contraction's tile, each 1 where the tile has no
/// such dimension, its group, and the operands as the dots read them (the
/// i8 extensions looked through).
struct GroupTile {
  int64_t m = 1, r = 1, n = 1;
  int64_t group = 2;
  DotKind kind = DotKind::BF16;
  Value lhs, rhs;
  /// i8: A's sign bits are flipped on the way (conv-lower-pack-vnni's
  /// body, x ^ 0x80): each broadcast group is flipped before its dots.
  bool flipA = false;
};

/// `v` ^ 0x80 on every byte (a splat of -128 as the other operand): the
/// operand flipped, else null.
Value signFlipped(Value v) {
  auto xori = v.getDefiningOp<arith::XOrIOp>();
  if (!xori)
    return nullptr;
  auto isSignBit = [](Value c) {
    APInt bits;
    return matchPattern(c, m_ConstantInt(&bits)) && bits.getBitWidth() == 8 &&
           bits.isSignMask();
  };
  if (isSignBit(xori.getRhs()))
    return xori.getLhs();
  if (isSignBit(xori.getLhs()))
    return xori.getRhs();
  return nullptr;
}

/// The loops of `map`'s results whose extent is not 1, in result order.
SmallVector<unsigned> nonUnitResults(AffineMap map, ArrayRef<int64_t> bounds) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    unsigned d = cast<AffineDimExpr>(e).getPosition();
    if (bounds[d] != 1)
      dims.push_back(d);
  }
  return dims;
}

/// `v`'s source where `v` is an `Ext` of an i8 vector.
template <typename Ext>
Value i8Source(Value v) {
  auto ext = v.getDefiningOp<Ext>();
  if (!ext || !getElementTypeOrSelf(ext.getIn().getType()).isInteger(8))
    return nullptr;
  return ext.getIn();
}

/// `v`'s i8 source where it is sign-extended from i8, or is i8 itself (the
/// extension folded into the contraction, whose integer promotion is
/// signed).
Value signedI8Source(Value v) {
  if (getElementTypeOrSelf(v.getType()).isInteger(8))
    return v;
  return i8Source<arith::ExtSIOp>(v);
}

/// The dot kind and operands of `contract`: bf16 x bf16 into f32, or
/// extui(i8) x extsi(i8) into i32 (with `signedI8`, also i8 x i8 both
/// signed), each where `options` asks for it.
std::optional<GroupTile> matchElementTypes(vector::ContractionOp contract,
                                           bool bf16, bool i8, bool signedI8) {
  Type acc = getElementTypeOrSelf(contract.getAccType());
  GroupTile tile;
  if (bf16 && acc.isF32() &&
      getElementTypeOrSelf(contract.getLhsType()).isBF16() &&
      getElementTypeOrSelf(contract.getRhsType()).isBF16()) {
    tile.lhs = contract.getLhs();
    tile.rhs = contract.getRhs();
    return tile;
  }
  if (i8 && acc.isInteger(32)) {
    tile.kind = DotKind::U8S8;
    tile.lhs = i8Source<arith::ExtUIOp>(contract.getLhs());
    tile.rhs = signedI8Source(contract.getRhs());
    if (!tile.lhs && signedI8) {
      tile.lhs = signedI8Source(contract.getLhs());
      tile.kind = DotKind::S8S8;
      tile.flipA = true;
    }
    if (!tile.lhs || !tile.rhs)
      return std::nullopt;
    // pack-vnni's flip, read unsigned: the dots flip A's groups themselves.
    // (S8S8 flips its own way: a flip under its sign extension stays data.)
    if (Value unflipped =
            tile.kind == DotKind::U8S8 ? signFlipped(tile.lhs) : nullptr) {
      tile.lhs = unflipped;
      tile.flipA = true;
    }
    tile.group = 4;
    return tile;
  }
  return std::nullopt;
}

/// The tile of `contract` where it is a group contraction in the order
/// this pass reads it: A's non-unit dimensions (m, r, group), B's (r, n,
/// group), C's (m, n), each of m and r optional, the group of extent g.
std::optional<GroupTile> matchGroupTile(vector::ContractionOp contract,
                                        bool bf16, bool i8, bool signedI8) {
  if (contract.getKind() != vector::CombiningKind::ADD ||
      !isa<VectorType>(contract.getAccType()))
    return std::nullopt;
  std::optional<GroupTile> tile =
      matchElementTypes(contract, bf16, i8, signedI8);
  if (!tile)
    return std::nullopt;
  SmallVector<AffineMap> maps = contract.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap m) { return m.isProjectedPermutation(); }))
    return std::nullopt;
  SmallVector<int64_t> bounds;
  contract.getIterationBounds(bounds);
  ArrayAttr iterators = contract.getIteratorTypes();
  auto isReduction = [&](unsigned d) {
    return vector::isReductionIterator(iterators[d]);
  };
  SmallVector<unsigned> a = nonUnitResults(maps[0], bounds);
  SmallVector<unsigned> b = nonUnitResults(maps[1], bounds);
  SmallVector<unsigned> c = nonUnitResults(maps[2], bounds);
  if (a.empty() || b.size() < 2 || a.back() != b.back() ||
      bounds[a.back()] != tile->group || !isReduction(a.back()))
    return std::nullopt;
  // B: [r,] n, group.
  unsigned n = b[b.size() - 2];
  if (isReduction(n) || (b.size() == 3 && !isReduction(b[0])) ||
      b.size() > 3)
    return std::nullopt;
  tile->n = bounds[n];
  std::optional<unsigned> r;
  if (b.size() == 3) {
    r = b[0];
    tile->r = bounds[*r];
  }
  // A: [m,] [r,] group, with the same r.
  SmallVector<unsigned> aOuter(a.begin(), a.end() - 1);
  std::optional<unsigned> m;
  if (!aOuter.empty() && !isReduction(aOuter.front())) {
    m = aOuter.front();
    tile->m = bounds[*m];
    aOuter.erase(aOuter.begin());
  }
  if (aOuter.size() > 1 || (aOuter.empty() != !r.has_value()) ||
      (r && aOuter.front() != *r))
    return std::nullopt;
  // C: [m,] n.
  SmallVector<unsigned> expected;
  if (m)
    expected.push_back(*m);
  expected.push_back(n);
  if (c != expected)
    return std::nullopt;
  return tile;
}

/// The lanes of one dot: a zmm where N allows, else a ymm or an xmm.
int64_t dotLanes(int64_t n) {
  for (int64_t lanes : {16, 8, 4})
    if (n % lanes == 0)
      return lanes;
  return 0;
}

/// `group` (vector<g x T>, 32 bits) in every one of `lanes` 32-bit lanes.
Value broadcastGroup(OpBuilder &b, Location loc, Value group, int64_t lanes) {
  auto type = cast<VectorType>(group.getType());
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), group);
  Value scalar = vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
  Value splat = vector::BroadcastOp::create(
      b, loc, VectorType::get({lanes}, b.getI32Type()), scalar);
  return vector::BitCastOp::create(
      b, loc,
      VectorType::get({type.getNumElements() * lanes}, type.getElementType()),
      splat);
}

/// B's tile [.., N, g] read whole as rows of g * N elements, where it is a
/// vector.transfer_read of a tensor whose last two dimensions are the
/// tile's (read from their start): the same bytes, contiguous. Read as
/// [.., N, g], the transfer's lowering makes one 4-byte load per group and
/// LLVM reassembles the vector from them (vmovd + vpermt2d, 32 of them for a
/// zmm); collapsed, it is one vector load per row. Otherwise `rhs` itself.
Value readGroupRows(RewriterBase &rewriter, Value rhs) {
  auto read = rhs.getDefiningOp<vector::TransferReadOp>();
  if (!read || read.getMask() || !read.getPermutationMap().isIdentity() ||
      !isa<RankedTensorType>(read.getBase().getType()))
    return rhs;
  auto source = cast<RankedTensorType>(read.getBase().getType());
  VectorType vector = read.getVectorType();
  int64_t rank = vector.getRank();
  if (rank < 2 || source.getRank() != rank || source.isDynamicDim(rank - 1) ||
      source.isDynamicDim(rank - 2) ||
      source.getShape().take_back(2) != vector.getShape().take_back(2) ||
      !isZeroInteger(read.getIndices()[rank - 1]) ||
      !isZeroInteger(read.getIndices()[rank - 2]) ||
      llvm::any_of(read.getInBoundsValues(), [](bool b) { return !b; }))
    return rhs;
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < rank - 2; ++d)
    groups.push_back({d});
  groups.push_back({rank - 2, rank - 1});
  Location loc = read.getLoc();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(read);
  Value rows =
      tensor::CollapseShapeOp::create(rewriter, loc, read.getBase(), groups);
  SmallVector<int64_t> shape(vector.getShape().drop_back(2));
  shape.push_back(vector.getDimSize(rank - 2) * vector.getDimSize(rank - 1));
  SmallVector<Value> indices(read.getIndices().drop_back());
  SmallVector<bool> inBounds(rank - 1, true);
  Value flat = vector::TransferReadOp::create(
      rewriter, loc, VectorType::get(shape, vector.getElementType()), rows,
      indices, read.getPadding(), inBounds);
  return vector::ShapeCastOp::create(rewriter, loc, vector, flat);
}

/// One dot product on `lanes` accumulator lanes: VDPBF16PS for bf16,
/// VPDPBUSD (unsigned `a` bytes by signed `b` bytes) for i8 (both kinds).
Value dot(OpBuilder &b, Location loc, DotKind kind, Value acc, Value a,
          Value w) {
  if (kind == DotKind::BF16)
    return x86vector::DotBF16Op::create(b, loc, acc, a, w);
  return conv_lower::DotU8S8Op::create(b, loc, acc.getType(), acc, a, w);
}

LogicalResult lowerToDots(RewriterBase &rewriter,
                          vector::ContractionOp contract,
                          const GroupTile &tile) {
  int64_t lanes = dotLanes(tile.n);
  if (lanes == 0)
    return failure();
  Location loc = contract.getLoc();
  rewriter.setInsertionPoint(contract);
  Type element = getElementTypeOrSelf(tile.lhs.getType());
  Type accElement = getElementTypeOrSelf(contract.getAccType());
  int64_t g = tile.group;
  Value a = vector::ShapeCastOp::create(
      rewriter, loc, VectorType::get({tile.m, tile.r, g}, element), tile.lhs);
  Value b = vector::ShapeCastOp::create(
      rewriter, loc, VectorType::get({tile.r, tile.n * g}, element),
      readGroupRows(rewriter, tile.rhs));
  Value c = vector::ShapeCastOp::create(
      rewriter, loc, VectorType::get({tile.m, tile.n}, accElement),
      contract.getAcc());

  int64_t chunks = tile.n / lanes;
  auto splat = [&](Type type, Attribute value) -> Value {
    return arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(cast<VectorType>(type), value));
  };
  // i8 with A flipped: 0x80 in every byte of a broadcast group's vector.
  Value signBits;
  if (tile.flipA)
    signBits = splat(VectorType::get({g * lanes}, element),
                     rewriter.getIntegerAttr(rewriter.getI8Type(), -128));
  // S8S8: 128 x B's sums over the tile's K, per column (one dot of the
  // 0x80 bytes with each B vector), taken off the accumulators at the end.
  SmallVector<Value> shift;
  if (tile.kind == DotKind::S8S8)
    shift.assign(chunks, splat(VectorType::get({lanes}, accElement),
                               rewriter.getIntegerAttr(accElement, 0)));
  SmallVector<SmallVector<Value>> acc(tile.m);
  for (int64_t m = 0; m < tile.m; ++m) {
    Value row = vector::ExtractOp::create(rewriter, loc, c, m);
    for (int64_t j = 0; j < chunks; ++j)
      acc[m].push_back(vector::ExtractStridedSliceOp::create(
          rewriter, loc, row, {j * lanes}, {lanes}, {1}));
  }
  for (int64_t r = 0; r < tile.r; ++r) {
    Value groups = vector::ExtractOp::create(rewriter, loc, b, r);
    SmallVector<Value> columns;
    for (int64_t j = 0; j < chunks; ++j)
      columns.push_back(vector::ExtractStridedSliceOp::create(
          rewriter, loc, groups, {g * j * lanes}, {g * lanes}, {1}));
    for (int64_t j = 0; j < static_cast<int64_t>(shift.size()); ++j)
      shift[j] = dot(rewriter, loc, tile.kind, shift[j], signBits, columns[j]);
    for (int64_t m = 0; m < tile.m; ++m) {
      Value group = vector::ExtractOp::create(rewriter, loc, a,
                                              ArrayRef<int64_t>{m, r});
      Value row = broadcastGroup(rewriter, loc, group, lanes);
      if (tile.flipA)
        row = arith::XOrIOp::create(rewriter, loc, row, signBits);
      for (int64_t j = 0; j < chunks; ++j)
        acc[m][j] = dot(rewriter, loc, tile.kind, acc[m][j], row, columns[j]);
    }
  }
  for (int64_t m = 0; m < tile.m; ++m) {
    Value row = vector::ExtractOp::create(rewriter, loc, c, m);
    for (int64_t j = 0; j < chunks; ++j) {
      Value sum = acc[m][j];
      if (!shift.empty())
        sum = arith::SubIOp::create(rewriter, loc, sum, shift[j]);
      row = vector::InsertStridedSliceOp::create(rewriter, loc, sum, row,
                                                 {j * lanes}, {1});
    }
    c = vector::InsertOp::create(rewriter, loc, row, c, m);
  }
  rewriter.replaceOp(contract, vector::ShapeCastOp::create(
                                   rewriter, loc, contract.getAccType(), c));
  return success();
}

/// Whether `contract`'s innermost loop is a K group of 4 that both
/// operands index last: conv-lower-pack-vnni's quads.
bool hasQuadLoop(vector::ContractionOp contract) {
  SmallVector<int64_t> bounds;
  contract.getIterationBounds(bounds);
  unsigned last = bounds.size() - 1;
  auto indexesLast = [&](AffineMap map) {
    return map.getNumResults() > 0 &&
           map.getResults().back() == getAffineDimExpr(last, map.getContext());
  };
  SmallVector<AffineMap> maps = contract.getIndexingMapsArray();
  return bounds.back() == 4 &&
         vector::isReductionIterator(contract.getIteratorTypes()[last]) &&
         indexesLast(maps[0]) && indexesLast(maps[1]);
}

/// `contract` and the ops its operands come through (extensions, transpose,
/// broadcast) where it is one this pass may lower: bf16 at both chains'
/// start into f32 (`bf16`), or i8 into i32 with A zero-extended somewhere
/// on its chain (`i8`: conv-lower-pack-vnni's unsigned A) or, with
/// `signedI8`, in K quads (its signed form); other integer contractions
/// keep the form later passes expect; nothing otherwise.
SmallVector<Operation *> groupOperandChains(vector::ContractionOp contract,
                                            bool bf16, bool i8, bool signedI8) {
  Type acc = getElementTypeOrSelf(contract.getAccType());
  bool isBF16 = bf16 && acc.isF32();
  bool isI8 = i8 && acc.isInteger(32);
  if (!isBF16 && !isI8)
    return {};
  SmallVector<Operation *> ops = {contract};
  bool zeroExtendedA = false;
  for (auto [start, isA] : {std::pair<Value, bool>(contract.getLhs(), true),
                            std::pair<Value, bool>(contract.getRhs(), false)}) {
    Value operand = start;
    while (Operation *producer = operand.getDefiningOp()) {
      if (!isa<arith::ExtFOp, arith::ExtSIOp, arith::ExtUIOp,
               vector::TransposeOp, vector::BroadcastOp>(producer) &&
          !(isA && signFlipped(producer->getResult(0))))
        break;
      zeroExtendedA |= isA && isa<arith::ExtUIOp>(producer);
      ops.push_back(producer);
      operand = producer->getOperand(0);
    }
    Type element = getElementTypeOrSelf(operand.getType());
    if (isBF16 ? !element.isBF16() : !element.isInteger(8))
      return {};
  }
  if (isI8 && !zeroExtendedA && !(signedI8 && hasQuadLoop(contract)))
    return {};
  return ops;
}

/// A contraction left to the standard lowering gets back the widened
/// operands the extension folding took from it (that lowering widens only
/// 2-D mixed-precision contractions): floats extended, integers
/// sign-extended (the contraction's integer promotion).
void widenOperands(RewriterBase &rewriter, vector::ContractionOp contract) {
  Type acc = getElementTypeOrSelf(contract.getAccType());
  auto widen = [&](Value v) -> Value {
    auto type = cast<VectorType>(v.getType());
    Type element = type.getElementType();
    if (element == acc || isa<FloatType>(acc) != isa<FloatType>(element) ||
        element.getIntOrFloatBitWidth() >= acc.getIntOrFloatBitWidth())
      return v;
    if (isa<IntegerType>(acc))
      return arith::ExtSIOp::create(rewriter, contract.getLoc(),
                                    type.clone(acc), v);
    return arith::ExtFOp::create(rewriter, contract.getLoc(),
                                 type.clone(acc), v);
  };
  rewriter.setInsertionPoint(contract);
  Value lhs = widen(contract.getLhs()), rhs = widen(contract.getRhs());
  if (lhs == contract.getLhs() && rhs == contract.getRhs())
    return;
  rewriter.modifyOpInPlace(contract, [&] {
    contract.getLhsMutable().assign(lhs);
    contract.getRhsMutable().assign(rhs);
  });
}

/// A tile of full rank, A [M, R, g] x B [R, N, g] into [M, N], bf16 pairs
/// or signed i8 quads, in whole AMX tiles (M, R and N multiples of 16):
/// what conv-lower-amx-tiles takes in the pipeline. Partial tiles stay here: as
/// AMX tiles of other shapes they would need tile registers configured for
/// those too, and LLVM configures each register's shape once per function (more
/// shapes than registers: tile spills).
bool isAMXTile(vector::ContractionOp contract, const GroupTile &tile) {
  return (tile.kind == DotKind::BF16 || tile.kind == DotKind::S8S8) &&
         contract.getLhsType().getRank() == 3 &&
         contract.getRhsType().getRank() == 3 &&
         cast<VectorType>(contract.getAccType()).getRank() == 2 &&
         tile.m % 16 == 0 && tile.r % 16 == 0 && tile.n % 16 == 0;
}

struct ConvLowerX86DotProductPass
    : conv_lower::impl::ConvLowerX86DotProductBase<
          ConvLowerX86DotProductPass> {
  using Base::Base;

  void runOnOperation() override {
    // linalg's vectorizer writes a generic tile's contraction on widened,
    // broadcast operands: contract(ext(transpose(broadcast(A))), ...).
    // Sinking the casts below the broadcasts and transposes, folding those
    // into the contraction's maps, then (bf16) the extensions into the
    // contraction, leaves contract(A, B) on the vectors as read (i8:
    // contract(extui(A), extsi(B)), the two extensions differing). Only on
    // the grouped contractions and their operands' chains: elsewhere
    // (other integer contractions) these patterns are not what later passes
    // expect.
    SmallVector<Operation *> groupOps;
    getOperation()->walk([&](vector::ContractionOp op) {
      groupOps.append(groupOperandChains(op, bf16, i8, signedI8));
    });
    RewritePatternSet patterns(&getContext());
    vector::populateSinkVectorOpsPatterns(patterns);
    vector::populateVectorReductionToContractPatterns(patterns);
    vector::populateFoldArithExtensionPatterns(patterns);
    vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (!groupOps.empty() &&
        failed(applyOpPatternsGreedily(groupOps, std::move(patterns), config)))
      return signalPassFailure();

    IRRewriter rewriter(&getContext());
    SmallVector<vector::ContractionOp> contracts;
    getOperation()->walk(
        [&](vector::ContractionOp op) { contracts.push_back(op); });
    unsigned lowered = 0;
    for (vector::ContractionOp contract : contracts) {
      if (contract->getParentOfType<vector::MaskOp>())
        continue;
      std::optional<GroupTile> tile =
          matchGroupTile(contract, bf16, i8, signedI8);
      if (tile && leaveAMXTiles && isAMXTile(contract, *tile))
        continue;
      if (tile && succeeded(lowerToDots(rewriter, contract, *tile)))
        ++lowered;
      else
        widenOperands(rewriter, contract);
    }
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << lowered << " of "
                            << contracts.size()
                            << " contractions on dot products\n");
  }
};

} // namespace

LogicalResult mlir::conv_lower::lowerGroupTileToDots(
    RewriterBase &rewriter, vector::ContractionOp contract, bool signedI8) {
  std::optional<GroupTile> tile =
      matchGroupTile(contract, /*bf16=*/true, /*i8=*/true, signedI8);
  if (!tile)
    return failure();
  return lowerToDots(rewriter, contract, *tile);
}
