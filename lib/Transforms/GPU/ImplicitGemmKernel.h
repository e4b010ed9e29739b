//===- ImplicitGemmKernel.h - the implicit-GEMM kernel body -----*- C++ -*-===//
//
// The problem as the kernel sees it (sizes and element strides), the tile
// configuration, and KernelBuilder, which emits one CTA's work: the GPU form
// (gpu/nvgpu/nvvm ops) or its CPU twin (the same body as host loops). The
// rewrite (ImplicitGemm.cpp and the steps in ImplicitGemmSteps.h) builds the
// problem, picks the tiles and wraps the body into a kernel and its launch.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_IMPLICITGEMMKERNEL_H
#define CONVLOWER_TRANSFORMS_IMPLICITGEMMKERNEL_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <vector>

namespace mlir::conv_lower::igemm {

constexpr int64_t kThreadsPerWarp = 32;
constexpr int64_t kChunkBytes = 16; // one cp.async / one ldmatrix row
constexpr int64_t kRowBytes = 64;   // a shared-memory row: blockK elements

/// The mma.sync flavour: f16/bf16 m16n8k16 and tf32 m16n8k8 accumulate in
/// f32; s8 m16n8k32 (s8 x s8) accumulates in s32, wrapping as linalg's i32
/// arithmetic does.
enum class MmaKind { F16, BF16, TF32, S8 };

//===----------------------------------------------------------------------===//
// The problem as the kernel sees it: sizes and element strides
//===----------------------------------------------------------------------===//

/// Element strides of the logical coordinates of each operand, so one kernel
/// body serves every layout: input (n, c, h, w) with channel = g*Cg + c,
/// filter (g, f, c, kh, kw), output (n, channel, oh, ow) with
/// channel = g*Fg + f. A 3-D convolution (hasDepth) adds a depth d before h
/// in each (kernel kd, output od); a 2-D one leaves them 1 and the kernel
/// body exactly as it was.
struct GemmProblem {
  int64_t batch, groups, cg, fg, h, w, kh, kw, ho, wo;
  int64_t strideH, strideW, dilationH, dilationW, padTop, padLeft;
  int64_t xN, xC, xH, xW;
  int64_t wG, wF, wC, wKH, wKW;
  int64_t yN, yC, yH, yW;
  bool hasDepth = false;
  int64_t d = 1, kd = 1, od = 1, strideD = 1, dilationD = 1, padFront = 0;
  int64_t xD = 0, wKD = 0, yD = 0;
  int64_t inputElements, filterElements, outputElements;
  /// K order (kh, kw, c) when the image is channels-last, else (c, kh, kw):
  /// consecutive k then walk contiguous input memory where they can.
  bool channelsInnermost;
  Type elementType, outputType;
  /// f32, or i32 for S8: the fragments' accumulators and the twin's.
  Type accumulatorType;
  MmaKind kind;
  /// The convolution's init (a constant fill), added in the epilogue.
  double initValue = 0.0;
  /// S8: a quantized convolution's zero points (constants), so that the
  /// result is sum (x - zx)(w - zw) = C - zw*Sx - zx*Sw + K*zx*zw with C the
  /// plain s8 GEMM, Sx the row (window) sums of A and Sw the column (filter)
  /// sums of B; both sums come out of extra mma.sync with an all-ones operand.
  /// Zero for a plain integer convolution (then no sums are computed).
  int64_t inputZeroPoint = 0, filterZeroPoint = 0;
  /// What absorbed padding reads (S8: 0 or the input zero point); the K
  /// tail and tile overhang always read 0.
  int64_t padValue = 0;
  /// A fused bias [G*Fg] of this element type (null: none), then ReLU.
  Type biasType;
  int64_t biasElements = 0;
  bool relu = false;
  /// Explicit mode: a first kernel stores X_col [M, G, K] in global memory
  /// and the GEMM kernel's A operand reads it (for comparison with the
  /// implicit gather, and to show what the im2col costs).
  bool explicitIm2col = false;
  /// TF32: round the mma operands with cvt.rn (round to nearest even, one
  /// F2FP instruction on sm_90 and later, PTX 7.8) instead of cvt.rna (ties
  /// away, which ptxas expands to a compare and a predicated add on every
  /// fragment register: 96 of the 262 non-MMA instructions in the tf32 NCHW
  /// C256 main loop). Both round to nearest; they differ on exact ties only.
  bool nativeTf32Rounding = false;

  /// Output pixels per image, and kernel taps per channel.
  int64_t pixels() const { return od * ho * wo; }
  int64_t taps() const { return kd * kh * kw; }
  int64_t m() const { return batch * pixels(); }
  int64_t k() const { return cg * taps(); }
  int64_t im2colElements() const { return m() * groups * k(); }
  int64_t elementBytes() const {
    return elementType.getIntOrFloatBitWidth() / 8;
  }
  /// Elements per 16-byte chunk: 8 (f16/bf16) or 4 (f32).
  int64_t chunkElements() const { return kChunkBytes / elementBytes(); }
  /// Elements per .b32 mma fragment register: 2 (f16/bf16), 1 (tf32) or 4
  /// (s8).
  int64_t registerElements() const { return 4 / elementBytes(); }
  /// The K of one mma.sync: two 16-byte chunks (16 f16, 8 tf32, 32 s8).
  int64_t mmaK() const { return 2 * chunkElements(); }
  bool isInteger() const { return kind == MmaKind::S8; }
  /// Whether the epilogue needs the row sums of A (times zw) and the column
  /// sums of B (times zx).
  bool needsRowSums() const { return filterZeroPoint != 0; }
  bool needsColumnSums() const { return inputZeroPoint != 0; }
};

struct TileConfig {
  int64_t blockM, blockN, blockK, warpsM, warpsN, stages;
  /// Non-zero for the direct depthwise kernel (directDepthwiseVector): the
  /// channels each thread computes, the block then holds `threads()` such
  /// items (blockM), and there is no GEMM, no shared ring, no tap table.
  int64_t directVector = 0;
  int64_t threads() const { return kThreadsPerWarp * warpsM * warpsN; }
  int64_t warpM() const { return blockM / warpsM; }
  int64_t warpN() const { return blockN / warpsN; }
  int64_t sharedBytes(int64_t elementBytes) const {
    return stages * (blockM + blockN) * blockK * elementBytes;
  }
};

/// Without dynamic shared memory (an opt-in per kernel at launch), a CTA gets
/// 48 KiB on every supported chip.
constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;

/// The staged epilogue: each warp writes one mma row of its tiles (16
/// accumulator rows x warpN columns), finished, into its own part of shared
/// memory (the rings, free after the main loop), and reads it back as
/// 16-byte vectors (else 8 or 4) along the output's contiguous dimension,
/// which consecutive lanes store to global memory. The direct stores it
/// replaces are pairs of 4- or 8-byte stores at the fragment positions: an
/// f16 NHWC warp store half-filled its 32-byte sectors.
struct EpilogueStaging {
  /// Output elements per vector store; 0: no staging (direct stores).
  int64_t vector = 0;
  /// Pixels contiguous in the output (NCHW): a staged row per channel, of
  /// 16 pixels; else a staged row per pixel, of warpN channels.
  bool pixelsInner = false;
  /// One warp's staged tile: rows x stride elements, the stride being a row
  /// plus the padding with the fewest shared-memory wavefronts.
  int64_t rows = 0, stride = 0;
  /// The elements of a staged row that hold values (16 or warpN).
  int64_t width = 0;
};

/// The staging `p` and `t` take: 0 vectors where the output's contiguous
/// dimension is not aligned to a vector of at least two elements, or where
/// the staged tiles would not fit in `budgetBytes` (static shared memory for
/// the mma.sync kernels; the sm_90a kernel stages over its rings).
EpilogueStaging epilogueStaging(const struct GemmProblem &p,
                                const struct TileConfig &t,
                                int64_t budgetBytes = kMaxStaticSharedBytes);
/// The staged tiles' bytes: warps x rows x stride output elements.
int64_t stagedBytes(const struct GemmProblem &p, const struct TileConfig &t,
                    const EpilogueStaging &s);

/// The kernel's one shared buffer: the A ring, the B ring after it, and the
/// staged epilogue's tiles over both once the main loop is done.
int64_t sharedBufferBytes(const struct GemmProblem &p,
                          const struct TileConfig &t);

/// A kernel's grid: pixel tiles x filter tiles x groups.
struct Launch {
  int64_t gridX, gridY, gridZ;
};

/// Which GEMM operand a tile load fills.
enum class Operand { A, B };

//===----------------------------------------------------------------------===//
// The tap table: the A gather's per-k terms, precomputed
//===----------------------------------------------------------------------===//

/// For the A gather of a 2-D convolution: per step of k (tapTableStep) over
/// the K tiles (K rounded up to the tile), the input offset c*xC + kh*dh*xH + kw*dw*xW of the
/// step's first k and either its tap bit (tapTableHasMasks) or the window
/// position (kh*dh, kw*dw) packed as (row << 16) | (col & 0xffff); a k past
/// K has no tap bit, or the row kTapTableInvalid, which no pixel's row
/// brings back into the image. The main loop then reads
/// one warp-uniform entry instead of dividing k by Cg, KW and KH (issue: the
/// NCHW loop spent ~60 instructions per gathered element, the NHWC loop ~196
/// integer instructions per K tile). Empty when the problem does not qualify
/// (see tapTableBytes).
constexpr int32_t kTapTableInvalid = -16384;
/// Whether the table's second word is the entry's tap bit 1 << (kh*KW + kw)
/// (0 past K), tested against a per-row mask of the taps inside the image,
/// rather than the packed window: when the filter has at most 32 taps.
bool tapTableHasMasks(const struct GemmProblem &p);
/// The output pixels one thread gathers together for one k when the A tile
/// is M-major ([stage][k][pixel], read by ldmatrix.trans): 4 or 2 for an
/// f16/bf16 image gathered along M whose output rows are a multiple of it
/// (a run's input offsets then step by strideW * xW: one address, loads at
/// constant offsets, one 8- or 4-byte shared store), with tiles that give
/// every warp one k; 0 otherwise (the element gather into a K-major tile).
int64_t pixelRun(const struct GemmProblem &p, const struct TileConfig &t);
/// The k each tap-table entry covers: 1 for an image gathered along M
/// (NCHW), the K tile for a channels-last image whose Cg fills whole tiles
/// (every lane reads the tile's entry), else the 16-byte chunk; 0 when the
/// A operand takes no table (explicit im2col, 3-D, a channels-last image
/// gathered element by element).
int64_t tapTableStep(const struct GemmProblem &p, const struct TileConfig &t);
std::vector<int32_t> buildTapTable(const struct GemmProblem &p,
                                   const struct TileConfig &t);
/// The table's `entries` entries, one per `step` k, for any gather that reads
/// it (tapTableFits must hold).
std::vector<int32_t> buildTapTable(const struct GemmProblem &p, int64_t step,
                                   int64_t entries);
/// Whether the table's terms fit its words: the packed 16-bit window terms
/// and 32-bit input offsets.
bool tapTableFits(const struct GemmProblem &p);
/// The table's size in bytes, or 0 when the gather does not use one (no
/// step, or sizes beyond the packed 16-bit window terms and 32-bit offsets).
int64_t tapTableBytes(const struct GemmProblem &p, const struct TileConfig &t);

/// Whether consecutive k of a filter row are consecutive elements (k is the
/// filter's own flat index past the row, in the GEMM's K order): the B offset
/// is then f*wF + k, with no decomposition of k.
bool filterFlatAlongK(const GemmProblem &p);

/// Whether an operand's 16-byte chunks are contiguous and aligned in global
/// memory (then one cp.async moves each); otherwise elements are gathered
/// one at a time.
bool isVectorized(const GemmProblem &p, Operand op);

/// For a depthwise convolution (one channel and one filter per group, 2-D):
/// the channels one thread of the direct kernel computes, on CUDA cores with
/// no K padding: 16 bytes of them where channels are innermost and aligned in
/// the input and the output (8 f16, 4 f32, 16 i8; the filter's taps are one
/// vector load where they are contiguous too, else gathered), else 1. 0 when
/// the convolution is not depthwise (the GEMM kernel takes it).
int64_t directDepthwiseVector(const GemmProblem &p);

//===----------------------------------------------------------------------===//
// The kernel body
//===----------------------------------------------------------------------===//

/// Builds one CTA's work; `twin` selects the host form of the same body.
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc, const GemmProblem &p,
                const TileConfig &t, bool twin)
      : b(b), loc(loc), p(p), t(t), twin(twin) {}

  /// The block at (blockM, blockN, group) of the grid, reading the flat
  /// operands and the two shared buffers; `twinAcc` is the twin's
  /// accumulator memory ([warps, warpM, warpN] f32).
  void emitBlock(Value bm, Value bn, Value group, Value x, Value w, Value y,
                 Value smemA, Value smemB, Value twinAcc);

  bool isVectorized(Operand op) const { return igemm::isVectorized(p, op); }

  /// Whether the main loop is unrolled by S (constant ring positions): where
  /// A is copied or gathered in pixel runs, not element by element.
  bool unrollsRing() const;

  /// The direct depthwise kernel's block `block` (t.directVector != 0):
  /// each thread's channels of one output pixel, summed over the taps in
  /// the accumulator type, then init, bias, ReLU and narrowing.
  void emitDirect(Value block, Value x, Value w, Value y);

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

  /// Y[m, f + i] = accs[i] + init (bias, ReLU) for m < M and f < Fg: the
  /// fold; two values (pairsOutputs()) as one aligned vector store. The
  /// sm_90a family's epilogue is this one too.
  void storeOutputs(Value y, Value m, Value f, Value group,
                    ArrayRef<Value> accs);
  /// Whether the two adjacent columns a lane holds are contiguous and
  /// aligned in the output (channels innermost, even Fg and strides): then
  /// four lanes write 32 contiguous bytes (f32) with half the stores.
  bool pairsOutputs() const;

  /// The tap table ([K padded, 2] i32, buildTapTable's), when the caller
  /// made one (then the A gather reads it).
  void setTapTable(Value table) { tapTable = table; }

  /// The twin's per-warp fragment registers: A [tilesM, 32 lanes, 4 regs,
  /// elems per reg] and B [tilesN / 2, 32, 4, elems].
  void setTwinFragments(Value a, Value bFrag) {
    twinFragA = a;
    twinFragB = bFrag;
  }

  /// The twin's zero-point sum accumulators (null when not needed): row sums
  /// [warps, warpM, 8] and column sums [warps, 16, warpN], the D of the
  /// all-ones mma.sync as the lanes hold it.
  void setTwinSums(Value rows, Value columns) {
    twinRowSums = rows;
    twinColumnSums = columns;
  }

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
  /// past the entry's first k), computed in 32 bits.
  Value tapOffset(const RowPlace &place, Value group, Value inEntry,
                  Value entryOffset);
  /// `offset` where `valid`, else 0 (an address inside the operand), in 32
  /// bits when every offset of the operand fits.
  Value clampOffset(Operand op, Value offset, Value valid);

private:
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

  /// Runs `body(i)` for i in [0, n): an scf.for on the twin, or once for the
  /// GPU's own thread/warp id `gpuId`.
  void forEach(int64_t n, Value gpuId, function_ref<void(Value)> body);

  /// The element offset of A[m, k] (or B[k, f] with `row` = f) and whether
  /// it is inside the tensor (false for padding and tile overhang). With a
  /// non-zero padValue, `padding` (if given) is set for A: whether the
  /// element is padding (inside the GEMM, outside the image).
  std::pair<Value, Value> elementOffset(Operand op, Value row, Value k,
                                        Value group, Value *padding = nullptr);
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
                                            Value group, Value *padding);
  /// `load()` where `valid`, else `otherwise` (of the loaded type): a
  /// predicated load.
  Value loadWhere(Value valid, Value otherwise, function_ref<Value()> load);
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
  /// shared rings, the twin's accumulators, and how many of the carried
  /// values are accumulators (a commit group token may follow).
  struct KBlock {
    Value tid, bm, bn, group, x, w, smemA, smemB, twinAcc;
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
  /// The init, bias, ReLU and narrowing applied to an accumulator.
  Value finishOutput(Value acc, Value channel);
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

  // GPU pieces.
  SmallVector<Value> gpuComputeStage(Value smemA, Value smemB, Value stage,
                                     Value tid, ValueRange accs);
  Value gpuMma(Value a, Value bFrag0, Value bFrag1, Value acc);
  void gpuEpilogue(Value y, Value bm, Value bn, Value group, Value tid,
                   ValueRange accs);
  // Twin pieces.
  void twinComputeStage(Value smemA, Value smemB, Value stage, Value acc);
  /// One emulated mma.sync of `warp` on A tile `i` and B tile `jt` (either
  /// replaced by all ones when `onesA`/`onesB`), accumulating into `acc` at
  /// (warp, rowBase + r, colBase + c) for each of D's (r, c).
  void twinMma(Value acc, Value warp, Value i, Value jt, Value rowBase,
               Value colBase, bool onesA, bool onesB);
  void twinEpilogue(Value y, Value bm, Value bn, Value group, Value acc);

  OpBuilder &b;
  Location loc;
  const GemmProblem &p;
  const TileConfig &t;
  bool twin;
  Value biasBuffer, tapTable, twinFragA, twinFragB, twinRowSums,
      twinColumnSums, staging;
  EpilogueStaging stagingShape;
};

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_IMPLICITGEMMKERNEL_H
