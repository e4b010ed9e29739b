//===- Sm80Twin.h - the mma.sync family's instructions on the CPU -*- C++
//-*-===//
//
// The twin's Sm80Hardware: see Sm80Twin.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_TWIN_SM80TWIN_H
#define CONVLOWER_TRANSFORMS_GPU_TWIN_SM80TWIN_H

#include "Transforms/GPU/Sm80/Sm80Hardware.h"
#include "Transforms/GPU/Sm80/Sm80Kernel.h"

namespace mlir::conv_lower::igemm {

class Sm80Twin final : public Sm80Hardware {
public:
  /// Allocates (on the stack, at `b`'s insertion point: once, reused by
  /// every CTA) the warps' registers: accumulators [warps, warpM, warpN],
  /// the zero-point sums' (row sums [warps, warpM, 8], column sums [warps,
  /// 16, warpN]: the D of the all-ones mma.sync as the lanes hold it), the
  /// fragments A [tilesM, 32 lanes, 4 registers, elements a register] and B
  /// [tilesN / 2, 32, 4, elements].
  Sm80Twin(OpBuilder &b, Location loc, const GemmProblem &p,
           const TileConfig &t);
  /// Threads only, for bodies that issue no mma.sync (the direct depthwise
  /// kernel, the sm_90a family's epilogue warps).
  Sm80Twin() = default;

  Value threadId(OpBuilder &, Location) override { return Value(); }
  void forEach(OpBuilder &b, Location loc, int64_t n, Value gpuId,
               function_ref<void(Value)> body) override;
  bool holdsGathersInRegisters() const override { return false; }
  bool copiesAsynchronously() const override { return false; }
  /// Every copy has landed when it returns: no groups.
  Value commitGroup(OpBuilder &, Location, ValueRange) override {
    return Value();
  }
  void waitGroups(OpBuilder &, Location, Value, int64_t) override {}
  Value copyChunk(Sm80KernelBuilder &kb, const ChunkCopy &copy) override;
  /// The threads run one after another: nothing to wait for.
  void barrier(OpBuilder &, Location) override {}
  SmallVector<Value> zeroAccumulators(Sm80KernelBuilder &kb) override;
  SmallVector<Value> computeStage(Sm80KernelBuilder &kb, Value smemA,
                                  Value smemB, Value stage, Value tid,
                                  ValueRange accs) override;
  void epilogue(Sm80KernelBuilder &kb, Value y, Value bm, Value bn, Value group,
                Value tid, ValueRange accs) override;
  /// The twin multiplies tf32 operands as the f32 they are stored as (it
  /// checks indexing at f32's tolerance; the tensor core's precision is the
  /// device tests'): no rounding.
  Value roundToTf32(Sm80KernelBuilder &, Value value) override { return value; }

private:
  /// One emulated mma.sync of `warp` on A tile `i` and B tile `jt` (either
  /// replaced by all ones when `onesA`/`onesB`), accumulating into `acc` at
  /// (warp, rowBase + r, colBase + c) for each of D's (r, c).
  void mma(Sm80KernelBuilder &kb, Value acc, Value warp, Value i, Value jt,
           Value rowBase, Value colBase, bool onesA, bool onesB);

  Value acc, rowSums, columnSums, fragA, fragB;
};

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_TWIN_SM80TWIN_H
