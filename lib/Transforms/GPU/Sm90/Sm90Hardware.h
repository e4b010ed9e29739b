//===- Sm90Hardware.h - the machine the sm_90a body runs on -----*- C++ -*-===//
//
// Sm90KernelBuilder writes the sm_90a kernel once: the producer's
// coordinates, byte counts and ring protocol, the consumers' descriptors,
// the epilogue. The instructions it issues - mbarrier, TMA, the shared
// stores of the gathering producer, the async-proxy fence, wgmma - and the
// order its warpgroups run in are the hardware's: Sm90Gpu (Sm90Gpu.cpp)
// emits the NVVM ops and the warp-specialized roles; Sm90Twin
// (../Twin/Sm90Twin.cpp) runs one valid order of the roles on the host and
// emulates each instruction as the PTX ISA defines it. As Sm80Hardware is
// for the mma.sync family, this is the only place the two forms differ.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_SM90_SM90HARDWARE_H
#define CONVLOWER_TRANSFORMS_GPU_SM90_SM90HARDWARE_H

#include "Transforms/GPU/Sm80/Sm80Hardware.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

namespace mlir::conv_lower::igemm {

class Sm90KernelBuilder;
struct Sm90Operands;

/// One TMA im2col copy of an A tile: the box's coordinates {c, w, h, n}
/// (i32) and its im2col offsets {kw * dw, kh * dh} (i16).
struct ImageCopy {
  SmallVector<Value> coordinates, offsets;
};

class Sm90Hardware {
public:
  virtual ~Sm90Hardware();

  /// The warps' hardware for what the family shares with the mma.sync one
  /// (the epilogue's fold, staging and stores, the tap-table gather).
  virtual Sm80Hardware &warpHardware() = 0;

  /// Runs the CTA at (bm, bn, group): the roles (producer, consumers, the
  /// epilogue) of `kb` as the hardware schedules them.
  virtual void runBlock(Sm90KernelBuilder &kb, Value bm, Value bn, Value group,
                        const Sm90Operands &ops) = 0;

  /// Shared region `offset` (i32 bytes from the aligned base) as the
  /// operand of a store, copy or barrier op; its i64 address, as matrix
  /// descriptors encode it; mbarrier `index` (0 .. 2 * stages).
  virtual Value sharedAddress(Sm90KernelBuilder &kb, Value offset,
                              const Sm90Operands &ops) = 0;
  virtual Value sharedAddress64(Sm90KernelBuilder &kb, Value offset,
                                const Sm90Operands &ops) = 0;
  virtual Value barrierAddress(Sm90KernelBuilder &kb, Value index,
                               const Sm90Operands &ops) = 0;

  /// mbarrier.try_wait.parity until the phase of `parity` has completed.
  virtual void waitParity(Sm90KernelBuilder &kb, Value barrier, Value parity,
                          const Sm90Operands &ops) = 0;
  /// mbarrier.arrive.expect_tx: one arrival, `bytes` more to land.
  virtual void arriveExpectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                              const Sm90Operands &ops) = 0;
  /// mbarrier.expect_tx: `bytes` more to land, no arrival.
  virtual void expectTx(Sm90KernelBuilder &kb, Value barrier, Value bytes,
                        const Sm90Operands &ops) = 0;
  /// mbarrier.arrive by each of `threads` threads (one op on the GPU, which
  /// each of them executes; the twin, whose threads are one, counts them).
  virtual void arrive(Sm90KernelBuilder &kb, Value barrier, int64_t threads,
                      const Sm90Operands &ops) = 0;

  /// The A tile by TMA im2col into shared region `dst`, completing on
  /// `barrier`; the B tile of `coordinates` {k, row} by a tiled TMA copy.
  virtual void loadImageTile(Sm90KernelBuilder &kb, Value dst,
                             const ImageCopy &copy, Value barrier,
                             const Sm90Operands &ops) = 0;
  virtual void loadFilterTile(Sm90KernelBuilder &kb, Value dst,
                              ArrayRef<Value> coordinates, Value barrier,
                              const Sm90Operands &ops) = 0;
  /// The gathering producer's 16-byte store of `elements` at shared
  /// `offset` (already swizzled).
  virtual void storeSharedChunk(Sm90KernelBuilder &kb, Value offset,
                                ArrayRef<Value> elements,
                                const Sm90Operands &ops) = 0;
  /// fence.proxy.async: the thread's generic-proxy shared stores visible to
  /// the async proxy (wgmma) before its arrival releases them.
  virtual void fenceAsyncProxy(Sm90KernelBuilder &kb) = 0;

  /// wgmma.fence before the first wgmma of a K tile.
  virtual void wgmmaFence(Sm90KernelBuilder &kb) = 0;
  /// One wgmma.mma_async (m64nNk16; k8 for tf32) of warpgroup `consumer`
  /// from two matrix descriptors into `acc` (the GPU's accumulator struct;
  /// null on the twin, whose accumulators are memory); `overwrite`: D = A*B
  /// (scale-d 0). Returns the new accumulators.
  virtual Value wgmma(Sm90KernelBuilder &kb, Value consumer, Value descA,
                      Value descB, Value acc, bool overwrite,
                      const Sm90Operands &ops) = 0;
  /// wgmma.commit_group, then wgmma.wait_group until at most `pending`
  /// groups are in flight.
  virtual void wgmmaCommitAndWait(Sm90KernelBuilder &kb, int64_t pending) = 0;
};

/// The GPU: NVVM's mbarrier, cp.async.bulk.tensor and wgmma ops, and the
/// warp-specialized CTA (a producer warpgroup, consumer warpgroups).
class Sm90Gpu final : public Sm90Hardware {
public:
  Sm80Hardware &warpHardware() override { return warps; }
  void runBlock(Sm90KernelBuilder &kb, Value bm, Value bn, Value group,
                const Sm90Operands &ops) override;
  Value sharedAddress(Sm90KernelBuilder &kb, Value offset,
                      const Sm90Operands &ops) override;
  Value sharedAddress64(Sm90KernelBuilder &kb, Value offset,
                        const Sm90Operands &ops) override;
  Value barrierAddress(Sm90KernelBuilder &kb, Value index,
                       const Sm90Operands &ops) override;
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
  void fenceAsyncProxy(Sm90KernelBuilder &kb) override;
  void wgmmaFence(Sm90KernelBuilder &kb) override;
  Value wgmma(Sm90KernelBuilder &kb, Value consumer, Value descA, Value descB,
              Value acc, bool overwrite, const Sm90Operands &ops) override;
  void wgmmaCommitAndWait(Sm90KernelBuilder &kb, int64_t pending) override;

private:
  /// One TMA copy into shared region `dst`, completing on `barrier`: im2col
  /// mode with `offsets`, tiled without.
  void tmaCopy(Sm90KernelBuilder &kb, Value dst, Value map,
               ValueRange coordinates, ValueRange offsets, Value barrier,
               const Sm90Operands &ops);
  void initBarriers(Sm90KernelBuilder &kb, const Sm90Operands &ops);
  /// The gathering producer warpgroup: thread `tid`'s row of every A tile,
  /// and (`first`: thread 0) the B tiles.
  void runGatheringProducer(Sm90KernelBuilder &kb, Value tid, Value first,
                            Value bm, Value bn, Value group,
                            const Sm90Operands &ops);

  Sm80Gpu warps;
};

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_SM90_SM90HARDWARE_H
