//===- Winograd.cpp - 3x3 stride-1 convolutions by Winograd F(4x4, 3x3) ---===//
//
// A 3x3 stride-1 convolution through im2col is a GEMM of 9 * C * F
// multiply-adds per output pixel. Winograd's minimal filtering (Lavin and
// Gray, "Fast Algorithms for Convolutional Neural Networks", 2016) computes
// a 4x4 output tile from a 6x6 input window with 36 multiplies per channel
// and filter instead of 144, after linear transforms of the window, the
// filter and the result that cost additions only (and a few constant
// multiplies). The 36 products of all channels are 36 GEMMs
// [tiles, C] x [C, F], which the CPU pipeline register-tiles like every
// other contraction; the transforms are emitted here as FMAs on channel
// vectors with the matrices' coefficients folded in (zeros skipped, +-1 as
// adds).
//
// Each block of tile rows (what threads share) transforms its windows, runs
// its 36 GEMMs and transforms them back while its V and M blocks are in
// cache; the transformed filters (4x the filter) are computed once per call.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Common/ChannelsLast.h"
#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-winograd"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERWINOGRAD
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

// F(4x4, 3x3): a 4x4 output tile from a 6x6 window, interpolation points
// 0, -1, 1, -2, 2 and infinity.
constexpr int64_t kOut = 4, kWindow = 6, kTaps = 3;
constexpr int64_t kProducts = kWindow * kWindow;
// Transformed filters up to this size stay in cache across the blocks; past
// it, a block of fewer tiles than kMinStreamedBlockTiles is memory-bound.
// In a network U comes from memory, every layer's weights passing through
// the caches between two calls of one layer: past this size blocks are
// made as large as blockTiles allows and the threads split the filters
// (each reads its share of U once) rather than the tile rows (each block
// reading all of U). r50's 256-channel 14x14 layer at batch 1 (16 tiles,
// U 9.4 MB) was four blocks of 4 tiles: 1.13 ms inside the forward (0.42
// called alone); as two blocks of 128 filters 0.57-0.66 (quiet, one
// process each; docs/performance-journal.md, 2026-12-06). At 128 channels
// (U 2.4 MB, 28x28: 49 tiles) one block of 49 tiles per thread was slower
// than seven of 7 (its V and products past the L2).
constexpr int64_t kCachedFilterBytes = 4 << 20;
constexpr int64_t kMinStreamedBlockTiles = 16;
// The filters a block takes when the threads split them: whole register
// tiles (tile-n) of them.
constexpr int64_t kFilterBlockMultiple = 32;
// Past this, U's buffer is mapped fresh by every call (glibc serves blocks
// over its 32 MiB mmap ceiling from mmap) and faulting its pages in cost more
// than Winograd saves: C = F = 512 (38 MB) took 22 ms on a 4x4 image, against
// 0.7 ms at C = F = 256 and 3 ms for the whole 7x7 layer by GEMM.
constexpr int64_t kMaxFilterBytes = 16 << 20;
// B^T (input), G (filter) and A^T (output), row-major.
constexpr double kBT[kWindow * kWindow] = {
    4, 0,  -5, 0,  1, 0, //
    0, -4, -4, 1,  1, 0, //
    0, 4,  -4, -1, 1, 0, //
    0, -2, -1, 2,  1, 0, //
    0, 2,  -1, -2, 1, 0, //
    0, 4,  0,  -5, 0, 1};
constexpr double kG[kWindow * kTaps] = {
    1.0 / 4,   0,         0,         //
    -1.0 / 6,  -1.0 / 6,  -1.0 / 6,  //
    -1.0 / 6,  1.0 / 6,   -1.0 / 6,  //
    1.0 / 24,  1.0 / 12,  1.0 / 6,   //
    1.0 / 24,  -1.0 / 12, 1.0 / 6,   //
    0,         0,         1};
constexpr double kAT[kOut * kWindow] = {
    1, 1, 1,  1, 1,  0, //
    0, 1, -1, 2, -2, 0, //
    0, 1, 1,  4, 4,  0, //
    0, 1, -1, 8, -8, 1};

/// Vector arithmetic with compile-time coefficients: a linear combination
/// emits only its nonzero terms, +-1 as adds and subtracts, others as FMAs.
struct Combiner {
  OpBuilder &b;
  Location loc;
  VectorType type;

  Value splat(double c) {
    auto attr = DenseElementsAttr::get(
        type, b.getFloatAttr(type.getElementType(), c));
    return arith::ConstantOp::create(b, loc, attr);
  }

  Value combine(ArrayRef<double> coefficients, ArrayRef<Value> xs) {
    Value acc;
    for (auto [c, x] : llvm::zip_equal(coefficients, xs)) {
      if (c == 0)
        continue;
      if (!acc)
        acc = c == 1    ? x
              : c == -1 ? arith::NegFOp::create(b, loc, x).getResult()
                        : arith::MulFOp::create(b, loc, splat(c), x)
                              .getResult();
      else if (c == 1)
        acc = arith::AddFOp::create(b, loc, acc, x);
      else if (c == -1)
        acc = arith::SubFOp::create(b, loc, acc, x);
      else
        acc = vector::FMAOp::create(b, loc, splat(c), x, acc);
    }
    return acc ? acc : splat(0);
  }

  /// P X P^T for P [rows x cols] and X [cols x cols] (both row-major, X's
  /// elements vectors): the shape of all three Winograd transforms.
  SmallVector<Value> sandwich(ArrayRef<double> p, int64_t rows, int64_t cols,
                              ArrayRef<Value> x) {
    SmallVector<Value> px(rows * cols), out(rows * rows);
    SmallVector<Value> column(cols);
    for (int64_t a = 0; a < rows; ++a)
      for (int64_t j = 0; j < cols; ++j) {
        for (int64_t i = 0; i < cols; ++i)
          column[i] = x[i * cols + j];
        px[a * cols + j] = combine(p.slice(a * cols, cols), column);
      }
    for (int64_t a = 0; a < rows; ++a)
      for (int64_t c = 0; c < rows; ++c)
        out[a * rows + c] = combine(p.slice(c * cols, cols),
                                    ArrayRef(px).slice(a * cols, cols));
    return out;
  }
};

/// The f32 vector width for `n` channels: 16 (AVX-512) or 8 lanes, or 0.
int64_t vectorLanes(int64_t n) {
  for (int64_t lanes : {16, 8})
    if (n % lanes == 0)
      return lanes;
  return 0;
}

/// What the rewrite builds from, beyond the plan.
struct WinogradShape {
  int64_t n, height, width, channels, filters;
  int64_t tileRows, tileCols;  // ceil(Ho / 4), ceil(Wo / 4)
  int64_t rowsPerBlock;        // tile rows per block
  int64_t filterBlocks = 1;    // blocks the filters are split into
  int64_t lanesC, lanesF;
  /// The output is channels first: the output transform writes it so
  /// (a register transpose per tile) instead of a transpose pass after.
  bool channelsFirst;
  int64_t tilesPerBlock() const { return rowsPerBlock * tileCols; }
  int64_t filtersPerBlock() const { return filters / filterBlocks; }
  int64_t rowBlocks() const { return n * (tileRows / rowsPerBlock); }
  /// The computed output: [N, 4 tileRows, 4 tileCols, F] or channels first.
  SmallVector<int64_t> paddedShape() const {
    int64_t rows = kOut * tileRows, cols = kOut * tileCols;
    if (channelsFirst)
      return {n, filters, rows, cols};
    return {n, rows, cols, filters};
  }
};

/// Tile rows per block: a divisor of the image's tile rows, as many as keep
/// a block within `blockTiles` tiles (one row at least) while leaving every
/// thread two blocks where there are that many rows; where U streams from
/// memory (`streamed`), as many as fit, whatever the blocks left (the
/// threads then split the filters: filterBlocks).
int64_t rowsPerBlock(int64_t n, int64_t tileRows, int64_t tileCols,
                     int64_t blockTiles, int64_t threads, bool streamed) {
  int64_t wantBlocks = streamed ? 1 : std::min(2 * threads, n * tileRows);
  int64_t best = 1;
  for (int64_t r = 2; r <= tileRows; ++r) {
    if (tileRows % r)
      continue;
    if (r * tileCols > blockTiles || n * (tileRows / r) < wantBlocks)
      break;
    best = r;
  }
  return best;
}

/// Filter blocks: one where the row blocks give every thread one, else
/// the fewest that do, each of whole register tiles of filters (one where
/// the filters do not divide so).
int64_t filterBlocks(const WinogradShape &s, int64_t threads) {
  int64_t rowBlocks = s.rowBlocks();
  if (rowBlocks >= threads)
    return 1;
  for (int64_t d = llvm::divideCeil(threads, rowBlocks);
       d * kFilterBlockMultiple <= s.filters; ++d)
    if (s.filters % (d * kFilterBlockMultiple) == 0)
      return d;
  return 1;
}

/// Where U stays in cache and the blocks would leave a thread idle part of
/// the time (r50's 64-channel 56x56 layer at batch 1: seven blocks of two
/// tile rows on 2 threads), fewer tile rows a block where that evens them
/// out: 0.350 -> 0.302 ms there (quiet, medians, one binary). Where no
/// row count does (a 28x28 output's 7 tile rows), the blocks stay:
/// splitting the filters instead, each filter block transforming its
/// tiles' input again, measured even (0.339 / 0.340 ms on 128 channels).
void balanceBlocks(WinogradShape &s, int64_t threads) {
  auto even = [&](int64_t blocks) { return blocks % threads == 0; };
  if (threads < 2 || even(s.rowBlocks() * s.filterBlocks))
    return;
  for (int64_t r = s.rowsPerBlock - 1; r >= 1; --r)
    if (s.tileRows % r == 0 && even(s.n * (s.tileRows / r))) {
      s.rowsPerBlock = r;
      return;
    }
}

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// One vector of `lanes` f32 from `source` at `indices` (in bounds).
Value readVector(OpBuilder &b, Location loc, Value source, ValueRange indices,
                 int64_t lanes) {
  auto type = VectorType::get({lanes}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  return vector::TransferReadOp::create(b, loc, type, source, indices, zero,
                                        ArrayRef<bool>{true});
}

/// `dest` with `v` written at `indices` (in bounds).
Value writeVector(OpBuilder &b, Location loc, Value v, Value dest,
                  ValueRange indices) {
  return vector::TransferWriteOp::create(b, loc, v, dest, indices,
                                         ArrayRef<bool>{true})
      .getResult();
}

/// The filter as [3, 3, C, F]: a unit group dimension dropped, then the
/// form's filter axes ordered (r, s, c, f).
Value filterAsHwcf(OpBuilder &b, Location loc, ConvPlan &plan) {
  Value filter = plan.op.getDpsInputOperand(1)->get();
  std::string axes = plan.form->axes.w.str();
  auto type = cast<RankedTensorType>(filter.getType());
  if (size_t g = axes.find('g'); g != std::string::npos) {
    SmallVector<int64_t> kept;
    for (auto [i, size] : llvm::enumerate(type.getShape()))
      if (i != g)
        kept.push_back(size);
    int64_t rank = type.getRank();
    filter = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get(kept, type.getElementType()), filter,
        getAsIndexOpFoldResult(b.getContext(), SmallVector<int64_t>(rank, 0)),
        getAsIndexOpFoldResult(b.getContext(), type.getShape()),
        getAsIndexOpFoldResult(b.getContext(), SmallVector<int64_t>(rank, 1)));
    axes.erase(g, 1);
  }
  SmallVector<int64_t> perm;
  for (char axis : StringRef("rscf"))
    perm.push_back(axes.find(axis));
  if (llvm::equal(perm, llvm::seq<int64_t>(0, 4)))
    return filter;
  return transposed(b, loc, filter, perm);
}

/// U [filterBlocks, 36, C, F / filterBlocks] = G g G^T for every channel
/// and filter, each filter block's U contiguous (what one block of the
/// convolution reads), in an scf.forall over channels, each writing its 36
/// rows of U front to back (a forall over single filter vectors wrote 36
/// places a megabyte apart per iteration, and ran 5x slower on the
/// 512-channel layer).
Value transformFilters(OpBuilder &b, Location loc, Value hwcf,
                       const WinogradShape &s) {
  MLIRContext *ctx = b.getContext();
  int64_t c = s.channels, f = s.filters, lanes = s.lanesF;
  int64_t blocks = s.filterBlocks, perBlock = s.filtersPerBlock();
  Value empty = tensor::EmptyOp::create(
      b, loc, {blocks, kProducts, c, perBlock}, b.getF32Type());
  auto forall = scf::ForallOp::create(b, loc, getAsIndexOpFoldResult(ctx, {c}),
                                      ValueRange{empty},
                                      /*mapping=*/std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value channel = forall.getInductionVar(0);
  Value zero = index(b, loc, 0);
  SmallVector<OpFoldResult> offsets = {zero, zero, channel, zero};
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(ctx, {blocks, kProducts, 1, perBlock});
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value rows = tensor::ExtractSliceOp::create(
      b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  auto filterLoop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                       index(b, loc, f), index(b, loc, lanes),
                                       ValueRange{rows});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(filterLoop.getBody());
    Value f0 = filterLoop.getInductionVar();
    SmallVector<Value> taps;
    for (int64_t i = 0; i < kTaps; ++i)
      for (int64_t j = 0; j < kTaps; ++j)
        taps.push_back(readVector(
            b, loc, hwcf, {index(b, loc, i), index(b, loc, j), channel, f0},
            lanes));
    Combiner math{b, loc, VectorType::get({lanes}, b.getF32Type())};
    SmallVector<Value> u = math.sandwich(kG, kWindow, kTaps, taps);
    Value out = filterLoop.getRegionIterArgs()[0];
    Value block = zero, inBlock = f0;
    if (blocks > 1) {
      block = arith::DivUIOp::create(b, loc, f0, index(b, loc, perBlock));
      inBlock = arith::RemUIOp::create(b, loc, f0, index(b, loc, perBlock));
    }
    for (int64_t ab = 0; ab < kProducts; ++ab)
      out = writeVector(b, loc, u[ab], out,
                        {block, index(b, loc, ab), zero, inBlock});
    scf::YieldOp::create(b, loc, out);
  }
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, filterLoop.getResult(0),
                                        forall.getRegionIterArgs()[0], offsets,
                                        sizes, strides);
  return forall.getResult(0);
}

/// Where one tile's window lies in the image along one dimension: the six
/// rows (or columns) clamped into the image, and whether each is inside.
struct WindowLine {
  SmallVector<Value> at, inside;
};

WindowLine windowLine(OpBuilder &b, Location loc, Value tile, int64_t padLow,
                      int64_t extent) {
  WindowLine line;
  Value first = arith::SubIOp::create(
      b, loc, arith::MulIOp::create(b, loc, tile, index(b, loc, kOut)),
      index(b, loc, padLow));
  Value zero = index(b, loc, 0), last = index(b, loc, extent - 1);
  for (int64_t i = 0; i < kWindow; ++i) {
    Value at = arith::AddIOp::create(b, loc, first, index(b, loc, i));
    Value low = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, at,
                                      zero);
    Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, at,
                                       last);
    line.inside.push_back(arith::AndIOp::create(b, loc, low, high));
    line.at.push_back(arith::MinSIOp::create(
        b, loc, arith::MaxSIOp::create(b, loc, at, zero), last));
  }
  return line;
}

/// V [36, T, C] of one block: B^T d B for each of its T tiles, d the 6x6
/// window of the channels-last `image` (zero outside it: the padding, read
/// at a clamped place and selected away).
Value transformInputs(OpBuilder &b, Location loc, Value image, Value n,
                      Value firstTileRow, const ConvPlan &plan,
                      const WinogradShape &s) {
  int64_t tiles = s.tilesPerBlock(), lanes = s.lanesC;
  auto vectorType = VectorType::get({lanes}, b.getF32Type());
  Value empty = tensor::EmptyOp::create(b, loc, {kProducts, tiles, s.channels},
                                        b.getF32Type());
  auto tileLoop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                     index(b, loc, tiles), index(b, loc, 1),
                                     ValueRange{empty});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tileLoop.getBody());
  Value tile = tileLoop.getInductionVar();
  Value tileCols = index(b, loc, s.tileCols);
  Value ty = arith::AddIOp::create(
      b, loc, firstTileRow, arith::DivUIOp::create(b, loc, tile, tileCols));
  Value tx = arith::RemUIOp::create(b, loc, tile, tileCols);
  WindowLine rows = windowLine(b, loc, ty, plan.padding[0], s.height);
  WindowLine cols = windowLine(b, loc, tx, plan.padding[1], s.width);
  SmallVector<Value> inside;
  for (int64_t i = 0; i < kWindow; ++i)
    for (int64_t j = 0; j < kWindow; ++j)
      inside.push_back(
          arith::AndIOp::create(b, loc, rows.inside[i], cols.inside[j]));

  auto channelLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, s.channels),
      index(b, loc, lanes), ValueRange{tileLoop.getRegionIterArgs()[0]});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(channelLoop.getBody());
    Value c0 = channelLoop.getInductionVar();
    Combiner math{b, loc, vectorType};
    Value zeros = math.splat(0);
    SmallVector<Value> window;
    for (int64_t i = 0; i < kWindow; ++i)
      for (int64_t j = 0; j < kWindow; ++j) {
        Value v = readVector(b, loc, image, {n, rows.at[i], cols.at[j], c0},
                             lanes);
        window.push_back(arith::SelectOp::create(
            b, loc, inside[i * kWindow + j], v, zeros));
      }
    SmallVector<Value> v = math.sandwich(kBT, kWindow, kWindow, window);
    Value out = channelLoop.getRegionIterArgs()[0];
    for (int64_t ab = 0; ab < kProducts; ++ab)
      out = writeVector(b, loc, v[ab], out, {index(b, loc, ab), tile, c0});
    scf::YieldOp::create(b, loc, out);
  }
  scf::YieldOp::create(b, loc, channelLoop.getResult(0));
  return tileLoop.getResult(0);
}

/// One tile's 4x4 outputs `y` (vectors of filters) written at (row0, col0)
/// of a channels-last block [1, rows, cols, F].
Value writeTileChannelsLast(OpBuilder &b, Location loc, ArrayRef<Value> y,
                            Value out, Value row0, Value col0, Value f0) {
  Value zero = index(b, loc, 0);
  for (int64_t p = 0; p < kOut; ++p)
    for (int64_t q = 0; q < kOut; ++q)
      out = writeVector(
          b, loc, y[p * kOut + q], out,
          {zero, arith::AddIOp::create(b, loc, row0, index(b, loc, p)),
           arith::AddIOp::create(b, loc, col0, index(b, loc, q)), f0});
  return out;
}

/// The same into a channels-first block [1, F, rows, cols]: the 16 pixel
/// vectors of `lanes` filters transposed in registers (a 16 x lanes
/// vector.transpose: shuffles) into one 16-pixel vector per filter, whose 4
/// rows of 4 pixels are stored. Transposing the whole output afterwards
/// cost more than the convolution on the seed layer.
Value writeTileChannelsFirst(OpBuilder &b, Location loc, ArrayRef<Value> y,
                             Value out, Value row0, Value col0, Value f0) {
  int64_t lanes = cast<VectorType>(y[0].getType()).getDimSize(0);
  int64_t pixels = kOut * kOut;
  auto f32 = b.getF32Type();
  // The 16 vectors concatenated by shuffles into one [16 x lanes] value (an
  // insert chain would be canonicalized into scalar element moves).
  SmallVector<Value> parts(y.begin(), y.end());
  while (parts.size() > 1) {
    SmallVector<Value> joined;
    for (size_t i = 0; i < parts.size(); i += 2) {
      int64_t width = cast<VectorType>(parts[i].getType()).getDimSize(0);
      joined.push_back(vector::ShuffleOp::create(
          b, loc, parts[i], parts[i + 1],
          llvm::to_vector(llvm::seq<int64_t>(0, 2 * width))));
    }
    parts = std::move(joined);
  }
  Value tile = vector::ShapeCastOp::create(
      b, loc, VectorType::get({pixels, lanes}, f32), parts.front());
  Value byFilter = vector::TransposeOp::create(b, loc, tile, {1, 0});
  Value zero = index(b, loc, 0);
  for (int64_t f = 0; f < lanes; ++f) {
    Value filter = vector::ExtractOp::create(b, loc, byFilter, f);
    Value channel = arith::AddIOp::create(b, loc, f0, index(b, loc, f));
    for (int64_t p = 0; p < kOut; ++p) {
      Value row = vector::ExtractStridedSliceOp::create(
          b, loc, filter, /*offsets=*/{p * kOut}, /*sizes=*/{kOut},
          /*strides=*/{1});
      out = writeVector(
          b, loc, row, out,
          {zero, channel, arith::AddIOp::create(b, loc, row0, index(b, loc, p)),
           col0});
    }
  }
  return out;
}

/// The block's output rows [1, 4 R, 4 * tileCols, F / filterBlocks]: A^T m A (+
/// the accumulator's fill value `bias`, a vector or null) for each tile.
Value transformOutputs(OpBuilder &b, Location loc, Value products,
                       Value outBlock, Value bias, const WinogradShape &s) {
  int64_t lanes = s.lanesF;
  auto vectorType = VectorType::get({lanes}, b.getF32Type());
  auto tileLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, s.tilesPerBlock()),
      index(b, loc, 1), ValueRange{outBlock});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tileLoop.getBody());
  Value tile = tileLoop.getInductionVar();
  Value tileCols = index(b, loc, s.tileCols), four = index(b, loc, kOut);
  Value row0 = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, tile, tileCols), four);
  Value col0 = arith::MulIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, tile, tileCols), four);
  auto filterLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, s.filtersPerBlock()),
      index(b, loc, lanes), ValueRange{tileLoop.getRegionIterArgs()[0]});
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(filterLoop.getBody());
    Value f0 = filterLoop.getInductionVar();
    SmallVector<Value> m;
    for (int64_t ab = 0; ab < kProducts; ++ab)
      m.push_back(
          readVector(b, loc, products, {index(b, loc, ab), tile, f0}, lanes));
    Combiner math{b, loc, vectorType};
    SmallVector<Value> y = math.sandwich(kAT, kOut, kWindow, m);
    if (bias)
      for (Value &v : y)
        v = arith::AddFOp::create(b, loc, v, bias);
    Value out = filterLoop.getRegionIterArgs()[0];
    out = s.channelsFirst ? writeTileChannelsFirst(b, loc, y, out, row0, col0, f0)
                          : writeTileChannelsLast(b, loc, y, out, row0, col0, f0);
    scf::YieldOp::create(b, loc, out);
  }
  scf::YieldOp::create(b, loc, filterLoop.getResult(0));
  return tileLoop.getResult(0);
}

/// The output [N, 4 tileRows, 4 tileCols, F], computed in an scf.forall
/// over (image, block of tile rows, block of filters).
Value convolveInBlocks(OpBuilder &b, Location loc, Value image, Value u,
                       Value bias, const ConvPlan &plan,
                       const WinogradShape &s) {
  MLIRContext *ctx = b.getContext();
  auto f32 = b.getF32Type();
  int64_t blockRows = kOut * s.rowsPerBlock, tiles = s.tilesPerBlock();
  int64_t filters = s.filtersPerBlock();
  Value empty = tensor::EmptyOp::create(b, loc, s.paddedShape(), f32);
  auto forall = scf::ForallOp::create(
      b, loc,
      getAsIndexOpFoldResult(
          ctx, {s.n, s.tileRows / s.rowsPerBlock, s.filterBlocks}),
      ValueRange{empty}, /*mapping=*/std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  ConvLowerDialect::WinogradAttrHelper(ctx).setAttr(forall, b.getUnitAttr());
  Value n = forall.getInductionVar(0);
  Value firstTileRow = arith::MulIOp::create(
      b, loc, forall.getInductionVar(1), index(b, loc, s.rowsPerBlock));
  Value filterBlock = forall.getInductionVar(2);
  Value v = transformInputs(b, loc, image, n, firstTileRow, plan, s);

  // The filter block's U [36, C, F / filterBlocks], contiguous.
  OpFoldResult zeroIndex = b.getIndexAttr(0);
  Value blockU = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({kProducts, s.channels, filters}, f32), u,
      SmallVector<OpFoldResult>{filterBlock, zeroIndex, zeroIndex, zeroIndex},
      getAsIndexOpFoldResult(ctx, {1, kProducts, s.channels, filters}),
      SmallVector<OpFoldResult>(4, b.getIndexAttr(1)));
  Value products =
      tensor::EmptyOp::create(b, loc, {kProducts, tiles, filters}, f32);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  products = linalg::FillOp::create(b, loc, zero, products).getResult(0);
  products =
      linalg::BatchMatmulOp::create(b, loc, TypeRange{products.getType()},
                                    ValueRange{v, blockU}, ValueRange{products})
          .getResult(0);

  Value firstRow = arith::MulIOp::create(b, loc, firstTileRow,
                                         index(b, loc, kOut));
  Value firstFilter =
      arith::MulIOp::create(b, loc, filterBlock, index(b, loc, filters));
  // The block's rows of the output, all columns, its filters.
  int64_t cols = kOut * s.tileCols;
  SmallVector<OpFoldResult> offsets = {n, firstRow, zeroIndex, firstFilter};
  SmallVector<OpFoldResult> sizes =
      getAsIndexOpFoldResult(ctx, {1, blockRows, cols, filters});
  if (s.channelsFirst) {
    offsets = {n, firstFilter, firstRow, zeroIndex};
    sizes = getAsIndexOpFoldResult(ctx, {1, filters, blockRows, cols});
  }
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value outBlock = tensor::ExtractSliceOp::create(
      b, loc, forall.getRegionIterArgs()[0], offsets, sizes, strides);
  outBlock = transformOutputs(b, loc, products, outBlock, bias, s);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, outBlock,
                                        forall.getRegionIterArgs()[0], offsets,
                                        sizes, strides);
  return forall.getResult(0);
}

/// The convolution's result in its own layout from the padded output (in
/// the output's layout already): cropped to Ho x Wo, regrouped.
Value resultInLayout(OpBuilder &b, Location loc, Value padded,
                     const ConvPlan &plan, const WinogradShape &s) {
  Value result = padded;
  int64_t ho = plan.outSize[0], wo = plan.outSize[1];
  SmallVector<int64_t> shape = {s.n, ho, wo, s.filters};
  if (s.channelsFirst)
    shape = {s.n, s.filters, ho, wo};
  if (shape != s.paddedShape())
    result = tensor::ExtractSliceOp::create(
        b, loc, result,
        getAsIndexOpFoldResult(b.getContext(), {0, 0, 0, 0}),
        getAsIndexOpFoldResult(b.getContext(), shape),
        getAsIndexOpFoldResult(b.getContext(), {1, 1, 1, 1}));
  const ConvForm &form = *plan.form;
  if (!form.outputToImage.empty())
    result = tensor::ExpandShapeOp::create(
        b, loc, plan.op->getResult(0).getType(), result, form.outputToImage);
  return result;
}

void rewriteWinograd(RewriterBase &rewriter, ConvPlan &plan,
                     const WinogradShape &s) {
  Location loc = plan.op.getLoc();
  rewriter.setInsertionPoint(plan.op);
  auto fill = plan.op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  Value fillValue = fill.getInputs()[0];
  Value bias;
  if (!matchPattern(fillValue, m_AnyZeroFloat()))
    bias = vector::BroadcastOp::create(
        rewriter, loc, VectorType::get({s.lanesF}, rewriter.getF32Type()),
        fillValue);
  Value image = channelsLastImage(rewriter, loc, plan);
  Value u = transformFilters(rewriter, loc, filterAsHwcf(rewriter, loc, plan), s);
  Value padded = convolveInBlocks(rewriter, loc, image, u, bias, plan, s);
  rewriter.replaceOp(plan.op, resultInLayout(rewriter, loc, padded, plan, s));
  if (plan.absorbedExpand && plan.absorbedExpand->use_empty())
    rewriter.eraseOp(plan.absorbedExpand);
  if (plan.absorbedPad && plan.absorbedPad->use_empty())
    rewriter.eraseOp(plan.absorbedPad);
}

bool isF32(Value v) { return getElementTypeOrSelf(v.getType()).isF32(); }

/// U's bytes, [36, C, F] in f32: what the cost rule and the blocks weigh.
int64_t transformedFilterBytes(int64_t channels, int64_t filters) {
  return kProducts * channels * filters * 4;
}

/// The cost rule's and the error bound's limits.
struct WinogradOptions {
  int64_t minTiles, maxChannels;
  bool filterPackedOnce;
};

/// Why `plan` does not take the Winograd route ("" when it does).
std::string winogradRejection(ConvPlan &plan, const WinogradOptions &options) {
  linalg::LinalgOp op = plan.op;
  auto all = [](ArrayRef<int64_t> values, int64_t v) {
    return llvm::all_of(values, [&](int64_t x) { return x == v; });
  };
  if (plan.spatialRank() != 2 || !all(plan.kernel, kTaps))
    return "not a 2-D 3x3 convolution";
  if (!all(plan.strides, 1) || !all(plan.dilations, 1))
    return "strides or dilations are not 1";
  if (plan.groups != 1 || plan.isQuantized())
    return "grouped or quantized";
  if (op.hasDynamicShape() ||
      !cast<ShapedType>(plan.input.getType()).hasStaticShape())
    return "dynamic shapes";
  if (!isF32(op.getDpsInputOperand(0)->get()) ||
      !isF32(op.getDpsInputOperand(1)->get()) ||
      !isF32(op.getDpsInitOperand(0)->get()))
    return "not f32";
  if (!vectorLanes(plan.channels) || !vectorLanes(plan.filtersPerGroup))
    return "channels or filters not a multiple of 8";
  if (!op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>())
    return "the accumulator is not a linalg.fill";
  if (plan.channels > options.maxChannels)
    return "more channels than max-channels (Winograd's f32 error)";
  int64_t n = cast<ShapedType>(plan.input.getType()).getDimSize(0);
  int64_t tiles = n * llvm::divideCeil(plan.outSize[0], kOut) *
                  llvm::divideCeil(plan.outSize[1], kOut);
  // U made once (constant weights) leaves the image and output transforms
  // to amortize: r50 256 14x14 N1 (16 tiles), Winograd / GEMM, NCHW 1.0-1.2
  // / 1.7-2.0 ms, NHWC 1.5 / 1.9-2.9 (docs/performance-journal.md,
  // 2026-12-04).
  int64_t minTiles =
      options.filterPackedOnce ? options.minTiles / 2 : options.minTiles;
  if (tiles < minTiles)
    return "fewer 4x4 output tiles than min-tiles (the GEMM route is faster)";
  // Each block reads all of U [36, C, F] for 72 * T * C * F flops: T / 2
  // flops a byte, below what a core computes per byte of memory traffic when
  // U is past the caches and a block (one image's tiles at most) is small.
  int64_t tilesPerImage = tiles / n;
  int64_t filterBytes =
      transformedFilterBytes(plan.channels, plan.filtersPerGroup);
  if (options.minTiles > 0 && filterBytes > kMaxFilterBytes)
    return "the transformed filters would take more than 16 MiB";
  if (options.minTiles > 0 && filterBytes > kCachedFilterBytes &&
      tilesPerImage < kMinStreamedBlockTiles)
    return "too few tiles per image to stream the transformed filters";
  return "";
}

struct ConvLowerWinogradPass
    : conv_lower::impl::ConvLowerWinogradBase<ConvLowerWinogradPass> {
  using Base::Base;
  void runOnOperation() override {
    if (minTiles < 0 || maxChannels < 1 || blockTiles < 1 || threads < 1) {
      getOperation()->emitError()
          << "conv-lower-winograd: min-tiles must be >= 0, and max-channels, "
             "block-tiles and threads positive";
      return signalPassFailure();
    }
    WinogradOptions options{minTiles, maxChannels, filterPackedOnce};
    SmallVector<std::pair<ConvPlan, WinogradShape>, 2> chosen;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (!looksLikeConvolution(op))
        return;
      std::string whyNot;
      FailureOr<ConvPlan> plan = analyzeConv(op, whyNot);
      if (succeeded(plan))
        whyNot = winogradRejection(*plan, options);
      LLVM_DEBUG({
        llvm::dbgs() << "[" DEBUG_TYPE "] " << op->getName() << " at "
                     << op.getLoc() << ": "
                     << (whyNot.empty() ? std::string("Winograd F(4x4, 3x3)")
                                        : "left to the GEMM route: " + whyNot)
                     << " (min-tiles " << options.minTiles << ")\n";
      });
      if (!whyNot.empty()) {
        if (emitRemarks)
          op.emitRemark() << "conv-lower-winograd: left to the GEMM route: "
                          << whyNot;
        return;
      }
      // The image as the rewrite reads it: a grouped form's (g, c) collapsed
      // first, as channelsLastImage does.
      SmallVector<int64_t> image = collapseShape(
          cast<RankedTensorType>(plan->input.getType()).getShape(),
          plan->inputIsImage ? ArrayRef<ReassociationIndices>()
                             : ArrayRef(plan->form->inputToImage));
      SpatialImageDims dims = getImageDims(plan->form->layout, 2);
      WinogradShape s;
      s.n = image[0];
      s.height = image[dims.spatial[0]] - plan->crop[0];
      s.width = image[dims.spatial[1]] - plan->crop[1];
      s.channels = plan->channels;
      s.filters = plan->filtersPerGroup;
      s.tileRows = llvm::divideCeil(plan->outSize[0], kOut);
      s.tileCols = llvm::divideCeil(plan->outSize[1], kOut);
      bool streamed =
          transformedFilterBytes(s.channels, s.filters) > kCachedFilterBytes;
      s.rowsPerBlock = rowsPerBlock(s.n, s.tileRows, s.tileCols, blockTiles,
                                    threads, streamed);
      s.filterBlocks = streamed ? filterBlocks(s, threads) : 1;
      if (!streamed)
        balanceBlocks(s, threads);
      s.lanesC = vectorLanes(s.channels);
      s.lanesF = vectorLanes(s.filters);
      s.channelsFirst = plan->form->layout == ImageLayout::nchw;
      LLVM_DEBUG(llvm::dbgs()
                 << "[" DEBUG_TYPE "] "
                 << "  " << s.n << " x " << s.tileRows << " x " << s.tileCols
                 << " tiles, " << s.rowsPerBlock << " tile rows and "
                 << s.filtersPerBlock() << " filters per block, C "
                 << s.channels << " F " << s.filters << "\n");
      chosen.emplace_back(*plan, s);
    });
    IRRewriter rewriter(&getContext());
    for (auto &[plan, shape] : chosen)
      rewriteWinograd(rewriter, plan, shape);
  }
};

} // namespace
