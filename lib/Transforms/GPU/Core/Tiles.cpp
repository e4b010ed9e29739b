//===- Tiles.cpp - the CTA tiles of the mma.sync kernels --------------------===//
//
// One heuristic for every problem, options override it field by field, and
// checkTiles rejects what cannot be built (so an override is an error that
// says why, never a broken kernel).
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/Core.h"

#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

/// 2x2 warps, a 64-byte K step, three stages; the block shrinks along a
/// dimension the problem cannot fill (few filters per group, few pixels), so
/// small and depthwise layers do not spend most of each tile on padding
/// (down to 16 filters: one mma n8 pair per warp).
static TileConfig heuristicTiles(const GemmProblem &p) {
  TileConfig t;
  t.blockK = kRowBytes / p.elementBytes();
  t.blockN = p.fg > 64 ? 128 : p.fg > 32 ? 64 : p.fg > 16 ? 32 : 16;
  t.blockM = p.m() > 64 ? 128 : 64;
  t.warpsM = 2;
  t.warpsN = 2;
  // Few filters per group (grouped and depthwise layers): one 16-wide warp
  // column, so no MMA works on filters that do not exist (Fg = 16 used to
  // leave half of a 32-wide tile idle).
  if (t.blockN == 16)
    t.warpsN = 1;
  // A gathered element by element (NCHW) costs each thread a register per
  // element in flight: 8 warps halve both that and the accumulators per
  // thread (ptxas spilled with 4 warps of 64x64 on sm_90).
  // The quantized kernel's zero-point sums add an accumulator tile per A and
  // per B tile: with 4 warps of 64x32 a 3x3 64-channel NHWC layer took 255
  // registers on sm_80 (168 on sm_90); 2x4 warps of 64x16 take 128 on both
  // with no spills (4x2 spilled a few bytes once padding reads the zero
  // point).
  // Not tf32 with a 64-wide tile: there 4 warps of 64x32 fit (128 registers
  // with its 16 elements in flight, no spill), and the doubled warp tile
  // halves the fragment loads and conversions of B per MMA (tf32 NCHW C64:
  // 7.19 other instructions per MMA with 4x2 warps, 5.44 with 2x2).
  bool sums = p.needsRowSums() || p.needsColumnSums();
  bool tf32Narrow = p.kind == MmaKind::TF32 && t.blockN == 64;
  if (!isVectorized(p, Operand::A) && t.blockM == 128 && t.blockN >= 64 &&
      !tf32Narrow)
    t.warpsM = 4;
  else if (sums && t.blockM == 128 && t.blockN >= 64)
    t.warpsN = 4;
  t.stages = 3;
  return t;
}

TileConfig igemm::chooseTiles(const GemmProblem &p,
                              const ImplicitGemmTiles &o) {
  TileConfig t = heuristicTiles(p);
  auto override = [](int64_t &value, int64_t requested) {
    if (requested)
      value = requested;
  };
  override(t.blockM, o.blockM);
  override(t.blockN, o.blockN);
  override(t.warpsM, o.warpsM);
  override(t.warpsN, o.warpsN);
  override(t.stages, o.stages);
  return t;
}

LogicalResult igemm::checkTiles(const TileConfig &t, const GemmProblem &p,
                               Refusal &why) {
  std::string reason;
  llvm::raw_string_ostream os(reason);
  int64_t chunksPerRow = t.blockK / p.chunkElements();
  if (t.warpsM < 1 || t.warpsN < 1 || t.stages < 2)
    os << "warps must be >= 1 and stages >= 2";
  else if (t.blockM % (16 * t.warpsM) != 0)
    os << "block-m (" << t.blockM << ") must be a multiple of 16 x warps-m ("
       << 16 * t.warpsM << ")";
  else if (t.blockN % (16 * t.warpsN) != 0)
    os << "block-n (" << t.blockN << ") must be a multiple of 16 x warps-n ("
       << 16 * t.warpsN << ")";
  else if ((t.blockM * chunksPerRow) % t.threads() != 0 ||
           (t.blockN * chunksPerRow) % t.threads() != 0)
    os << "block-m and block-n x " << chunksPerRow
       << " chunks must divide evenly among " << t.threads() << " threads";
  else if (t.sharedBytes(p.elementBytes()) > kMaxStaticSharedBytes)
    os << "the stages need " << t.sharedBytes(p.elementBytes())
       << " bytes of shared memory (at most " << kMaxStaticSharedBytes << ")";
  else if (llvm::divideCeilSigned(p.fg, t.blockN) > kMaxGridYZ)
    os << "the grid would need more than " << kMaxGridYZ
       << " blocks along the filters";
  else if (llvm::divideCeilSigned(p.m(), t.blockM) > kMaxGridX)
    os << "the grid would need more than " << kMaxGridX
       << " blocks along the output pixels";
  if (reason.empty())
    return success();
  why.reason = std::move(reason);
  return failure();
}

TileConfig igemm::directTiles(const GemmProblem &p) {
  // 8 warps, one item (a pixel's channel vector) per thread.
  TileConfig t{/*blockM=*/256, /*blockN=*/1, /*blockK=*/1, /*warpsM=*/8,
               /*warpsN=*/1, /*stages=*/1};
  t.directVector = directDepthwiseVector(p);
  return t;
}

Launch igemm::launchShape(const GemmProblem &p, const TileConfig &t) {
  if (t.directVector)
    return {llvm::divideCeilSigned(p.m() * (p.groups / t.directVector),
                                   t.threads()),
            1, 1};
  return {llvm::divideCeilSigned(p.m(), t.blockM),
          llvm::divideCeilSigned(p.fg, t.blockN), p.groups};
}
