//===- Sm80Kernel.h - the mma.sync kernel body ------------------*- C++ -*-===//
//
// Sm80KernelBuilder emits one CTA of the mma.sync family (sm_80 on: cp.async,
// ldmatrix, mma.sync, a shared-memory ring, the staged epilogue), once, for
// the hardware it is given (Sm80Hardware.h): the GPU's instructions
// (Sm80Gpu.cpp) or the CPU twin's emulations of them (../Twin). The core
// (../Core) builds the problem and the tiles; Sm80Module.cpp wraps the body
// into a kernel, ../Twin/TwinLaunch.cpp into the twin's host loops.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_SM80_SM80KERNEL_H
#define CONVLOWER_TRANSFORMS_GPU_SM80_SM80KERNEL_H

#include "Transforms/GPU/Core/GemmProblem.h"
#include "Transforms/GPU/Sm80/Sm80Hardware.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::conv_lower::igemm {

//===----------------------------------------------------------------------===//
// The kernel body
//===----------------------------------------------------------------------===//

/// Builds one CTA's work on `hw`, the GPU or the twin.
class Sm80KernelBuilder {
public:
  Sm80KernelBuilder(OpBuilder &b, Location loc, const GemmProblem &p,
                    const TileConfig &t, Sm80Hardware &hw)
      : b(b), loc(loc), p(p), t(t), hw(hw) {
    // Whole mma tiles per warp, as checkTiles requires (the direct
    // depthwise kernel's tiles have no GEMM; the sm_90a epilogue's are its
    // consumers' warps, 16 rows each, with no ring).
    assert((t.directVector || (t.warpsM >= 1 && t.warpsN >= 1 &&
                               t.blockM % (16 * t.warpsM) == 0 &&
                               t.blockN % (16 * t.warpsN) == 0)) &&
           "tiles checkTiles would refuse");
  }

  /// The block at (blockM, blockN, group) of the grid, reading the flat
  /// operands and the two shared buffers.
  void emitBlock(Value bm, Value bn, Value group, Value x, Value w, Value y,
                 Value smemA, Value smemB);

  bool isVectorized(Operand op) const { return igemm::isVectorized(p, op); }

  /// Whether the main loop is unrolled by S (constant ring positions): where
  /// A is copied or gathered in pixel runs, not element by element.
  bool unrollsRing() const;

  /// Explicit mode's first kernel, for one element: X_col[idx] = the image
  /// element it gathers, or zero (idx < im2colElements()).
  void emitIm2colElement(Value idx, Value x, Value xcol);

  /// The staged epilogue's tiles ([warps, rows, stride] of the output type,
  /// epilogueStaging's), when the problem takes them: the GPU's view of the
  /// shared buffer, or the twin's own memory.
  void setStaging(Value tiles, const EpilogueStaging &shape) {
    staging = tiles;
    stagingShape = shape;
  }

  /// The staged epilogue for mma row `i` of warp `warp`'s tiles: `lane`
  /// writes its finished values of tiles (i, 0), (i, 1), ... (`values`: four
  /// a tile, zero-point corrected) into the warp's staged tile; then, after
  /// the warp's lanes are all done (bar.warp.sync on the GPU), reads back
  /// its vectors of it and stores each inside the output (the 16 rows from
  /// `rowBase`). The sm_90a family stages through them too.
  void stageRow(Value warp, Value lane, Value colBase, Value group,
                ArrayRef<Value> values);
  void storeStagedRow(Value y, Value warp, Value lane, Value rowBase,
                      Value colBase, Value group);

  /// The flat bias the epilogue adds, when the problem has one.
  void setBias(Value bias) { biasBuffer = bias; }
  /// The flat residual (the output's type and layout) the epilogue adds,
  /// when the problem has one.
  void setResidual(Value residual) { residualBuffer = residual; }

  /// Y[m, f + i] = accs[i] + init (bias, residual, ReLU or clamp) for m < M
  /// and f < Fg: the fold; two values (pairsOutputs()) as one aligned vector
  /// store. The sm_90a family's epilogue is this one too.
  void storeOutputs(Value y, Value m, Value f, Value group,
                    ArrayRef<Value> accs);
  /// Whether the two adjacent columns a lane holds are contiguous and
  /// aligned in the output (channels innermost, even Fg and strides): then
  /// four lanes write 32 contiguous bytes (f32) with half the stores.
  bool pairsOutputs() const;

  /// The tap table ([K padded, 2] i32, buildTapTable's), when the caller
  /// made one (then the A gather reads it).
  void setTapTable(Value table) { tapTable = table; }

  // The tap-table gather's pieces, public for the sm_90a family's producer
  // warpgroup, which gathers the A tiles TMA cannot load with them.

  /// What the tap-table gather computes once per A row (the thread's own:
  /// outside the main loop): its image offset without the group's channels,
  /// its window origin (i32), whether it is inside the GEMM, and (filters of
  /// at most 32 taps) its mask of the taps inside the image, none past M.
  struct RowPlace {
    Value base, ih0, iw0, inGemm, tapMask;
  };
  RowPlace rowPlace(Value row);
  /// 0 <= v < size for an i32 v, as one unsigned compare.
  Value insideImage(Value v, int64_t size);
  /// Tap-table entry `entryIndex`: (offset, tap bit or packed window).
  std::pair<Value, Value> tapEntry(Value entryIndex);
  /// Whether the row reads the image at the entry's tap (false past K).
  Value tapInside(const RowPlace &place, Value window);
  /// The input offset the row reads at the entry (+ `inEntry`: channels of k
  /// past the entry's first k), computed in 32 bits; or (`wide`, for a load
  /// predicated on the entry's validity) the row's 64-bit offset plus the
  /// sign-extended entry.
  Value tapOffset(const RowPlace &place, Value group, Value inEntry,
                  Value entryOffset, bool wide = false);
  /// `offset` where `valid`, else 0 (an address inside the operand), in 32
  /// bits when every offset of the operand fits.
  Value clampOffset(Operand op, Value offset, Value valid);

protected:
  // The hardware forms are the builder's own steps, on its problem, tiles
  // and helpers.
  friend class Sm80Gpu;
  friend class Sm80Twin;

  // The arithmetic helpers and the output store's pieces are shared with
  // the direct depthwise kernel (../Depthwise), which derives from this.
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
  Value add(Value a, int64_t c) { return c ? add(a, idx(c)) : a; }
  Value mul(Value a, int64_t c) {
    return c == 1 ? a : arith::MulIOp::create(b, loc, a, idx(c));
  }
  Value div(Value a, int64_t c) {
    return c == 1 ? a : arith::DivUIOp::create(b, loc, a, idx(c));
  }
  Value rem(Value a, int64_t c) {
    return c == 1 ? idx(0) : arith::RemUIOp::create(b, loc, a, idx(c));
  }
  Value cmp(arith::CmpIPredicate pred, Value a, Value c) {
    return arith::CmpIOp::create(b, loc, pred, a, c);
  }
  Value lessThan(Value a, int64_t c) {
    return cmp(arith::CmpIPredicate::slt, a, idx(c));
  }
  Value inRange(Value v, int64_t size) {
    return arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::sge, v, idx(0)), lessThan(v, size));
  }
  /// a && c, folded where either is a constant (a whole-tile predicate
  /// stays a constant true, so its clamps and selects fold away too).
  Value both(Value a, Value c) {
    return b.createOrFold<arith::AndIOp>(loc, a, c);
  }
  Value select(Value cond, Value a, Value c) {
    return arith::SelectOp::create(b, loc, cond, a, c);
  }

  /// Runs `body(i)` for i in [0, n): once for the GPU's own thread/warp id
  /// `gpuId`, or a loop on the twin (Sm80Hardware::forEach).
  void forEach(int64_t n, Value gpuId, function_ref<void(Value)> body) {
    hw.forEach(b, loc, n, gpuId, body);
  }

  /// The element offset of A[m, k] (or B[k, f] with `row` = f) and whether
  /// it is inside the tensor (false for padding and tile overhang). With a
  /// non-zero padValue, `padding` (if given) is set for A: whether the
  /// element is padding (inside the GEMM, outside the image). `predicated`:
  /// the offset is only read where valid (loadWhere), so a tap-table offset
  /// may stay in 64 bits (tapOffset's wide form).
  std::pair<Value, Value> elementOffset(Operand op, Value row, Value k,
                                        Value group, Value *padding = nullptr,
                                        bool predicated = false);
  /// The image element that im2col row `row` = m, column (c, kh, kw) reads,
  /// and whether it lies inside the image (`valid` so far: k < K); `padding`
  /// as above.
  std::pair<Value, Value> gatherOffset(Value row, Value c, Value kdi,
                                       Value khi, Value kwi, Value group,
                                       Value valid, Value *padding);
  /// elementOffset through the tap table: row `row` at table entry
  /// `entryIndex` (the one holding k) and `inEntry`.
  std::pair<Value, Value> tableGatherOffset(Value row, Value k,
                                            Value entryIndex, Value inEntry,
                                            Value group, Value *padding,
                                            bool wide = false);
  /// `load()` where `valid`, else `otherwise` (of the loaded type): a
  /// predicated load.
  Value loadWhere(Value valid, Value otherwise, function_ref<Value()> load);
  /// Whether an operand's elements are rounded to tf32 as they are gathered
  /// (through registers, before their shared store): then its mma fragments
  /// need no conversion.
  bool roundsAtGather(Operand op) const;
  /// k < K for a k of a tile the loop loads (true when K fills whole
  /// tiles).
  Value withinK(Value k);
  /// row < rows for a row of a grid of `tileRows`-row tiles (true when rows
  /// fill whole tiles).
  Value withinRows(Value row, int64_t rows, int64_t tileRows);
  /// Whether `inImage` is padding inside the GEMM (`inGemm`), when the pad
  /// value is not zero (else null).
  Value paddingPredicate(Value inGemm, Value inImage);
  /// The value a predicated-off element of A reads: the pad value where
  /// `padding`, else 0 (of `type`, a scalar or vector of the element type).
  Value fillValue(Type type, Value padding);
  /// `value` as a constant of `type` (the element type or a vector of it).
  Value elementConstant(Type type, int64_t value);
  /// Physical column of chunk `chunk` of shared row `row` (the swizzle).
  Value swizzledColumn(Value row, Value chunk);
  /// The 16-byte chunks of one row a thread copies per K tile: 2 where
  /// chunks c and c + chunksPerRow / 2 share one address and predicate (a
  /// constant pairedChunkStep apart), else 1.
  int64_t chunksPerThreadRow(Operand op) const;
  int64_t pairedChunkStep(Operand op) const;
  /// One thread's share of the global -> shared copy of a K tile; returns
  /// the cp.async tokens it issued. Elements gathered one at a time are
  /// stored to shared memory now, or with `gathered` returned there for
  /// storeGathered (register-staged prefetch).
  SmallVector<Value> loadTile(Operand op, Value src, Value smem, Value stage,
                              Value kTile, Value tid, Value rowBase,
                              Value group,
                              SmallVector<Value> *gathered = nullptr);
  /// What loadStage issued: the cp.async group token (null when nothing is
  /// asynchronous) and the gathered elements still to store (GPU only).
  struct StageLoads {
    Value token;
    SmallVector<Value> gatheredA, gatheredB;
  };
  /// Issues the copies of K tile `kTile` into `stage` for every thread;
  /// `deferGathers` keeps the element gathers in registers (the GPU form).
  StageLoads loadStage(Value stage, Value kTile, Value tid, Value bm,
                       Value bn, Value group, Value x, Value w, Value smemA,
                       Value smemB, bool deferGathers);
  /// The gathered elements per thread of an operand's tile, and where
  /// element `i` of thread `tid` sits in the tile: (row, k within the tile).
  int64_t gatheredElements(Operand op) const;
  std::pair<Value, Value> gatherPosition(Operand op, Value tid, int64_t i);
  /// Stores one gathered element at its swizzled place in shared memory.
  void storeGatheredElement(Value smem, Value stage, Value row, Value kk,
                            Value data);
  /// The pixel-run gather (pixelRun): runs per thread per stage, where run
  /// `i` of thread `tid` sits in the tile ((k, first pixel) of the M-major
  /// tile), the run of pixels row.. at k as a vector (zero where outside the
  /// image), its swizzled place and its store.
  int64_t runsPerThread() const;
  std::pair<Value, Value> runPosition(Value tid, int64_t i);
  Value gatherRun(Value row, Value k, Value group, Value src);
  /// Physical column of pixel `m` in row `k` of the M-major A tile.
  Value swizzledPixel(Value k, Value m);
  void storeRun(Value smem, Value stage, Value kk, Value m, Value run);
  /// Stores loadStage's deferred elements of `op` into `stage`.
  void storeGathered(Operand op, Value smem, Value stage, Value tid,
                     ArrayRef<Value> values);

  /// Whether the GPU form copies by cp.async (then every stage makes a
  /// commit group), and an empty commit group.
  bool copiesAsync() const;
  Value emptyGroup();
  /// What every K step reads: the thread id, the block, the operands and the
  /// shared rings, and how many of the carried values are accumulators (a
  /// commit group token may follow).
  struct KBlock {
    Value tid, bm, bn, group, x, w, smemA, smemB;
    size_t accCount;
  };
  /// One K step: waits for tile `kt` (i32), computes it from ring position
  /// `stage` and, with `loads`, issues tile kt+S-1 into `nextStage`, the
  /// position tile kt-1 used (else an empty commit group). `carried` are the
  /// accumulators and the last commit group; returns their new values.
  SmallVector<Value> emitKStep(Value kt, Value stage, Value nextStage,
                               bool loads, ValueRange carried,
                               const KBlock &blk);
  /// The main loop over the first `steps` K tiles (those that load tile
  /// kt+S-1), updating `carried`; returns how many steps it covers (an
  /// unrolled loop leaves steps % S to straight-line code).
  int64_t emitMainLoop(int64_t steps, SmallVector<Value> &carried,
                       const KBlock &blk);
  Value i32Constant(int64_t v);
  /// An i32 (a K tile or ring position, never negative) as an index.
  Value indexOf(Value i32);
  /// Accumulator (row, col) within the warp tile of fragment element `v` of
  /// mma tile (i, j) held by `lane` (the m16n8 f32 C layout of mma.sync).
  std::pair<Value, Value> fragmentPosition(Value lane, int64_t i, int64_t j,
                                           int64_t v);
  /// The flat output offset of pixel row m and output channel `channel`.
  Value outputOffset(Value m, Value channel);
  /// The init, bias, residual (read at `residualOffset`), ReLU or clamp and
  /// narrowing applied to an accumulator. With a residual and no offset (the
  /// staged epilogue) it stops after the bias, narrowed: storeStagedRow adds
  /// the residual, vector by vector, and applies the activation.
  Value finishOutput(Value acc, Value channel, Value residualOffset = {});
  /// The residual's steps on a value (scalar or vector) of the output type
  /// or the accumulator's: `v` + the residual `r` (of the output type),
  /// then the ReLU or clamp, then narrowed to the output type.
  Value addResidual(Value v, Value r);
  Value activate(Value v);
  Value widen(Value v);
  Value narrow(Value v);
  /// A float constant of `v`'s type (a splat for a vector).
  Value floatConstantLike(Value v, double value);
  /// Stores the four (zero-point corrected) values of mma tile (i, j) that
  /// `lane` holds, paired where pairsOutputs().
  void storeFragment(Value y, Value lane, int64_t i, int64_t j, Value rowBase,
                     Value colBase, Value group, ArrayRef<Value> values);
  /// A quantized result from the plain GEMM's `acc` and the sums (null when
  /// not needed): acc - zw*rowSum - zx*columnSum + K*zx*zw.
  Value applyZeroPoints(Value acc, Value rowSum, Value columnSum);
  /// The accumulator slots the GPU code carries: the mma tiles, then the row
  /// sums (one per A tile), then the column sums (one per B tile).
  int64_t accumulatorSlots() const;
  int64_t rowSumSlot(int64_t i) const;
  int64_t columnSumSlot(int64_t j) const;
  /// A zero (or `value`) of the accumulator type.
  Value accumulatorConstant(double value);

  /// The first (row, col) of warp `warp`'s tile within the CTA tile.
  std::pair<Value, Value> warpOrigin(Value warp) {
    return {mul(div(warp, t.warpsN), t.warpM()),
            mul(rem(warp, t.warpsN), t.warpN())};
  }

  /// The shared-memory (row, col) that `lane` hands ldmatrix.x4 for A tile
  /// `i` (16 rows) / the B tile pair from column `j`, at 32-byte K slice kk.
  std::pair<Value, Value> ldmatrixAddressA(Value lane, Value warpRow,
                                           int64_t i, int64_t kk);
  std::pair<Value, Value> ldmatrixAddressB(Value lane, Value warpCol,
                                           int64_t j, int64_t kk);

  /// The channel whose bias the value of output column f (within the group)
  /// takes: f itself, or a column inside the group for a tile's overhang
  /// (staged there, never stored).
  Value biasChannel(Value group, Value f);

  OpBuilder &b;
  Location loc;
  const GemmProblem &p;
  const TileConfig &t;
  Sm80Hardware &hw;
  Value biasBuffer, residualBuffer, tapTable, staging;
  EpilogueStaging stagingShape;
};

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_SM80_SM80KERNEL_H
