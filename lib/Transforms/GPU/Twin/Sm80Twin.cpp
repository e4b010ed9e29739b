//===- Sm80Twin.cpp - the mma.sync family's instructions on the CPU ------===//
//
// Sm80Hardware on the host: the CTA's threads, warps and lanes are loops;
// the copies are synchronous vector loads (the GPU's zero fill a select);
// ldmatrix and mma.sync run as the PTX ISA defines them, lane by lane, on
// memory standing in for each warp's fragment and accumulator registers.
// The kernel body around them is the GPU's own: a wrong swizzle, ldmatrix
// address, fragment position or fold changes the twin's numbers.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Twin/Sm80Twin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <tuple>

using namespace mlir;
using namespace mlir::conv_lower::igemm;

Sm80Twin::Sm80Twin(OpBuilder &b, Location loc, const GemmProblem &p,
                   const TileConfig &t) {
  int64_t warps = t.warpsM * t.warpsN;
  auto accumulators = [&](int64_t rows, int64_t cols) -> Value {
    return memref::AllocaOp::create(
        b, loc, MemRefType::get({warps, rows, cols}, p.accumulatorType));
  };
  acc = accumulators(t.warpM(), t.warpN());
  // The zero-point sums' D tiles: one n8 tile of row sums per A tile, one
  // m16 tile of column sums per B tile.
  if (p.needsRowSums())
    rowSums = accumulators(t.warpM(), 8);
  if (p.needsColumnSums())
    columnSums = accumulators(16, t.warpN());
  // Each warp's fragment registers: [tiles, lanes, 4 registers, elements].
  int64_t regElems = p.registerElements();
  fragA = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpM() / 16, kThreadsPerWarp, 4, regElems},
                      p.elementType));
  fragB = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpN() / 16, kThreadsPerWarp, 4, regElems},
                      p.elementType));
}

void Sm80Twin::forEach(OpBuilder &b, Location loc, int64_t n, Value,
                       function_ref<void(Value)> body) {
  auto loop =
      scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                         arith::ConstantIndexOp::create(b, loc, n),
                         arith::ConstantIndexOp::create(b, loc, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

Value Sm80Twin::copyChunk(Sm80KernelBuilder &kb, const ChunkCopy &c) {
  // The GPU's zero fill (or the pad value's store) as a select: the offset
  // is clamped inside the operand, so the load itself is always in bounds.
  Value data = vector::LoadOp::create(kb.b, kb.loc, c.type, c.src, c.offset);
  data = kb.select(c.valid, data, kb.fillValue(c.type, c.padding));
  vector::StoreOp::create(kb.b, kb.loc, data, c.smem, c.indices);
  return Value();
}

SmallVector<Value> Sm80Twin::zeroAccumulators(Sm80KernelBuilder &kb) {
  const TileConfig &t = kb.t;
  Value zero = kb.accumulatorConstant(0.0);
  auto fill = [&](Value buffer, int64_t rows, int64_t cols) {
    forEach(kb.b, kb.loc, t.warpsM * t.warpsN, nullptr, [&](Value warp) {
      forEach(kb.b, kb.loc, rows, nullptr, [&](Value r) {
        forEach(kb.b, kb.loc, cols, nullptr, [&](Value c) {
          memref::StoreOp::create(kb.b, kb.loc, zero, buffer,
                                  ValueRange{warp, r, c});
        });
      });
    });
  };
  fill(acc, t.warpM(), t.warpN());
  if (rowSums)
    fill(rowSums, t.warpM(), 8);
  if (columnSums)
    fill(columnSums, 16, t.warpN());
  // The accumulators are memory: the main loop carries none.
  return {};
}

// The twin runs the warp-level instructions as the PTX ISA defines them, lane
// by lane, so that the GPU's ldmatrix addresses and fragment bookkeeping are
// what it checks (a plain dot product over the shared tiles would not be).
SmallVector<Value> Sm80Twin::computeStage(Sm80KernelBuilder &kb, Value smemA,
                                          Value smemB, Value stage, Value,
                                          ValueRange) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const TileConfig &t = kb.t;
  int64_t tilesM = t.warpM() / 16, tilesN = t.warpN() / 8;
  int64_t half = p.chunkElements(), chunksPerRow = t.blockK / half;
  int64_t e = p.registerElements();
  forEach(b, loc, t.warpsM * t.warpsN, nullptr, [&](Value warp) {
    Value warpRow, warpCol; // captured below: no structured binding (C++17)
    std::tie(warpRow, warpCol) = kb.warpOrigin(warp);
    for (int64_t kk = 0; kk < chunksPerRow / 2; ++kk) {
      // ldmatrix.x4: lane l receives in register j the 32 bits at byte
      // 4*(l%4) of row l/4 of matrix j, whose address lane 8j + l/4 gave.
      // With .trans (16-bit elements) lane l receives in register j the
      // elements at position l/4 of rows 2*(l%4) and 2*(l%4)+1 of matrix j.
      auto ldmatrix =
          [&](Value smem, Value frag, int64_t fragIndex, bool transpose,
              function_ref<std::pair<Value, Value>(Value)> address) {
            forEach(b, loc, kThreadsPerWarp, nullptr, [&](Value lane) {
              for (int64_t j = 0; j < 4; ++j) {
                for (int64_t el = 0; el < e; ++el) {
                  Value row, column;
                  if (transpose) {
                    Value col;
                    std::tie(row, col) = address(
                        kb.add(kb.add(kb.mul(kb.rem(lane, 4), 2), el), 8 * j));
                    column = kb.add(col, kb.div(lane, 4));
                  } else {
                    Value col;
                    std::tie(row, col) =
                        address(kb.add(kb.div(lane, 4), 8 * j));
                    column =
                        kb.add(kb.add(col, kb.mul(kb.rem(lane, 4), e)), el);
                  }
                  Value v = memref::LoadOp::create(
                      b, loc, smem, ValueRange{stage, row, column});
                  memref::StoreOp::create(b, loc, v, frag,
                                          ValueRange{kb.idx(fragIndex), lane,
                                                     kb.idx(j), kb.idx(el)});
                }
              }
            });
          };
      for (int64_t i = 0; i < tilesM; ++i)
        ldmatrix(smemA, fragA, i, /*transpose=*/pixelRun(p, t) != 0,
                 [&](Value source) {
                   return kb.ldmatrixAddressA(source, warpRow, i, kk);
                 });
      for (int64_t j = 0; j < tilesN; j += 2)
        ldmatrix(smemB, fragB, j / 2, /*transpose=*/false, [&](Value source) {
          return kb.ldmatrixAddressB(source, warpCol, j, kk);
        });
      forEach(b, loc, tilesM, nullptr, [&](Value i) {
        forEach(b, loc, tilesN, nullptr, [&](Value jt) {
          mma(kb, acc, warp, i, jt, kb.mul(i, 16), kb.mul(jt, 8), false, false);
        });
      });
      // The zero-point sums, by the same mma with an all-ones operand.
      if (p.needsRowSums())
        forEach(b, loc, tilesM, nullptr, [&](Value i) {
          mma(kb, rowSums, warp, i, kb.idx(0), kb.mul(i, 16), kb.idx(0), false,
              true);
        });
      if (p.needsColumnSums())
        forEach(b, loc, tilesN, nullptr, [&](Value jt) {
          mma(kb, columnSums, warp, kb.idx(0), jt, kb.idx(0), kb.mul(jt, 8),
              true, false);
        });
    }
  });
  return {};
}

// mma.sync m16n8k(2*half): A(r, k) is element k%e of register r/8 +
// 2*(k/half) of lane (r%8)*4 + (k%half)/e; B(k, n) element k%e of register
// k/half of lane n*4 + (k%half)/e (the tile pair's second tile in registers
// 2, 3); D(r, c) as fragmentPosition says. For s8 (e = 4, half = 16) this is
// the PTX ISA's m16n8k32 layout: a0..a3 row g, a4..a7 row g+8, a8..a15 the
// same 16 columns further.
void Sm80Twin::mma(Sm80KernelBuilder &kb, Value acc, Value warp, Value i,
                   Value jt, Value rowBase, Value colBase, bool onesA,
                   bool onesB) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  int64_t half = p.chunkElements(), e = p.registerElements();
  Type accType = p.accumulatorType;
  auto widen = [&](Value v) -> Value {
    if (v.getType() == accType)
      return v;
    if (p.isInteger())
      return arith::ExtSIOp::create(b, loc, accType, v);
    return arith::ExtFOp::create(b, loc, accType, v);
  };
  auto multiplyAdd = [&](Value sum, Value x, Value y) -> Value {
    if (p.isInteger())
      return arith::AddIOp::create(b, loc, sum,
                                   arith::MulIOp::create(b, loc, x, y));
    return arith::AddFOp::create(b, loc, sum,
                                 arith::MulFOp::create(b, loc, x, y));
  };
  forEach(b, loc, kThreadsPerWarp, nullptr, [&](Value lane) {
    for (int64_t v = 0; v < 4; ++v) {
      auto [r, c] = kb.fragmentPosition(lane, 0, 0, v);
      Value row = kb.add(rowBase, r), col = kb.add(colBase, c);
      Value init =
          memref::LoadOp::create(b, loc, acc, ValueRange{warp, row, col});
      Value one = onesA || onesB ? kb.accumulatorConstant(1.0) : Value();
      auto kLoop = scf::ForOp::create(b, loc, kb.idx(0), kb.idx(2 * half),
                                      kb.idx(1), ValueRange{init});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(kLoop.getBody());
      Value k = kLoop.getInductionVar();
      Value kIn = kb.div(kb.rem(k, half), e), kReg = kb.div(k, half),
            kEl = kb.rem(k, e);
      Value a = one, bv = one;
      if (!onesA) {
        Value aLane = kb.add(kb.mul(kb.rem(r, 8), 4), kIn);
        Value aReg = kb.add(kb.div(r, 8), kb.mul(kReg, 2));
        a = widen(memref::LoadOp::create(b, loc, fragA,
                                         ValueRange{i, aLane, aReg, kEl}));
      }
      if (!onesB) {
        Value bLane = kb.add(kb.mul(c, 4), kIn);
        Value bReg = kb.add(kb.mul(kb.rem(jt, 2), 2), kReg);
        bv = widen(memref::LoadOp::create(
            b, loc, fragB, ValueRange{kb.div(jt, 2), bLane, bReg, kEl}));
      }
      scf::YieldOp::create(b, loc,
                           multiplyAdd(kLoop.getRegionIterArgs()[0], a, bv));
      b.setInsertionPointAfter(kLoop);
      memref::StoreOp::create(b, loc, kLoop.getResult(0), acc,
                              ValueRange{warp, row, col});
    }
  });
}

void Sm80Twin::epilogue(Sm80KernelBuilder &kb, Value y, Value bm, Value bn,
                        Value group, Value, ValueRange) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const TileConfig &t = kb.t;
  int64_t tilesM = t.warpM() / 16, tilesN = t.warpN() / 8;
  // Walk the accumulators the way the GPU threads hold them (lane, tile,
  // register), so the twin checks the fragment-to-output mapping too.
  // The values lane `lane` of `warp` holds for mma tile (i, j).
  auto tileValues = [&](Value warp, Value lane, int64_t i, int64_t j) {
    SmallVector<Value> values;
    for (int64_t v = 0; v < 4; ++v) {
      auto [row, col] = kb.fragmentPosition(lane, i, j, v);
      Value value =
          memref::LoadOp::create(b, loc, acc, ValueRange{warp, row, col});
      Value rowSum, columnSum;
      if (p.needsRowSums())
        rowSum = memref::LoadOp::create(
            b, loc, rowSums,
            ValueRange{warp, row, kb.fragmentPosition(lane, i, 0, v).second});
      if (p.needsColumnSums())
        columnSum = memref::LoadOp::create(
            b, loc, columnSums,
            ValueRange{warp, kb.fragmentPosition(lane, 0, j, v).first, col});
      values.push_back(kb.applyZeroPoints(value, rowSum, columnSum));
    }
    return values;
  };
  forEach(b, loc, t.warpsM * t.warpsN, nullptr, [&](Value warp) {
    Value warpRow, warpCol; // captured below: no structured binding (C++17)
    std::tie(warpRow, warpCol) = kb.warpOrigin(warp);
    Value rowBase = kb.add(kb.mul(bm, t.blockM), warpRow);
    Value colBase = kb.add(kb.mul(bn, t.blockN), warpCol);
    if (!kb.staging) {
      forEach(b, loc, kThreadsPerWarp, nullptr, [&](Value lane) {
        for (int64_t i = 0; i < tilesM; ++i)
          for (int64_t j = 0; j < tilesN; ++j)
            kb.storeFragment(y, lane, i, j, rowBase, colBase, group,
                             tileValues(warp, lane, i, j));
      });
      return;
    }
    // The staged epilogue, a row of tiles at a time: every lane writes its
    // values, then every lane reads and stores its vectors (the GPU's warp
    // barrier between them).
    for (int64_t i = 0; i < tilesM; ++i) {
      forEach(b, loc, kThreadsPerWarp, nullptr, [&](Value lane) {
        SmallVector<Value> values;
        for (int64_t j = 0; j < tilesN; ++j)
          llvm::append_range(values, tileValues(warp, lane, i, j));
        kb.stageRow(warp, lane, colBase, group, values);
      });
      forEach(b, loc, kThreadsPerWarp, nullptr, [&](Value lane) {
        kb.storeStagedRow(y, warp, lane, kb.add(rowBase, i * 16), colBase,
                          group);
      });
    }
  });
}
