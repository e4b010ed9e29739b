//===- Sm80Launch.cpp - the mma.sync family's twin ------------------------===//
//
// target=cpu-twin: the grid as host loops around the mma.sync CTA body, on
// stack buffers standing in for shared memory and the warps' registers.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Sm80/Sm80.h"
#include "Transforms/GPU/Sm80/Sm80Kernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/IR/SymbolTable.h"

#include <tuple>

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

namespace {

/// Explicit mode on the host: X_col stored by a loop over its elements.
Value twinIm2col(OpBuilder &b, Location loc, const GemmProblem &p,
                 const TileConfig &t, Value x) {
  Value xcol = memref::AllocOp::create(
      b, loc, MemRefType::get({p.im2colElements()}, p.elementType));
  auto loop = scf::ForOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, 0),
      arith::ConstantIndexOp::create(b, loc, p.im2colElements()),
      arith::ConstantIndexOp::create(b, loc, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Sm80KernelBuilder(b, loc, p, t, /*twin=*/true)
      .emitIm2colElement(loop.getInductionVar(), x, xcol);
  return xcol;
}

/// What a CTA keeps on chip, as stack buffers (at most 48 KiB + the
/// accumulators; the deallocation pipeline accepts no explicit frees).
struct TwinScratch {
  Value smemA, smemB, acc, fragA, fragB, rowSums, columnSums, staging;
  EpilogueStaging stagingShape;
};

TwinScratch allocateTwinScratch(OpBuilder &b, Location loc,
                                const GemmProblem &p, const TileConfig &t) {
  TwinScratch s;
  // 128-byte aligned, as the GPU's shared buffers: the twin's 16-byte vector
  // stores (a pixel run of 8 f16) are aligned x86 stores.
  auto ring = [&](Operand op) -> Value {
    return memref::AllocaOp::create(b, loc, sharedType(p, t, op, true),
                                    b.getI64IntegerAttr(128));
  };
  s.smemA = ring(Operand::A);
  s.smemB = ring(Operand::B);
  s.stagingShape = epilogueStaging(p, t);
  if (s.stagingShape.vector)
    s.staging = memref::AllocaOp::create(
        b, loc, stagingType(p, t, s.stagingShape, true),
        b.getI64IntegerAttr(16));
  int64_t warps = t.warpsM * t.warpsN;
  auto accumulators = [&](int64_t rows, int64_t cols) -> Value {
    return memref::AllocaOp::create(
        b, loc, MemRefType::get({warps, rows, cols}, p.accumulatorType));
  };
  s.acc = accumulators(t.warpM(), t.warpN());
  // The zero-point sums' D tiles: one n8 tile of row sums per A tile, one
  // m16 tile of column sums per B tile.
  if (p.needsRowSums())
    s.rowSums = accumulators(t.warpM(), 8);
  if (p.needsColumnSums())
    s.columnSums = accumulators(16, t.warpN());
  // Each warp's fragment registers: [tiles, lanes, 4 registers, elements].
  int64_t regElems = p.registerElements();
  s.fragA = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpM() / 16, kThreadsPerWarp, 4, regElems},
                      p.elementType));
  s.fragB = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpN() / 16, kThreadsPerWarp, 4, regElems},
                      p.elementType));
  return s;
}

} // namespace

TwinLoops igemm::buildSm80Twin(OpBuilder &b, Location loc, const GemmProblem &p,
                           const TileConfig &t, Value input, Value filter,
                           Value bias, RankedTensorType outputType) {
  Value x = flatBuffer(b, loc, input), w = flatBuffer(b, loc, filter);
  Value biasFlat = bias ? flatBuffer(b, loc, bias) : Value();
  if (p.explicitIm2col)
    x = twinIm2col(b, loc, p, t, x);
  Value output, y; // y is captured below: no structured binding (C++17)
  std::tie(output, y) = allocateResult(b, loc, outputType);
  assert(!t.directVector && "the direct depthwise kernel is Depthwise's");
  TwinScratch s = allocateTwinScratch(b, loc, p, t);
  // The kernel's tap table, in host memory (no constant-space budget).
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  Value tapTable = module ? createTapTable(b, module, p, t, /*memorySpace=*/0,
                                           /*budgetBytes=*/0, loc)
                          : Value();
  Launch l = launchShape(p, t);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  scf::LoopNest grid = scf::buildLoopNest(
      b, loc, ValueRange{c(0), c(0), c(0)},
      ValueRange{c(l.gridZ), c(l.gridY), c(l.gridX)},
      ValueRange{c(1), c(1), c(1)},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
        Sm80KernelBuilder kb(nb, nloc, p, t, /*twin=*/true);
        kb.setBias(biasFlat);
        kb.setTwinFragments(s.fragA, s.fragB);
        kb.setTwinSums(s.rowSums, s.columnSums);
        kb.setTapTable(tapTable);
        if (s.staging)
          kb.setStaging(s.staging, s.stagingShape);
        kb.emitBlock(ivs[2], ivs[1], ivs[0], x, w, y, s.smemA, s.smemB, s.acc);
      });
  return {toTensor(b, loc, outputType, output), grid.loops.front()};
}
