//===- Sm90Kernel.cpp - the sm_90a kernel body and its twin -----------------===//
//
// See Sm90Kernel.h for the design. The body is written once: the producer
// step (coordinates, byte count, barrier protocol), the consumer step
// (descriptors, ring slots) and the epilogue (fragment positions) are shared
// by both forms; only the instructions differ: NVVM ops on the GPU, and on
// the twin host loops that implement what the PTX ISA says those
// instructions do.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Sm90/Sm90Kernel.h"
#include "Transforms/GPU/Core/Core.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

//===----------------------------------------------------------------------===//
// Which convolutions the family takes, its tiles and its tensor maps
//===----------------------------------------------------------------------===//

/// The im2col box corners a rank-4 (NHWC) tensor map can hold, and the
/// im2col offsets a copy can add (PTX ISA: 8 bits each for 4-D).
constexpr int64_t kCornerMin = -128, kCornerMax = 127, kOffsetMax = 255;
constexpr int64_t kMaxTraversalStride = 8;

/// Channels per K tile: one 128-byte swizzle row of the element type.
static int64_t tileChannels(const GemmProblem &p) {
  return kSwizzleRowBytes / p.elementBytes();
}

/// The box's upper corner along one spatial dim: chosen so that the box
/// positions lower, lower + stride, ... are exactly the `out` output
/// positions (the last one at (out - 1) * stride + lower).
static int64_t upperCorner(int64_t size, int64_t out, int64_t stride,
                           int64_t lower) {
  return (out - 1) * stride + lower - (size - 1);
}

/// Fills `why` and fails: the checks' one way to refuse.
static LogicalResult refuse(Refusal &why, std::string reason) {
  why.reason = std::move(reason);
  return failure();
}

LogicalResult igemm::checkSm90Problem(const GemmProblem &p, Refusal &why) {
  if (p.kind == MmaKind::S8)
    return refuse(why, "the sm_90a kernels take f16, bf16 and f32 data "
                       "(tf32 math); i8 runs on the mma.sync kernels");
  if (p.hasDepth)
    return refuse(why, "3-D convolutions run on the mma.sync kernels");
  if (p.explicitIm2col)
    return refuse(why, "explicit im2col runs on the mma.sync kernels");
  if (directDepthwiseVector(p))
    return refuse(why, "depthwise convolutions run on the direct kernel");
  // B: the filter as [G*Fg rows][K] for a tiled TMA box.
  int64_t k = p.k();
  if (!(filterFlatAlongK(p) && p.wF == k &&
        (p.groups == 1 || p.wG == p.fg * k)))
    return refuse(why, "the filter rows are not contiguous along K in the "
                       "GEMM's K order ((kh, kw, c) for a channels-last "
                       "image: FHWC; (c, kh, kw) otherwise: FCHW), which the "
                       "K-major B tile's TMA load needs");
  if (k * p.elementBytes() % 16 != 0)
    return refuse(why, "the filter rows (K = " + std::to_string(k) +
           " elements) are not a multiple of 16 bytes, which TMA's global "
           "strides need");
  // A: TMA im2col, else the producer warpgroup's gather.
  if (Refusal image; failed(checkSm90ImageTma(p, image)) && !tapTableFits(p))
    return refuse(why, image.reason +
                           ", and the gather's tap table does not fit its "
                           "16-bit window terms and 32-bit offsets");
  return success();
}

LogicalResult igemm::checkSm90ImageTma(const GemmProblem &p, Refusal &why) {
  int64_t c = p.groups * p.cg;
  if (!(p.xC == 1 && p.xW == c && p.xH == p.w * c && p.xN == p.h * p.w * c))
    return refuse(why, "the image is not a dense channels-last (NHWC) tensor, which TMA's "
           "im2col mode needs");
  if (p.cg % tileChannels(p) != 0)
    return refuse(why, "channels per group are not a multiple of " +
           std::to_string(tileChannels(p)) +
           " (a K tile is one filter tap's 128 bytes of channels)");
  if (p.strideH > kMaxTraversalStride || p.strideW > kMaxTraversalStride)
    return refuse(why, "strides above 8 exceed TMA's traversal strides");
  int64_t upperW = upperCorner(p.w, p.wo, p.strideW, -p.padLeft);
  int64_t upperH = upperCorner(p.h, p.ho, p.strideH, -p.padTop);
  for (int64_t corner : {-p.padLeft, -p.padTop, upperW, upperH})
    if (corner < kCornerMin || corner > kCornerMax)
      return refuse(why, "padding or dilated kernel extent beyond the im2col box's "
             "corner range [-128, 127]");
  if ((p.kw - 1) * p.dilationW > kOffsetMax ||
      (p.kh - 1) * p.dilationH > kOffsetMax)
    return refuse(why, "dilated kernel taps beyond TMA's im2col offsets (255)");
  return success();
}

Sm90Tiles igemm::chooseSm90Tiles(const GemmProblem &p) {
  Sm90Tiles t;
  Refusal whyGathered;
  t.gatherA = failed(checkSm90ImageTma(p, whyGathered));
  t.blockK = tileChannels(p);
  // One wgmma per 64 rows: N = 128, or 64 when the group's filters fit
  // it (half of a wider tile would idle).
  t.blockN = p.fg <= 64 ? 64 : 128;
  // As many ring slots as fit next to one CTA's registers (one CTA per SM:
  // 384 threads and 64+ accumulators each), at most 6, at least 2.
  constexpr int64_t kSharedLimit = 227 * 1024;
  int64_t stageBytes = t.aBytes(p.elementBytes()) + t.bBytes(p.elementBytes());
  // A gathering producer reads each image element once per tap through
  // L1: at most 4 slots leave it ~100 KiB of the SM's 256 (a prediction for
  // the device to check, docs/performance.md).
  int64_t most = t.gatherA ? 4 : 6;
  t.stages = std::clamp<int64_t>(
      (kSharedLimit - kSwizzleAtomBytes - 128) / stageBytes, 2, most);
  return t;
}

int64_t igemm::sm90KTiles(const GemmProblem &p, const Sm90Tiles &t) {
  return llvm::divideCeilSigned(p.k(), t.blockK);
}

std::vector<int32_t> igemm::sm90TapTable(const GemmProblem &p,
                                           const Sm90Tiles &t) {
  // One entry per k: each element's (channel, tap) is the entry's, read
  // alike by all 128 threads (their rows differ, their k does not).
  return buildTapTable(p, /*step=*/1, sm90KTiles(p, t) * t.blockK);
}

TileConfig igemm::sm90EpilogueTiles(const Sm90Tiles &t) {
  int64_t warps = t.consumers * kWarpgroupThreads / kThreadsPerWarp;
  return TileConfig{t.blockM, t.blockN, t.blockK, warps, 1, 1};
}

EpilogueStaging igemm::sm90Staging(const GemmProblem &p,
                                     const Sm90Tiles &t) {
  int64_t rings = t.stages * (t.aBytes(p.elementBytes()) +
                              t.bBytes(p.elementBytes()));
  return epilogueStaging(p, sm90EpilogueTiles(t), rings);
}

Launch igemm::sm90LaunchShape(const GemmProblem &p, const Sm90Tiles &t) {
  return {llvm::divideCeilSigned(p.m(), t.blockM),
          llvm::divideCeilSigned(p.fg, t.blockN), p.groups};
}

/// The bytes a copy through `map` completes on its mbarrier: the whole box,
/// zero-filled parts included (the maps here have unit traversal strides
/// along the box's tiled dims). convrt's TensorMapSpec::boxBytes says the
/// same; the compiler does not link the runtime.
static int64_t boxBytes(const convrt::TensorMapSpec &map, int64_t e) {
  int64_t bytes = e;
  for (uint32_t extent : map.box)
    bytes *= extent;
  return bytes;
}

static convrt::DType bufferType(const GemmProblem &p) {
  switch (p.kind) {
  case MmaKind::BF16:
    return convrt::DType::BF16;
  case MmaKind::TF32:
    return convrt::DType::F32;
  default:
    return convrt::DType::F16;
  }
}

/// The K of one wgmma: 32 bytes of the operand (16 f16/bf16, 8 tf32).
static int64_t wgmmaK(const GemmProblem &p) { return 32 / p.elementBytes(); }

convrt::TensorMapSpec igemm::imageTensorMap(const GemmProblem &p,
                                            const Sm90Tiles &t) {
  uint64_t e = p.elementBytes(), c = p.groups * p.cg;
  convrt::TensorMapSpec s;
  s.name = "input_im2col";
  s.argument = "input";
  s.mode = convrt::TensorMapMode::Im2col;
  s.dtype = bufferType(p);
  s.dims = {c, uint64_t(p.w), uint64_t(p.h), uint64_t(p.batch)};
  s.stridesBytes = {c * e, p.w * c * e, p.h * p.w * c * e};
  s.box = {uint32_t(t.blockK), uint32_t(t.blockM)};
  s.elementStrides = {1, uint32_t(p.strideW), uint32_t(p.strideH), 1};
  s.lowerCorner = {int32_t(-p.padLeft), int32_t(-p.padTop)};
  s.upperCorner = {
      int32_t(upperCorner(p.w, p.wo, p.strideW, -p.padLeft)),
      int32_t(upperCorner(p.h, p.ho, p.strideH, -p.padTop))};
  s.swizzle = convrt::TensorMapSwizzle::B128;
  return s;
}

convrt::TensorMapSpec igemm::filterTensorMap(const GemmProblem &p,
                                             const Sm90Tiles &t) {
  uint64_t e = p.elementBytes();
  convrt::TensorMapSpec s;
  s.name = "filter_tiled";
  s.argument = "filter";
  s.mode = convrt::TensorMapMode::Tiled;
  s.dtype = bufferType(p);
  s.dims = {uint64_t(p.k()), uint64_t(p.groups * p.fg)};
  s.stridesBytes = {p.k() * e};
  s.box = {uint32_t(t.blockK), uint32_t(t.blockN)};
  s.elementStrides = {1, 1};
  s.swizzle = convrt::TensorMapSwizzle::B128;
  return s;
}

SmallVector<convrt::TensorMapSpec>
igemm::sm90TensorMaps(const GemmProblem &p, const Sm90Tiles &t) {
  SmallVector<convrt::TensorMapSpec> maps;
  if (!t.gatherA)
    maps.push_back(imageTensorMap(p, t));
  maps.push_back(filterTensorMap(p, t));
  return maps;
}

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

Sm90KernelBuilder::Sm90KernelBuilder(OpBuilder &b, Location loc,
                                         const GemmProblem &p,
                                         const Sm90Tiles &t, bool twin)
    : b(b), loc(loc), p(p), t(t), twin(twin), staged(sm90Staging(p, t)),
      epilogueTiles(sm90EpilogueTiles(t)),
      // The epilogue's fold, output math and staging are the mma.sync
      // family's, on the consumers' warps.
      epilogue(b, loc, p, epilogueTiles, twin) {
  // The builder's invariants (chooseSm90Tiles keeps them): one m64 wgmma
  // row block per consumer warpgroup, a K tile of whole wgmma K steps and
  // 128-byte swizzled rows, N a wgmma N, a ring of at least two slots.
  assert(t.blockM == 64 * t.consumers && "one m64 block per consumer");
  assert(t.blockK * p.elementBytes() == kSwizzleRowBytes &&
         "a K tile is one 128-byte swizzled row");
  assert(t.blockK % wgmmaK(p) == 0 && "whole wgmma K steps per K tile");
  assert(t.blockN % 8 == 0 && t.blockN >= 8 && t.blockN <= 256 &&
         "wgmma's N is a multiple of 8 up to 256");
  assert(t.stages >= 2 && "the ring needs two slots to overlap");
}

Value Sm90KernelBuilder::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}
Value Sm90KernelBuilder::i64(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}
Value Sm90KernelBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value Sm90KernelBuilder::toI32(Value index) {
  return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
}
Value Sm90KernelBuilder::toIndex(Value v) {
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
}

int64_t Sm90KernelBuilder::kTiles() const { return sm90KTiles(p, t); }

int64_t Sm90KernelBuilder::tileBytes() const {
  return boxBytes(imageTensorMap(p, t), p.elementBytes()) + filterTileBytes();
}

int64_t Sm90KernelBuilder::filterTileBytes() const {
  return boxBytes(filterTensorMap(p, t), p.elementBytes());
}

int64_t Sm90KernelBuilder::twinSharedBytes() const {
  return t.barrierOffset(0, p.elementBytes());
}

Sm90KernelBuilder::TileTap Sm90KernelBuilder::tileTap(Value kt) {
  // K order (kh, kw, c) with Cg a multiple of the tile: tile kt is channels
  // [c, c + blockK) of one tap.
  int64_t tilesPerTap = p.cg / t.blockK;
  Value tap = arith::DivUIOp::create(b, loc, kt, i32(tilesPerTap));
  Value inTap = arith::RemUIOp::create(b, loc, kt, i32(tilesPerTap));
  return {arith::DivUIOp::create(b, loc, tap, i32(p.kw)),
          arith::RemUIOp::create(b, loc, tap, i32(p.kw)),
          arith::MulIOp::create(b, loc, inTap, i32(t.blockK))};
}

Sm90KernelBuilder::ImageCopy
Sm90KernelBuilder::imageCopy(Value kt, Value group,
                               ArrayRef<Value> firstPixel) {
  TileTap tap = tileTap(kt);
  Value channel = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, group, i32(p.cg)), tap.channel);
  auto times = [&](Value v, int64_t c) {
    return arith::MulIOp::create(b, loc, v, i32(c));
  };
  auto toI16 = [&](Value v) {
    return arith::TruncIOp::create(b, loc, b.getI16Type(), v);
  };
  // The block's first output pixel as a box position: its window's
  // top-left corner in image coordinates (negative inside the padding).
  Value n0 = firstPixel[0], oh0 = firstPixel[1], ow0 = firstPixel[2];
  Value w0 = arith::SubIOp::create(b, loc, times(ow0, p.strideW),
                                   i32(p.padLeft));
  Value h0 = arith::SubIOp::create(b, loc, times(oh0, p.strideH),
                                   i32(p.padTop));
  return {{channel, w0, h0, n0},
          {toI16(times(tap.kw, p.dilationW)),
           toI16(times(tap.kh, p.dilationH))}};
}

SmallVector<Value> Sm90KernelBuilder::filterCopy(Value kt, Value bn,
                                                   Value group) {
  Value k = arith::MulIOp::create(b, loc, kt, i32(t.blockK));
  Value row = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, group, i32(p.fg)),
      arith::MulIOp::create(b, loc, bn, i32(t.blockN)));
  return {k, row};
}

std::pair<Value, Value> Sm90KernelBuilder::ringSlot(Value kt) {
  Value stage = arith::RemUIOp::create(b, loc, kt, i32(t.stages));
  Value pass = arith::DivUIOp::create(b, loc, kt, i32(t.stages));
  return {stage, arith::AndIOp::create(b, loc, pass, i32(1))};
}

Value Sm90KernelBuilder::sharedAddress(Value offset,
                                         const Sm90Operands &ops) {
  if (twin)
    return offset;
  Value address = arith::AddIOp::create(
      b, loc, ops.sharedBase,
      arith::ExtUIOp::create(b, loc, b.getI64Type(), offset));
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3), address);
}

Value Sm90KernelBuilder::barrierAddress(Value index,
                                          const Sm90Operands &ops) {
  if (twin)
    return index;
  Value offset = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, index, i32(8)),
      i32(t.barrierOffset(0, p.elementBytes())));
  return sharedAddress(offset, ops);
}

Value Sm90KernelBuilder::matrixDescriptor(Value address) {
  // PTX ISA, "Matrix Descriptor Format": bits 0-13 start address >> 4,
  // 16-29 leading dimension byte offset >> 4, 32-45 stride dimension byte
  // offset >> 4, 49-51 base offset, 62-63 swizzle (1 = 128B).
  constexpr int64_t kLeading = 1, kStride = kSwizzleAtomBytes >> 4;
  int64_t fixed = (kLeading << 16) | (kStride << 32) | (int64_t(1) << 62);
  Value start = arith::AndIOp::create(
      b, loc,
      arith::ShRUIOp::create(b, loc, address, i64(4)),
      i64(0x3fff));
  return arith::OrIOp::create(b, loc, start, i64(fixed));
}

std::pair<Value, Value>
Sm90KernelBuilder::accumulatorPosition(Value tidInGroup, int64_t r) {
  // wgmma's D fragment (f32, any K): warp w of the warpgroup holds rows
  // 16w .. 16w+15; register r of lane l is row l/4 (+8 for r%4 >= 2) and
  // column 8*(r/4) + 2*(l%4) + r%2 - the mma.sync m16n8 layout per warp.
  Value warp = arith::DivUIOp::create(b, loc, tidInGroup, idx(32));
  Value lane = arith::RemUIOp::create(b, loc, tidInGroup, idx(32));
  Value row = arith::AddIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc,
                            arith::MulIOp::create(b, loc, warp, idx(16)),
                            arith::DivUIOp::create(b, loc, lane, idx(4))),
      idx((r % 4) / 2 * 8));
  Value col = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc,
                            arith::RemUIOp::create(b, loc, lane, idx(4)),
                            idx(2)),
      idx(8 * (r / 4) + r % 2));
  return {row, col};
}

void Sm90KernelBuilder::emitEpilogue(Value consumer, Value tidInGroup,
                                       Value bm, Value bn, Value group,
                                       ArrayRef<Value> accs,
                                       const Sm90Operands &ops) {
  Value rowBase = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bm, idx(t.blockM)),
      arith::MulIOp::create(b, loc, consumer, idx(64)));
  Value colBase = arith::MulIOp::create(b, loc, bn, idx(t.blockN));
  if (staged.vector) {
    // Both consumers' last wgmma have been waited for (wait_group 0) when
    // they pass this barrier of the 256 consumer threads: only then may a
    // warp's staged tile overwrite ring slots the other one reads. (The
    // producer warpgroup takes no part: its loads were all consumed.)
    NVVM::BarrierOp::create(b, loc, TypeRange{}, i32(1),
                            i32(t.consumerThreads()), /*reductionOp=*/nullptr,
                            Value());
    stageEpilogue(consumer, tidInGroup, bn, group, accs);
    NVVM::SyncWarpOp::create(b, loc, i32(-1));
    storeStagedEpilogue(consumer, tidInGroup, bm, bn, group, ops);
    return;
  }
  // Adjacent columns r, r+1 go out as one vector where the output allows.
  int64_t step = epilogue.pairsOutputs() ? 2 : 1;
  for (int64_t r = 0; r < int64_t(accs.size()); r += step) {
    auto [row, col] = accumulatorPosition(tidInGroup, r);
    Value m = arith::AddIOp::create(b, loc, rowBase, row);
    Value f = arith::AddIOp::create(b, loc, colBase, col);
    epilogue.storeOutputs(ops.y, m, f, group, accs.slice(r, step));
  }
}

std::pair<Value, Value> Sm90KernelBuilder::epilogueWarp(Value consumer,
                                                         Value tidInGroup) {
  Value warp = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, consumer, idx(4)),
      arith::DivUIOp::create(b, loc, tidInGroup, idx(kThreadsPerWarp)));
  return {warp,
          arith::RemUIOp::create(b, loc, tidInGroup, idx(kThreadsPerWarp))};
}

void Sm90KernelBuilder::stageEpilogue(Value consumer, Value tidInGroup,
                                        Value bn, Value group,
                                        ArrayRef<Value> accs) {
  // Register r = 4j + v of a lane is element v of its m16n8 tile j, as
  // stageRow takes them.
  auto [warp, lane] = epilogueWarp(consumer, tidInGroup);
  epilogue.stageRow(warp, lane, arith::MulIOp::create(b, loc, bn, idx(t.blockN)),
                    group, accs);
}

void Sm90KernelBuilder::storeStagedEpilogue(Value consumer, Value tidInGroup,
                                              Value bm, Value bn, Value group,
                                              const Sm90Operands &ops) {
  auto [warp, lane] = epilogueWarp(consumer, tidInGroup);
  // Warp w's 16 rows: the block's, then 64 a consumer, 16 a warp.
  Value rowBase = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bm, idx(t.blockM)),
      arith::MulIOp::create(b, loc, warp, idx(16)));
  epilogue.storeStagedRow(ops.y, warp, lane, rowBase,
                          arith::MulIOp::create(b, loc, bn, idx(t.blockN)),
                          group);
}

//===----------------------------------------------------------------------===//
// The block
//===----------------------------------------------------------------------===//

SmallVector<Value> Sm90KernelBuilder::firstPixel(Value bm) {
  Value m0 = toI32(arith::MulIOp::create(b, loc, bm, idx(t.blockM)));
  Value n0 = arith::DivUIOp::create(b, loc, m0, i32(p.pixels()));
  Value inImage = arith::RemUIOp::create(b, loc, m0, i32(p.pixels()));
  return {n0, arith::DivUIOp::create(b, loc, inImage, i32(p.wo)),
          arith::RemUIOp::create(b, loc, inImage, i32(p.wo))};
}

Value Sm90KernelBuilder::sharedAddress64(Value offset,
                                           const Sm90Operands &ops) {
  Value wide = arith::ExtUIOp::create(b, loc, b.getI64Type(), offset);
  return twin ? wide : arith::AddIOp::create(b, loc, ops.sharedBase, wide);
}

void Sm90KernelBuilder::waitForSlot(Value kt, const Sm90Operands &ops) {
  auto [stage, parity] = ringSlot(kt);
  Value empty = barrierAddress(
      arith::AddIOp::create(b, loc, stage, i32(t.stages)), ops);
  Value reused = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, kt,
                                       i32(t.stages));
  auto ifReused = scf::IfOp::create(b, loc, reused, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifReused.getThenRegion().front());
  Value previous = arith::XOrIOp::create(b, loc, parity, i32(1));
  if (twin)
    twinWaitParity(empty, previous, ops);
  else
    NVVM::MBarrierTryWaitParityOp::create(b, loc, empty, previous,
                                          i32(kTryWaitTicks));
}

void Sm90KernelBuilder::tmaCopy(Value dst, Value map, ValueRange coordinates,
                                  ValueRange offsets, Value full,
                                  const Sm90Operands &ops) {
  auto cluster = LLVM::LLVMPointerType::get(b.getContext(), 7);
  Value dstCluster = LLVM::AddrSpaceCastOp::create(b, loc, cluster,
                                                   sharedAddress(dst, ops));
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, dstCluster, map, coordinates, full, offsets, Value(), Value(),
      offsets.empty() ? NVVM::TMALoadMode::TILE : NVVM::TMALoadMode::IM2COL,
      false, nullptr, Value());
}

void Sm90KernelBuilder::copyFilterTile(Value kt, Value bn, Value group,
                                         Value full,
                                         const Sm90Operands &ops) {
  Value stage = ringSlot(kt).first;
  Value dst = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, stage, i32(t.bBytes(p.elementBytes()))),
      i32(t.bOffset(0, p.elementBytes())));
  SmallVector<Value> coordinates = filterCopy(kt, bn, group);
  if (twin)
    twinFilterCopy(dst, coordinates, full, ops);
  else
    tmaCopy(dst, ops.filterMap, coordinates, ValueRange{}, full, ops);
}

void Sm90KernelBuilder::emitProducerStep(Value kt, Value bn, Value group,
                                           ArrayRef<Value> pixel,
                                           const Sm90Operands &ops) {
  waitForSlot(kt, ops);
  Value stage = ringSlot(kt).first;
  Value full = barrierAddress(stage, ops);
  Value dstA = arith::MulIOp::create(b, loc, stage,
                                     i32(t.aBytes(p.elementBytes())));
  ImageCopy image = imageCopy(kt, group, pixel);
  if (twin) {
    twinArrive(full, i32(tileBytes()), 1, ops);
    twinImageCopy(dstA, image, full, ops);
  } else {
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, Type(), full,
                                           i32(tileBytes()),
                                           NVVM::MemScopeKind::CTA, false,
                                           Value());
    tmaCopy(dstA, ops.imageMap, image.coordinates, image.offsets, full, ops);
  }
  copyFilterTile(kt, bn, group, full, ops);
}

void Sm90KernelBuilder::armFilterTile(Value kt, Value bn, Value group,
                                        const Sm90Operands &ops) {
  Value full = barrierAddress(ringSlot(kt).first, ops);
  if (twin)
    twinArrive(full, i32(filterTileBytes()), /*count=*/0, ops);
  else
    NVVM::MBarrierExpectTxOp::create(b, loc, full, i32(filterTileBytes()));
  copyFilterTile(kt, bn, group, full, ops);
}

Sm80KernelBuilder::RowPlace Sm90KernelBuilder::gatherPlace(Value bm, Value tid) {
  return epilogue.rowPlace(arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, bm, idx(t.blockM)), tid));
}

SmallVector<Value>
Sm90KernelBuilder::gatherRow(Value kt, const Sm80KernelBuilder::RowPlace &place,
                               Value group, const Sm90Operands &ops) {
  Value first = arith::MulIOp::create(b, loc, toIndex(kt), idx(t.blockK));
  Value zero =
      arith::ConstantOp::create(b, loc, b.getZeroAttr(p.elementType));
  SmallVector<Value> values;
  // All loads first, then the stores: the row's blockK loads are in flight
  // together.
  for (int64_t j = 0; j < t.blockK; ++j) {
    auto [entryOffset, window] =
        epilogue.tapEntry(arith::AddIOp::create(b, loc, first, idx(j)));
    Value inside = epilogue.tapInside(place, window);
    Value offset = epilogue.clampOffset(
        Operand::A, epilogue.tapOffset(place, group, idx(0), entryOffset),
        inside);
    Value v = memref::LoadOp::create(b, loc, ops.x, ValueRange{offset});
    values.push_back(arith::SelectOp::create(b, loc, inside, v, zero));
  }
  return values;
}

void Sm90KernelBuilder::storeGatheredRow(Value kt, Value row,
                                           ArrayRef<Value> values,
                                           const Sm90Operands &ops) {
  int64_t e = p.elementBytes(), perChunk = kChunkBytes / e;
  Value stage = ringSlot(kt).first;
  Value row32 = toI32(row);
  // Row r of the tile is 128 bytes at r * 128 of the 1024-byte aligned
  // slot; the swizzle's XOR key is r % 8.
  Value rowStart = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, stage, i32(t.aBytes(e))),
      arith::MulIOp::create(b, loc, row32, i32(kSwizzleRowBytes)));
  Value key = arith::RemUIOp::create(b, loc, row32, i32(8));
  for (int64_t q = 0; q < t.blockK / perChunk; ++q) {
    Value chunk = arith::XOrIOp::create(b, loc, key, i32(q));
    Value offset = arith::AddIOp::create(
        b, loc, rowStart, arith::MulIOp::create(b, loc, chunk, i32(kChunkBytes)));
    ArrayRef<Value> elements = values.slice(q * perChunk, perChunk);
    if (twin) {
      Value first = arith::DivUIOp::create(b, loc, toIndex(offset), idx(e));
      for (int64_t i = 0; i < perChunk; ++i)
        memref::StoreOp::create(
            b, loc, elements[i], ops.twinShared,
            ValueRange{arith::AddIOp::create(b, loc, first, idx(i))});
      continue;
    }
    Value vector = vector::FromElementsOp::create(
        b, loc, VectorType::get({perChunk}, p.elementType), elements);
    LLVM::StoreOp::create(b, loc, vector, sharedAddress(offset, ops),
                          /*alignment=*/kChunkBytes);
  }
}

void Sm90KernelBuilder::publishGatheredRow(Value kt,
                                             const Sm90Operands &ops) {
  Value full = barrierAddress(ringSlot(kt).first, ops);
  if (twin) {
    twinArrive(full, i32(0), 1, ops);
    return;
  }
  // Generic-proxy stores that wgmma (the async proxy) reads: each writer
  // fences its own before its release-arrival on the barrier the consumers
  // acquire (PTX ISA, "Proxies").
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
  NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), full, Value());
}

Value Sm90KernelBuilder::emitConsumerStep(Value kt, Value consumer,
                                          Value acc, const Sm90Operands &ops,
                                          bool overwrite) {
  assert((!overwrite || !twin) && "the twin zeroes its accumulators");
  auto [stage, parity] = ringSlot(kt);
  Value full = barrierAddress(stage, ops);
  if (twin)
    twinWaitParity(full, parity, ops);
  else
    NVVM::MBarrierTryWaitParityOp::create(b, loc, full, parity,
                                          i32(kTryWaitTicks));
  int64_t e = p.elementBytes();
  // The warpgroup's 64 rows of A start 64 swizzled rows into the tile.
  Value aBase = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, stage, i32(t.aBytes(e))),
      arith::MulIOp::create(b, loc, consumer, i32(64 * kSwizzleRowBytes)));
  Value bBase = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, stage, i32(t.bBytes(e))),
      i32(t.bOffset(0, e)));
  if (!twin)
    NVVM::WgmmaFenceAlignedOp::create(b, loc);
  // Each k16 step starts 32 bytes further into the swizzled rows: the
  // hardware applies the swizzle to the address bits, so the 1024-byte
  // aligned atom stays the reference.
  int64_t mmaK = wgmmaK(p);
  for (int64_t ks = 0; ks < t.blockK / mmaK; ++ks) {
    int64_t step = ks * mmaK * e;
    Value descA = matrixDescriptor(sharedAddress64(
        arith::AddIOp::create(b, loc, aBase, i32(step)), ops));
    Value descB = matrixDescriptor(sharedAddress64(
        arith::AddIOp::create(b, loc, bBase, i32(step)), ops));
    if (twin) {
      twinWgmma(consumer, descA, descB, ops);
      continue;
    }
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
        NVVM::WGMMAScaleOutAttr::get(ctx, overwrite && ks == 0
                                              ? NVVM::WGMMAScaleOut::zero
                                              : NVVM::WGMMAScaleOut::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col), nullptr);
  }
  if (!twin) {
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    // Tile kt's group may still run; kt-1's has finished reading its slot.
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 1);
  }
  Value started = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, kt,
                                        i32(0));
  auto ifStarted = scf::IfOp::create(b, loc, started, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifStarted.getThenRegion().front());
  Value previous = arith::RemUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, kt, i32(t.stages - 1)),
      i32(t.stages));
  Value empty = barrierAddress(
      arith::AddIOp::create(b, loc, previous, i32(t.stages)), ops);
  if (twin)
    twinArrive(empty, i32(0), kWarpgroupThreads, ops);
  else
    NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), empty, Value());
  return acc;
}

void Sm90KernelBuilder::gpuInitBarriers(const Sm90Operands &ops) {
  for (int64_t s = 0; s < t.stages; ++s) {
    NVVM::MBarrierInitOp::create(b, loc, barrierAddress(i32(s), ops),
                                 i32(fullArrivals()), Value());
    NVVM::MBarrierInitOp::create(b, loc,
                                 barrierAddress(i32(t.stages + s), ops),
                                 i32(t.consumerThreads()), Value());
  }
  // The barriers are written by the generic proxy and completed by the
  // TMA's (the async proxy's) complete_tx: make the inits visible to both.
  NVVM::FenceMbarrierInitOp::create(b, loc);
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(b.getContext(), NVVM::SharedSpace::shared_cta));
}

void Sm90KernelBuilder::emitGpuBlock(Value bm, Value bn, Value group,
                                       const Sm90Operands &given) {
  Sm90Operands ops = given;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // The warpgroup index broadcast from lane 0, as CUTLASS's
  // canonical_warp_group_idx does: ptxas cannot prove tid / 128 uniform, and
  // with wgmma under a branch on it, it serialized every wgmma (C7520, a
  // WARPGROUP.DEPBAR after each HGMMA).
  Value warpgroup = toIndex(
      gpu::ShuffleOp::create(
          b, loc,
          toI32(arith::DivUIOp::create(b, loc, tid, idx(kWarpgroupThreads))),
          i32(0), i32(kThreadsPerWarp), gpu::ShuffleMode::IDX)
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
      b, loc, arith::AddIOp::create(b, loc, raw, i64(kSwizzleAtomBytes - 1)),
      i64(~(kSwizzleAtomBytes - 1)));
  // The staged epilogue's tiles start at the aligned base, over the rings.
  if (staged.vector) {
    Value offset = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(),
        arith::SubIOp::create(b, loc, ops.sharedBase, raw));
    auto type = stagingType(p, epilogueTiles, staged, /*twin=*/false);
    epilogue.setStaging(
        memref::ViewOp::create(b, loc, type, smem, offset, ValueRange{}),
        staged);
  }
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                      idx(0));
  auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    gpuInitBarriers(ops);
  }
  gpu::BarrierOp::create(b, loc);

  Value producer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         warpgroup, idx(0));
  auto roles = scf::IfOp::create(b, loc, producer, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&roles.getThenRegion().front());
    if (t.gatherA) {
      emitGatheringProducer(tid, first, bm, bn, group, ops);
    } else {
      auto ifIssuer =
          scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      b.setInsertionPointToStart(&ifIssuer.getThenRegion().front());
      SmallVector<Value> pixel = firstPixel(bm);
      auto loop = scf::ForOp::create(b, loc, i32(0), i32(kTiles()), i32(1));
      b.setInsertionPointToStart(loop.getBody());
      emitProducerStep(loop.getInductionVar(), toI32(bn), toI32(group), pixel,
                       ops);
    }
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&roles.getElseRegion().front());
  Value consumer = arith::SubIOp::create(b, loc, warpgroup, idx(1));
  auto accType = LLVM::LLVMStructType::getLiteral(
      b.getContext(),
      SmallVector<Type>(accumulatorsPerThread(), b.getF32Type()));
  // K tile 0 apart, its first wgmma overwriting the accumulators (scale-d
  // 0), so that they need no zeroing: zeroed, their registers were written
  // between wgmma.fence and the first wgmma (LLVM sinks the moves), which
  // the PTX ISA forbids, and ptxas repaired that with a warpgroup.arrive of
  // its own (C7519).
  Value undefined = LLVM::PoisonOp::create(b, loc, accType);
  Value firstAcc = emitConsumerStep(i32(0), toI32(consumer), undefined, ops,
                                    /*overwrite=*/true);
  auto loop = scf::ForOp::create(b, loc, i32(1), i32(kTiles()), i32(1),
                                 ValueRange{firstAcc});
  {
    OpBuilder::InsertionGuard inLoop(b);
    b.setInsertionPointToStart(loop.getBody());
    Value acc = emitConsumerStep(loop.getInductionVar(), toI32(consumer),
                                 loop.getRegionIterArg(0), ops);
    scf::YieldOp::create(b, loc, acc);
  }
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  SmallVector<Value> accs;
  for (int64_t r = 0; r < accumulatorsPerThread(); ++r)
    accs.push_back(LLVM::ExtractValueOp::create(b, loc, loop.getResult(0), r));
  Value tidInGroup = arith::RemUIOp::create(b, loc, tid, idx(kWarpgroupThreads));
  emitEpilogue(consumer, tidInGroup, bm, bn, group, accs, ops);
}

void Sm90KernelBuilder::emitGatheringProducer(Value tid, Value first,
                                                Value bm, Value bn,
                                                Value group,
                                                const Sm90Operands &ops) {
  // Thread tid (< 128 here) gathers row tid of every A tile.
  Sm80KernelBuilder::RowPlace place = gatherPlace(bm, tid);
  auto loop = scf::ForOp::create(b, loc, i32(0), i32(kTiles()), i32(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value kt = loop.getInductionVar();
  // The loads need no slot: they are issued before the wait.
  SmallVector<Value> values = gatherRow(kt, place, group, ops);
  waitForSlot(kt, ops);
  auto ifFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard inFirst(b);
    b.setInsertionPointToStart(&ifFirst.getThenRegion().front());
    armFilterTile(kt, toI32(bn), toI32(group), ops);
  }
  storeGatheredRow(kt, tid, values, ops);
  publishGatheredRow(kt, ops);
}

void Sm90KernelBuilder::emitTwinBlock(Value bm, Value bn, Value group,
                                        const Sm90Operands &ops) {
  twinInitBarriers(ops);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  twinForEach(t.consumers, [&](Value c) {
    twinForEach(kWarpgroupThreads, [&](Value tid) {
      twinForEach(accumulatorsPerThread(), [&](Value r) {
        memref::StoreOp::create(b, loc, zero, ops.twinAcc,
                                ValueRange{c, tid, r});
      });
    });
  });
  SmallVector<Value> pixel = firstPixel(bm);
  // One valid order of the warps' work: the producer's tile kt, then the
  // consumers' tile kt. When the protocol is right every wait the kernel
  // makes is already satisfied in it (a consumer frees slot kt-1 at kt,
  // before the producer needs it again at kt-1+S).
  auto loop = scf::ForOp::create(b, loc, i32(0), i32(kTiles()), i32(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    if (t.gatherA) {
      // Thread 0's slot wait, expect_tx and B copy, then every thread's row
      // (their waits are thread 0's, already satisfied).
      waitForSlot(kt, ops);
      armFilterTile(kt, toI32(bn), toI32(group), ops);
      twinForEach(kWarpgroupThreads, [&](Value tid) {
        Sm80KernelBuilder::RowPlace place = gatherPlace(bm, tid);
        storeGatheredRow(kt, tid, gatherRow(kt, place, group, ops), ops);
        publishGatheredRow(kt, ops);
      });
    } else {
      emitProducerStep(kt, toI32(bn), toI32(group), pixel, ops);
    }
    twinForEach(t.consumers, [&](Value c) {
      emitConsumerStep(kt, toI32(c), Value(), ops);
    });
  }
  twinForEach(t.consumers, [&](Value c) {
    auto threadAccumulators = [&](Value tid) {
      SmallVector<Value> accs;
      for (int64_t r = 0; r < accumulatorsPerThread(); ++r)
        accs.push_back(memref::LoadOp::create(b, loc, ops.twinAcc,
                                              ValueRange{c, tid, idx(r)}));
      return accs;
    };
    if (!staged.vector) {
      twinForEach(kWarpgroupThreads, [&](Value tid) {
        emitEpilogue(c, tid, bm, bn, group, threadAccumulators(tid), ops);
      });
      return;
    }
    // The staged epilogue's two halves, every thread's writes before any
    // thread's reads (the GPU's warp barrier between them).
    twinForEach(kWarpgroupThreads, [&](Value tid) {
      stageEpilogue(c, tid, bn, group, threadAccumulators(tid));
    });
    twinForEach(kWarpgroupThreads, [&](Value tid) {
      storeStagedEpilogue(c, tid, bm, bn, group, ops);
    });
  });
}

void Sm90KernelBuilder::emitBlock(Value bm, Value bn, Value group,
                                    const Sm90Operands &ops) {
  if (ops.bias)
    epilogue.setBias(ops.bias);
  if (ops.staging)
    epilogue.setStaging(ops.staging, staged);
  if (ops.tapTable)
    epilogue.setTapTable(ops.tapTable);
  if (twin)
    emitTwinBlock(bm, bn, group, ops);
  else
    emitGpuBlock(bm, bn, group, ops);
}

//===----------------------------------------------------------------------===//
// The twin: the PTX ISA's instructions as host code
//===----------------------------------------------------------------------===//

namespace {
/// The emulated mbarrier's state words.
enum BarrierWord : int64_t { Pending = 0, Expected = 1, TxCount = 2, Phase = 3 };
} // namespace

void Sm90KernelBuilder::twinPoisonIf(Value condition,
                                       const Sm90Operands &ops) {
  auto ifBad = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifBad.getThenRegion().front());
  memref::StoreOp::create(b, loc, i32(1), ops.twinPoison, ValueRange{idx(0)});
}

Value Sm90KernelBuilder::twinBarrierWord(Value barrier, int64_t word,
                                           const Sm90Operands &ops) {
  return memref::LoadOp::create(b, loc, ops.twinBarriers,
                                ValueRange{toIndex(barrier), idx(word)});
}

void Sm90KernelBuilder::twinSetBarrierWord(Value barrier, int64_t word,
                                             Value v,
                                             const Sm90Operands &ops) {
  memref::StoreOp::create(b, loc, v, ops.twinBarriers,
                          ValueRange{toIndex(barrier), idx(word)});
}

void Sm90KernelBuilder::twinInitBarriers(const Sm90Operands &ops) {
  for (int64_t i = 0; i < 2 * t.stages; ++i) {
    // mbarrier.init: phase 0, pending = expected = count, tx-count 0.
    int64_t count = i < t.stages ? fullArrivals() : t.consumerThreads();
    twinSetBarrierWord(i32(i), Pending, i32(count), ops);
    twinSetBarrierWord(i32(i), Expected, i32(count), ops);
    twinSetBarrierWord(i32(i), TxCount, i32(0), ops);
    twinSetBarrierWord(i32(i), Phase, i32(0), ops);
  }
}

void Sm90KernelBuilder::twinCompletePhaseIfDone(Value barrier,
                                                  const Sm90Operands &ops) {
  // The current phase completes when every expected arrival has happened
  // and the transaction count is back to zero; the next phase then expects
  // the same arrivals.
  Value pending = twinBarrierWord(barrier, Pending, ops);
  Value tx = twinBarrierWord(barrier, TxCount, ops);
  twinPoisonIf(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                     pending, i32(0)),
               ops);
  Value done = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, pending, i32(0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tx, i32(0)));
  auto ifDone = scf::IfOp::create(b, loc, done, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifDone.getThenRegion().front());
  twinSetBarrierWord(
      barrier, Phase,
      arith::AddIOp::create(b, loc, twinBarrierWord(barrier, Phase, ops),
                            i32(1)),
      ops);
  twinSetBarrierWord(barrier, Pending,
                     twinBarrierWord(barrier, Expected, ops), ops);
}

void Sm90KernelBuilder::twinArrive(Value barrier, Value txBytes,
                                     int64_t count,
                                     const Sm90Operands &ops) {
  twinSetBarrierWord(
      barrier, TxCount,
      arith::AddIOp::create(b, loc, twinBarrierWord(barrier, TxCount, ops),
                            txBytes),
      ops);
  twinSetBarrierWord(
      barrier, Pending,
      arith::SubIOp::create(b, loc, twinBarrierWord(barrier, Pending, ops),
                            i32(count)),
      ops);
  twinCompletePhaseIfDone(barrier, ops);
}

void Sm90KernelBuilder::twinCompleteTx(Value barrier, Value txBytes,
                                         const Sm90Operands &ops) {
  Value tx = arith::SubIOp::create(
      b, loc, twinBarrierWord(barrier, TxCount, ops), txBytes);
  // The kernel arms the barrier (expect_tx) before it issues the copies, so
  // more bytes landing than it expected is a wrong count: on the GPU the
  // phase would complete before the last copy did.
  twinPoisonIf(
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, tx, i32(0)),
      ops);
  twinSetBarrierWord(barrier, TxCount, tx, ops);
  twinCompletePhaseIfDone(barrier, ops);
}

void Sm90KernelBuilder::twinWaitParity(Value barrier, Value parity,
                                         const Sm90Operands &ops) {
  // try_wait.parity(P) returns once the phase of parity P has completed,
  // i.e. while the current phase's parity differs from P.
  Value current = arith::AndIOp::create(
      b, loc, twinBarrierWord(barrier, Phase, ops), i32(1));
  twinPoisonIf(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     current, parity),
               ops);
}

void Sm90KernelBuilder::twinSwizzledStore(Value address, Value value,
                                            const Sm90Operands &ops) {
  // Swizzle<3,4,3>: bits [4, 7) of the byte address XOR bits [7, 10).
  Value row = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, address, idx(7)), idx(7));
  Value physical = arith::XOrIOp::create(
      b, loc, address, arith::ShLIOp::create(b, loc, row, idx(4)));
  memref::StoreOp::create(
      b, loc, value, ops.twinShared,
      ValueRange{arith::DivUIOp::create(b, loc, physical,
                                        idx(p.elementBytes()))});
}

void Sm90KernelBuilder::twinForEach(int64_t n,
                                      function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, loc, idx(0), idx(n), idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

Value Sm90KernelBuilder::twinSignedIndex(Value i32v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32v);
}

void Sm90KernelBuilder::twinImageCopy(Value dst, const ImageCopy &copy,
                                        Value barrier,
                                        const Sm90Operands &ops) {
  // From the tensor map (what the runtime encodes), not from the problem.
  convrt::TensorMapSpec map = imageTensorMap(p, t);
  int64_t e = p.elementBytes();
  int64_t c = map.dims[0], w = map.dims[1], h = map.dims[2], n = map.dims[3];
  int64_t sw = map.elementStrides[1], sh = map.elementStrides[2];
  int64_t lowW = map.lowerCorner[0], lowH = map.lowerCorner[1];
  int64_t boxW = (w - 1 + map.upperCorner[0] - lowW) / sw + 1;
  int64_t boxH = (h - 1 + map.upperCorner[1] - lowH) / sh + 1;
  auto add = [&](Value a, int64_t v) {
    return arith::AddIOp::create(b, loc, a, idx(v));
  };
  auto mul = [&](Value a, int64_t v) {
    return arith::MulIOp::create(b, loc, a, idx(v));
  };
  Value c0 = twinSignedIndex(copy.coordinates[0]);
  Value w0 = twinSignedIndex(copy.coordinates[1]);
  Value h0 = twinSignedIndex(copy.coordinates[2]);
  Value n0 = twinSignedIndex(copy.coordinates[3]);
  Value offW = arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                            copy.offsets[0]);
  Value offH = arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                            copy.offsets[1]);
  // The copy's first pixel as a position of the box traversal (W fastest,
  // then H, then N); a start that is no box position is a kernel bug.
  Value wFromLow = add(w0, -lowW), hFromLow = add(h0, -lowH);
  twinPoisonIf(
      arith::OrIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                arith::RemSIOp::create(b, loc, wFromLow,
                                                       idx(sw)),
                                idx(0)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                arith::RemSIOp::create(b, loc, hFromLow,
                                                       idx(sh)),
                                idx(0))),
      ops);
  Value start = arith::AddIOp::create(
      b, loc,
      mul(arith::AddIOp::create(
              b, loc, mul(n0, boxH),
              arith::DivSIOp::create(b, loc, hFromLow, idx(sh))),
          boxW),
      arith::DivSIOp::create(b, loc, wFromLow, idx(sw)));
  Value dstIndex = twinSignedIndex(dst);
  twinForEach(map.box[1], [&](Value pixel) {
    Value linear = arith::AddIOp::create(b, loc, start, pixel);
    Value wi = arith::RemSIOp::create(b, loc, linear, idx(boxW));
    Value hi = arith::RemSIOp::create(
        b, loc, arith::DivSIOp::create(b, loc, linear, idx(boxW)), idx(boxH));
    Value ni = arith::DivSIOp::create(b, loc, linear, idx(boxW * boxH));
    Value wc = arith::AddIOp::create(b, loc, add(mul(wi, sw), lowW), offW);
    Value hc = arith::AddIOp::create(b, loc, add(mul(hi, sh), lowH), offH);
    auto within = [&](Value v, int64_t size) {
      return arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, v, idx(0)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, v,
                                idx(size)));
    };
    Value pixelInside = arith::AndIOp::create(
        b, loc, arith::AndIOp::create(b, loc, within(wc, w), within(hc, h)),
        within(ni, n));
    twinForEach(map.box[0], [&](Value ch) {
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
      Value value = twinLoadOrZero(ops.x, inside, offset);
      twinSwizzledStore(
          arith::AddIOp::create(
              b, loc, dstIndex,
              arith::AddIOp::create(b, loc, mul(pixel, map.box[0] * e),
                                    mul(ch, e))),
          value, ops);
    });
  });
  twinCompleteTx(barrier, i32(boxBytes(map, e)), ops);
}

Value Sm90KernelBuilder::twinLoadOrZero(Value buffer, Value inside,
                                          Value offset) {
  Value zero = arith::ConstantOp::create(b, loc,
                                         b.getZeroAttr(p.elementType));
  // The address is clamped first: outside the tensor nothing is read.
  Value safe = arith::SelectOp::create(b, loc, inside, offset, idx(0));
  Value value = memref::LoadOp::create(b, loc, buffer, ValueRange{safe});
  return arith::SelectOp::create(b, loc, inside, value, zero);
}

void Sm90KernelBuilder::twinFilterCopy(Value dst, ArrayRef<Value> coords,
                                         Value barrier,
                                         const Sm90Operands &ops) {
  convrt::TensorMapSpec map = filterTensorMap(p, t);
  int64_t e = p.elementBytes();
  Value k0 = twinSignedIndex(coords[0]), row0 = twinSignedIndex(coords[1]);
  Value dstIndex = twinSignedIndex(dst);
  twinForEach(map.box[1], [&](Value i) {
    Value row = arith::AddIOp::create(b, loc, row0, i);
    twinForEach(map.box[0], [&](Value j) {
      Value k = arith::AddIOp::create(b, loc, k0, j);
      Value inside = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                idx(map.dims[1])),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, k,
                                idx(map.dims[0])));
      Value offset = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, row, idx(map.stridesBytes[0] / e)), k);
      Value value = twinLoadOrZero(ops.w, inside, offset);
      Value address = arith::AddIOp::create(
          b, loc, dstIndex,
          arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, i, idx(map.box[0] * e)),
              arith::MulIOp::create(b, loc, j, idx(e))));
      twinSwizzledStore(address, value, ops);
    });
  });
  twinCompleteTx(barrier, i32(boxBytes(map, e)), ops);
}

std::pair<Value, Value> Sm90KernelBuilder::twinFragmentPosition(Value tid,
                                                                  Value reg) {
  // PTX ISA, "Register fragments and shared memory matrix layouts", wgmma
  // .m64nNk16 / k8 D: row = 16 * warp + groupID (+ 8 for d2, d3 of each
  // quadruple), column = 8 * quadruple + 2 * threadID_in_group (+ 1 for odd
  // registers).
  auto cst = [&](int64_t v) { return idx(v); };
  Value warp = arith::DivUIOp::create(b, loc, tid, cst(32));
  Value laneGroup =
      arith::DivUIOp::create(b, loc, arith::RemUIOp::create(b, loc, tid, cst(32)),
                             cst(4));
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
      arith::AddIOp::create(b, loc,
                            arith::MulIOp::create(b, loc, inGroup, cst(2)),
                            odd));
  return {row, col};
}

Value Sm90KernelBuilder::twinOperand(Value desc, Value row, Value k,
                                       const Sm90Operands &ops) {
  auto field = [&](int64_t shift, int64_t mask) {
    Value v = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, desc, i64(shift)), i64(mask));
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
  };
  Value start = arith::ShLIOp::create(b, loc, field(0, 0x3fff), idx(4));
  Value strideBytes = arith::ShLIOp::create(b, loc, field(32, 0x3fff), idx(4));
  Value baseOffset = field(49, 0x7);
  Value swizzle = field(62, 0x3);
  // The kernel only builds 128B-swizzled K-major operands on 1024-byte
  // aligned atoms (mode 1, base offset 0); anything else is a bug.
  twinPoisonIf(
      arith::OrIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, swizzle,
                                idx(1)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, baseOffset,
                                idx(0))),
      ops);
  // K-major, 128B swizzle: 8-row atoms of 128-byte rows, atoms `stride`
  // bytes apart; the element's byte address, then the swizzle of its bits.
  int64_t e = p.elementBytes();
  Value address = arith::AddIOp::create(
      b, loc, start,
      arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, row, idx(8)), strideBytes),
          arith::AddIOp::create(
              b, loc,
              arith::MulIOp::create(
                  b, loc, arith::RemUIOp::create(b, loc, row, idx(8)),
                  idx(kSwizzleRowBytes)),
              arith::MulIOp::create(b, loc, k, idx(e)))));
  Value bits = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, address, idx(7)), idx(7));
  Value physical = arith::XOrIOp::create(
      b, loc, address, arith::ShLIOp::create(b, loc, bits, idx(4)));
  Value element = arith::DivUIOp::create(b, loc, physical, idx(e));
  int64_t size = twinSharedBytes() / e;
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                       element, idx(size));
  twinPoisonIf(arith::XOrIOp::create(
                   b, loc, inside,
                   arith::ConstantIntOp::create(b, loc, 1, 1)),
               ops);
  Value safe = arith::SelectOp::create(b, loc, inside, element, idx(0));
  Value v = memref::LoadOp::create(b, loc, ops.twinShared, ValueRange{safe});
  // tf32 operands are read as the f32 they are stored as, as the mma.sync
  // twin does: the twin proves indexing and data movement at f32's
  // tolerance (1e-5, sharp enough to see one misplaced element), while the
  // tensor core's tf32 precision (it reads the top 19 bits: ~7e-4 relative
  // error measured with numpy, inside tf32's 1e-3) is the device's check.
  if (p.kind == MmaKind::TF32)
    return v;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

void Sm90KernelBuilder::twinWgmma(Value consumer, Value descA, Value descB,
                                    const Sm90Operands &ops) {
  Value group = toIndex(consumer);
  twinForEach(kWarpgroupThreads, [&](Value tid) {
    twinForEach(accumulatorsPerThread(), [&](Value reg) {
      auto [row, col] = twinFragmentPosition(tid, reg);
      Value acc = memref::LoadOp::create(b, loc, ops.twinAcc,
                                         ValueRange{group, tid, reg});
      auto loop = scf::ForOp::create(b, loc, idx(0), idx(wgmmaK(p)), idx(1),
                                     ValueRange{acc});
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(loop.getBody());
        Value k = loop.getInductionVar();
        // D[row, col] += A[row, k] * B[k, col], B K-major (row = col).
        Value a = twinOperand(descA, row, k, ops);
        Value bv = twinOperand(descB, col, k, ops);
        Value sum = arith::AddFOp::create(
            b, loc, loop.getRegionIterArg(0),
            arith::MulFOp::create(b, loc, a, bv));
        scf::YieldOp::create(b, loc, sum);
      }
      memref::StoreOp::create(b, loc, loop.getResult(0), ops.twinAcc,
                              ValueRange{group, tid, reg});
    });
  });
}
