//===- TwinLaunch.cpp - the twins' grids ---------------------------------===//
//
// target=cpu-twin: the grid as host loops around a family's CTA body, on
// stack buffers standing in for shared memory and the registers (allocated
// once, reused by every CTA), with the family's hardware emulated
// (Sm80Twin, Sm90Twin).
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Depthwise/DepthwiseKernel.h"
#include "Transforms/GPU/Twin/Sm80Twin.h"
#include "Transforms/GPU/Twin/Sm90Twin.h"
#include "Transforms/GPU/Twin/Twin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <tuple>

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

/// The grid (z, y, x outermost first, as the GPU's block ids) around
/// `block(bm, bn, group)`, built at `b`'s insertion point; returns the
/// outermost loop.
static scf::ForOp buildTwinGrid(
    OpBuilder &b, Location loc, const Launch &l,
    function_ref<void(OpBuilder &, Location, Value, Value, Value)> block) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  scf::LoopNest grid =
      scf::buildLoopNest(b, loc, ValueRange{c(0), c(0), c(0)},
                         ValueRange{c(l.gridZ), c(l.gridY), c(l.gridX)},
                         ValueRange{c(1), c(1), c(1)},
                         [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
                           block(nb, nloc, ivs[2], ivs[1], ivs[0]);
                         });
  return grid.loops.front();
}

/// Explicit mode on the host: X_col stored by a loop over its elements.
static Value twinIm2col(OpBuilder &b, Location loc, const GemmProblem &p,
                        const TileConfig &t, Value x) {
  Value xcol = memref::AllocOp::create(
      b, loc, MemRefType::get({p.im2colElements()}, p.elementType));
  auto loop = scf::ForOp::create(
      b, loc, arith::ConstantIndexOp::create(b, loc, 0),
      arith::ConstantIndexOp::create(b, loc, p.im2colElements()),
      arith::ConstantIndexOp::create(b, loc, 1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  // An element's offset and predicate only: threads, no instructions.
  Sm80Twin threads;
  Sm80KernelBuilder(b, loc, p, t, threads)
      .emitIm2colElement(loop.getInductionVar(), x, xcol);
  return xcol;
}

namespace {
/// The mma.sync CTA's shared memory as stack buffers (at most 48 KiB; the
/// deallocation pipeline accepts no explicit frees): the rings, 128-byte
/// aligned as the GPU's (the twin's 16-byte vector stores, a pixel run of 8
/// f16, are aligned x86 stores), and the staged epilogue's tiles.
struct TwinShared {
  Value smemA, smemB, staging;
  EpilogueStaging stagingShape;
};
} // namespace

static TwinShared allocateTwinShared(OpBuilder &b, Location loc,
                                     const GemmProblem &p,
                                     const TileConfig &t) {
  TwinShared s;
  auto ring = [&](Operand op) -> Value {
    return memref::AllocaOp::create(b, loc,
                                    sharedType(p, t, op, /*memorySpace=*/{}),
                                    b.getI64IntegerAttr(128));
  };
  s.smemA = ring(Operand::A);
  s.smemB = ring(Operand::B);
  s.stagingShape = epilogueStaging(p, t);
  if (s.stagingShape.vector)
    s.staging = memref::AllocaOp::create(
        b, loc, stagingType(p, t, s.stagingShape, /*memorySpace=*/{}),
        b.getI64IntegerAttr(16));
  return s;
}

/// The epilogue's bias and residual as flat buffers (null where not fused).
static std::pair<Value, Value> flatEpilogue(OpBuilder &b, Location loc,
                                            const FusedEpilogue &epilogue) {
  auto flat = [&](Value v) { return v ? flatBuffer(b, loc, v) : Value(); };
  return {flat(epilogue.bias), flat(epilogue.residual)};
}

TwinLoops igemm::buildSm80Twin(OpBuilder &b, Location loc, const GemmProblem &p,
                               const TileConfig &t, Value input, Value filter,
                               const FusedEpilogue &epilogue,
                               RankedTensorType outputType) {
  assert(!t.directVector && "the direct depthwise kernel is Depthwise's");
  Value x = flatBuffer(b, loc, input), w = flatBuffer(b, loc, filter);
  auto [biasFlat, residualFlat] = flatEpilogue(b, loc, epilogue);
  if (p.explicitIm2col)
    x = twinIm2col(b, loc, p, t, x);
  Value output, y; // y is captured below: no structured binding (C++17)
  std::tie(output, y) = allocateResult(b, loc, outputType);
  TwinShared s = allocateTwinShared(b, loc, p, t);
  Sm80Twin hw(b, loc, p, t);
  // The kernel's tap table, in host memory (no constant-space budget).
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  Value tapTable = module ? createTapTable(b, module, p, t, /*memorySpace=*/0,
                                           /*budgetBytes=*/0, loc)
                          : Value();
  scf::ForOp grid = buildTwinGrid(
      b, loc, launchShape(p, t),
      [&](OpBuilder &nb, Location nloc, Value bm, Value bn, Value group) {
        Sm80KernelBuilder kb(nb, nloc, p, t, hw);
        kb.setBias(biasFlat);
        kb.setResidual(residualFlat);
        kb.setTapTable(tapTable);
        if (s.staging)
          kb.setStaging(s.staging, s.stagingShape);
        kb.emitBlock(bm, bn, group, x, w, y, s.smemA, s.smemB);
      });
  return {toTensor(b, loc, outputType, output), grid};
}

TwinLoops igemm::buildDepthwiseTwin(OpBuilder &b, Location loc,
                                    const GemmProblem &p, const TileConfig &t,
                                    Value input, Value filter,
                                    const FusedEpilogue &epilogue,
                                    RankedTensorType outputType) {
  assert(t.directVector && "not the direct depthwise kernel's tiles");
  // Threads only: the direct kernel issues no mma.sync.
  Sm80Twin hw;
  Value x = flatBuffer(b, loc, input), w = flatBuffer(b, loc, filter);
  auto [biasFlat, residualFlat] = flatEpilogue(b, loc, epilogue);
  Value output, y; // y is captured below: no structured binding (C++17)
  std::tie(output, y) = allocateResult(b, loc, outputType);
  scf::ForOp grid =
      buildTwinGrid(b, loc, launchShape(p, t),
                    [&](OpBuilder &nb, Location nloc, Value bm, Value, Value) {
                      DepthwiseKernelBuilder kb(nb, nloc, p, t, hw);
                      kb.setBias(biasFlat);
                      kb.setResidual(residualFlat);
                      kb.emitBlock(bm, x, w, y);
                    });
  return {toTensor(b, loc, outputType, output), grid};
}

/// Where the GPU would hang or fault (the twin's poison flag is set), every
/// output becomes NaN: no comparison passes.
static void poisonOutputIf(OpBuilder &b, Location loc, const GemmProblem &p,
                           Value poisonFlag, Value y) {
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  Value poisoned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      memref::LoadOp::create(b, loc, poisonFlag, ValueRange{c(0)}),
      arith::ConstantIntOp::create(b, loc, 0, 32));
  auto ifPoisoned =
      scf::IfOp::create(b, loc, poisoned, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifPoisoned.getThenRegion().front());
  auto fill = scf::ForOp::create(b, loc, c(0), c(p.outputElements), c(1));
  b.setInsertionPointToStart(fill.getBody());
  Value nan = arith::ConstantOp::create(
      b, loc,
      b.getFloatAttr(
          p.outputType,
          APFloat::getQNaN(cast<FloatType>(p.outputType).getFloatSemantics())));
  memref::StoreOp::create(b, loc, nan, y, ValueRange{fill.getInductionVar()});
}

TwinLoops igemm::buildSm90Twin(OpBuilder &b, Location loc, const GemmProblem &p,
                               const Sm90Tiles &t, Value input, Value filter,
                               const FusedEpilogue &epilogue,
                               RankedTensorType outputType) {
  Sm90Operands ops;
  ops.x = flatBuffer(b, loc, input);
  ops.w = flatBuffer(b, loc, filter);
  std::tie(ops.bias, ops.residual) = flatEpilogue(b, loc, epilogue);
  if (t.gatherA)
    ops.tapTable = createTapTable(
        b, b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>(),
        sm90TapTable(p, t), /*memorySpace=*/0, /*budgetBytes=*/0, loc);
  Value output;
  std::tie(output, ops.y) = allocateResult(b, loc, outputType);
  // Shared memory, the barriers' state, the consumers' registers: stack
  // buffers of one CTA, reused by the next.
  Sm90Twin hw(b, loc, p, t);
  if (EpilogueStaging staged = sm90Staging(p, t); staged.vector)
    ops.staging = memref::AllocaOp::create(
        b, loc,
        stagingType(p, sm90EpilogueTiles(t), staged, /*memorySpace=*/{}),
        b.getI64IntegerAttr(128));
  scf::ForOp grid = buildTwinGrid(
      b, loc, sm90LaunchShape(p, t),
      [&](OpBuilder &nb, Location nloc, Value bm, Value bn, Value group) {
        Sm90KernelBuilder(nb, nloc, p, t, hw).emitBlock(bm, bn, group, ops);
      });
  poisonOutputIf(b, loc, p, hw.poisonFlag(), ops.y);
  return {toTensor(b, loc, outputType, output), grid};
}
