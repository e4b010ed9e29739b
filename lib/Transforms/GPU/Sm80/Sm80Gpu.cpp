//===- Sm80Gpu.cpp - the mma.sync family's instructions -------------------===//
//
// Sm80Hardware on the GPU: the executing thread's own view of the body.
// Copies are cp.async (nvgpu.device_async_copy, zero-filling what lies
// outside the operand), fragments come from ldmatrix, the MMAs are
// mma.sync on registers the main loop carries, and the epilogue stores the
// fragments (through the staged tiles, between barriers, where there are
// some).
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Sm80/Sm80Hardware.h"
#include "Transforms/GPU/Sm80/Sm80Kernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <array>

using namespace mlir;
using namespace mlir::conv_lower::igemm;

Sm80Hardware::~Sm80Hardware() = default;

Value Sm80Gpu::threadId(OpBuilder &b, Location loc) {
  return gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
}

void Sm80Gpu::forEach(OpBuilder &, Location, int64_t, Value gpuId,
                      function_ref<void(Value)> body) {
  body(gpuId);
}

Value Sm80Gpu::commitGroup(OpBuilder &b, Location loc, ValueRange tokens) {
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
}

void Sm80Gpu::waitGroups(OpBuilder &b, Location loc, Value token,
                         int64_t pending) {
  nvgpu::DeviceAsyncWaitOp::create(b, loc, token, b.getI32IntegerAttr(pending));
}

void Sm80Gpu::barrier(OpBuilder &b, Location loc) {
  gpu::BarrierOp::create(b, loc);
}

Value Sm80Gpu::copyChunk(Sm80KernelBuilder &kb, const ChunkCopy &c) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  int64_t v = c.type.getNumElements();
  // Zero-fill: a copy of 0 source bytes writes 16 zero bytes.
  Value srcElements = kb.select(c.valid, kb.idx(v), kb.idx(0));
  auto copy = [&] {
    return nvgpu::DeviceAsyncCopyOp::create(
        b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), c.smem,
        c.indices, c.src, ValueRange{c.offset}, b.getIndexAttr(v), srcElements,
        b.getUnitAttr());
  };
  if (!c.padding)
    return copy();
  // Padding that reads a non-zero value is stored by the thread (no copy is
  // issued for it: its zero-fill would race with the store); the stage's
  // commit group covers the copies of the other chunks.
  auto ifOp = scf::IfOp::create(b, loc, c.padding, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  vector::StoreOp::create(b, loc, kb.elementConstant(c.type, kb.p.padValue),
                          c.smem, c.indices);
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  copy();
  return Value();
}

SmallVector<Value> Sm80Gpu::zeroAccumulators(Sm80KernelBuilder &kb) {
  auto accType = VectorType::get({4}, kb.p.accumulatorType);
  Value zeros = arith::ConstantOp::create(
      kb.b, kb.loc, accType,
      DenseElementsAttr::get(accType, kb.b.getZeroAttr(kb.p.accumulatorType)));
  return SmallVector<Value>(kb.accumulatorSlots(), zeros);
}

SmallVector<Value> Sm80Gpu::computeStage(Sm80KernelBuilder &kb, Value smemA,
                                         Value smemB, Value stage, Value tid,
                                         ValueRange accs) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const TileConfig &t = kb.t;
  int64_t tilesM = t.warpM() / 16, tilesN = t.warpN() / 8;
  Value warp = kb.div(tid, kThreadsPerWarp),
        lane = kb.rem(tid, kThreadsPerWarp);
  auto [warpRow, warpCol] = kb.warpOrigin(warp);
  int64_t regElems = p.registerElements();
  auto fragType = VectorType::get({4, regElems}, p.elementType);
  SmallVector<Value> out(accs.begin(), accs.end());
  int64_t chunksPerRow = t.blockK / p.chunkElements();
  Value onesFragment, onesRegister;
  if (p.needsRowSums() || p.needsColumnSums()) {
    onesFragment = kb.elementConstant(fragType, 1);
    onesRegister =
        kb.elementConstant(VectorType::get({regElems}, p.elementType), 1);
  }
  for (int64_t kk = 0; kk < chunksPerRow / 2; ++kk) {
    SmallVector<Value> aFrags, bFrags;
    for (int64_t i = 0; i < tilesM; ++i) {
      auto [row, col] = kb.ldmatrixAddressA(lane, warpRow, i, kk);
      aFrags.push_back(nvgpu::LdMatrixOp::create(
          b, loc, fragType, smemA, ValueRange{stage, row, col},
          /*transpose=*/pixelRun(p, t) != 0, 4));
    }
    for (int64_t j = 0; j < tilesN; j += 2) {
      auto [row, col] = kb.ldmatrixAddressB(lane, warpCol, j, kk);
      Value frag = nvgpu::LdMatrixOp::create(
          b, loc, fragType, smemB, ValueRange{stage, row, col}, false, 4);
      for (int64_t r = 0; r < 4; ++r)
        bFrags.push_back(
            vector::ExtractOp::create(b, loc, frag, ArrayRef<int64_t>{r}));
    }
    for (int64_t i = 0; i < tilesM; ++i)
      for (int64_t j = 0; j < tilesN; ++j)
        out[i * tilesN + j] = mma(kb, aFrags[i], bFrags[2 * j],
                                  bFrags[2 * j + 1], out[i * tilesN + j]);
    // The zero-point sums: A times an all-ones B gives each row's sum in
    // every column of D (and ones times B each column's), in the same
    // fragment positions as the GEMM's own accumulators.
    for (int64_t i = 0; p.needsRowSums() && i < tilesM; ++i)
      out[kb.rowSumSlot(i)] =
          mma(kb, aFrags[i], onesRegister, onesRegister, out[kb.rowSumSlot(i)]);
    for (int64_t j = 0; p.needsColumnSums() && j < tilesN; ++j)
      out[kb.columnSumSlot(j)] =
          mma(kb, onesFragment, bFrags[2 * j], bFrags[2 * j + 1],
              out[kb.columnSumSlot(j)]);
  }
  return out;
}

void Sm80Gpu::epilogue(Sm80KernelBuilder &kb, Value y, Value bm, Value bn,
                       Value group, Value tid, ValueRange accs) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const TileConfig &t = kb.t;
  int64_t tilesN = t.warpN() / 8;
  Value warp = kb.div(tid, kThreadsPerWarp),
        lane = kb.rem(tid, kThreadsPerWarp);
  auto [warpRow, warpCol] = kb.warpOrigin(warp);
  Value rowBase = kb.add(kb.mul(bm, t.blockM), warpRow);
  Value colBase = kb.add(kb.mul(bn, t.blockN), warpCol);
  int64_t tilesM = t.warpM() / 16;
  auto element = [&](Value acc, int64_t v) -> Value {
    return vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{v});
  };
  auto tileValues = [&](int64_t i, int64_t j) {
    SmallVector<Value> values;
    for (int64_t v = 0; v < 4; ++v) {
      // Element v of a sum tile sits at the row (column) of element v of
      // every GEMM tile in its row (column) of tiles.
      Value rowSum =
          p.needsRowSums() ? element(accs[kb.rowSumSlot(i)], v) : Value();
      Value columnSum =
          p.needsColumnSums() ? element(accs[kb.columnSumSlot(j)], v) : Value();
      values.push_back(kb.applyZeroPoints(element(accs[i * tilesN + j], v),
                                          rowSum, columnSum));
    }
    return values;
  };
  if (!kb.staging) {
    for (int64_t i = 0; i < tilesM; ++i)
      for (int64_t j = 0; j < tilesN; ++j)
        kb.storeFragment(y, lane, i, j, rowBase, colBase, group,
                         tileValues(i, j));
    return;
  }
  // The staged tiles lie over the rings: every warp must be done reading
  // them (its last ldmatrix) first. Within a warp, bar.warp.sync orders the
  // lanes' shared writes before the reads of other lanes, and those reads
  // before the next row's writes.
  gpu::BarrierOp::create(b, loc);
  Value allLanes = kb.i32Constant(-1);
  for (int64_t i = 0; i < tilesM; ++i) {
    if (i > 0)
      NVVM::SyncWarpOp::create(b, loc, allLanes);
    SmallVector<Value> values;
    for (int64_t j = 0; j < tilesN; ++j)
      llvm::append_range(values, tileValues(i, j));
    kb.stageRow(warp, lane, colBase, group, values);
    NVVM::SyncWarpOp::create(b, loc, allLanes);
    kb.storeStagedRow(y, warp, lane, kb.add(rowBase, i * 16), colBase, group);
  }
}

/// One mma.sync; `a` and the B registers come from ldmatrix, `acc` is the
/// thread's four accumulators as vector<4xf32> (vector<4xi32> for s8).
Value Sm80Gpu::mma(Sm80KernelBuilder &kb, Value a, Value bFrag0, Value bFrag1,
                   Value acc) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type(), accType = p.accumulatorType;
  // A .b32 register of the fragment: f16 pairs stay vector<2xf16>; bf16
  // pairs, s8 quads and tf32 values travel as i32, as the PTX instruction
  // wants.
  auto asRegister = [&](Value row, Operand op) -> Value {
    if (p.kind == MmaKind::F16)
      return row;
    // Rounded as it was gathered: the bits are the operand already.
    if (p.kind == MmaKind::TF32 && !kb.roundsAtGather(op)) {
      // Round to tf32 (to nearest, as cuDNN and CUTLASS do): the mma would
      // otherwise truncate the f32 bits, a bias of about 1e-3 relative,
      // which is the whole tf32 tolerance.
      return tf32Bits(
          kb, vector::ExtractOp::create(b, loc, row, ArrayRef<int64_t>{0}));
    }
    auto i32Vec = VectorType::get({1}, i32);
    Value bits = vector::BitCastOp::create(b, loc, i32Vec, row);
    return vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0});
  };
  SmallVector<Value> aRegs,
      bRegs = {asRegister(bFrag0, Operand::B), asRegister(bFrag1, Operand::B)},
      cRegs;
  for (int64_t r = 0; r < 4; ++r)
    aRegs.push_back(
        asRegister(vector::ExtractOp::create(b, loc, a, ArrayRef<int64_t>{r}),
                   Operand::A));
  for (int64_t r = 0; r < 4; ++r)
    cRegs.push_back(
        vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{r}));
  NVVM::MMATypes ptxType = p.kind == MmaKind::F16    ? NVVM::MMATypes::f16
                           : p.kind == MmaKind::BF16 ? NVVM::MMATypes::bf16
                           : p.kind == MmaKind::S8   ? NVVM::MMATypes::s8
                                                     : NVVM::MMATypes::tf32;
  // Integer MMAs wrap on overflow, as linalg's i32 adds and multiplies do
  // (satfinite would clamp and differ from the op).
  std::optional<NVVM::MMAIntOverflow> overflow;
  if (p.isInteger())
    overflow = NVVM::MMAIntOverflow::wrapped;
  auto structType = LLVM::LLVMStructType::getLiteral(
      ctx, {accType, accType, accType, accType});
  Value d = NVVM::MmaOp::create(
      b, loc, structType, aRegs, bRegs, cRegs,
      ArrayRef<int64_t>{16, 8, p.mmaK()}, std::nullopt, overflow,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t r = 0; r < 4; ++r)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, d, r));
  return vector::FromElementsOp::create(b, loc, VectorType::get({4}, accType),
                                        out);
}

Value Sm80Gpu::tf32Bits(Sm80KernelBuilder &kb, Value value) {
  // cvt.rn where the chip has it in one instruction
  // (GemmProblem::nativeTf32Rounding), else cvt.rna.
  return NVVM::ConvertFloatToTF32Op::create(
      kb.b, kb.loc, kb.b.getI32Type(), value,
      NVVM::FPRoundingModeAttr::get(kb.b.getContext(),
                                    kb.p.nativeTf32Rounding
                                        ? NVVM::FPRoundingMode::RN
                                        : NVVM::FPRoundingMode::RNA));
}

Value Sm80Gpu::roundToTf32(Sm80KernelBuilder &kb, Value value) {
  // The fragments' own rounding, kept as f32: the rounded value has its low
  // 13 bits clear, so ldmatrix then reads exactly the operand the mma would
  // have got from converting the fragment (rounding to tf32 is idempotent),
  // and the padding zeros stay zeros.
  return arith::BitcastOp::create(kb.b, kb.loc, kb.b.getF32Type(),
                                  tf32Bits(kb, value));
}
