//===- TapTable.cpp - the core's shared layout decisions ------------------===//
//
// The decisions every family reads about a problem: which operands copy by
// 16-byte chunks, the A gather's tap table, the pixel-run gather, the direct
// depthwise vector and the staged epilogue's shape.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/GemmProblem.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <set>

using namespace mlir;
using namespace mlir::conv_lower::igemm;

namespace mlir::conv_lower::igemm {

bool filterFlatAlongK(const GemmProblem &p) {
  if (p.channelsInnermost)
    return p.wC == 1 && p.wKW == p.cg && p.wKH == p.kw * p.cg &&
           (!p.hasDepth || p.wKD == p.kh * p.kw * p.cg);
  return p.wKW == 1 && p.wKH == p.kw && (!p.hasDepth || p.wKD == p.kh * p.kw) &&
         (p.cg == 1 || p.wC == p.taps());
}

/// Whether an operand's 16-byte chunks are contiguous and aligned in global
/// memory (then one cp.async moves each); otherwise elements are gathered
/// one at a time.
bool isVectorized(const GemmProblem &p, Operand op) {
  int64_t v = p.chunkElements();
  if (op == Operand::A && p.explicitIm2col)
    return p.k() % v == 0;
  if (op == Operand::A)
    return p.channelsInnermost && p.cg % v == 0 && p.xN % v == 0 &&
           p.xH % v == 0 && p.xW % v == 0 && (!p.hasDepth || p.xD % v == 0);
  // B: V consecutive k must be V consecutive, aligned filter elements.
  bool alignedRows = p.wF % v == 0 && p.wG % v == 0;
  if (p.channelsInnermost)
    return alignedRows && p.wC == 1 && p.cg % v == 0 && p.wKH % v == 0 &&
           p.wKW % v == 0 && (!p.hasDepth || p.wKD % v == 0);
  return alignedRows && filterFlatAlongK(p) && p.k() % v == 0;
}

int64_t directDepthwiseVector(const GemmProblem &p) {
  if (p.cg != 1 || p.fg != 1 || p.hasDepth || p.explicitIm2col)
    return 0;
  // Channel c of the image is group c: its stride is the group's.
  int64_t v = kChunkBytes / p.elementBytes();
  auto aligned = [&](std::initializer_list<int64_t> strides) {
    for (int64_t stride : strides)
      if (stride % v != 0)
        return false;
    return true;
  };
  // The filter need not be: a grouped layout's (GFHWC) taps of consecutive
  // channels are wG apart, gathered at constant offsets.
  bool channelsInnermost = p.xC == 1 && p.yC == 1;
  if (channelsInnermost && p.groups % v == 0 && aligned({p.xN, p.xH, p.xW}) &&
      aligned({p.yN, p.yH, p.yW}))
    return v;
  return 1;
}

int64_t tapTableStep(const GemmProblem &p, const TileConfig &t) {
  if (p.explicitIm2col || p.hasDepth || t.directVector)
    return 0;
  // Gathered along M (NCHW): the k of an element is warp-uniform.
  if (!p.channelsInnermost)
    return 1;
  // Channels-last, gathered element by element: consecutive lanes take
  // consecutive k, and divergent constant loads serialize; keep the index
  // math.
  if (!isVectorized(p, Operand::A))
    return 0;
  // A K tile of whole channels of one tap: one entry per tile, read by every
  // lane alike; else (Cg not a multiple of the tile) one per 16-byte chunk.
  return p.cg % t.blockK == 0 ? t.blockK : p.chunkElements();
}

bool tapTableHasMasks(const GemmProblem &p) { return p.kh * p.kw <= 32; }

int64_t pixelRun(const GemmProblem &p, const TileConfig &t) {
  // ldmatrix.trans moves 16-bit elements: f16 and bf16 only. The gather must
  // be along M (NCHW-like, 2-D, not explicit) with zero padding.
  bool halfWords = p.kind == MmaKind::F16 || p.kind == MmaKind::BF16;
  if (!halfWords || p.channelsInnermost || p.explicitIm2col || p.hasDepth ||
      p.padValue != 0 || isVectorized(p, Operand::A))
    return 0;
  for (int64_t run : {8, 4, 2}) {
    // A run of output pixels must stay in one output row (then its input
    // offsets step by strideW * xW): Wo a multiple of the run, and the runs
    // of a tile start at multiples of it. A warp's lanes take 32 runs of one
    // k, or 16 of each of two (runs of 8 in a 128-pixel tile): its tap-table
    // loads then read one or two entries.
    int64_t runsPerK = t.blockM / run;
    if (p.wo % run != 0 || runsPerK % (kThreadsPerWarp / 2) != 0 ||
        t.threads() % runsPerK != 0 ||
        t.blockK % (t.threads() / runsPerK) != 0 || t.blockM / 8 < 8)
      continue;
    return run;
  }
  return 0;
}

bool tapTableFits(const GemmProblem &p) {
  // The packed window terms are signed 16-bit; a row must stay far from the
  // invalid marker.
  int64_t span = std::max((p.kh - 1) * p.dilationH, (p.kw - 1) * p.dilationW);
  if (span >= 8192 || p.h + p.padTop >= 8192 || p.w + p.padLeft >= 8192)
    return false;
  // The gather's offsets are 32-bit.
  return p.inputElements < (int64_t(1) << 31);
}

int64_t tapTableBytes(const GemmProblem &p, const TileConfig &t) {
  int64_t step = tapTableStep(p, t);
  if (step == 0)
    return 0;
  if (!tapTableFits(p))
    return 0;
  // Every K tile the loop loads (none past the last: the drain loads
  // nothing).
  int64_t entries = llvm::divideCeilSigned(p.k(), t.blockK) * t.blockK / step;
  return entries * 2 * int64_t(sizeof(int32_t));
}

std::vector<int32_t> buildTapTable(const GemmProblem &p, const TileConfig &t) {
  int64_t bytes = tapTableBytes(p, t);
  return buildTapTable(p, tapTableStep(p, t),
                       bytes / int64_t(2 * sizeof(int32_t)));
}

std::vector<int32_t> buildTapTable(const GemmProblem &p, int64_t step,
                                   int64_t entries) {
  std::vector<int32_t> table(2 * entries, 0);
  for (int64_t e = 0; e < entries; ++e) {
    int32_t row = kTapTableInvalid, col = 0, offset = 0;
    uint32_t bit = 0;
    if (int64_t k = e * step; k < p.k()) {
      // (kh, kw, c) channels-last, else (c, kh, kw): the GEMM's K order.
      int64_t kw, kh, c;
      if (p.channelsInnermost) {
        c = k % p.cg;
        kw = (k / p.cg) % p.kw;
        kh = k / (p.cg * p.kw);
      } else {
        kw = k % p.kw;
        kh = (k / p.kw) % p.kh;
        c = k / (p.kw * p.kh);
      }
      row = static_cast<int32_t>(kh * p.dilationH);
      col = static_cast<int32_t>(kw * p.dilationW);
      offset = static_cast<int32_t>(c * p.xC + row * p.xH + col * p.xW);
      bit = uint32_t(1) << (kh * p.kw + kw);
    }
    table[2 * e] = offset;
    table[2 * e + 1] = static_cast<int32_t>(
        tapTableHasMasks(p) ? bit
                            : (static_cast<uint32_t>(row) << 16) |
                                  (static_cast<uint32_t>(col) & 0xffff));
  }
  return table;
}

} // namespace mlir::conv_lower::igemm

/// The shared-memory wavefronts of one warp access in which lane l touches
/// `width` bytes at byte address addresses[l]: 8- and 16-byte accesses are
/// served a half or a quarter warp at a time, and within each part the
/// bank holding the most distinct 4-byte words sets the count.
static int64_t wavefronts(ArrayRef<int64_t> addresses, int64_t width) {
  int64_t lanesPerPart = width <= 4 ? kThreadsPerWarp : 128 / width;
  int64_t total = 0;
  for (int64_t first = 0; first < kThreadsPerWarp; first += lanesPerPart) {
    std::array<std::set<int64_t>, 32> banks;
    for (int64_t lane = first; lane < first + lanesPerPart; ++lane)
      for (int64_t byte = 0; byte < std::max<int64_t>(width, 1); byte += 4) {
        int64_t word = (addresses[lane] + byte) / 4;
        banks[word % 32].insert(word);
      }
    size_t most = 0;
    for (const std::set<int64_t> &bank : banks)
      most = std::max(most, bank.size());
    total += most;
  }
  return total;
}

/// The wavefronts of one staged row of tiles with rows `stride` elements
/// apart: the fragment writes (per mma tile of the row; their columns move
/// by whole 32-byte steps from one tile to the next) times the tiles, plus
/// the vector reads.
static int64_t stagingWavefronts(const EpilogueStaging &s, int64_t stride,
                                 int64_t tilesN, int64_t bytes) {
  std::vector<int64_t> addresses(kThreadsPerWarp);
  int64_t writes = 0;
  // Lane l holds rows l/4 and l/4 + 8, columns 2(l%4) and 2(l%4) + 1.
  for (int64_t v = 0; v < 4; v += s.pixelsInner ? 1 : 2) {
    for (int64_t lane = 0; lane < kThreadsPerWarp; ++lane) {
      int64_t row = lane / 4 + 8 * (v / 2), col = 2 * (lane % 4) + v % 2;
      addresses[lane] =
          (s.pixelsInner ? col * stride + row : row * stride + col) * bytes;
    }
    writes += wavefronts(addresses, s.pixelsInner ? bytes : 2 * bytes);
  }
  int64_t perRow = s.width / s.vector, reads = 0;
  for (int64_t first = 0; first < s.rows * perRow; first += kThreadsPerWarp) {
    for (int64_t lane = 0; lane < kThreadsPerWarp; ++lane) {
      int64_t q = first + lane;
      addresses[lane] = ((q / perRow) * stride + (q % perRow) * s.vector) * bytes;
    }
    reads += wavefronts(addresses, s.vector * bytes);
  }
  return tilesN * writes + reads;
}

int64_t conv_lower::igemm::stagedBytes(const GemmProblem &p,
                                       const TileConfig &t,
                                       const EpilogueStaging &s) {
  return t.warpsM * t.warpsN * s.rows * s.stride *
         (p.outputType.getIntOrFloatBitWidth() / 8);
}

EpilogueStaging conv_lower::igemm::epilogueStaging(const GemmProblem &p,
                                                   const TileConfig &t,
                                                   int64_t budgetBytes) {
  EpilogueStaging s;
  if (t.directVector)
    return s;
  int64_t bytes = p.outputType.getIntOrFloatBitWidth() / 8;
  auto multiples = [](std::initializer_list<int64_t> values, int64_t v) {
    return llvm::all_of(values, [&](int64_t x) { return x % v == 0; });
  };
  // The output's contiguous dimension: channels (NHWC-like), or the pixels
  // of a plane (NCHW-like: rows of wo, planes of ho*wo, one after another).
  bool channelsInner = p.yC == 1;
  bool pixelsInner = p.yW == 1 && p.yH == p.wo &&
                     (!p.hasDepth || p.yD == p.ho * p.wo);
  auto aligned = [&](int64_t v) {
    if (channelsInner)
      return multiples({p.fg, p.yN, p.yH, p.yW, t.warpN()}, v) &&
             (!p.hasDepth || p.yD % v == 0);
    return pixelsInner && multiples({p.pixels(), p.yN, p.yC, 16}, v);
  };
  for (int64_t vectorBytes : {16, 8, 4}) {
    int64_t v = vectorBytes / bytes;
    if (v >= 2 && aligned(v)) {
      s.vector = v;
      break;
    }
  }
  if (!s.vector)
    return s;
  s.pixelsInner = !channelsInner;
  s.rows = s.pixelsInner ? t.warpN() : 16;
  s.width = s.pixelsInner ? 16 : t.warpN();
  // Every lane stores the same number of vectors.
  if ((s.rows * s.width / s.vector) % kThreadsPerWarp != 0)
    return EpilogueStaging{};
  // Rows stay 16-byte aligned: the pad is whole 16-byte units, the one (of
  // eight) with the fewest wavefronts, the smallest on a tie.
  int64_t unit = kChunkBytes / bytes, best = -1;
  for (int64_t pad = 0; pad < 8; ++pad) {
    int64_t stride = s.width + pad * unit;
    int64_t cost = stagingWavefronts(s, stride, t.warpN() / 8, bytes);
    if (best < 0 || cost < best) {
      best = cost;
      s.stride = stride;
    }
  }
  if (stagedBytes(p, t, s) > budgetBytes)
    return EpilogueStaging{};
  return s;
}

int64_t conv_lower::igemm::sharedBufferBytes(const GemmProblem &p,
                                             const TileConfig &t) {
  return std::max(t.sharedBytes(p.elementBytes()),
                  stagedBytes(p, t, epilogueStaging(p, t)));
}
