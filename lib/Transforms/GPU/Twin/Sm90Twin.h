//===- Sm90Twin.h - the sm_90a family's instructions on the CPU -*- C++ -*-===//
//
// The twin's Sm90Hardware: see Sm90Twin.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_TWIN_SM90TWIN_H
#define CONVLOWER_TRANSFORMS_GPU_TWIN_SM90TWIN_H

#include "Transforms/GPU/Sm90/Sm90Hardware.h"
#include "Transforms/GPU/Sm90/Sm90Kernel.h"
#include "Transforms/GPU/Twin/Sm80Twin.h"

namespace mlir::conv_lower::igemm {

class Sm90Twin final : public Sm90Hardware {
public:
  /// Allocates (on the stack, at `b`'s insertion point: once, reused by
  /// every CTA) what the CTA keeps on chip: shared memory as a buffer of
  /// elements (byte address a is element a / element size; address 0, the
  /// first, is 1024-byte aligned), the mbarriers' state [2 * stages][4],
  /// the consumers' registers [consumers][128][blockN / 2] and the poison
  /// flag, which it clears.
  Sm90Twin(OpBuilder &b, Location loc, const GemmProblem &p,
           const Sm90Tiles &t);

  /// Set (non-zero) where the GPU would hang or fault: a wait that cannot
  /// be satisfied, more bytes than a barrier expected, a descriptor the
  /// kernel never builds, an address outside shared memory.
  Value poisonFlag() const { return poison; }

  Sm80Hardware &warpHardware() override { return warps; }
  void runBlock(Sm90KernelBuilder &kb, Value bm, Value bn, Value group,
                const Sm90Operands &ops) override;
  /// Shared addresses are byte offsets, barriers their indices.
  Value sharedAddress(Sm90KernelBuilder &, Value offset,
                      const Sm90Operands &) override {
    return offset;
  }
  Value sharedAddress64(Sm90KernelBuilder &kb, Value offset,
                        const Sm90Operands &ops) override;
  Value barrierAddress(Sm90KernelBuilder &, Value index,
                       const Sm90Operands &) override {
    return index;
  }
  void waitParity(Sm90KernelBuilder &kb, Value barrier, Value parity,
                  const Sm90Operands &ops) override;
  void arriveExpectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                      const Sm90Operands &ops) override;
  void expectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                const Sm90Operands &ops) override;
  void arrive(Sm90KernelBuilder &kb, Value barrier, int64_t threads,
              const Sm90Operands &ops) override;
  void loadImageTile(Sm90KernelBuilder &kb, Value dst, const ImageCopy &copy,
                     Value barrier, const Sm90Operands &ops) override;
  void loadFilterTile(Sm90KernelBuilder &kb, Value dst,
                      ArrayRef<Value> coordinates, Value barrier,
                      const Sm90Operands &ops) override;
  void storeSharedChunk(Sm90KernelBuilder &kb, Value offset,
                        ArrayRef<Value> elements,
                        const Sm90Operands &ops) override;
  /// The twin has one proxy: its stores are visible at once.
  void fenceAsyncProxy(Sm90KernelBuilder &) override {}
  /// Nothing runs asynchronously: no fence, commit or wait to emulate.
  void wgmmaFence(Sm90KernelBuilder &) override {}
  Value wgmma(Sm90KernelBuilder &kb, Value consumer, Value descA, Value descB,
              Value acc, bool overwrite, const Sm90Operands &ops) override;
  void wgmmaCommitAndWait(Sm90KernelBuilder &, int64_t) override {}

private:
  void forEach(Sm90KernelBuilder &kb, int64_t n,
               function_ref<void(Value)> body);
  Value signedIndex(Sm90KernelBuilder &kb, Value i32v);
  void poisonIf(Sm90KernelBuilder &kb, Value condition);
  Value barrierWord(Sm90KernelBuilder &kb, Value barrier, int64_t word);
  void setBarrierWord(Sm90KernelBuilder &kb, Value barrier, int64_t word,
                      Value v);
  void completePhaseIfDone(Sm90KernelBuilder &kb, Value barrier);
  /// buffer[offset] where `inside`, else 0, never reading outside.
  Value loadOrZero(Sm90KernelBuilder &kb, Value buffer, Value inside,
                   Value offset);
  void initBarriers(Sm90KernelBuilder &kb);
  /// `count` arrivals after an expect-tx of `txBytes`.
  void arriveTx(Sm90KernelBuilder &kb, Value barrier, Value txBytes,
                int64_t count);
  void completeTx(Sm90KernelBuilder &kb, Value barrier, Value txBytes);
  /// Stores `value` at shared byte address `address` as the 128-byte
  /// swizzle places it (the tile bases are 1024-byte aligned).
  void swizzledStore(Sm90KernelBuilder &kb, Value address, Value value);
  /// One wgmma.mma_async (m64nNk16, or k8 for tf32) of warpgroup
  /// `consumer`, every thread's every D register, accumulated into the
  /// twin's registers.
  void emulateWgmma(Sm90KernelBuilder &kb, Value consumer, Value descA,
                    Value descB);
  /// The PTX ISA's D fragment position, written apart from the kernel's
  /// accumulatorPosition so that the two check each other.
  std::pair<Value, Value> fragmentPosition(Sm90KernelBuilder &kb, Value tid,
                                           Value reg);
  /// An element of a K-major wgmma operand (row, k) through its decoded
  /// descriptor; sets poison on a layout the kernel never builds.
  Value operand(Sm90KernelBuilder &kb, Value desc, Value row, Value k);

  Value shared, barriers, acc, poison;
  /// The epilogue's warps: threads only (they issue no mma.sync).
  Sm80Twin warps;
};

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_TWIN_SM90TWIN_H
