//===- Sm90Kernel.h - the sm_90a kernel family -*- C++ -*- ------------------===//
//
// The second kernel family of --conv-lower-implicit-gemm, chosen for
// chip=sm_90a: the Hopper design of CUTLASS 3's
// sm90_implicit_gemm_gmma_ss_warpspecialized, built from NVVM ops.
//
//   one CTA = 3 warpgroups (384 threads):
//     warpgroup 0, the producer: one thread walks the K
//       tiles, and per tile waits for its ring slot to be empty, arms the
//       slot's `full` mbarrier with the tile's bytes (arrive.expect_tx) and
//       issues two TMA copies into it: the image's A tile in im2col mode (a
//       box of blockM output pixels x 64 channels at one filter tap: the
//       tensor map holds padding, strides and dilation, the copy's im2col
//       offsets are the tap) and the filter's B tile in tiled mode; both
//       land 128-byte swizzled;
//       where TMA's im2col mode cannot load the image (NCHW, channels per
//       group not a multiple of the tile, padding or strides past its
//       ranges) the producer's 128 threads gather the A tile instead, one
//       row (output pixel) each, through the tap table of the mma.sync
//       family, write it 128-byte swizzled with 16-byte stores, and publish
//       it to the async proxy (fence.proxy.async, then an arrival each on
//       `full`); thread 0 still loads B by TMA (expect_tx, no arrival);
//     warpgroups 1 and 2, the consumers (64 rows of the tile each): per
//       tile wait on `full`, four wgmma.mma_async
//       m64nNk16 (f16, bf16; m64nNk8 for f32 data, tf32 math) from
//       shared-memory matrix descriptors into the register
//       accumulators, commit, wait until at most this tile's group is in
//       flight, then release the previous tile's slot (arrive on `empty`);
//       at the end the fold + init + bias + residual + ReLU/clamp +
//       narrowing of the mma.sync family's epilogue, from the wgmma D
//       fragment layout.
//
// The builder issues those instructions through Sm90Hardware
// (Sm90Hardware.h): Sm90Gpu emits them; on target=cpu-twin Sm90Twin
// (../Twin) runs the same body on the host: the producer's coordinates,
// byte counts and barrier protocol, the consumers' descriptors and the
// epilogue's fragment positions are the kernel's own values, fed to
// emulations of the PTX ISA's definitions (TMA im2col and tiled boxes with
// zero fill, the 128-byte swizzle, mbarrier phases and transaction counts,
// wgmma's descriptor decoding and D fragment layout). A wrong descriptor,
// swizzle, box offset or byte count changes the twin's numbers, or poisons
// them with NaN where the hardware would hang or fault.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_SM90_SM90KERNEL_H
#define CONVLOWER_TRANSFORMS_GPU_SM90_SM90KERNEL_H

#include "Transforms/GPU/Core/GemmProblem.h"
#include "Transforms/GPU/Sm80/Sm80Kernel.h"
#include "Transforms/GPU/Sm90/Sm90Hardware.h"

#include "ConvLower/Transforms/GPU/ImplicitGemm.h"
#include "convrt/TensorMap.h"

#include "mlir/IR/Builders.h"

#include <string>

namespace mlir::conv_lower::igemm {

constexpr int64_t kWarpgroupThreads = 128;
/// A 128-byte swizzle pattern repeats every 8 rows of 128 bytes.
constexpr int64_t kSwizzleRowBytes = 128;
constexpr int64_t kSwizzleAtomBytes = 1024;
/// mbarrier.try_wait's suspend-time hint (ns), as CUTLASS uses.
constexpr int64_t kTryWaitTicks = 0x989680;

struct Sm90Tiles {
  int64_t blockM = 128, blockN = 128, blockK = 64, stages = 4;
  /// Consumer warpgroups, each computing 64 rows (m64) of the tile.
  int64_t consumers = 2;
  /// The A tiles gathered by the producer warpgroup (one row a thread, the
  /// K order the filter's) instead of loaded by TMA im2col
  /// (checkSm90ImageTma says why).
  bool gatherA = false;
  // No setmaxnreg: a warp's setmaxnreg.inc waits for registers that other
  // warps of the CTA release, and a CTA holds what ptxas allocated at launch
  // (58 registers a thread for the n64 kernel): the consumers' requests
  // would wait for ever. These tiles fit ptxas's own allocation under the
  // 384-thread bound (168 a thread) without spills; it pays off only for
  // tiles past 64 x 128 per warpgroup.

  int64_t threads() const { return kWarpgroupThreads * (1 + consumers); }
  int64_t consumerThreads() const { return kWarpgroupThreads * consumers; }
  int64_t aBytes(int64_t elementBytes) const {
    return blockM * blockK * elementBytes;
  }
  int64_t bBytes(int64_t elementBytes) const {
    return blockN * blockK * elementBytes;
  }
  /// Offsets in the CTA's shared memory (after aligning its base to the
  /// 1024-byte swizzle atom): the A ring, the B ring, then 2 * stages
  /// mbarriers (full, then empty).
  int64_t aOffset(int64_t stage, int64_t elementBytes) const {
    return stage * aBytes(elementBytes);
  }
  int64_t bOffset(int64_t stage, int64_t elementBytes) const {
    return stages * aBytes(elementBytes) + stage * bBytes(elementBytes);
  }
  int64_t barrierOffset(int64_t index, int64_t elementBytes) const {
    return stages * (aBytes(elementBytes) + bBytes(elementBytes)) + 8 * index;
  }
  /// Dynamic shared memory per CTA, including the alignment slack.
  int64_t sharedBytes(int64_t elementBytes) const {
    return barrierOffset(2 * stages, elementBytes) + kSwizzleAtomBytes;
  }
};

/// Whether the sm_90a family can take `p` (else the mma.sync family does;
/// `why` says why not): f16/bf16 or f32 (tf32 math), a 2-D channels-last image
/// stored densely, a filter whose rows are contiguous along K in (kh, kw, c)
/// order (FHWC), channels per group a multiple of 64 (32 for f32: a K tile is
/// one tap's 128 bytes of channels), and padding, strides, dilation and taps
/// within the TMA's im2col ranges.
LogicalResult checkSm90Problem(const GemmProblem &p, Refusal &why);
/// Whether TMA's im2col mode can load `p`'s image (else the producer
/// warpgroup gathers the A tiles; `why` says why not): a dense channels-last
/// image, channels per group a multiple of the tile, strides, padding and
/// dilated taps within the map's ranges.
LogicalResult checkSm90ImageTma(const GemmProblem &p, Refusal &why);

Sm90Tiles chooseSm90Tiles(const GemmProblem &p);

/// The K of one wgmma: 32 bytes of the operand (16 f16/bf16, 8 tf32).
inline int64_t wgmmaK(const GemmProblem &p) { return 32 / p.elementBytes(); }

/// The K tiles (the last one partial where the gather pads K with zeros).
int64_t sm90KTiles(const GemmProblem &p, const Sm90Tiles &t);
/// The gathered A tiles' tap table: one entry per k of every K tile.
std::vector<int32_t> sm90TapTable(const GemmProblem &p, const Sm90Tiles &t);

/// The epilogue's view of the CTA: one 16-row warp tile per warp of the
/// consumer warpgroups (wgmma's D fragment is mma.sync's m16n8 layout per
/// warp), blockN wide.
TileConfig sm90EpilogueTiles(const Sm90Tiles &t);
/// The staged epilogue (Core/GemmProblem.h) of the sm_90a kernel, over its
/// rings (they are free once both consumers have waited for their last
/// wgmma).
EpilogueStaging sm90Staging(const GemmProblem &p, const Sm90Tiles &t);

/// The grid: pixel tiles x filter tiles x groups.
Launch sm90LaunchShape(const GemmProblem &p, const Sm90Tiles &t);

/// The A operand's map: the image [N][H][W][C] in im2col mode, a box of
/// blockK channels x blockM pixels.
convrt::TensorMapSpec imageTensorMap(const GemmProblem &p,
                                     const Sm90Tiles &t);
/// The B operand's map: the filter as [G*Fg rows][K] in tiled mode, a box
/// of blockK x blockN.
convrt::TensorMapSpec filterTensorMap(const GemmProblem &p,
                                      const Sm90Tiles &t);

/// The bytes a copy through `map` completes on its mbarrier: the whole box,
/// zero-filled parts included (the maps here have unit traversal strides
/// along the box's tiled dims). convrt's TensorMapSpec::boxBytes says the
/// same; the compiler does not link the runtime.
int64_t boxBytes(const convrt::TensorMapSpec &map, int64_t elementBytes);

/// The kernel's tensor maps, in parameter order: the image's (unless the
/// producer gathers A), then the filter's.
SmallVector<convrt::TensorMapSpec> sm90TensorMaps(const GemmProblem &p,
                                                    const Sm90Tiles &t);

/// Where one CTA's operands are: flat memrefs of the input, filter, bias,
/// residual and output; on the GPU the tensor maps' generic pointers and
/// (set by the block) the shared base's i64 address. `staging`: the staged
/// epilogue's tiles (a view of shared memory over the rings, or the twin's
/// buffer), when it is built. (The twin's shared memory, barriers and registers are
/// Sm90Twin's.)
struct Sm90Operands {
  Value x, w, y, bias, residual;
  /// imageMap is null when the producer gathers A (then tapTable is set).
  Value imageMap, filterMap, sharedBase, tapTable;
  Value staging;
};

class Sm90KernelBuilder {
public:
  Sm90KernelBuilder(OpBuilder &b, Location loc, const GemmProblem &p,
                    const Sm90Tiles &t, Sm90Hardware &hw);

  /// The CTA at (bm, bn, group) of the grid.
  void emitBlock(Value bm, Value bn, Value group, const Sm90Operands &ops);

  /// The two rings' bytes (the twin's shared memory: its barriers are state
  /// words apart), and the f32 accumulators a consumer thread holds.
  int64_t ringBytes() const;
  int64_t accumulatorsPerThread() const { return t.blockN / 2; }

private:
  // The hardware forms run the builder's steps, on its problem and tiles.
  friend class Sm90Gpu;
  friend class Sm90Twin;

  // Small arithmetic on i32 / i64 / index values.
  Value i32(int64_t v);
  Value i64(int64_t v);
  Value idx(int64_t v);
  Value toI32(Value index);
  Value toIndex(Value i32v);

  /// The K tiles, and K tile kt's filter tap and first channel.
  int64_t kTiles() const;
  struct TileTap {
    Value kh, kw, channel;
  };
  TileTap tileTap(Value kt);
  /// The A copy's coordinates {c, w, h, n} and im2col offsets {kw*dw,
  /// kh*dh} for K tile kt of the block's first output pixel (n0, oh0, ow0).
  ImageCopy imageCopy(Value kt, Value group, ArrayRef<Value> firstPixel);
  /// The B copy's coordinates {k, row}.
  SmallVector<Value> filterCopy(Value kt, Value bn, Value group);
  /// The bytes both copies of a tile write (the full boxes: zero fill
  /// counts), and B's alone.
  int64_t tileBytes() const;
  int64_t filterTileBytes() const;
  /// The hardware's forms of shared region `offset` (bytes from the aligned
  /// base), of its i64 address (what descriptors encode), of mbarrier
  /// `index`.
  Value sharedAddress(Value offset, const Sm90Operands &ops) {
    return hw.sharedAddress(*this, offset, ops);
  }
  Value sharedAddress64(Value offset, const Sm90Operands &ops) {
    return hw.sharedAddress64(*this, offset, ops);
  }
  Value barrierAddress(Value index, const Sm90Operands &ops) {
    return hw.barrierAddress(*this, index, ops);
  }
  /// The wgmma matrix descriptor of a K-major, 128-byte-swizzled tile at
  /// shared byte address `address` (i64): start >> 4, leading byte offset 1
  /// (unused by swizzled K-major layouts), stride byte offset 1024 (8 rows
  /// of 128 bytes), base offset 0, swizzle mode 1 (128B).
  Value matrixDescriptor(Value address);
  /// The stage, and the parity of the ring's pass, of K tile kt.
  std::pair<Value, Value> ringSlot(Value kt);

  /// The block's first output pixel (n0, oh0, ow0), i32.
  SmallVector<Value> firstPixel(Value bm);
  /// The producer's K tile kt: wait for its ring slot to be free (after the
  /// first pass), arm the slot's `full` barrier with the tile's bytes, issue
  /// both copies.
  void emitProducerStep(Value kt, Value bn, Value group,
                        ArrayRef<Value> pixel, const Sm90Operands &ops);
  /// From the second pass on, waits until both consumers have freed K tile
  /// kt's slot (it holds tile kt - S until then: the empty barrier's
  /// previous phase).
  void waitForSlot(Value kt, const Sm90Operands &ops);
  /// The B tile of K tile kt into its slot, completing on `full`.
  void copyFilterTile(Value kt, Value bn, Value group, Value full,
                      const Sm90Operands &ops);
  /// The gathering producer's thread 0: arm the slot's `full` barrier with
  /// the B tile's bytes (expect_tx, no arrival: the 128 threads' arrivals
  /// complete the phase) and issue B's copy.
  void armFilterTile(Value kt, Value bn, Value group, const Sm90Operands &ops);
  /// Where producer thread `tid` (< 128) of block bm gathers: its row's
  /// output pixel, once per block.
  Sm80KernelBuilder::RowPlace gatherPlace(Value bm, Value tid);
  /// Producer thread `row`'s A row of K tile kt (row = the thread in the
  /// warpgroup, `place` its output pixel's), blockK elements through the
  /// tap table, zero in the padding and past K or M.
  SmallVector<Value> gatherRow(Value kt, const Sm80KernelBuilder::RowPlace &place,
                               Value group, const Sm90Operands &ops);
  /// The row into the slot's A tile as TMA's 128-byte swizzle would place
  /// it: 16-byte chunk q of row r at chunk q ^ (r % 8).
  void storeGatheredRow(Value kt, Value row, ArrayRef<Value> values,
                        const Sm90Operands &ops);
  /// The thread's row visible to wgmma (the async proxy), then its arrival
  /// on the slot's `full` barrier.
  void publishGatheredRow(Value kt, const Sm90Operands &ops);
  /// Consumer `consumer`'s K tile kt: wait for it, four wgmma into `acc`
  /// (the GPU's accumulator struct; null on the twin, whose accumulators are
  /// memory), commit, wait until only this tile's group is in flight, free
  /// the previous tile's slot. Returns the new accumulators. `overwrite`
  /// (the GPU's K tile 0): the first wgmma ignores `acc` (scale-d = 0).
  Value emitConsumerStep(Value kt, Value consumer, Value acc,
                         const Sm90Operands &ops, bool overwrite = false);
  /// The arrivals that complete a `full` phase: the TMA thread's one, or the
  /// gathering producer's 128.
  int64_t fullArrivals() const {
    return t.gatherA ? kWarpgroupThreads : 1;
  }
  /// The accumulator's (row, col) within the warpgroup's 64 x blockN tile
  /// of register `r` of thread `tidInGroup`.
  std::pair<Value, Value> accumulatorPosition(Value tidInGroup, int64_t r);
  /// The direct epilogue (the problem has no staged one): each value
  /// stored at its fragment position. (The staged one is stageEpilogue, a
  /// barrier of the warp's lanes, storeStagedEpilogue.)
  void emitEpilogue(Value consumer, Value tidInGroup, Value bm, Value bn,
                    Value group, ArrayRef<Value> accs,
                    const Sm90Operands &ops);
  /// The staged epilogue's halves for thread `tidInGroup` of consumer
  /// `consumer`: its accumulators into its warp's staged tile; its vectors
  /// of that tile out to the output.
  void stageEpilogue(Value consumer, Value tidInGroup, Value bn, Value group,
                     ArrayRef<Value> accs);
  /// The staged tile's warp (0..7 over both consumers) and lane of thread
  /// `tidInGroup` of consumer `consumer`.
  std::pair<Value, Value> epilogueWarp(Value consumer, Value tidInGroup);
  void storeStagedEpilogue(Value consumer, Value tidInGroup, Value bm,
                           Value bn, Value group, const Sm90Operands &ops);

  OpBuilder &b;
  Location loc;
  const GemmProblem &p;
  const Sm90Tiles &t;
  Sm90Hardware &hw;
  EpilogueStaging staged;
  TileConfig epilogueTiles;
  Sm80KernelBuilder epilogue;
};

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_SM90_SM90KERNEL_H
