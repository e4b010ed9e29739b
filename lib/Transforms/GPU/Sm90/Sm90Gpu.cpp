//===- Sm90Gpu.cpp - the sm_90a family's instructions ---------------------===//
//
// Sm90Hardware on the GPU: the warp-specialized CTA (the producer
// warpgroup's TMA thread or gathering threads, the consumer warpgroups'
// wgmma loop, the epilogue) and the NVVM ops of mbarrier, TMA, the
// async-proxy fence and wgmma.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/Core.h"
#include "Transforms/GPU/Sm90/Sm90Hardware.h"
#include "Transforms/GPU/Sm90/Sm90Kernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::conv_lower::igemm;

Sm90Hardware::~Sm90Hardware() = default;

//===----------------------------------------------------------------------===//
// Shared memory and the mbarriers
//===----------------------------------------------------------------------===//

Value Sm90Gpu::sharedAddress(Sm90KernelBuilder &kb, Value offset,
                             const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  Value address = arith::AddIOp::create(
      b, loc, ops.sharedBase,
      arith::ExtUIOp::create(b, loc, b.getI64Type(), offset));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
}

Value Sm90Gpu::sharedAddress64(Sm90KernelBuilder &kb, Value offset,
                               const Sm90Operands &ops) {
  Value wide = arith::ExtUIOp::create(kb.b, kb.loc, kb.b.getI64Type(), offset);
  return arith::AddIOp::create(kb.b, kb.loc, ops.sharedBase, wide);
}

Value Sm90Gpu::barrierAddress(Sm90KernelBuilder &kb, Value index,
                              const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  Value offset = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, index, kb.i32(8)),
      kb.i32(kb.t.barrierOffset(0, kb.p.elementBytes())));
  return sharedAddress(kb, offset, ops);
}

void Sm90Gpu::initBarriers(Sm90KernelBuilder &kb, const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const Sm90Tiles &t = kb.t;
  for (int64_t s = 0; s < t.stages; ++s) {
    NVVM::MBarrierInitOp::create(b, loc, barrierAddress(kb, kb.i32(s), ops),
                                 kb.i32(kb.fullArrivals()), Value());
    NVVM::MBarrierInitOp::create(b, loc,
                                 barrierAddress(kb, kb.i32(t.stages + s), ops),
                                 kb.i32(t.consumerThreads()), Value());
  }
  // The barriers are written by the generic proxy and completed by the
  // TMA's (the async proxy's) complete_tx: make the inits visible to both.
  NVVM::FenceMbarrierInitOp::create(b, loc);
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

void Sm90Gpu::waitParity(Sm90KernelBuilder &kb, Value barrier, Value parity,
                         const Sm90Operands &) {
  NVVM::MBarrierTryWaitParityOp::create(kb.b, kb.loc, barrier, parity,
                                        kb.i32(kTryWaitTicks));
}

void Sm90Gpu::arriveExpectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                             const Sm90Operands &) {
  NVVM::MBarrierArriveExpectTxOp::create(kb.b, kb.loc, Type(), barrier, bytes,
                                         NVVM::MemScopeKind::CTA, false,
                                         Value());
}

void Sm90Gpu::expectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                       const Sm90Operands &) {
  NVVM::MBarrierExpectTxOp::create(kb.b, kb.loc, barrier, bytes);
}

void Sm90Gpu::arrive(Sm90KernelBuilder &kb, Value barrier, int64_t,
                     const Sm90Operands &) {
  // Each of the threads executes this one arrival.
  NVVM::MBarrierArriveOp::create(kb.b, kb.loc, kb.b.getI64Type(), barrier,
                                 Value());
}

//===----------------------------------------------------------------------===//
// Copies into shared memory
//===----------------------------------------------------------------------===//

void Sm90Gpu::tmaCopy(Sm90KernelBuilder &kb, Value dst, Value map,
                      ValueRange coordinates, ValueRange offsets, Value full,
                      const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  auto cluster = LLVM::LLVMPointerType::get(b.getContext(), 7);
  Value dstCluster = LLVM::AddrSpaceCastOp::create(b, loc, cluster,
                                                   sharedAddress(kb, dst, ops));
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, dstCluster, map, coordinates, full, offsets, Value(), Value(),
      offsets.empty() ? NVVM::TMALoadMode::TILE : NVVM::TMALoadMode::IM2COL,
      false, nullptr, Value());
}

void Sm90Gpu::loadImageTile(Sm90KernelBuilder &kb, Value dst,
                            const ImageCopy &copy, Value barrier,
                            const Sm90Operands &ops) {
  tmaCopy(kb, dst, ops.imageMap, copy.coordinates, copy.offsets, barrier, ops);
}

void Sm90Gpu::loadFilterTile(Sm90KernelBuilder &kb, Value dst,
                             ArrayRef<Value> coordinates, Value barrier,
                             const Sm90Operands &ops) {
  tmaCopy(kb, dst, ops.filterMap, coordinates, ValueRange{}, barrier, ops);
}

void Sm90Gpu::storeSharedChunk(Sm90KernelBuilder &kb, Value offset,
                               ArrayRef<Value> elements,
                               const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  int64_t perChunk = elements.size();
  Value vector = vector::FromElementsOp::create(
      b, loc, VectorType::get({perChunk}, kb.p.elementType), elements);
  LLVM::StoreOp::create(b, loc, vector, sharedAddress(kb, offset, ops),
                        /*alignment=*/kChunkBytes);
}

void Sm90Gpu::fenceAsyncProxy(Sm90KernelBuilder &kb) {
  NVVM::FenceProxyOp::create(
      kb.b, kb.loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(kb.b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

//===----------------------------------------------------------------------===//
// wgmma
//===----------------------------------------------------------------------===//

void Sm90Gpu::wgmmaFence(Sm90KernelBuilder &kb) {
  NVVM::WgmmaFenceAlignedOp::create(kb.b, kb.loc);
}

Value Sm90Gpu::wgmma(Sm90KernelBuilder &kb, Value, Value descA, Value descB,
                     Value acc, bool overwrite, const Sm90Operands &) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const Sm90Tiles &t = kb.t;
  int64_t mmaK = wgmmaK(p);
  MLIRContext *ctx = b.getContext();
  // tf32 reads the f32 data TMA stored: the tensor core uses their top
  // 19 bits (no rounding step, unlike the mma.sync kernels' cvt.rn).
  NVVM::WGMMATypes type = p.kind == MmaKind::BF16   ? NVVM::WGMMATypes::bf16
                          : p.kind == MmaKind::TF32 ? NVVM::WGMMATypes::tf32
                                                    : NVVM::WGMMATypes::f16;
  acc = NVVM::WgmmaMmaAsyncOp::create(
      b, loc, acc.getType(), acc, descA, descB,
      NVVM::MMAShapeAttr::get(ctx, 64, t.blockN, mmaK),
      NVVM::WGMMATypesAttr::get(ctx, type),
      NVVM::WGMMATypesAttr::get(ctx, type),
      NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
      NVVM::WGMMAScaleOutAttr::get(ctx, overwrite ? NVVM::WGMMAScaleOut::zero
                                                  : NVVM::WGMMAScaleOut::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
      NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col), nullptr);
  return acc;
}

void Sm90Gpu::wgmmaCommitAndWait(Sm90KernelBuilder &kb, int64_t pending) {
  NVVM::WgmmaGroupSyncAlignedOp::create(kb.b, kb.loc);
  NVVM::WgmmaWaitGroupSyncOp::create(kb.b, kb.loc, pending);
}

//===----------------------------------------------------------------------===//
// The warp-specialized CTA
//===----------------------------------------------------------------------===//

void Sm90Gpu::runBlock(Sm90KernelBuilder &kb, Value bm, Value bn, Value group,
                       const Sm90Operands &given) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const Sm90Tiles &t = kb.t;
  Sm90Operands ops = given;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // The warpgroup index broadcast from lane 0, as CUTLASS's
  // canonical_warp_group_idx does: ptxas cannot prove tid / 128 uniform, and
  // with wgmma under a branch on it, it serialized every wgmma (C7520, a
  // WARPGROUP.DEPBAR after each HGMMA).
  Value warpgroup =
      kb.toIndex(gpu::ShuffleOp::create(
                     b, loc,
                     kb.toI32(arith::DivUIOp::create(
                         b, loc, tid, kb.idx(kWarpgroupThreads))),
                     kb.i32(0), kb.i32(kThreadsPerWarp), gpu::ShuffleMode::IDX)
                     .getShuffleResult());
  // Dynamic shared memory, its base rounded up to the swizzle atom (the
  // size asks for the slack).
  auto smemType = MemRefType::get(
      {ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface{},
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
  Value smem = gpu::DynamicSharedMemoryOp::create(b, loc, smemType);
  Value raw = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, smem));
  ops.sharedBase = arith::AndIOp::create(
      b, loc, arith::AddIOp::create(b, loc, raw, kb.i64(kSwizzleAtomBytes - 1)),
      kb.i64(~(kSwizzleAtomBytes - 1)));
  // The staged epilogue's tiles start at the aligned base, over the rings.
  if (kb.staged.vector) {
    Value offset = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(),
        arith::SubIOp::create(b, loc, ops.sharedBase, raw));
    auto type = stagingType(p, kb.epilogueTiles, kb.staged,
                            workgroupMemory(b.getContext()));
    kb.epilogue.setStaging(
        memref::ViewOp::create(b, loc, type, smem, offset, ValueRange{}),
        kb.staged);
  }
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, kb.idx(0));
  auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    initBarriers(kb, ops);
  }
  gpu::BarrierOp::create(b, loc);

  Value producer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         warpgroup, kb.idx(0));
  auto roles = scf::IfOp::create(b, loc, producer, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&roles.getThenRegion().front());
    if (t.gatherA) {
      runGatheringProducer(kb, tid, first, bm, bn, group, ops);
    } else {
      auto ifIssuer =
          scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      b.setInsertionPointToStart(&ifIssuer.getThenRegion().front());
      SmallVector<Value> pixel = kb.firstPixel(bm);
      auto loop =
          scf::ForOp::create(b, loc, kb.i32(0), kb.i32(kb.kTiles()), kb.i32(1));
      b.setInsertionPointToStart(loop.getBody());
      kb.emitProducerStep(loop.getInductionVar(), kb.toI32(bn), kb.toI32(group),
                          pixel, ops);
    }
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&roles.getElseRegion().front());
  Value consumer = arith::SubIOp::create(b, loc, warpgroup, kb.idx(1));
  auto accType = LLVM::LLVMStructType::getLiteral(
      b.getContext(),
      SmallVector<Type>(kb.accumulatorsPerThread(), b.getF32Type()));
  // K tile 0 apart, its first wgmma overwriting the accumulators (scale-d
  // 0), so that they need no zeroing: zeroed, their registers were written
  // between wgmma.fence and the first wgmma (LLVM sinks the moves), which
  // the PTX ISA forbids, and ptxas repaired that with a warpgroup.arrive of
  // its own (C7519).
  Value undefined = LLVM::PoisonOp::create(b, loc, accType);
  Value firstAcc =
      kb.emitConsumerStep(kb.i32(0), kb.toI32(consumer), undefined, ops,
                          /*overwrite=*/true);
  auto loop = scf::ForOp::create(b, loc, kb.i32(1), kb.i32(kb.kTiles()),
                                 kb.i32(1), ValueRange{firstAcc});
  {
    OpBuilder::InsertionGuard inLoop(b);
    b.setInsertionPointToStart(loop.getBody());
    Value acc = kb.emitConsumerStep(loop.getInductionVar(), kb.toI32(consumer),
                                    loop.getRegionIterArg(0), ops);
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  SmallVector<Value> accs;
  for (int64_t r = 0; r < kb.accumulatorsPerThread(); ++r)
    accs.push_back(LLVM::ExtractValueOp::create(b, loc, loop.getResult(0), r));
  Value tidInGroup =
      arith::RemUIOp::create(b, loc, tid, kb.idx(kWarpgroupThreads));
  if (!kb.staged.vector) {
    kb.emitEpilogue(consumer, tidInGroup, bm, bn, group, accs, ops);
    return;
  }
  // Both consumers' last wgmma have been waited for (wait_group 0) when
  // they pass this barrier of the 256 consumer threads: only then may a
  // warp's staged tile overwrite ring slots the other one reads. (The
  // producer warpgroup takes no part: its loads were all consumed.)
  NVVM::BarrierOp::create(b, loc, TypeRange{}, kb.i32(1),
                          kb.i32(t.consumerThreads()), /*reductionOp=*/nullptr,
                          Value());
  kb.stageEpilogue(consumer, tidInGroup, bn, group, accs);
  NVVM::SyncWarpOp::create(b, loc, kb.i32(-1));
  kb.storeStagedEpilogue(consumer, tidInGroup, bm, bn, group, ops);
}

void Sm90Gpu::runGatheringProducer(Sm90KernelBuilder &kb, Value tid,
                                   Value first, Value bm, Value bn, Value group,
                                   const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  // Thread tid (< 128 here) gathers row tid of every A tile.
  Sm80KernelBuilder::RowPlace place = kb.gatherPlace(bm, tid);
  auto loop =
      scf::ForOp::create(b, loc, kb.i32(0), kb.i32(kb.kTiles()), kb.i32(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kt = loop.getInductionVar();
  // The loads need no slot: they are issued before the wait.
  SmallVector<Value> values = kb.gatherRow(kt, place, group, ops);
  kb.waitForSlot(kt, ops);
  auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard inFirst(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    kb.armFilterTile(kt, kb.toI32(bn), kb.toI32(group), ops);
  }
  kb.storeGatheredRow(kt, tid, values, ops);
  kb.publishGatheredRow(kt, ops);
}
