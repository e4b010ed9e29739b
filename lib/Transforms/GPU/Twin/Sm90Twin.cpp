//===- Sm90Twin.cpp - the sm_90a family's instructions on the CPU --------===//
//
// Sm90Hardware on the host. The warpgroups run in one valid order (the
// producer's K tile, then the consumers'), their threads as loops, and each
// instruction as the PTX ISA defines it: mbarrier phases, arrival and
// transaction counts; TMA im2col and tiled boxes with zero fill, read from
// the tensor maps the runtime encodes (not from the problem); the 128-byte
// swizzle; wgmma's descriptor decoding and D fragment layout. A wait that
// would block in that order, or a count, descriptor or address the kernel
// should never produce, sets the poison flag, and the launch turns every
// output into NaN: where the GPU would hang or fault, no comparison passes.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Twin/Sm90Twin.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::conv_lower::igemm;

Sm90Twin::Sm90Twin(OpBuilder &b, Location loc, const GemmProblem &p,
                   const Sm90Tiles &t) {
  auto stackBuffer = [&](ArrayRef<int64_t> shape, Type type) -> Value {
    return memref::AllocaOp::create(b, loc, MemRefType::get(shape, type),
                                    b.getI64IntegerAttr(128));
  };
  int64_t ringBytes = t.barrierOffset(0, p.elementBytes());
  shared = stackBuffer({ringBytes / p.elementBytes()}, p.elementType);
  barriers = stackBuffer({2 * t.stages, 4}, b.getI32Type());
  acc = stackBuffer({t.consumers, kWarpgroupThreads, t.blockN / 2},
                    b.getF32Type());
  poison = stackBuffer({1}, b.getI32Type());
  memref::StoreOp::create(
      b, loc, arith::ConstantIntOp::create(b, loc, 0, 32), poison,
      ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
}

Value Sm90Twin::sharedAddress64(Sm90KernelBuilder &kb, Value offset,
                                const Sm90Operands &) {
  return arith::ExtUIOp::create(kb.b, kb.loc, kb.b.getI64Type(), offset);
}

void Sm90Twin::arriveExpectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                              const Sm90Operands &) {
  arriveTx(kb, barrier, bytes, /*count=*/1);
}

void Sm90Twin::expectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                        const Sm90Operands &) {
  arriveTx(kb, barrier, bytes, /*count=*/0);
}

void Sm90Twin::arrive(Sm90KernelBuilder &kb, Value barrier, int64_t threads,
                      const Sm90Operands &) {
  arriveTx(kb, barrier, kb.i32(0), threads);
}

void Sm90Twin::storeSharedChunk(Sm90KernelBuilder &kb, Value offset,
                                ArrayRef<Value> elements,
                                const Sm90Operands &) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  Value first = arith::DivUIOp::create(b, loc, kb.toIndex(offset),
                                       kb.idx(kb.p.elementBytes()));
  for (auto [i, element] : llvm::enumerate(elements))
    memref::StoreOp::create(
        b, loc, element, shared,
        ValueRange{arith::AddIOp::create(b, loc, first, kb.idx(i))});
}

Value Sm90Twin::wgmma(Sm90KernelBuilder &kb, Value consumer, Value descA,
                      Value descB, Value, bool overwrite,
                      const Sm90Operands &) {
  // The twin's accumulators are zeroed memory when the block starts (the
  // GPU's K tile 0 overwrites instead, scale-d 0).
  assert(!overwrite && "the twin zeroes its accumulators");
  (void)overwrite;
  emulateWgmma(kb, consumer, descA, descB);
  return Value();
}

void Sm90Twin::runBlock(Sm90KernelBuilder &kb, Value bm, Value bn, Value group,
                        const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const Sm90Tiles &t = kb.t;
  initBarriers(kb);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  forEach(kb, t.consumers, [&](Value c) {
    forEach(kb, kWarpgroupThreads, [&](Value tid) {
      forEach(kb, kb.accumulatorsPerThread(), [&](Value r) {
        memref::StoreOp::create(b, loc, zero, acc, ValueRange{c, tid, r});
      });
    });
  });
  SmallVector<Value> pixel = kb.firstPixel(bm);
  // One valid order of the warps' work: the producer's tile kt, then the
  // consumers' tile kt. When the protocol is right every wait the kernel
  // makes is already satisfied in it (a consumer frees slot kt-1 at kt,
  // before the producer needs it again at kt-1+S).
  auto loop =
      scf::ForOp::create(b, loc, kb.i32(0), kb.i32(kb.kTiles()), kb.i32(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    if (t.gatherA) {
      // Thread 0's slot wait, expect_tx and B copy, then every thread's row
      // (their waits are thread 0's, already satisfied).
      kb.waitForSlot(kt, ops);
      kb.armFilterTile(kt, kb.toI32(bn), kb.toI32(group), ops);
      forEach(kb, kWarpgroupThreads, [&](Value tid) {
        Sm80KernelBuilder::RowPlace place = kb.gatherPlace(bm, tid);
        kb.storeGatheredRow(kt, tid, kb.gatherRow(kt, place, group, ops), ops);
        kb.publishGatheredRow(kt, ops);
      });
    } else {
      kb.emitProducerStep(kt, kb.toI32(bn), kb.toI32(group), pixel, ops);
    }
    forEach(kb, t.consumers, [&](Value c) {
      kb.emitConsumerStep(kt, kb.toI32(c), Value(), ops);
    });
  }
  forEach(kb, t.consumers, [&](Value c) {
    auto threadAccumulators = [&](Value tid) {
      SmallVector<Value> accs;
      for (int64_t r = 0; r < kb.accumulatorsPerThread(); ++r)
        accs.push_back(
            memref::LoadOp::create(b, loc, acc, ValueRange{c, tid, kb.idx(r)}));
      return accs;
    };
    if (!kb.staged.vector) {
      forEach(kb, kWarpgroupThreads, [&](Value tid) {
        kb.emitEpilogue(c, tid, bm, bn, group, threadAccumulators(tid), ops);
      });
      return;
    }
    // The staged epilogue's two halves, every thread's writes before any
    // thread's reads (the GPU's warp barrier between them).
    forEach(kb, kWarpgroupThreads, [&](Value tid) {
      kb.stageEpilogue(c, tid, bn, group, threadAccumulators(tid));
    });
    forEach(kb, kWarpgroupThreads, [&](Value tid) {
      kb.storeStagedEpilogue(c, tid, bm, bn, group, ops);
    });
  });
}

namespace {
/// The emulated mbarrier's state words.
enum BarrierWord : int64_t {
  Pending = 0,
  Expected = 1,
  TxCount = 2,
  Phase = 3
};
} // namespace

void Sm90Twin::poisonIf(Sm90KernelBuilder &kb, Value condition) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  auto ifBad = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifBad.getThenRegion().front());
  memref::StoreOp::create(b, loc, kb.i32(1), poison, ValueRange{kb.idx(0)});
}

Value Sm90Twin::barrierWord(Sm90KernelBuilder &kb, Value barrier,
                            int64_t word) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  return memref::LoadOp::create(b, loc, barriers,
                                ValueRange{kb.toIndex(barrier), kb.idx(word)});
}

void Sm90Twin::setBarrierWord(Sm90KernelBuilder &kb, Value barrier,
                              int64_t word, Value v) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  memref::StoreOp::create(b, loc, v, barriers,
                          ValueRange{kb.toIndex(barrier), kb.idx(word)});
}

void Sm90Twin::initBarriers(Sm90KernelBuilder &kb) {
  const Sm90Tiles &t = kb.t;
  for (int64_t i = 0; i < 2 * t.stages; ++i) {
    // mbarrier.init: phase 0, pending = expected = count, tx-count 0.
    int64_t count = i < t.stages ? kb.fullArrivals() : t.consumerThreads();
    setBarrierWord(kb, kb.i32(i), Pending, kb.i32(count));
    setBarrierWord(kb, kb.i32(i), Expected, kb.i32(count));
    setBarrierWord(kb, kb.i32(i), TxCount, kb.i32(0));
    setBarrierWord(kb, kb.i32(i), Phase, kb.i32(0));
  }
}

void Sm90Twin::completePhaseIfDone(Sm90KernelBuilder &kb, Value barrier) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  // The current phase completes when every expected arrival has happened
  // and the transaction count is back to zero; the next phase then expects
  // the same arrivals.
  Value pending = barrierWord(kb, barrier, Pending);
  Value tx = barrierWord(kb, barrier, TxCount);
  poisonIf(kb, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, pending,
                                     kb.i32(0)));
  Value done = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pending,
                            kb.i32(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tx, kb.i32(0)));
  auto ifDone = scf::IfOp::create(b, loc, done, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifDone.getThenRegion().front());
  setBarrierWord(kb, barrier, Phase,
                 arith::AddIOp::create(b, loc, barrierWord(kb, barrier, Phase),
                                       kb.i32(1)));
  setBarrierWord(kb, barrier, Pending, barrierWord(kb, barrier, Expected));
}

void Sm90Twin::arriveTx(Sm90KernelBuilder &kb, Value barrier, Value txBytes,
                        int64_t count) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  setBarrierWord(kb, barrier, TxCount,
                 arith::AddIOp::create(
                     b, loc, barrierWord(kb, barrier, TxCount), txBytes));
  setBarrierWord(kb, barrier, Pending,
                 arith::SubIOp::create(
                     b, loc, barrierWord(kb, barrier, Pending), kb.i32(count)));
  completePhaseIfDone(kb, barrier);
}

void Sm90Twin::completeTx(Sm90KernelBuilder &kb, Value barrier, Value txBytes) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  Value tx =
      arith::SubIOp::create(b, loc, barrierWord(kb, barrier, TxCount), txBytes);
  // The kernel arms the barrier (expect_tx) before it issues the copies, so
  // more bytes landing than it expected is a wrong count: on the GPU the
  // phase would complete before the last copy did.
  poisonIf(kb, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, tx,
                                     kb.i32(0)));
  setBarrierWord(kb, barrier, TxCount, tx);
  completePhaseIfDone(kb, barrier);
}

void Sm90Twin::waitParity(Sm90KernelBuilder &kb, Value barrier, Value parity,
                          const Sm90Operands &) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  // try_wait.parity(P) returns once the phase of parity P has completed,
  // i.e. while the current phase's parity differs from P.
  Value current =
      arith::AndIOp::create(b, loc, barrierWord(kb, barrier, Phase), kb.i32(1));
  poisonIf(kb, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, current,
                                     parity));
}

void Sm90Twin::swizzledStore(Sm90KernelBuilder &kb, Value address,
                             Value value) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  // Swizzle<3,4,3>: bits [4, 7) of the byte address XOR bits [7, 10).
  Value row = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, address, kb.idx(7)), kb.idx(7));
  Value physical = arith::XOrIOp::create(
      b, loc, address, arith::ShLIOp::create(b, loc, row, kb.idx(4)));
  memref::StoreOp::create(b, loc, value, shared,
                          ValueRange{arith::DivUIOp::create(
                              b, loc, physical, kb.idx(p.elementBytes()))});
}

void Sm90Twin::forEach(Sm90KernelBuilder &kb, int64_t n,
                       function_ref<void(Value)> body) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  auto loop = scf::ForOp::create(b, loc, kb.idx(0), kb.idx(n), kb.idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

Value Sm90Twin::signedIndex(Sm90KernelBuilder &kb, Value i32v) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32v);
}

void Sm90Twin::loadImageTile(Sm90KernelBuilder &kb, Value dst,
                             const ImageCopy &copy, Value barrier,
                             const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const Sm90Tiles &t = kb.t;
  // From the tensor map (what the runtime encodes), not from the problem.
  convrt::TensorMapSpec map = imageTensorMap(p, t);
  int64_t e = p.elementBytes();
  int64_t c = map.dims[0], w = map.dims[1], h = map.dims[2], n = map.dims[3];
  int64_t sw = map.elementStrides[1], sh = map.elementStrides[2];
  int64_t lowW = map.lowerCorner[0], lowH = map.lowerCorner[1];
  int64_t boxW = (w - 1 + map.upperCorner[0] - lowW) / sw + 1;
  int64_t boxH = (h - 1 + map.upperCorner[1] - lowH) / sh + 1;
  auto add = [&](Value a, int64_t v) {
    return arith::AddIOp::create(b, loc, a, kb.idx(v));
  };
  auto mul = [&](Value a, int64_t v) {
    return arith::MulIOp::create(b, loc, a, kb.idx(v));
  };
  Value c0 = signedIndex(kb, copy.coordinates[0]);
  Value w0 = signedIndex(kb, copy.coordinates[1]);
  Value h0 = signedIndex(kb, copy.coordinates[2]);
  Value n0 = signedIndex(kb, copy.coordinates[3]);
  Value offW =
      arith::IndexCastUIOp::create(b, loc, b.getIndexType(), copy.offsets[0]);
  Value offH =
      arith::IndexCastUIOp::create(b, loc, b.getIndexType(), copy.offsets[1]);
  // The copy's first pixel as a position of the box traversal (W fastest,
  // then H, then N); a start that is no box position is a kernel bug.
  Value wFromLow = add(w0, -lowW), hFromLow = add(h0, -lowH);
  poisonIf(kb, arith::OrIOp::create(
                   b, loc,
                   arith::CmpIOp::create(
                       b, loc, arith::CmpIPredicate::ne,
                       arith::RemSIOp::create(b, loc, wFromLow, kb.idx(sw)),
                       kb.idx(0)),
                   arith::CmpIOp::create(
                       b, loc, arith::CmpIPredicate::ne,
                       arith::RemSIOp::create(b, loc, hFromLow, kb.idx(sh)),
                       kb.idx(0))));
  Value start = arith::AddIOp::create(
      b, loc,
      mul(arith::AddIOp::create(
              b, loc, mul(n0, boxH),
              arith::DivSIOp::create(b, loc, hFromLow, kb.idx(sh))),
          boxW),
      arith::DivSIOp::create(b, loc, wFromLow, kb.idx(sw)));
  Value dstIndex = signedIndex(kb, dst);
  forEach(kb, map.box[1], [&](Value pixel) {
    Value linear = arith::AddIOp::create(b, loc, start, pixel);
    Value wi = arith::RemSIOp::create(b, loc, linear, kb.idx(boxW));
    Value hi = arith::RemSIOp::create(
        b, loc, arith::DivSIOp::create(b, loc, linear, kb.idx(boxW)),
        kb.idx(boxH));
    Value ni = arith::DivSIOp::create(b, loc, linear, kb.idx(boxW * boxH));
    Value wc = arith::AddIOp::create(b, loc, add(mul(wi, sw), lowW), offW);
    Value hc = arith::AddIOp::create(b, loc, add(mul(hi, sh), lowH), offH);
    auto within = [&](Value v, int64_t size) {
      return arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v,
                                kb.idx(0)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v,
                                kb.idx(size)));
    };
    Value pixelInside = arith::AndIOp::create(
        b, loc, arith::AndIOp::create(b, loc, within(wc, w), within(hc, h)),
        within(ni, n));
    forEach(kb, map.box[0], [&](Value ch) {
      Value channel = arith::AddIOp::create(b, loc, c0, ch);
      Value inside =
          arith::AndIOp::create(b, loc, pixelInside, within(channel, c));
      Value offset = arith::AddIOp::create(
          b, loc,
          arith::AddIOp::create(
              b, loc, mul(ni, map.stridesBytes[2] / e),
              arith::AddIOp::create(b, loc, mul(hc, map.stridesBytes[1] / e),
                                    mul(wc, map.stridesBytes[0] / e))),
          channel);
      Value value = loadOrZero(kb, ops.x, inside, offset);
      swizzledStore(kb,
                    arith::AddIOp::create(
                        b, loc, dstIndex,
                        arith::AddIOp::create(
                            b, loc, mul(pixel, map.box[0] * e), mul(ch, e))),
                    value);
    });
  });
  completeTx(kb, barrier, kb.i32(boxBytes(map, e)));
}

Value Sm90Twin::loadOrZero(Sm90KernelBuilder &kb, Value buffer, Value inside,
                           Value offset) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(p.elementType));
  // The address is clamped first: outside the tensor nothing is read.
  Value safe = arith::SelectOp::create(b, loc, inside, offset, kb.idx(0));
  Value value = memref::LoadOp::create(b, loc, buffer, ValueRange{safe});
  return arith::SelectOp::create(b, loc, inside, value, zero);
}

void Sm90Twin::loadFilterTile(Sm90KernelBuilder &kb, Value dst,
                              ArrayRef<Value> coords, Value barrier,
                              const Sm90Operands &ops) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  const Sm90Tiles &t = kb.t;
  convrt::TensorMapSpec map = filterTensorMap(p, t);
  int64_t e = p.elementBytes();
  Value k0 = signedIndex(kb, coords[0]), row0 = signedIndex(kb, coords[1]);
  Value dstIndex = signedIndex(kb, dst);
  forEach(kb, map.box[1], [&](Value i) {
    Value row = arith::AddIOp::create(b, loc, row0, i);
    forEach(kb, map.box[0], [&](Value j) {
      Value k = arith::AddIOp::create(b, loc, k0, j);
      Value inside = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                kb.idx(map.dims[1])),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                kb.idx(map.dims[0])));
      Value offset = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, row, kb.idx(map.stridesBytes[0] / e)),
          k);
      Value value = loadOrZero(kb, ops.w, inside, offset);
      Value address = arith::AddIOp::create(
          b, loc, dstIndex,
          arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, i, kb.idx(map.box[0] * e)),
              arith::MulIOp::create(b, loc, j, kb.idx(e))));
      swizzledStore(kb, address, value);
    });
  });
  completeTx(kb, barrier, kb.i32(boxBytes(map, e)));
}

std::pair<Value, Value> Sm90Twin::fragmentPosition(Sm90KernelBuilder &kb,
                                                   Value tid, Value reg) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  // PTX ISA, "Register fragments and shared memory matrix layouts", wgmma
  // .m64nNk16 / k8 D: row = 16 * warp + groupID (+ 8 for d2, d3 of each
  // quadruple), column = 8 * quadruple + 2 * threadID_in_group (+ 1 for odd
  // registers).
  auto cst = [&](int64_t v) { return kb.idx(v); };
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(32));
  Value laneGroup = arith::DivUIOp::create(
      b, loc, arith::RemUIOp::create(b, loc, tid, cst(32)), cst(4));
  Value inGroup = arith::RemUIOp::create(b, loc, tid, cst(4));
  Value quad = arith::DivUIOp::create(b, loc, reg, cst(4));
  Value inQuad = arith::RemUIOp::create(b, loc, reg, cst(4));
  Value lower = arith::DivUIOp::create(b, loc, inQuad, cst(2));
  Value odd = arith::RemUIOp::create(b, loc, inQuad, cst(2));
  Value row = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, warp, cst(16)),
      arith::AddIOp::create(b, loc, laneGroup,
                            arith::MulIOp::create(b, loc, lower, cst(8))));
  Value col = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, quad, cst(8)),
      arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, inGroup, cst(2)), odd));
  return {row, col};
}

Value Sm90Twin::operand(Sm90KernelBuilder &kb, Value desc, Value row, Value k) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  auto field = [&](int64_t shift, int64_t mask) {
    Value v = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, desc, kb.i64(shift)),
        kb.i64(mask));
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  };
  Value start = arith::ShLIOp::create(b, loc, field(0, 0x3fff), kb.idx(4));
  Value strideBytes =
      arith::ShLIOp::create(b, loc, field(32, 0x3fff), kb.idx(4));
  Value baseOffset = field(49, 0x7);
  Value swizzle = field(62, 0x3);
  // The kernel only builds 128B-swizzled K-major operands on 1024-byte
  // aligned atoms (mode 1, base offset 0); anything else is a bug.
  poisonIf(kb, arith::OrIOp::create(
                   b, loc,
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                         swizzle, kb.idx(1)),
                   arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                         baseOffset, kb.idx(0))));
  // K-major, 128B swizzle: 8-row atoms of 128-byte rows, atoms `stride`
  // bytes apart; the element's byte address, then the swizzle of its bits.
  int64_t e = p.elementBytes();
  Value address = arith::AddIOp::create(
      b, loc, start,
      arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc,
                                arith::DivUIOp::create(b, loc, row, kb.idx(8)),
                                strideBytes),
          arith::AddIOp::create(
              b, loc,
              arith::MulIOp::create(
                  b, loc, arith::RemUIOp::create(b, loc, row, kb.idx(8)),
                  kb.idx(kSwizzleRowBytes)),
              arith::MulIOp::create(b, loc, k, kb.idx(e)))));
  Value bits = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, address, kb.idx(7)), kb.idx(7));
  Value physical = arith::XOrIOp::create(
      b, loc, address, arith::ShLIOp::create(b, loc, bits, kb.idx(4)));
  Value element = arith::DivUIOp::create(b, loc, physical, kb.idx(e));
  int64_t size = kb.ringBytes() / e;
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       element, kb.idx(size));
  poisonIf(kb, arith::XOrIOp::create(
                   b, loc, inside, arith::ConstantIntOp::create(b, loc, 1, 1)));
  Value safe = arith::SelectOp::create(b, loc, inside, element, kb.idx(0));
  Value v = memref::LoadOp::create(b, loc, shared, ValueRange{safe});
  // tf32 operands are read as the f32 they are stored as, as the mma.sync
  // twin does: the twin proves indexing and data movement at f32's
  // tolerance (1e-5, sharp enough to see one misplaced element), while the
  // tensor core's tf32 precision (it reads the top 19 bits: ~7e-4 relative
  // error measured with numpy, inside tf32's 1e-3) is the device's check.
  if (p.kind == MmaKind::TF32)
    return v;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

void Sm90Twin::emulateWgmma(Sm90KernelBuilder &kb, Value consumer, Value descA,
                            Value descB) {
  OpBuilder &b = kb.b;
  Location loc = kb.loc;
  const GemmProblem &p = kb.p;
  Value group = kb.toIndex(consumer);
  forEach(kb, kWarpgroupThreads, [&](Value tid) {
    forEach(kb, kb.accumulatorsPerThread(), [&](Value reg) {
      auto [row, col] = fragmentPosition(kb, tid, reg);
      Value d =
          memref::LoadOp::create(b, loc, acc, ValueRange{group, tid, reg});
      auto loop = scf::ForOp::create(b, loc, kb.idx(0), kb.idx(wgmmaK(p)),
                                     kb.idx(1), ValueRange{d});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        Value k = loop.getInductionVar();
        // D[row, col] += A[row, k] * B[k, col], B K-major (row = col).
        Value a = operand(kb, descA, row, k);
        Value bv = operand(kb, descB, col, k);
        Value sum = arith::AddFOp::create(b, loc, loop.getRegionIterArg(0),
                                          arith::MulFOp::create(b, loc, a, bv));
        scf::YieldOp::create(b, loc, sum);
      }
      memref::StoreOp::create(b, loc, loop.getResult(0), acc,
                              ValueRange{group, tid, reg});
    });
  });
}
