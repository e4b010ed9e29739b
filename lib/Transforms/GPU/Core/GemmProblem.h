//===- GemmProblem.h - the implicit-GEMM core's shared types ----*- C++ -*-===//
//
// What every kernel family shares: the problem as the kernel sees it (sizes
// and element strides), the CTA tile configuration, the staged epilogue's
// shape, the grid, and the A gather's tap table. The families (Sm80, Sm90,
// Depthwise) build on these; this folder includes none of them.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_GPU_CORE_GEMMPROBLEM_H
#define CONVLOWER_TRANSFORMS_GPU_CORE_GEMMPROBLEM_H

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

/// What the epilogue applies last: a ReLU, max(x, 0), or a clamp,
/// min(max(x, clampMin), clampMax) (ReLU6, hardtanh), or nothing.
struct Activation {
  bool relu = false;
  bool clamp = false;
  double clampMin = 0.0, clampMax = 0.0;
};

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
  /// The fused epilogue, in this order: a bias [G*Fg] of this element type
  /// (null: none); a residual of the output's type and layout, added
  /// element by element; then the activation.
  Type biasType;
  int64_t biasElements = 0;
  bool residual = false;
  Activation activation;
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

} // namespace mlir::conv_lower::igemm

#endif // CONVLOWER_TRANSFORMS_GPU_CORE_GEMMPROBLEM_H
