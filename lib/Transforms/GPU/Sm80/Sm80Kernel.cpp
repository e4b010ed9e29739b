//===- Sm80Kernel.cpp - one CTA of the mma.sync kernel ----------------------===//
//
// See ImplicitGemm.cpp for the kernel's structure and
// docs/architecture.md for the design.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Sm80/Sm80Kernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <array>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::conv_lower::igemm;


std::pair<Value, Value> Sm80KernelBuilder::elementOffset(Operand op, Value row,
                                                     Value k, Value group,
                                                     Value *padding,
                                                     bool predicated) {
  // The A operands that need no decomposition of k.
  if (op == Operand::A && tapTable) {
    int64_t step = tapTableStep(p, t);
    return tableGatherOffset(row, k, div(k, step), mul(rem(k, step), p.xC),
                             group, padding, /*wide=*/predicated);
  }
  if (op == Operand::A && p.explicitIm2col) {
    // X_col[m, g, k].
    Value offset = add(mul(add(mul(row, p.groups), group), p.k()), k);
    return {offset, both(withinK(k), withinRows(row, p.m(), t.blockM))};
  }
  if (op == Operand::B && filterFlatAlongK(p)) {
    Value base = add(mul(group, p.wG), mul(row, p.wF));
    Value inFilter = withinRows(row, p.fg, t.blockN);
    // With whole K tiles there is no K-tail compare, and the offset in 64
    // bits folds into one multiply-add of the K tile onto a loop-invariant
    // row address (the 32-bit form took an add, a mask and a 64-bit shift).
    if (p.filterElements >= (int64_t(1) << 31) || p.k() % t.blockK == 0)
      return {add(base, k), both(withinK(k), inFilter)};
    // In 32 bits from k on: the main loop steps k, and its offset and K-tail
    // compare would otherwise be a 64-bit pair each.
    Type i32 = b.getI32Type();
    Value k32 = arith::IndexCastOp::create(b, loc, i32, k);
    Value offset = arith::AddIOp::create(
        b, loc, arith::IndexCastOp::create(b, loc, i32, base), k32);
    Value inK = p.k() % t.blockK == 0
                    ? withinK(k)
                    : cmp(arith::CmpIPredicate::slt, k32, i32Constant(p.k()));
    return {arith::IndexCastUIOp::create(b, loc, b.getIndexType(), offset),
            both(inK, inFilter)};
  }
  // k -> (kd, kh, kw, c) channels last, else (c, kd, kh, kw); kd only for a
  // 3-D convolution (the 2-D body is unchanged).
  Value c, kdi, khi, kwi;
  if (p.channelsInnermost) {
    c = rem(k, p.cg);
    Value rest = div(k, p.cg);
    kwi = rem(rest, p.kw);
    khi = div(rest, p.kw);
    if (p.hasDepth) {
      kdi = div(khi, p.kh);
      khi = rem(khi, p.kh);
    }
  } else {
    kwi = rem(k, p.kw);
    Value rest = div(k, p.kw);
    khi = rem(rest, p.kh);
    c = div(rest, p.kh);
    if (p.hasDepth) {
      kdi = rem(c, p.kd);
      c = div(c, p.kd);
    }
  }
  Value valid = withinK(k);
  if (op == Operand::B) {
    valid = both(valid, withinRows(row, p.fg, t.blockN));
    Value offset = add(add(mul(group, p.wG), mul(row, p.wF)),
                       add(mul(c, p.wC), add(mul(khi, p.wKH), mul(kwi, p.wKW))));
    if (p.hasDepth)
      offset = add(offset, mul(kdi, p.wKD));
    return {offset, valid};
  }
  return gatherOffset(row, c, kdi, khi, kwi, group, valid, padding);
}

std::pair<Value, Value> Sm80KernelBuilder::gatherOffset(Value row, Value c,
                                                    Value kdi, Value khi,
                                                    Value kwi, Value group,
                                                    Value valid,
                                                    Value *padding) {
  // Row m -> (n, [od,] oh, ow) -> input ([id,] ih, iw); padding is the
  // predicate.
  Value n = div(row, p.pixels());
  Value pixel = rem(row, p.pixels());
  Value plane = p.hasDepth ? rem(pixel, p.ho * p.wo) : pixel;
  Value oh = div(plane, p.wo), ow = rem(plane, p.wo);
  Value ih = add(add(mul(oh, p.strideH), mul(khi, p.dilationH)), -p.padTop);
  Value iw = add(add(mul(ow, p.strideW), mul(kwi, p.dilationW)), -p.padLeft);
  Value inGemm = both(valid, withinRows(row, p.m(), t.blockM));
  Value inImage = both(inRange(ih, p.h), inRange(iw, p.w));
  Value channel = add(mul(group, p.cg), c);
  Value offset = add(add(mul(n, p.xN), mul(channel, p.xC)),
                     add(mul(ih, p.xH), mul(iw, p.xW)));
  if (p.hasDepth) {
    Value od = div(pixel, p.ho * p.wo);
    Value id = add(add(mul(od, p.strideD), mul(kdi, p.dilationD)), -p.padFront);
    inImage = both(inImage, inRange(id, p.d));
    offset = add(offset, mul(id, p.xD));
  }
  if (padding)
    *padding = paddingPredicate(inGemm, inImage);
  return {offset, both(inGemm, inImage)};
}

Value Sm80KernelBuilder::paddingPredicate(Value inGemm, Value inImage) {
  if (p.padValue == 0)
    return nullptr;
  Value outside = arith::XOrIOp::create(
      b, loc, inImage, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
  return both(inGemm, outside);
}

Sm80KernelBuilder::RowPlace Sm80KernelBuilder::rowPlace(Value row) {
  // What depends on the row only (the thread's own, in the main loop), in 32
  // bits: the per-element adds and tests are half the instructions of 64-bit
  // index math (tapTableBytes keeps offsets < 2^31).
  Type i32 = b.getI32Type();
  auto to32 = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, i32, v).getResult();
  };
  Value n = div(row, p.pixels()), pixel = rem(row, p.pixels());
  Value oh = div(pixel, p.wo), ow = rem(pixel, p.wo);
  Value ih0 = add(mul(oh, p.strideH), -p.padTop);
  Value iw0 = add(mul(ow, p.strideW), -p.padLeft);
  RowPlace place;
  place.base = add(mul(n, p.xN), add(mul(ih0, p.xH), mul(iw0, p.xW)));
  place.ih0 = to32(ih0);
  place.iw0 = to32(iw0);
  place.inGemm = withinRows(row, p.m(), t.blockM);
  if (!tapTableHasMasks(p))
    return place;
  // The row's mask of the taps inside the image (a row past M has none):
  // each element then tests its entry's tap bit, one AND instead of two adds
  // and two compares.
  Value columns = i32Constant(0);
  for (int64_t kw = 0; kw < p.kw; ++kw) {
    Value iw = arith::AddIOp::create(b, loc, place.iw0,
                                     i32Constant(kw * p.dilationW));
    columns = arith::OrIOp::create(
        b, loc, columns,
        select(insideImage(iw, p.w), i32Constant(int64_t(1) << kw),
               i32Constant(0)));
  }
  Value mask = i32Constant(0);
  for (int64_t kh = 0; kh < p.kh; ++kh) {
    Value ih = arith::AddIOp::create(b, loc, place.ih0,
                                     i32Constant(kh * p.dilationH));
    Value shifted =
        arith::ShLIOp::create(b, loc, columns, i32Constant(kh * p.kw));
    mask = arith::OrIOp::create(
        b, loc, mask, select(insideImage(ih, p.h), shifted, i32Constant(0)));
  }
  place.tapMask = select(place.inGemm, mask, i32Constant(0));
  return place;
}

Value Sm80KernelBuilder::insideImage(Value v, int64_t size) {
  // 0 <= v < size as one unsigned compare.
  return cmp(arith::CmpIPredicate::ult, v, i32Constant(size));
}

std::pair<Value, Value> Sm80KernelBuilder::tapEntry(Value entryIndex) {
  // One entry per k (NCHW), chunk or K tile (channels-last): warp-uniform
  // when the rows are the lanes or the entry is the tile's; its two words in
  // one 8-byte vector load (ptxas still issues two LDC for it; an i64 entry
  // would be one LDC.64, but LLVM then widens the offset math to 64 bits,
  // two instructions more per address).
  auto pairType = VectorType::get({2}, b.getI32Type());
  Value pair = vector::LoadOp::create(b, loc, pairType, tapTable,
                                      ValueRange{entryIndex, idx(0)},
                                      /*nontemporal=*/false, llvm::MaybeAlign(8));
  return {vector::ExtractOp::create(b, loc, pair, ArrayRef<int64_t>{0}),
          vector::ExtractOp::create(b, loc, pair, ArrayRef<int64_t>{1})};
}

Value Sm80KernelBuilder::tapInside(const RowPlace &place, Value window) {
  // A k past K has no tap bit, or the invalid row: never in the image.
  if (place.tapMask)
    return cmp(arith::CmpIPredicate::ne,
               arith::AndIOp::create(b, loc, place.tapMask, window),
               i32Constant(0));
  Value dh = arith::ShRSIOp::create(b, loc, window, i32Constant(16));
  Value dw = arith::ShRSIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, window, i32Constant(16)),
      i32Constant(16));
  Value ih = arith::AddIOp::create(b, loc, place.ih0, dh);
  Value iw = arith::AddIOp::create(b, loc, place.iw0, dw);
  return both(place.inGemm, both(insideImage(ih, p.h), insideImage(iw, p.w)));
}

Value Sm80KernelBuilder::tapOffset(const RowPlace &place, Value group,
                               Value inEntry, Value entryOffset, bool wide) {
  Value rowOffset = add(add(place.base, mul(mul(group, p.cg), p.xC)), inEntry);
  // A predicated load reads no offset outside the image, so the entry can
  // be added to the row's offset in 64 bits: the row's address is then
  // loop-invariant and each element one IMAD.WIDE of its entry onto it.
  // (The 32-bit sum took an add and an IMAD.WIDE.U32 onto the operand's
  // pointer, which ptxas reloaded from the parameter bank for every
  // element: 15 of the tf32 NCHW C64 loop's 146 instructions.)
  if (wide)
    return add(rowOffset, arith::IndexCastOp::create(
                              b, loc, b.getIndexType(), entryOffset));
  Value flat = arith::AddIOp::create(
      b, loc, arith::IndexCastOp::create(b, loc, b.getI32Type(), rowOffset),
      entryOffset);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), flat);
}

std::pair<Value, Value>
Sm80KernelBuilder::tableGatherOffset(Value row, Value k, Value entryIndex,
                                 Value inEntry, Value group, Value *padding,
                                 bool wide) {
  RowPlace place = rowPlace(row);
  auto [offset, window] = tapEntry(entryIndex);
  Value valid = tapInside(place, window);
  // Inside the GEMM (where padding can be), valid is exactly "in the image".
  if (padding && p.padValue != 0)
    *padding = paddingPredicate(both(place.inGemm, withinK(k)), valid);
  return {tapOffset(place, group, inEntry, offset, wide), valid};
}

Value Sm80KernelBuilder::withinK(Value k) {
  // The loop loads K tiles < ceil(K / blockK) only: with whole tiles every k
  // it loads is inside.
  if (p.k() % t.blockK == 0)
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  return lessThan(k, p.k());
}

Value Sm80KernelBuilder::withinRows(Value row, int64_t rows, int64_t tileRows) {
  // The grid covers ceil(rows / tileRows) tiles: with whole tiles every row
  // of them is inside.
  if (rows % tileRows == 0)
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  return lessThan(row, rows);
}

Value Sm80KernelBuilder::clampOffset(Operand op, Value offset, Value valid) {
  int64_t elements = op == Operand::B ? p.filterElements
                     : p.explicitIm2col ? p.im2colElements()
                                        : p.inputElements;
  // Always valid (a whole-tile B row): nothing to clamp, and no 32-bit
  // round trip for LLVM to keep as a 64-bit mask in the loop.
  if (matchPattern(valid, m_One()))
    return offset;
  if (elements >= (int64_t(1) << 31))
    return select(valid, offset, idx(0));
  // Every valid offset fits in 31 bits: the select and the address that
  // zero-extends it take one 32-bit register instead of a 64-bit pair (the
  // sign extension, two selects and a 64-bit add per chunk before).
  Type i32 = b.getI32Type();
  Value narrow = arith::IndexCastOp::create(b, loc, i32, offset);
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                      select(valid, narrow, i32Constant(0)));
}

Value Sm80KernelBuilder::elementConstant(Type type, int64_t value) {
  TypedAttr scalar = value ? TypedAttr(b.getIntegerAttr(p.elementType, value))
                           : TypedAttr(b.getZeroAttr(p.elementType));
  if (auto vec = dyn_cast<VectorType>(type))
    return arith::ConstantOp::create(b, loc, vec,
                                     DenseElementsAttr::get(vec, scalar));
  return arith::ConstantOp::create(b, loc, scalar);
}

Value Sm80KernelBuilder::fillValue(Type type, Value padding) {
  Value zero = elementConstant(type, 0);
  if (!padding)
    return zero;
  return select(padding, elementConstant(type, p.padValue), zero);
}

void Sm80KernelBuilder::emitIm2colElement(Value index, Value x, Value xcol) {
  GemmProblem gather = p;
  gather.explicitIm2col = false;
  Sm80KernelBuilder image(b, loc, gather, t, hw);
  Value k = rem(index, p.k()), rest = div(index, p.k());
  Value group = rem(rest, p.groups), row = div(rest, p.groups);
  Value padding;
  auto [offset, valid] =
      image.elementOffset(Operand::A, row, k, group, &padding);
  Value data = memref::LoadOp::create(
      b, loc, x, ValueRange{image.clampOffset(Operand::A, offset, valid)});
  Value fill = image.fillValue(p.elementType, padding);
  memref::StoreOp::create(b, loc, select(valid, data, fill), xcol,
                          ValueRange{index});
}

Value Sm80KernelBuilder::swizzledColumn(Value row, Value chunk) {
  int64_t chunksPerRow = t.blockK / p.chunkElements();
  int64_t rowsPerLine = 128 / kRowBytes;
  Value key = rem(div(row, rowsPerLine), chunksPerRow);
  Value physical = arith::XOrIOp::create(b, loc, chunk, key);
  return mul(physical, p.chunkElements());
}

int64_t Sm80KernelBuilder::chunksPerThreadRow(Operand op) const {
  int64_t chunksPerRow = t.blockK / p.chunkElements();
  int64_t rows = op == Operand::A ? t.blockM : t.blockN;
  // Chunks c and c + chunksPerRow / 2 of a row are one address apart by a
  // constant where the K tile is one tap's consecutive channels (A, with
  // the tile's own tap entry: one validity for the whole row) or a
  // contiguous run of a filter row with no K tail (B). Lane pairs then take
  // chunks (0, 1) and then (2, 3): each copy still fills whole 32-byte
  // sectors, with half the address and predicate work per chunk (the
  // grouped Fg = 16 kernel spent four instructions on each of its eight A
  // chunks a K tile).
  bool sameRowStep =
      op == Operand::A
          ? tapTable && tapTableStep(p, t) == t.blockK
          : filterFlatAlongK(p) && p.k() % t.blockK == 0;
  int64_t lanesPerRow = chunksPerRow / 2;
  if (!sameRowStep || chunksPerRow % 2 != 0 ||
      t.threads() % lanesPerRow != 0 ||
      (rows * lanesPerRow) % t.threads() != 0)
    return 1;
  return 2;
}

int64_t Sm80KernelBuilder::pairedChunkStep(Operand op) const {
  int64_t lanesPerRow = t.blockK / p.chunkElements() / 2;
  int64_t step = lanesPerRow * p.chunkElements();
  return op == Operand::A ? step * p.xC : step;
}

SmallVector<Value> Sm80KernelBuilder::loadTile(Operand op, Value src, Value smem,
                                           Value stage, Value kTile, Value tid,
                                           Value rowBase, Value group,
                                           SmallVector<Value> *gathered) {
  int64_t rows = op == Operand::A ? t.blockM : t.blockN;
  int64_t v = p.chunkElements();
  int64_t chunksPerRow = t.blockK / v;
  Value kBase = mul(kTile, t.blockK);
  SmallVector<Value> tokens;
  if (isVectorized(op)) {
    // Thread tid moves chunk columns c, c + L, ... of rows r, r + T / L, ...
    // with L lanes per row (c = tid % L, r = tid / L): consecutive threads
    // take consecutive chunks of a row (contiguous along K in global
    // memory). checkTiles makes T a multiple of chunksPerRow. With paired
    // chunks (L = chunksPerRow / 2) the thread's two chunks of a row share
    // one address and one predicate.
    int64_t perRow = chunksPerThreadRow(op);
    int64_t lanesPerRow = chunksPerRow / perRow;
    Value firstRow = div(tid, lanesPerRow), chunk = rem(tid, lanesPerRow);
    // The tap table's entry of this thread's chunk: the K tile's own (its
    // chunks are consecutive channels of one tap), or the chunk's.
    Value entry, inEntry;
    if (op == Operand::A && tapTable) {
      bool perTile = tapTableStep(p, t) == t.blockK;
      entry = perTile ? kTile : add(mul(kTile, chunksPerRow), chunk);
      inEntry = perTile ? mul(chunk, v * p.xC) : idx(0);
    }
    auto vecType = VectorType::get({v}, p.elementType);
    for (int64_t i = 0; i < rows * lanesPerRow / t.threads(); ++i) {
      Value row = add(firstRow, i * (t.threads() / lanesPerRow));
      Value k = add(kBase, mul(chunk, v));
      // A chunk is v channels of one tap of one pixel: all padding or none,
      // and so is its pair.
      // (Plain variables, not a structured binding: the lambda below
      // captures them, which C++17 does not allow for bindings.)
      Value padding, rowOffset, valid;
      std::tie(rowOffset, valid) =
          entry ? tableGatherOffset(add(rowBase, row), k, entry, inEntry,
                                    group, &padding)
                : elementOffset(op, add(rowBase, row), k, group, &padding);
      rowOffset = clampOffset(op, rowOffset, valid);
      for (int64_t j = 0; j < perRow; ++j) {
        // A clamped (0) offset plus the pair's step stays inside the
        // operand: the step is within one K tile of one row.
        Value offset = add(rowOffset, j * pairedChunkStep(op));
        Value column = swizzledColumn(row, add(chunk, j * lanesPerRow));
        if (Value token = hw.copyChunk(*this, {smem,
                                               {stage, row, column},
                                               src,
                                               offset,
                                               valid,
                                               padding,
                                               vecType}))
          tokens.push_back(token);
      }
    }
    return tokens;
  }
  if (op == Operand::A && pixelRun(p, t)) {
    for (int64_t i = 0; i < runsPerThread(); ++i) {
      auto [kk, m] = runPosition(tid, i);
      Value run = gatherRun(add(rowBase, m), add(kBase, kk), group, src);
      if (gathered)
        gathered->push_back(run);
      else
        storeRun(smem, stage, kk, m, run);
    }
    return tokens;
  }
  // Element gather: each element loaded, predicated, and stored to shared
  // now or (`gathered`) later by storeGathered. A tap-table offset is read
  // by the predicated load only: it needs no clamp.
  bool clamps = !(op == Operand::A && tapTable);
  for (int64_t i = 0; i < gatheredElements(op); ++i) {
    auto [row, kk] = gatherPosition(op, tid, i);
    Value padding;
    auto [offset, valid] =
        elementOffset(op, add(rowBase, row), add(kBase, kk), group, &padding,
                      /*predicated=*/true);
    Value data = loadWhere(valid, fillValue(p.elementType, padding), [&] {
      Value at = clamps ? clampOffset(op, offset, valid) : offset;
      return memref::LoadOp::create(b, loc, src, ValueRange{at}).getResult();
    });
    if (roundsAtGather(op))
      data = hw.roundToTf32(*this, data);
    if (gathered)
      gathered->push_back(data);
    else
      storeGatheredElement(smem, stage, row, kk, data);
  }
  return tokens;
}

int64_t Sm80KernelBuilder::gatheredElements(Operand op) const {
  int64_t rows = op == Operand::A ? t.blockM : t.blockN;
  return rows * t.blockK / t.threads();
}

// Consecutive threads take consecutive rows when the rows are what is
// contiguous in memory (NCHW pixels), else consecutive k. Element
// e = tid + i*T; the index math is written per thread so that what does not
// change with i (the thread's row, and with it the image position of an A
// row) is computed once: fewer live registers in the kernel.
std::pair<Value, Value> Sm80KernelBuilder::gatherPosition(Operand op, Value tid,
                                                      int64_t i) {
  int64_t rows = op == Operand::A ? t.blockM : t.blockN;
  bool rowsContiguous = op == Operand::A && !p.channelsInnermost;
  int64_t inner = rowsContiguous ? rows : t.blockK;
  bool perThread = t.threads() % inner == 0;
  Value e = add(tid, i * t.threads());
  Value fixed = perThread ? rem(tid, inner) : rem(e, inner);
  Value stepped = perThread ? add(div(tid, inner), i * (t.threads() / inner))
                            : div(e, inner);
  return rowsContiguous ? std::pair{fixed, stepped} : std::pair{stepped, fixed};
}

void Sm80KernelBuilder::storeGatheredElement(Value smem, Value stage, Value row,
                                         Value kk, Value data) {
  int64_t v = p.chunkElements();
  Value column = add(swizzledColumn(row, div(kk, v)), rem(kk, v));
  memref::StoreOp::create(b, loc, data, smem, ValueRange{stage, row, column});
}

void Sm80KernelBuilder::storeGathered(Operand op, Value smem, Value stage,
                                  Value tid, ArrayRef<Value> values) {
  if (op == Operand::A && pixelRun(p, t)) {
    for (auto [i, run] : llvm::enumerate(values)) {
      auto [kk, m] = runPosition(tid, i);
      storeRun(smem, stage, kk, m, run);
    }
    return;
  }
  for (auto [i, data] : llvm::enumerate(values)) {
    auto [row, kk] = gatherPosition(op, tid, i);
    storeGatheredElement(smem, stage, row, kk, data);
  }
}

int64_t Sm80KernelBuilder::runsPerThread() const {
  return t.blockM * t.blockK / (pixelRun(p, t) * t.threads());
}

std::pair<Value, Value> Sm80KernelBuilder::runPosition(Value tid, int64_t i) {
  // Lane-consecutive runs of one k: a warp covers 32 runs (32 * run pixels)
  // of the same k, whose tap-table entry it then shares.
  int64_t run = pixelRun(p, t), runsPerK = t.blockM / run;
  int64_t kStep = t.threads() / runsPerK;
  Value kk = add(div(tid, runsPerK), i * kStep);
  return {kk, mul(rem(tid, runsPerK), run)};
}

Value Sm80KernelBuilder::gatherRun(Value row, Value k, Value group, Value src) {
  // Pixels row .. row+run-1 lie in one output row (pixelRun), so pixel j
  // reads input offset(row) + j*strideW*xW: one address, and loads at
  // constant offsets from it; each pixel tests its own tap mask.
  int64_t run = pixelRun(p, t);
  Value first;
  SmallVector<Value> valid;
  if (tapTable) {
    auto [offset, window] = tapEntry(k);
    RowPlace place = rowPlace(row);
    first = tapOffset(place, group, idx(0), offset);
    valid.push_back(tapInside(place, window));
    for (int64_t j = 1; j < run; ++j)
      valid.push_back(tapInside(rowPlace(add(row, j)), window));
  } else {
    Value firstValid;
    std::tie(first, firstValid) = elementOffset(Operand::A, row, k, group);
    valid.push_back(firstValid);
    for (int64_t j = 1; j < run; ++j)
      valid.push_back(elementOffset(Operand::A, add(row, j), k, group).second);
  }
  SmallVector<Value> values;
  for (int64_t j = 0; j < run; ++j)
    values.push_back(loadWhere(valid[j], elementConstant(p.elementType, 0), [&] {
      return memref::LoadOp::create(
                 b, loc, src, ValueRange{add(first, j * p.strideW * p.xW)})
          .getResult();
    }));
  return vector::FromElementsOp::create(
      b, loc, VectorType::get({run}, p.elementType), values);
}

Value Sm80KernelBuilder::loadWhere(Value valid, Value otherwise,
                               function_ref<Value()> load) {
  // A predicated load, not a load of a clamped address and a select of its
  // data: neither the clamp nor the select is left (f16 NCHW C64 loop: 210
  // instructions -> 193), only the value the load does not write.
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{otherwise.getType()}, valid,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  scf::YieldOp::create(b, loc, load());
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  scf::YieldOp::create(b, loc, otherwise);
  return ifOp.getResult(0);
}

bool Sm80KernelBuilder::roundsAtGather(Operand op) const {
  // A gathered element passes through a register once, where each of its
  // copies in the fragments would be converted once per warp that reads it
  // (tf32 NCHW C64: 32 conversions a K tile for the thread's 16 elements).
  return p.kind == MmaKind::TF32 && !isVectorized(op) && !pixelRun(p, t);
}

Value Sm80KernelBuilder::swizzledPixel(Value k, Value m) {
  // An M-major row is blockM elements, blockM / 8 16-byte chunks: chunk c of
  // row k is stored at c ^ (k % 8), so the 8 rows (k) one ldmatrix.trans
  // phase reads at the same chunk fall in 8 distinct bank groups.
  Value chunk = arith::XOrIOp::create(b, loc, div(m, 8), rem(k, 8));
  return add(mul(chunk, 8), rem(m, 8));
}

void Sm80KernelBuilder::storeRun(Value smem, Value stage, Value kk, Value m,
                             Value run) {
  int64_t bytes = pixelRun(p, t) * p.elementBytes();
  vector::StoreOp::create(b, loc, run, smem,
                          ValueRange{stage, kk, swizzledPixel(kk, m)},
                          /*nontemporal=*/false, llvm::MaybeAlign(bytes));
}

Sm80KernelBuilder::StageLoads
Sm80KernelBuilder::loadStage(Value stage, Value kTile, Value tid, Value bm,
                         Value bn, Value group, Value x, Value w, Value smemA,
                         Value smemB, bool deferGathers) {
  SmallVector<Value> tokens;
  StageLoads loads;
  // Where threads are loops their values cannot outlive them; the order of
  // the stores does not matter there (the stage is not the one computed).
  bool defer = deferGathers && hw.holdsGathersInRegisters();
  forEach(t.threads(), tid, [&](Value thread) {
    Value rowA = mul(bm, t.blockM), rowB = mul(bn, t.blockN);
    llvm::append_range(tokens,
                       loadTile(Operand::A, x, smemA, stage, kTile, thread,
                                rowA, group, defer ? &loads.gatheredA : nullptr));
    llvm::append_range(tokens,
                       loadTile(Operand::B, w, smemB, stage, kTile, thread,
                                rowB, group, defer ? &loads.gatheredB : nullptr));
  });
  // Some copies may sit in branches (padding of a non-zero value) with no
  // token here: the group is made whenever the kernel copies at all.
  if (copiesAsync())
    loads.token = hw.commitGroup(b, loc, tokens);
  return loads;
}

std::pair<Value, Value> Sm80KernelBuilder::fragmentPosition(Value lane, int64_t i,
                                                        int64_t j, int64_t v) {
  Value groupId = div(lane, 4), inGroup = rem(lane, 4);
  Value row = add(groupId, i * 16 + (v / 2) * 8);
  Value col = add(mul(inGroup, 2), j * 8 + v % 2);
  return {row, col};
}

bool Sm80KernelBuilder::pairsOutputs() const {
  // Channels innermost, an even number of them, every other stride even: the
  // two adjacent columns a lane holds are one aligned 2-element vector.
  auto even = [](int64_t v) { return v % 2 == 0; };
  return p.yC == 1 && even(p.fg) && even(p.yN) && even(p.yH) && even(p.yW) &&
         (!p.hasDepth || even(p.yD));
}

Value Sm80KernelBuilder::outputOffset(Value m, Value channel) {
  Value n = div(m, p.pixels()), pixel = rem(m, p.pixels());
  Value plane = p.hasDepth ? rem(pixel, p.ho * p.wo) : pixel;
  Value oh = div(plane, p.wo), ow = rem(plane, p.wo);
  Value offset = add(add(mul(n, p.yN), mul(channel, p.yC)),
                     add(mul(oh, p.yH), mul(ow, p.yW)));
  if (p.hasDepth)
    offset = add(offset, mul(div(pixel, p.ho * p.wo), p.yD));
  return offset;
}

Value Sm80KernelBuilder::finishOutput(Value acc, Value channel,
                                      Value residualOffset) {
  if (p.initValue != 0.0 && p.isInteger())
    acc = arith::AddIOp::create(b, loc, acc, accumulatorConstant(p.initValue));
  else if (p.initValue != 0.0)
    acc = arith::AddFOp::create(b, loc, acc, accumulatorConstant(p.initValue));
  if (p.biasType) {
    Value bias = memref::LoadOp::create(b, loc, biasBuffer, ValueRange{channel});
    acc = arith::AddFOp::create(b, loc, acc, widen(bias));
  }
  if (p.residual && !residualOffset)
    return narrow(acc);
  if (p.residual)
    return addResidual(acc, memref::LoadOp::create(b, loc, residualBuffer,
                                                   ValueRange{residualOffset}));
  return narrow(activate(acc));
}

Value Sm80KernelBuilder::addResidual(Value v, Value r) {
  v = widen(v);
  r = widen(r);
  Value sum = p.isInteger() ? arith::AddIOp::create(b, loc, v, r).getResult()
                            : arith::AddFOp::create(b, loc, v, r).getResult();
  return narrow(activate(sum));
}

Value Sm80KernelBuilder::activate(Value v) {
  // The ops the fused linalg.generic yields (matchEpilogue), in its order.
  const Activation &a = p.activation;
  if (a.relu)
    return arith::MaximumFOp::create(b, loc, v, floatConstantLike(v, 0.0));
  if (a.clamp) {
    Value low =
        arith::MaximumFOp::create(b, loc, v, floatConstantLike(v, a.clampMin));
    return arith::MinimumFOp::create(b, loc, low,
                                     floatConstantLike(v, a.clampMax));
  }
  return v;
}

/// `v` with its elements (scalar or vector) of type `element`.
static Type withElement(Value v, Type element) {
  if (auto vector = dyn_cast<VectorType>(v.getType()))
    return vector.clone(element);
  return element;
}

Value Sm80KernelBuilder::widen(Value v) {
  if (getElementTypeOrSelf(v.getType()) == p.accumulatorType)
    return v;
  return arith::ExtFOp::create(b, loc, withElement(v, p.accumulatorType), v);
}

Value Sm80KernelBuilder::narrow(Value v) {
  if (getElementTypeOrSelf(v.getType()) == p.outputType)
    return v;
  return arith::TruncFOp::create(b, loc, withElement(v, p.outputType), v);
}

Value Sm80KernelBuilder::floatConstantLike(Value v, double value) {
  auto vector = dyn_cast<VectorType>(v.getType());
  auto scalar = b.getFloatAttr(getElementTypeOrSelf(v.getType()), value);
  TypedAttr attr = scalar;
  if (vector)
    attr = DenseElementsAttr::get(vector, ArrayRef<Attribute>{scalar});
  return arith::ConstantOp::create(b, loc, attr);
}

void Sm80KernelBuilder::storeOutputs(Value y, Value m, Value f, Value group,
                                 ArrayRef<Value> accs) {
  // With a pair, f is even and Fg even: f + 1 is inside exactly when f is.
  Value inside = both(lessThan(m, p.m()), lessThan(f, p.fg));
  auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value channel = add(mul(group, p.fg), f);
  Value offset = outputOffset(m, channel);
  SmallVector<Value> values;
  for (auto [i, acc] : llvm::enumerate(accs))
    values.push_back(finishOutput(acc, add(channel, i),
                                  add(offset, int64_t(i) * p.yC)));
  if (values.size() == 1) {
    memref::StoreOp::create(b, loc, values[0], y, ValueRange{offset});
    return;
  }
  Value vector = vector::FromElementsOp::create(
      b, loc, VectorType::get({int64_t(values.size())}, p.outputType), values);
  // Aligned to the vector (at most 16 bytes: what x86 stores on the twin
  // assume of their buffers).
  int64_t bytes = values.size() * (p.outputType.getIntOrFloatBitWidth() / 8);
  vector::StoreOp::create(b, loc, vector, y, ValueRange{offset},
                          /*nontemporal=*/false,
                          llvm::MaybeAlign(std::min(bytes, kChunkBytes)));
}

Value Sm80KernelBuilder::biasChannel(Value group, Value f) {
  // A tile's overhang past Fg is staged too (the whole tile is), and its
  // bias load must stay inside the bias.
  if (p.biasType && p.fg % t.blockN != 0)
    f = arith::MinUIOp::create(b, loc, f, idx(p.fg - 1));
  return add(mul(group, p.fg), f);
}

void Sm80KernelBuilder::stageRow(Value warp, Value lane, Value colBase,
                             Value group, ArrayRef<Value> values) {
  const EpilogueStaging &s = stagingShape;
  for (int64_t j = 0; j < t.warpN() / 8; ++j) {
    SmallVector<Value> finished;
    SmallVector<std::pair<Value, Value>> places;
    for (int64_t v = 0; v < 4; ++v) {
      places.push_back(fragmentPosition(lane, 0, j, v));
      finished.push_back(finishOutput(
          values[4 * j + v], biasChannel(group, add(colBase, places[v].second))));
    }
    for (int64_t v = 0; v < 4; v += s.pixelsInner ? 1 : 2) {
      auto [row, col] = places[v];
      if (s.pixelsInner) {
        memref::StoreOp::create(b, loc, finished[v], staging,
                                ValueRange{warp, col, row});
        continue;
      }
      // Columns col and col + 1 of the row: one aligned pair.
      auto pairType = VectorType::get({2}, p.outputType);
      Value pair = vector::FromElementsOp::create(
          b, loc, pairType, ValueRange{finished[v], finished[v + 1]});
      int64_t bytes = 2 * (p.outputType.getIntOrFloatBitWidth() / 8);
      vector::StoreOp::create(b, loc, pair, staging,
                              ValueRange{warp, row, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(bytes));
    }
  }
}

void Sm80KernelBuilder::storeStagedRow(Value y, Value warp, Value lane,
                                   Value rowBase, Value colBase, Value group) {
  const EpilogueStaging &s = stagingShape;
  int64_t perRow = s.width / s.vector;
  int64_t bytes = s.vector * (p.outputType.getIntOrFloatBitWidth() / 8);
  auto vectorType = VectorType::get({s.vector}, p.outputType);
  // Vector q = lane + 32 n of the staged tile: row q / perRow, its piece
  // q % perRow; consecutive lanes walk a row, contiguous in the output.
  for (int64_t first = 0; first < s.rows * perRow; first += kThreadsPerWarp) {
    Value q = add(lane, first);
    Value line = div(q, perRow), piece = mul(rem(q, perRow), s.vector);
    Value staged = vector::LoadOp::create(b, loc, vectorType, staging,
                                          ValueRange{warp, line, piece},
                                          /*nontemporal=*/false,
                                          llvm::MaybeAlign(bytes));
    Value m = add(rowBase, s.pixelsInner ? piece : line);
    Value f = add(colBase, s.pixelsInner ? line : piece);
    // A vector is all inside or all outside: Fg (NHWC) or the plane
    // (NCHW) is a multiple of it.
    Value inside = both(withinRows(m, p.m(), t.blockM),
                        withinRows(f, p.fg, t.blockN));
    auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value offset = outputOffset(m, add(mul(group, p.fg), f));
    // The residual is the output's twin: the same vector at the same offset,
    // one coalesced load (stageRow staged the values before it).
    if (p.residual)
      staged = addResidual(
          staged, vector::LoadOp::create(b, loc, vectorType, residualBuffer,
                                         ValueRange{offset},
                                         /*nontemporal=*/false,
                                         llvm::MaybeAlign(bytes)));
    vector::StoreOp::create(b, loc, staged, y, ValueRange{offset},
                            /*nontemporal=*/false, llvm::MaybeAlign(bytes));
  }
}

Value Sm80KernelBuilder::accumulatorConstant(double value) {
  TypedAttr attr = p.isInteger()
                       ? TypedAttr(b.getIntegerAttr(p.accumulatorType,
                                                    static_cast<int64_t>(value)))
                       : TypedAttr(b.getFloatAttr(p.accumulatorType, value));
  return arith::ConstantOp::create(b, loc, attr);
}

// sum_k (x - zx)(w - zw) = sum x*w - zw * sum x - zx * sum w + K * zx * zw,
// in i32 arithmetic that wraps as linalg's does (so it is exact mod 2^32,
// like the _q op itself). Padding and the K tail are zeros in both tiles:
// they add nothing to the GEMM or the sums, and an absorbed zero pad reads
// as (0 - zx)(w - zw), which is what the op on the padded tensor computes.
Value Sm80KernelBuilder::applyZeroPoints(Value acc, Value rowSum,
                                     Value columnSum) {
  if (!p.isInteger())
    return acc;
  int64_t zx = p.inputZeroPoint, zw = p.filterZeroPoint;
  auto times = [&](Value v, int64_t c) {
    return arith::MulIOp::create(b, loc, v, accumulatorConstant(double(c)));
  };
  if (rowSum)
    acc = arith::SubIOp::create(b, loc, acc, times(rowSum, zw));
  if (columnSum)
    acc = arith::SubIOp::create(b, loc, acc, times(columnSum, zx));
  // K*zx*zw in 64 bits, then wrapped to i32 as the op's arithmetic would.
  int64_t both = static_cast<int32_t>(static_cast<uint32_t>(
      static_cast<uint64_t>(p.k()) * static_cast<uint64_t>(zx) *
      static_cast<uint64_t>(zw)));
  if (both != 0)
    acc = arith::AddIOp::create(b, loc, acc, accumulatorConstant(double(both)));
  return acc;
}

int64_t Sm80KernelBuilder::accumulatorSlots() const {
  int64_t tilesM = t.warpM() / 16, tilesN = t.warpN() / 8;
  return tilesM * tilesN + (p.needsRowSums() ? tilesM : 0) +
         (p.needsColumnSums() ? tilesN : 0);
}

int64_t Sm80KernelBuilder::rowSumSlot(int64_t i) const {
  return (t.warpM() / 16) * (t.warpN() / 8) + i;
}

int64_t Sm80KernelBuilder::columnSumSlot(int64_t j) const {
  return rowSumSlot(p.needsRowSums() ? t.warpM() / 16 : 0) + j;
}


// ldmatrix.x4: lanes 8j..8j+7 give the row addresses of 8x(16 bytes) matrix
// j, and the matrices land in registers 0..3. A: matrices (rows 0-7 | 8-15) x
// (chunk 0 | 1), in the order that makes registers 0..3 the mma's a0..a3. B
// (stored [n][k], the "col" operand): (n 0-7: chunk 0, chunk 1), (n 8-15:
// chunk 0, chunk 1): two n8 tiles per load.
std::pair<Value, Value> Sm80KernelBuilder::ldmatrixAddressA(Value lane,
                                                        Value warpRow,
                                                        int64_t i,
                                                        int64_t kk) {
  if (pixelRun(p, t)) {
    // M-major A, read by ldmatrix.trans: matrix q = lane / 8 is (pixels
    // 8*(q%2).., k 8*(q/2)..) of the 16x16 A tile, its 8 rows are k; each
    // lane gives the row of its k, the chunk of the matrix's 8 pixels.
    Value q = div(lane, 8);
    Value k = add(add(rem(lane, 8), mul(div(q, 2), 8)), 16 * kk);
    Value m = add(add(warpRow, mul(rem(q, 2), 8)), i * 16);
    return {k, swizzledPixel(k, m)};
  }
  Value rowInTile = add(rem(lane, 8), mul(rem(div(lane, 8), 2), 8));
  Value row = add(add(warpRow, rowInTile), i * 16);
  return {row, swizzledColumn(row, add(div(lane, 16), 2 * kk))};
}

std::pair<Value, Value> Sm80KernelBuilder::ldmatrixAddressB(Value lane,
                                                        Value warpCol,
                                                        int64_t j,
                                                        int64_t kk) {
  Value rowInTile = add(rem(lane, 8), mul(div(lane, 16), 8));
  Value row = add(add(warpCol, rowInTile), j * 8);
  return {row, swizzledColumn(row, add(rem(div(lane, 8), 2), 2 * kk))};
}

void Sm80KernelBuilder::storeFragment(Value y, Value lane, int64_t i, int64_t j,
                                  Value rowBase, Value colBase, Value group,
                                  ArrayRef<Value> values) {
  // Registers (0, 1) and (2, 3) are adjacent columns of one row.
  int64_t perStore = pairsOutputs() ? 2 : 1;
  for (int64_t v = 0; v < 4; v += perStore) {
    auto [row, col] = fragmentPosition(lane, i, j, v);
    storeOutputs(y, add(rowBase, row), add(colBase, col), group,
                 values.slice(v, perStore));
  }
}

void Sm80KernelBuilder::emitBlock(Value bm, Value bn, Value group, Value x,
                                  Value w, Value y, Value smemA,
                                  Value smemB) {
  assert(!t.directVector && "the direct depthwise kernel is Depthwise's");
  assert(t.stages >= 2 && "the ring needs two stages to overlap");
  int64_t kTiles = llvm::divideCeilSigned(p.k(), t.blockK);
  Value tid = hw.threadId(b, loc);
  SmallVector<Value> accs = hw.zeroAccumulators(*this);

  // Prologue: K tiles 0 .. stages-2, one commit group each (empty for a
  // tile past K: the loop's wait counts groups).
  Value token;
  for (int64_t s = 0; s + 1 < t.stages; ++s) {
    if (s < kTiles)
      token = loadStage(idx(s), idx(s), tid, bm, bn, group, x, w, smemA,
                        smemB, /*deferGathers=*/false)
                  .token;
    else if (copiesAsync())
      token = emptyGroup();
  }

  // The main loop loads tile kt+S-1 while it computes tile kt; the drain
  // computes the last S-1 tiles and loads nothing. No load is ever past the
  // last tile, so whole tiles need no K-tail predicate. The drain, and the
  // steps past the main loop's last whole round when it is unrolled, are
  // straight-line code (K is static).
  KBlock blk{tid, bm, bn, group, x, w, smemA, smemB, accs.size()};
  SmallVector<Value> carried(accs);
  if (token)
    carried.push_back(token);
  int64_t drainBegin = std::max<int64_t>(0, kTiles - (t.stages - 1));
  int64_t mainEnd = emitMainLoop(drainBegin, carried, blk);
  for (int64_t kt = mainEnd; kt < kTiles; ++kt)
    carried = emitKStep(i32Constant(kt), idx(kt % t.stages),
                        idx((kt + t.stages - 1) % t.stages),
                        /*loads=*/kt < drainBegin, carried, blk);
  // The groups still open are empty (the drain loads nothing); waiting for
  // them costs one instruction outside the loop and keeps the CTA's exit free
  // of copies in flight whatever the drain comes to do.
  ValueRange results = carried;
  if (token)
    hw.waitGroups(b, loc, results[accs.size()], /*pending=*/0);
  hw.epilogue(*this, y, bm, bn, group, tid, results.take_front(accs.size()));
}

bool Sm80KernelBuilder::copiesAsync() const {
  return hw.copiesAsynchronously() &&
         (isVectorized(Operand::A) || isVectorized(Operand::B));
}

Value Sm80KernelBuilder::emptyGroup() {
  return hw.commitGroup(b, loc, ValueRange{});
}

bool Sm80KernelBuilder::unrollsRing() const {
  // Unrolled by S, every step's ring positions are constants and its shared
  // addresses immediate offsets (f16 NHWC C64: 2.19 other instructions per
  // MMA -> 1.51). Not where A is gathered element by element into registers:
  // ptxas overlaps the unrolled steps' staged elements, and the tf32 NCHW
  // kernels rose from 128 to 136 registers (two 8-warp CTAs per SM to one;
  // capping them at 128 with nvvm.minctasm spilled).
  return isVectorized(Operand::A) || pixelRun(p, t) != 0;
}

Value Sm80KernelBuilder::i32Constant(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}

Value Sm80KernelBuilder::indexOf(Value i32) {
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), i32);
}

int64_t Sm80KernelBuilder::emitMainLoop(int64_t steps, SmallVector<Value> &carried,
                                    const KBlock &blk) {
  int64_t stages = t.stages;
  if (unrollsRing()) {
    int64_t rounds = steps / stages;
    if (rounds == 0)
      return 0;
    auto loop = scf::ForOp::create(b, loc, i32Constant(0), i32Constant(rounds),
                                   i32Constant(1), carried);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value first =
        arith::MulIOp::create(b, loc, loop.getInductionVar(), i32Constant(stages));
    SmallVector<Value> values(loop.getRegionIterArgs());
    for (int64_t u = 0; u < stages; ++u)
      values = emitKStep(arith::AddIOp::create(b, loc, first, i32Constant(u)),
                         idx(u), idx((u + stages - 1) % stages),
                         /*loads=*/true, values, blk);
    // Without carried values (accumulators in memory: the twin) the builder
    // added the yield.
    if (!loop.getBody()->mightHaveTerminator())
      scf::YieldOp::create(b, loc, values);
    b.setInsertionPointAfter(loop);
    carried.assign(loop.getResults().begin(), loop.getResults().end());
    return rounds * stages;
  }
  if (steps == 0)
    return 0;
  // The ring positions (stage computed, stage loaded) carried as i32 and
  // stepped by a compare, instead of two remainders by S per K tile.
  SmallVector<Value> inits(carried);
  inits.push_back(i32Constant(0));
  inits.push_back(i32Constant(stages - 1));
  auto loop = scf::ForOp::create(b, loc, i32Constant(0), i32Constant(steps),
                                 i32Constant(1), inits);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  ValueRange args = loop.getRegionIterArgs();
  Value position = args[args.size() - 2], nextPosition = args.back();
  SmallVector<Value> values =
      emitKStep(loop.getInductionVar(), indexOf(position),
                indexOf(nextPosition), /*loads=*/true,
                args.drop_back(2), blk);
  auto step = [&](Value p) {
    Value next = arith::AddIOp::create(b, loc, p, i32Constant(1));
    return select(cmp(arith::CmpIPredicate::eq, next, i32Constant(stages)),
                  i32Constant(0), next);
  };
  values.push_back(step(position));
  values.push_back(step(nextPosition));
  scf::YieldOp::create(b, loc, values);
  b.setInsertionPointAfter(loop);
  carried.assign(loop.getResults().begin(),
                 loop.getResults().drop_back(2).end());
  return steps;
}

SmallVector<Value> Sm80KernelBuilder::emitKStep(Value kt, Value stage,
                                            Value nextStage, bool loads,
                                            ValueRange carried,
                                            const KBlock &blk) {
  // Tile kt (an i32) computes in ring position `stage` and loads tile
  // kt+S-1 into `nextStage`: the position tile kt-1 used.
  int64_t stages = t.stages;
  bool hasToken = carried.size() > blk.accCount;
  if (hasToken)
    hw.waitGroups(b, loc, carried[blk.accCount], /*pending=*/stages - 2);
  hw.barrier(b, loc);
  // Every thread is past its compute of tile kt-1 (the barrier above).
  // Gathered elements are loaded into registers before this stage's MMAs and
  // stored after them, so the MMAs never wait for a global round trip.
  StageLoads nextLoads;
  if (loads) {
    Value next =
        indexOf(arith::AddIOp::create(b, loc, kt, i32Constant(stages - 1)));
    nextLoads = loadStage(nextStage, next, blk.tid, blk.bm, blk.bn, blk.group,
                          blk.x, blk.w, blk.smemA, blk.smemB,
                          /*deferGathers=*/true);
  } else if (hasToken) {
    nextLoads.token = emptyGroup();
  }
  SmallVector<Value> out =
      hw.computeStage(*this, blk.smemA, blk.smemB, stage, blk.tid,
                      carried.take_front(blk.accCount));
  storeGathered(Operand::A, blk.smemA, nextStage, blk.tid,
                nextLoads.gatheredA);
  storeGathered(Operand::B, blk.smemB, nextStage, blk.tid,
                nextLoads.gatheredB);
  if (nextLoads.token)
    out.push_back(nextLoads.token);
  return out;
}
