//===- BF16DotProduct.cpp - bf16 register tiles on VDPBF16PS --------------===//
//
// A register tile of a bf16 GEMM in K pairs (conv-lower-pack-bf16-pairs,
// then conv-lower-tile-and-vectorize) is one vector.contract
//
//   A [M, R, 2] (bf16) x B [R, N, 2] (bf16) + C [M, N] (f32),
//
// R pairs of K, the pair innermost in both. Each row m of A holds, per pair,
// two adjacent bf16: 32 bits, broadcast to every lane; each run of L columns
// of B is L pairs side by side, exactly VDPBF16PS's second source. So the
// tile becomes, per pair r and row m, N / L x86vector.avx512.dot ops on the
// accumulator's lanes (L = 16: zmm; 8 and 4 where N allows no more, the
// AVX512VL forms), the way oneDNN's brgemm and MLAS's bf16 kernels run it.
// The accumulators stay one vector<M x N> value, so the tile's K loop still
// carries them in registers.
//
// Contractions of any other form (no pair, N not a multiple of 4, masked)
// are left as they are: the standard lowering widens them to f32.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-bf16-dot-product"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERBF16DOTPRODUCT
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// The extents of a pair contraction's tile, each 1 where the tile has no
/// such dimension.
struct PairTile {
  int64_t m = 1, r = 1, n = 1;
};

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

/// The tile of `contract` where it is a bf16 pair contraction in the order
/// this pass reads it: A's non-unit dimensions (m, r, pair), B's (r, n,
/// pair), C's (m, n), each of m and r optional, the pair of extent 2.
std::optional<PairTile> matchPairTile(vector::ContractionOp contract) {
  if (contract.getKind() != vector::CombiningKind::ADD ||
      !getElementTypeOrSelf(contract.getLhsType()).isBF16() ||
      !getElementTypeOrSelf(contract.getRhsType()).isBF16() ||
      !getElementTypeOrSelf(contract.getAccType()).isF32() ||
      !isa<VectorType>(contract.getAccType()))
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
      bounds[a.back()] != 2 || !isReduction(a.back()))
    return std::nullopt;
  PairTile tile;
  // B: [r,] n, pair.
  unsigned n = b[b.size() - 2];
  if (isReduction(n) || (b.size() == 3 && !isReduction(b[0])) ||
      b.size() > 3)
    return std::nullopt;
  tile.n = bounds[n];
  std::optional<unsigned> r;
  if (b.size() == 3) {
    r = b[0];
    tile.r = bounds[*r];
  }
  // A: [m,] [r,] pair, with the same r.
  SmallVector<unsigned> aOuter(a.begin(), a.end() - 1);
  std::optional<unsigned> m;
  if (!aOuter.empty() && !isReduction(aOuter.front())) {
    m = aOuter.front();
    tile.m = bounds[*m];
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

/// `pair` (vector<2xbf16>) in every one of `lanes` 32-bit lanes.
Value broadcastPair(OpBuilder &b, Location loc, Value pair, int64_t lanes) {
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  Value scalar = vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
  Value splat = vector::BroadcastOp::create(
      b, loc, VectorType::get({lanes}, b.getI32Type()), scalar);
  return vector::BitCastOp::create(
      b, loc, VectorType::get({2 * lanes}, b.getBF16Type()), splat);
}

/// B's tile [.., N, 2] read whole as rows of 2N elements, where it is a
/// vector.transfer_read of a tensor whose last two dimensions are the
/// tile's (read from their start): the same bytes, contiguous. Read as
/// [.., N, 2], the transfer's lowering makes one 4-byte load per pair and
/// LLVM reassembles the vector from them (vmovd + vpermt2d, 32 of them for a
/// zmm); collapsed, it is one vector load per row. Otherwise `rhs` itself.
Value readPairRows(RewriterBase &rewriter, Value rhs) {
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

LogicalResult lowerToDots(RewriterBase &rewriter,
                          vector::ContractionOp contract, PairTile tile) {
  int64_t lanes = dotLanes(tile.n);
  if (lanes == 0)
    return failure();
  Location loc = contract.getLoc();
  rewriter.setInsertionPoint(contract);
  Type bf16 = rewriter.getBF16Type(), f32 = rewriter.getF32Type();
  Value a = vector::ShapeCastOp::create(
      rewriter, loc, VectorType::get({tile.m, tile.r, 2}, bf16),
      contract.getLhs());
  Value b = vector::ShapeCastOp::create(
      rewriter, loc, VectorType::get({tile.r, tile.n * 2}, bf16),
      readPairRows(rewriter, contract.getRhs()));
  Value c = vector::ShapeCastOp::create(
      rewriter, loc, VectorType::get({tile.m, tile.n}, f32), contract.getAcc());

  int64_t chunks = tile.n / lanes;
  SmallVector<SmallVector<Value>> acc(tile.m);
  for (int64_t m = 0; m < tile.m; ++m) {
    Value row = vector::ExtractOp::create(rewriter, loc, c, m);
    for (int64_t j = 0; j < chunks; ++j)
      acc[m].push_back(vector::ExtractStridedSliceOp::create(
          rewriter, loc, row, {j * lanes}, {lanes}, {1}));
  }
  for (int64_t r = 0; r < tile.r; ++r) {
    Value pairs = vector::ExtractOp::create(rewriter, loc, b, r);
    SmallVector<Value> columns;
    for (int64_t j = 0; j < chunks; ++j)
      columns.push_back(vector::ExtractStridedSliceOp::create(
          rewriter, loc, pairs, {2 * j * lanes}, {2 * lanes}, {1}));
    for (int64_t m = 0; m < tile.m; ++m) {
      Value pair = vector::ExtractOp::create(rewriter, loc, a,
                                             ArrayRef<int64_t>{m, r});
      Value row = broadcastPair(rewriter, loc, pair, lanes);
      for (int64_t j = 0; j < chunks; ++j)
        acc[m][j] = x86vector::DotBF16Op::create(rewriter, loc, acc[m][j],
                                                 row, columns[j]);
    }
  }
  for (int64_t m = 0; m < tile.m; ++m) {
    Value row = vector::ExtractOp::create(rewriter, loc, c, m);
    for (int64_t j = 0; j < chunks; ++j)
      row = vector::InsertStridedSliceOp::create(rewriter, loc, acc[m][j], row,
                                                 {j * lanes}, {1});
    c = vector::InsertOp::create(rewriter, loc, row, c, m);
  }
  rewriter.replaceOp(contract, vector::ShapeCastOp::create(
                                   rewriter, loc, contract.getAccType(), c));
  return success();
}

/// `contract` and the ops its operands come through (extf, transpose,
/// broadcast) where both operands are bf16 vectors at the chain's start and
/// the accumulator f32; nothing otherwise.
SmallVector<Operation *> bf16OperandChains(vector::ContractionOp contract) {
  if (!getElementTypeOrSelf(contract.getAccType()).isF32())
    return {};
  SmallVector<Operation *> ops = {contract};
  for (Value operand : {contract.getLhs(), contract.getRhs()}) {
    while (Operation *producer = operand.getDefiningOp()) {
      if (!isa<arith::ExtFOp, vector::TransposeOp, vector::BroadcastOp>(
              producer))
        break;
      ops.push_back(producer);
      operand = producer->getOperand(0);
    }
    if (!getElementTypeOrSelf(operand.getType()).isBF16())
      return {};
  }
  return ops;
}

/// A contraction left to the standard lowering gets back the widened
/// float operands the extension folding took from it (that lowering widens only
/// 2-D mixed-precision contractions).
void widenOperands(RewriterBase &rewriter, vector::ContractionOp contract) {
  Type acc = getElementTypeOrSelf(contract.getAccType());
  auto widen = [&](Value v) -> Value {
    auto type = cast<VectorType>(v.getType());
    Type element = type.getElementType();
    if (element == acc || !isa<FloatType>(acc) || !isa<FloatType>(element) ||
        element.getIntOrFloatBitWidth() >= acc.getIntOrFloatBitWidth())
      return v;
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

struct ConvLowerBF16DotProductPass
    : conv_lower::impl::ConvLowerBF16DotProductBase<
          ConvLowerBF16DotProductPass> {
  void runOnOperation() override {
    // linalg's vectorizer writes a generic tile's contraction on widened,
    // broadcast operands: contract(extf(transpose(broadcast(A))), ...).
    // Sinking the casts below the broadcasts and transposes, folding those
    // into the contraction's maps, then the extensions into the
    // contraction, leaves contract(A, B) on the bf16 vectors as read.
    // Only on the bf16 contractions and their operands' chains: elsewhere
    // (integer contractions) these patterns are not what later passes
    // expect.
    SmallVector<Operation *> bf16Ops;
    getOperation()->walk([&](vector::ContractionOp op) {
      SmallVector<Operation *> chain = bf16OperandChains(op);
      if (!chain.empty())
        bf16Ops.append(chain);
    });
    RewritePatternSet patterns(&getContext());
    vector::populateSinkVectorOpsPatterns(patterns);
    vector::populateVectorReductionToContractPatterns(patterns);
    vector::populateFoldArithExtensionPatterns(patterns);
    vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (!bf16Ops.empty() &&
        failed(applyOpPatternsGreedily(bf16Ops, std::move(patterns), config)))
      return signalPassFailure();

    IRRewriter rewriter(&getContext());
    SmallVector<vector::ContractionOp> contracts;
    getOperation()->walk(
        [&](vector::ContractionOp op) { contracts.push_back(op); });
    unsigned lowered = 0;
    for (vector::ContractionOp contract : contracts) {
      if (contract->getParentOfType<vector::MaskOp>())
        continue;
      std::optional<PairTile> tile = matchPairTile(contract);
      if (tile && succeeded(lowerToDots(rewriter, contract, *tile)))
        ++lowered;
      else
        widenOperands(rewriter, contract);
    }
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << lowered << " of "
                            << contracts.size()
                            << " contractions on VDPBF16PS\n");
  }
};

} // namespace
