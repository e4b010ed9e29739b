//===- Sm80Hardware.h - the machine the mma.sync body runs on ---*- C++ -*-===//
//
// Sm80KernelBuilder writes the mma.sync kernel once: its tiles, gathers,
// tap table, ring and epilogue. What it cannot write once is how its
// threads run and what the warp-level instructions are: on the GPU a thread
// is the executing thread, cp.async and ldmatrix and mma.sync are
// instructions and the accumulators are registers the main loop carries; on
// the CPU twin the threads, warps and lanes are host loops, and those
// instructions are emulations over memory standing in for shared memory and
// registers. Sm80Hardware is that seam (as Triton's TargetInfoBase is
// between its NVIDIA and AMD backends): Sm80Gpu (Sm80Gpu.cpp) emits the
// GPU's ops, Sm80Twin (../Twin/Sm80Twin.cpp) the emulations. The builder
// asks the hardware; it never asks which one it is.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_SM80_SM80HARDWARE_H
#define CONVLOWER_TRANSFORMS_GPU_SM80_SM80HARDWARE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::conv_lower::igemm {

class Sm80KernelBuilder;

/// One 16-byte (or narrower) copy of a K tile's chunk into shared memory:
/// `type` elements from src[offset] into smem[indices] where `valid`, else
/// zero, or the pad value where `padding` (null when the pad value is 0).
struct ChunkCopy {
  Value smem;
  SmallVector<Value, 3> indices;
  Value src, offset, valid, padding;
  VectorType type;
};

class Sm80Hardware {
public:
  virtual ~Sm80Hardware();

  /// The thread's index in the CTA (null where threads are loops).
  virtual Value threadId(OpBuilder &b, Location loc) = 0;
  /// body(i) for every thread, warp or lane i in [0, n): once, for the
  /// executing one's `gpuId`, or as a loop.
  virtual void forEach(OpBuilder &b, Location loc, int64_t n, Value gpuId,
                       function_ref<void(Value)> body) = 0;
  /// Whether a thread's gathered elements stay in its registers across the
  /// stage's MMAs and are stored after them (register-staged prefetch). The
  /// twin's threads are loops: their values cannot outlive them.
  virtual bool holdsGathersInRegisters() const = 0;
  /// Whether copies are asynchronous (cp.async, in commit groups the main
  /// loop waits for).
  virtual bool copiesAsynchronously() const = 0;
  /// The asynchronous copies' commit group of `tokens` (cp.async.commit_group;
  /// asked only where copiesAsynchronously()), and the wait until at most
  /// `pending` groups after `token`'s are in flight.
  virtual Value commitGroup(OpBuilder &b, Location loc, ValueRange tokens) = 0;
  virtual void waitGroups(OpBuilder &b, Location loc, Value token,
                          int64_t pending) = 0;
  /// One chunk copy; the asynchronous copy's token, or null.
  virtual Value copyChunk(Sm80KernelBuilder &kb, const ChunkCopy &copy) = 0;
  /// The CTA-wide barrier between a stage's copies and its MMAs.
  virtual void barrier(OpBuilder &b, Location loc) = 0;
  /// Zeroed accumulators: the values the main loop carries (none where the
  /// accumulators are memory).
  virtual SmallVector<Value> zeroAccumulators(Sm80KernelBuilder &kb) = 0;
  /// Every warp's ldmatrix and mma.sync on ring position `stage`: the new
  /// carried accumulators.
  virtual SmallVector<Value> computeStage(Sm80KernelBuilder &kb, Value smemA,
                                          Value smemB, Value stage, Value tid,
                                          ValueRange accs) = 0;
  /// A gathered f32 element rounded to tf32 (to nearest) as the mma would
  /// round its fragment, kept as f32 (Sm80KernelBuilder::roundsAtGather).
  virtual Value roundToTf32(Sm80KernelBuilder &kb, Value value) = 0;
  /// The fold of the accumulators into the output: zero points, init,
  /// bias, ReLU, narrowing, through the staged tiles where there are some.
  virtual void epilogue(Sm80KernelBuilder &kb, Value y, Value bm, Value bn,
                        Value group, Value tid, ValueRange accs) = 0;
};

/// The GPU: gpu.thread_id, nvgpu.device_async_copy (zero-filling), ldmatrix,
/// mma.sync on register fragments, gpu.barrier and bar.warp.sync.
class Sm80Gpu final : public Sm80Hardware {
public:
  Value threadId(OpBuilder &b, Location loc) override;
  void forEach(OpBuilder &b, Location loc, int64_t n, Value gpuId,
               function_ref<void(Value)> body) override;
  bool holdsGathersInRegisters() const override { return true; }
  bool copiesAsynchronously() const override { return true; }
  Value commitGroup(OpBuilder &b, Location loc, ValueRange tokens) override;
  void waitGroups(OpBuilder &b, Location loc, Value token,
                  int64_t pending) override;
  Value copyChunk(Sm80KernelBuilder &kb, const ChunkCopy &copy) override;
  void barrier(OpBuilder &b, Location loc) override;
  SmallVector<Value> zeroAccumulators(Sm80KernelBuilder &kb) override;
  SmallVector<Value> computeStage(Sm80KernelBuilder &kb, Value smemA,
                                  Value smemB, Value stage, Value tid,
                                  ValueRange accs) override;
  void epilogue(Sm80KernelBuilder &kb, Value y, Value bm, Value bn, Value group,
                Value tid, ValueRange accs) override;
  Value roundToTf32(Sm80KernelBuilder &kb, Value value) override;

private:
  /// `value` (f32) rounded to tf32 (to nearest): the mma operand's bits,
  /// i32.
  Value tf32Bits(Sm80KernelBuilder &kb, Value value);
  /// One mma.sync: `a` and the B registers from ldmatrix, `acc` the
  /// thread's four accumulators.
  Value mma(Sm80KernelBuilder &kb, Value a, Value bFrag0, Value bFrag1,
            Value acc);
};

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_SM80_SM80HARDWARE_H
