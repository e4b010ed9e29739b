//===- Sm90Kernel.cpp - the sm_90a kernel body ------------------------------===//
//
// See Sm90Kernel.h for the design. The body is written once: the producer
// step (coordinates, byte count, barrier protocol), the consumer step
// (descriptors, ring slots) and the epilogue (fragment positions) are shared
// by both forms; only the instructions and the order of the roles differ,
// and those are Sm90Hardware's: NVVM ops on the GPU (Sm90Gpu.cpp), host
// loops that do what the PTX ISA says those instructions do on the twin
// (../Twin/Sm90Twin.cpp).
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

int64_t igemm::boxBytes(const convrt::TensorMapSpec &map, int64_t e) {
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
                                     const Sm90Tiles &t, Sm90Hardware &hw)
    : b(b), loc(loc), p(p), t(t), hw(hw), staged(sm90Staging(p, t)),
      epilogueTiles(sm90EpilogueTiles(t)),
      // The epilogue's fold, output math and staging are the mma.sync
      // family's, on the consumers' warps.
      epilogue(b, loc, p, epilogueTiles, hw.warpHardware()) {
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

int64_t Sm90KernelBuilder::ringBytes() const {
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

ImageCopy
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
  assert(!staged.vector && "the staged epilogue is stageEpilogue's, then "
                           "storeStagedEpilogue's");
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
  hw.waitParity(*this, empty, previous, ops);
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
  hw.loadFilterTile(*this, dst, coordinates, full, ops);
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
  hw.arriveExpectTx(*this, full, i32(tileBytes()), ops);
  hw.loadImageTile(*this, dstA, image, full, ops);
  copyFilterTile(kt, bn, group, full, ops);
}

void Sm90KernelBuilder::armFilterTile(Value kt, Value bn, Value group,
                                        const Sm90Operands &ops) {
  Value full = barrierAddress(ringSlot(kt).first, ops);
  hw.expectTx(*this, full, i32(filterTileBytes()), ops);
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
    hw.storeSharedChunk(*this, offset, values.slice(q * perChunk, perChunk),
                        ops);
  }
}

void Sm90KernelBuilder::publishGatheredRow(Value kt,
                                             const Sm90Operands &ops) {
  Value full = barrierAddress(ringSlot(kt).first, ops);
  // Generic-proxy stores that wgmma (the async proxy) reads: each writer
  // fences its own before its release-arrival on the barrier the consumers
  // acquire (PTX ISA, "Proxies").
  hw.fenceAsyncProxy(*this);
  hw.arrive(*this, full, /*threads=*/1, ops);
}

Value Sm90KernelBuilder::emitConsumerStep(Value kt, Value consumer,
                                          Value acc, const Sm90Operands &ops,
                                          bool overwrite) {
  auto [stage, parity] = ringSlot(kt);
  Value full = barrierAddress(stage, ops);
  hw.waitParity(*this, full, parity, ops);
  int64_t e = p.elementBytes();
  // The warpgroup's 64 rows of A start 64 swizzled rows into the tile.
  Value aBase = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, stage, i32(t.aBytes(e))),
      arith::MulIOp::create(b, loc, consumer, i32(64 * kSwizzleRowBytes)));
  Value bBase = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, stage, i32(t.bBytes(e))),
      i32(t.bOffset(0, e)));
  hw.wgmmaFence(*this);
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
    acc = hw.wgmma(*this, consumer, descA, descB, acc, overwrite && ks == 0,
                   ops);
  }
  // Tile kt's group may still run; kt-1's has finished reading its slot.
  hw.wgmmaCommitAndWait(*this, /*pending=*/1);
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
  hw.arrive(*this, empty, kWarpgroupThreads, ops);
  return acc;
}





void Sm90KernelBuilder::emitBlock(Value bm, Value bn, Value group,
                                    const Sm90Operands &ops) {
  if (ops.bias)
    epilogue.setBias(ops.bias);
  if (ops.residual)
    epilogue.setResidual(ops.residual);
  if (ops.staging)
    epilogue.setStaging(ops.staging, staged);
  if (ops.tapTable)
    epilogue.setTapTable(ops.tapTable);
  hw.runBlock(*this, bm, bn, group, ops);
}

