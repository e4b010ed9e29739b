//===- ConvToImplicitGemm.cpp - convs into implicit-GEMM tensor-core kernels ===//
//
// Every convolution the im2col rewrite accepts (same analysis, same forms)
// becomes one kernel computing, per group g,
//
//   Y[m, f] = sum_k A[m, k] * B[k, f]   M = N*Ho*Wo, F = filters per group,
//                                       K = Cg*KH*KW
//
// where A is the im2col of the input, never stored: each K step gathers the
// A tile straight from the image into shared memory (the address of A[m, k]
// is computed from (n, oh, ow) and (c, kh, kw); padding and bounds become a
// zero-fill predicate), and the epilogue writes Y[m, f] to its place in the
// output layout (the fold).
//
// The kernel is built for one CTA of `warpsM x warpsN` warps owning a
// blockM x blockN tile of C, stepping K by blockK through a ring of `stages`
// shared-memory buffers:
//
//   prologue: load K tiles 0 .. stages-2             (one cp.async group each)
//   for kt:   wait for tile kt; barrier;
//             load tile kt+stages-1 into the buffer freed by tile kt-1;
//             each warp: ldmatrix A/B fragments, mma.sync into registers
//   epilogue: accumulators -> (fold) -> output, + the init value
//
// Shared memory rows are blockK elements = 64 bytes = four 16-byte chunks;
// chunk q of row r is stored at chunk q ^ ((r / 2) % 4), so the 8 rows an
// ldmatrix phase reads hit 8 different bank groups.
//
// target=cpu-twin emits the same block body (tiling, gather addresses,
// predicates, swizzle, stage ring, fragment-to-output mapping) as plain loops
// on the host: threads and warps become loops, cp.async a predicated vector
// copy, and the mma a vector dot product over the same shared tiles. It is
// how the kernel's indexing is tested without a GPU.
//
//===----------------------------------------------------------------------===//

#include "ConvAnalysis.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSwitch.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERIMPLICITGEMM
#include "ConvLower/Transforms/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

/// The PTX ISA version each chip needs (PTX ISA release notes), and the
/// kernels' own floor: cp.async and bf16/tf32 mma.sync came with 7.0.
static std::optional<int> minimumPtxVersion(llvm::StringRef chip) {
  return llvm::StringSwitch<std::optional<int>>(chip)
      .Case("sm_80", 70)
      .Case("sm_86", 71)
      .Cases({"sm_89", "sm_90"}, 78)
      .Case("sm_90a", 80)
      .Default(std::nullopt);
}

bool mlir::conv_lower::isSupportedChip(llvm::StringRef chip) {
  return minimumPtxVersion(chip).has_value();
}

std::string mlir::conv_lower::checkPtxFeatures(llvm::StringRef chip,
                                               llvm::StringRef features) {
  std::optional<int> minimum = minimumPtxVersion(chip);
  if (!minimum)
    return ("unsupported chip '" + chip +
            "' (expected sm_80, sm_86, sm_89, sm_90 or sm_90a)")
        .str();
  SmallVector<StringRef> items;
  features.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    int version = 0;
    if (!item.consume_front("+ptx") || item.getAsInteger(10, version))
      return ("unsupported PTX feature '" + item +
              "' (expected +ptxNN, e.g. +ptx80)")
          .str();
    if (version < *minimum)
      return ("PTX " + Twine(version / 10) + "." + Twine(version % 10) +
              " cannot target " + chip + " (at least +ptx" + Twine(*minimum) +
              ")")
          .str();
  }
  return "";
}

namespace {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kChunkBytes = 16; // one cp.async / one ldmatrix row
constexpr int64_t kRowBytes = 64;   // a shared-memory row: blockK elements
constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
constexpr StringLiteral kKernelModuleName = "conv_lower_kernels";

enum class MmaKind { F16, BF16, TF32 };

//===----------------------------------------------------------------------===//
// The problem as the kernel sees it: sizes and element strides
//===----------------------------------------------------------------------===//

/// Element strides of the logical coordinates of each operand, so one kernel
/// body serves every layout: input (n, c, h, w) with channel = g*Cg + c,
/// filter (g, f, c, kh, kw), output (n, channel, oh, ow) with
/// channel = g*Fg + f.
struct GemmProblem {
  int64_t batch, groups, cg, fg, h, w, kh, kw, ho, wo;
  int64_t strideH, strideW, dilationH, dilationW, padTop, padLeft;
  int64_t xN, xC, xH, xW;
  int64_t wG, wF, wC, wKH, wKW;
  int64_t yN, yC, yH, yW;
  int64_t inputElements, filterElements, outputElements;
  /// K order (kh, kw, c) when the image is channels-last, else (c, kh, kw):
  /// consecutive k then walk contiguous input memory where they can.
  bool channelsInnermost;
  Type elementType, outputType;
  MmaKind kind;
  /// The convolution's init (a constant fill), added in the epilogue.
  double initValue = 0.0;
  /// A fused bias [G*Fg] of this element type (null: none), then ReLU.
  Type biasType;
  int64_t biasElements = 0;
  bool relu = false;
  /// Explicit mode: a first kernel stores X_col [M, G, K] in global memory
  /// and the GEMM kernel's A operand reads it (for comparison with the
  /// implicit gather, and to show what the im2col costs).
  bool explicitIm2col = false;

  int64_t m() const { return batch * ho * wo; }
  int64_t k() const { return cg * kh * kw; }
  int64_t im2colElements() const { return m() * groups * k(); }
  int64_t elementBytes() const {
    return elementType.getIntOrFloatBitWidth() / 8;
  }
  /// Elements per 16-byte chunk: 8 (f16/bf16) or 4 (f32).
  int64_t chunkElements() const { return kChunkBytes / elementBytes(); }
};

struct TileConfig {
  int64_t blockM, blockN, blockK, warpsM, warpsN, stages;
  int64_t threads() const { return kWarpSize * warpsM * warpsN; }
  int64_t warpM() const { return blockM / warpsM; }
  int64_t warpN() const { return blockN / warpsN; }
  int64_t sharedBytes(int64_t elementBytes) const {
    return stages * (blockM + blockN) * blockK * elementBytes;
  }
};

/// Row-major element strides of a static shape.
SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

FailureOr<MmaKind> getMmaKind(Type input, Type filter, Type output,
                              std::string &whyNot) {
  if (input != filter) {
    whyNot = "input and filter element types differ";
    return failure();
  }
  if (!output.isF32() && !output.isF16() && !output.isBF16()) {
    whyNot = "the output must be f32, f16 or bf16";
    return failure();
  }
  if (input.isF16())
    return MmaKind::F16;
  if (input.isBF16())
    return MmaKind::BF16;
  if (input.isF32())
    return MmaKind::TF32;
  whyNot = "tensor cores take f16, bf16 or f32 (as tf32) data";
  return failure();
}

/// The init as a constant, when it is a fill of one (zero when the fill
/// value is a zero of any type).
FailureOr<double> getConstantInit(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return failure();
  Value value = fill.getInputs()[0];
  FloatAttr attr;
  if (matchPattern(value, m_Constant(&attr)))
    return attr.getValueAsDouble();
  return failure();
}

FailureOr<GemmProblem> buildProblem(const ConvPlan &plan, std::string &whyNot) {
  const ConvForm &form = *plan.form;
  linalg::LinalgOp op = plan.op;
  auto fail = [&](const Twine &reason) {
    whyNot = reason.str();
    return failure();
  };
  auto inputType = cast<RankedTensorType>(plan.input.getType());
  auto filterType =
      cast<RankedTensorType>(op.getDpsInputOperand(1)->get().getType());
  Value init = op.getDpsInitOperand(0)->get();
  auto outputType = cast<RankedTensorType>(init.getType());
  if (!inputType.hasStaticShape() || !outputType.hasStaticShape())
    return fail("the kernel needs static shapes (dynamic batch is not "
                "supported yet)");
  GemmProblem p;
  FailureOr<MmaKind> kind =
      getMmaKind(inputType.getElementType(), filterType.getElementType(),
                 outputType.getElementType(), whyNot);
  if (failed(kind))
    return failure();
  FailureOr<double> initValue = getConstantInit(init);
  if (failed(initValue))
    return fail("the convolution's init must be a constant fill");
  p.kind = *kind;
  p.elementType = inputType.getElementType();
  p.outputType = outputType.getElementType();
  p.initValue = *initValue;

  ImageDims dims = getImageDims(form.layout);
  SmallVector<int64_t> image =
      collapseShape(inputType.getShape(), form.inputToImage);
  SmallVector<int64_t> xStrides = rowMajorStrides(image);
  SmallVector<int64_t> outImage =
      collapseShape(outputType.getShape(), form.outputToImage);
  SmallVector<int64_t> yStrides = rowMajorStrides(outImage);
  p.batch = image[0];
  p.groups = plan.groups;
  p.cg = plan.channels / plan.groups;
  p.fg = plan.filtersPerGroup;
  p.h = image[dims.h];
  p.w = image[dims.w];
  p.kh = plan.kh;
  p.kw = plan.kw;
  p.ho = plan.ho;
  p.wo = plan.wo;
  p.strideH = plan.strides[0];
  p.strideW = plan.strides[1];
  p.dilationH = plan.dilations[0];
  p.dilationW = plan.dilations[1];
  p.padTop = plan.padding[0];
  p.padLeft = plan.padding[1];
  p.xN = xStrides[0];
  p.xC = xStrides[dims.c];
  p.xH = xStrides[dims.h];
  p.xW = xStrides[dims.w];
  p.yN = yStrides[0];
  p.yC = yStrides[dims.c];
  p.yH = yStrides[dims.h];
  p.yW = yStrides[dims.w];
  p.inputElements = inputType.getNumElements();
  p.filterElements = filterType.getNumElements();
  p.outputElements = outputType.getNumElements();
  p.channelsInnermost = p.xC == 1;

  // Filter strides by role: the group and filter dims are single dims of the
  // filter; the K group holds kh, kw and (unless Cg == 1) the channel dim.
  SmallVector<int64_t> fStrides = rowMajorStrides(filterType.getShape());
  p.wG = p.wF = p.wC = 0;
  p.wKH = fStrides[form.khDim];
  p.wKW = fStrides[form.kwDim];
  for (auto [group, role] : llvm::zip(form.filterToB, form.bRoles)) {
    if (role == Role::G)
      p.wG = fStrides[group.front()];
    else if (role == Role::F)
      p.wF = fStrides[group.front()];
    else
      for (int64_t d : group)
        if (d != form.khDim && d != form.kwDim)
          p.wC = fStrides[d];
  }
  return p;
}

/// Which GEMM operand a tile load fills.
enum class Operand { A, B };

/// Whether an operand's 16-byte chunks are contiguous and aligned in global
/// memory (then one cp.async moves each); otherwise elements are gathered
/// one at a time.
bool isVectorized(const GemmProblem &p, Operand op) {
  int64_t v = p.chunkElements();
  if (op == Operand::A && p.explicitIm2col)
    return p.k() % v == 0;
  if (op == Operand::A)
    return p.channelsInnermost && p.cg % v == 0 && p.xN % v == 0 &&
           p.xH % v == 0 && p.xW % v == 0;
  // B: V consecutive k must be V consecutive, aligned filter elements.
  bool alignedRows = p.wF % v == 0 && p.wG % v == 0;
  if (p.channelsInnermost)
    return alignedRows && p.wC == 1 && p.cg % v == 0 && p.wKH % v == 0 &&
           p.wKW % v == 0;
  bool flatK = p.wKW == 1 && p.wKH == p.kw && (p.cg == 1 || p.wC == p.kh * p.kw);
  return alignedRows && flatK && p.k() % v == 0;
}

//===----------------------------------------------------------------------===//
// Tile sizes
//===----------------------------------------------------------------------===//

struct TileOverrides {
  int64_t blockM = 0, blockN = 0, warpsM = 0, warpsN = 0, stages = 0;
};

/// 2x2 warps, a 64-byte K step, three stages; the block shrinks along a
/// dimension the problem cannot fill (few filters per group, few pixels), so
/// small and depthwise layers do not spend most of each tile on padding.
TileConfig chooseTiles(const GemmProblem &p, const TileOverrides &o) {
  TileConfig t;
  t.blockK = kRowBytes / p.elementBytes();
  t.blockN = p.fg > 64 ? 128 : p.fg > 32 ? 64 : 32;
  t.blockM = p.m() > 64 ? 128 : 64;
  t.warpsM = 2;
  t.warpsN = 2;
  // A gathered element by element (NCHW) costs each thread a register per
  // element in flight: 8 warps halve both that and the accumulators per
  // thread (ptxas spilled with 4 warps of 64x64 on sm_90).
  if (!isVectorized(p, Operand::A) && t.blockM == 128 && t.blockN >= 64)
    t.warpsM = 4;
  t.stages = 3;
  if (o.blockM)
    t.blockM = o.blockM;
  if (o.blockN)
    t.blockN = o.blockN;
  if (o.warpsM)
    t.warpsM = o.warpsM;
  if (o.warpsN)
    t.warpsN = o.warpsN;
  if (o.stages)
    t.stages = o.stages;
  return t;
}

/// Why `t` cannot be built for `p`, or "" when it can.
std::string checkTiles(const TileConfig &t, const GemmProblem &p) {
  std::string why;
  llvm::raw_string_ostream os(why);
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
  return why;
}

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

  bool isVectorized(Operand op) const { return ::isVectorized(p, op); }

  /// Explicit mode's first kernel, for one element: X_col[idx] = the image
  /// element it gathers, or zero (idx < im2colElements()).
  void emitIm2colElement(Value idx, Value x, Value xcol);

  /// The flat bias the epilogue adds, when the problem has one.
  void setBias(Value bias) { biasBuffer = bias; }

  /// The twin's per-warp fragment registers: A [tilesM, 32 lanes, 4 regs,
  /// elems per reg] and B [tilesN / 2, 32, 4, elems].
  void setTwinFragments(Value a, Value bFrag) {
    twinFragA = a;
    twinFragB = bFrag;
  }

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
  Value both(Value a, Value c) { return arith::AndIOp::create(b, loc, a, c); }
  Value select(Value cond, Value a, Value c) {
    return arith::SelectOp::create(b, loc, cond, a, c);
  }

  /// Runs `body(i)` for i in [0, n): an scf.for on the twin, or once for the
  /// GPU's own thread/warp id `gpuId`.
  void forEach(int64_t n, Value gpuId, function_ref<void(Value)> body);

  /// The element offset of A[m, k] (or B[k, f] with `row` = f) and whether
  /// it is inside the tensor (false for padding and tile overhang).
  std::pair<Value, Value> elementOffset(Operand op, Value row, Value k,
                                        Value group);
  /// The image element that im2col row `row` = m, column (c, kh, kw) reads,
  /// and whether it lies inside the image (`valid` so far) .
  std::pair<Value, Value> gatherOffset(Value row, Value c, Value khi, Value kwi,
                                       Value group, Value valid);
  /// Physical column of chunk `chunk` of shared row `row` (the swizzle).
  Value swizzledColumn(Value row, Value chunk);
  /// One thread's share of the global -> shared copy of a K tile; returns
  /// the cp.async tokens it issued.
  SmallVector<Value> loadTile(Operand op, Value src, Value smem, Value stage,
                              Value kTile, Value tid, Value rowBase,
                              Value group);
  /// Issues the copies of K tile `kTile` into `stage` for every thread;
  /// returns the cp.async group token (null when nothing is asynchronous).
  Value loadStage(Value stage, Value kTile, Value tid, Value bm, Value bn,
                  Value group, Value x, Value w, Value smemA, Value smemB);

  /// Accumulator (row, col) within the warp tile of fragment element `v` of
  /// mma tile (i, j) held by `lane` (the m16n8 f32 C layout of mma.sync).
  std::pair<Value, Value> fragmentPosition(Value lane, int64_t i, int64_t j,
                                           int64_t v);
  /// Y[m, f] = acc + init for m < M and f < Fg: the fold.
  void storeOutput(Value y, Value m, Value f, Value group, Value acc);

  /// The shared-memory (row, col) that `lane` hands ldmatrix.x4 for A tile
  /// `i` (16 rows) / the B tile pair from column `j`, at 32-byte K slice kk.
  std::pair<Value, Value> ldmatrixAddressA(Value lane, Value warpRow,
                                           int64_t i, int64_t kk);
  std::pair<Value, Value> ldmatrixAddressB(Value lane, Value warpCol,
                                           int64_t j, int64_t kk);

  // GPU pieces.
  SmallVector<Value> gpuComputeStage(Value smemA, Value smemB, Value stage,
                                     Value tid, ValueRange accs);
  Value gpuMma(Value a, Value bFrag0, Value bFrag1, Value acc);
  void gpuEpilogue(Value y, Value bm, Value bn, Value group, Value tid,
                   ValueRange accs);
  // Twin pieces.
  void twinComputeStage(Value smemA, Value smemB, Value stage, Value acc);
  void twinEpilogue(Value y, Value bm, Value bn, Value group, Value acc);

  OpBuilder &b;
  Location loc;
  const GemmProblem &p;
  const TileConfig &t;
  bool twin;
  Value biasBuffer, twinFragA, twinFragB;
};

void KernelBuilder::forEach(int64_t n, Value gpuId,
                            function_ref<void(Value)> body) {
  if (!twin) {
    body(gpuId);
    return;
  }
  auto loop = scf::ForOp::create(b, loc, idx(0), idx(n), idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  body(loop.getInductionVar());
}

std::pair<Value, Value> KernelBuilder::elementOffset(Operand op, Value row,
                                                     Value k, Value group) {
  // k -> (c, kh, kw) in the chosen K order.
  Value c, khi, kwi;
  if (p.channelsInnermost) {
    c = rem(k, p.cg);
    Value rest = div(k, p.cg);
    kwi = rem(rest, p.kw);
    khi = div(rest, p.kw);
  } else {
    kwi = rem(k, p.kw);
    Value rest = div(k, p.kw);
    khi = rem(rest, p.kh);
    c = div(rest, p.kh);
  }
  Value valid = lessThan(k, p.k());
  if (op == Operand::B) {
    valid = both(valid, lessThan(row, p.fg));
    Value offset = add(add(mul(group, p.wG), mul(row, p.wF)),
                       add(mul(c, p.wC), add(mul(khi, p.wKH), mul(kwi, p.wKW))));
    return {offset, valid};
  }
  if (p.explicitIm2col) {
    // X_col[m, g, k].
    Value offset = add(mul(add(mul(row, p.groups), group), p.k()), k);
    return {offset, both(valid, lessThan(row, p.m()))};
  }
  return gatherOffset(row, c, khi, kwi, group, valid);
}

std::pair<Value, Value> KernelBuilder::gatherOffset(Value row, Value c,
                                                    Value khi, Value kwi,
                                                    Value group, Value valid) {
  // Row m -> (n, oh, ow) -> input (ih, iw); padding is the predicate.
  Value n = div(row, p.ho * p.wo);
  Value pixel = rem(row, p.ho * p.wo);
  Value oh = div(pixel, p.wo), ow = rem(pixel, p.wo);
  Value ih = add(add(mul(oh, p.strideH), mul(khi, p.dilationH)), -p.padTop);
  Value iw = add(add(mul(ow, p.strideW), mul(kwi, p.dilationW)), -p.padLeft);
  valid = both(both(valid, lessThan(row, p.m())),
               both(inRange(ih, p.h), inRange(iw, p.w)));
  Value channel = add(mul(group, p.cg), c);
  Value offset = add(add(mul(n, p.xN), mul(channel, p.xC)),
                     add(mul(ih, p.xH), mul(iw, p.xW)));
  return {offset, valid};
}

void KernelBuilder::emitIm2colElement(Value index, Value x, Value xcol) {
  GemmProblem gather = p;
  gather.explicitIm2col = false;
  KernelBuilder image(b, loc, gather, t, twin);
  Value k = rem(index, p.k()), rest = div(index, p.k());
  Value group = rem(rest, p.groups), row = div(rest, p.groups);
  auto [offset, valid] = image.elementOffset(Operand::A, row, k, group);
  Value data = memref::LoadOp::create(b, loc, x,
                                      ValueRange{select(valid, offset, idx(0))});
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(p.elementType));
  memref::StoreOp::create(b, loc, select(valid, data, zero), xcol,
                          ValueRange{index});
}

Value KernelBuilder::swizzledColumn(Value row, Value chunk) {
  int64_t chunksPerRow = t.blockK / p.chunkElements();
  int64_t rowsPerLine = 128 / kRowBytes;
  Value key = rem(div(row, rowsPerLine), chunksPerRow);
  Value physical = arith::XOrIOp::create(b, loc, chunk, key);
  return mul(physical, p.chunkElements());
}

SmallVector<Value> KernelBuilder::loadTile(Operand op, Value src, Value smem,
                                           Value stage, Value kTile, Value tid,
                                           Value rowBase, Value group) {
  int64_t rows = op == Operand::A ? t.blockM : t.blockN;
  int64_t v = p.chunkElements();
  int64_t chunksPerRow = t.blockK / v;
  Value kBase = mul(kTile, t.blockK);
  SmallVector<Value> tokens;
  if (isVectorized(op)) {
    // Thread tid moves chunks tid, tid + T, ...: consecutive threads take
    // consecutive chunks of a row (contiguous along K in global memory).
    // checkTiles makes T a multiple of chunksPerRow: the chunk column is the
    // thread's own, and the row steps by T / chunksPerRow.
    Value firstRow = div(tid, chunksPerRow), chunk = rem(tid, chunksPerRow);
    for (int64_t i = 0; i < rows * chunksPerRow / t.threads(); ++i) {
      Value row = add(firstRow, i * (t.threads() / chunksPerRow));
      Value k = add(kBase, mul(chunk, v));
      auto [offset, valid] = elementOffset(op, add(rowBase, row), k, group);
      offset = select(valid, offset, idx(0));
      Value column = swizzledColumn(row, chunk);
      if (twin) {
        auto vecType = VectorType::get({v}, p.elementType);
        Value data = vector::LoadOp::create(b, loc, vecType, src, offset);
        Value zeros = arith::ConstantOp::create(
            b, loc, vecType, DenseElementsAttr::get(
                                 vecType, b.getZeroAttr(p.elementType)));
        data = select(valid, data, zeros);
        vector::StoreOp::create(b, loc, data, smem,
                                ValueRange{stage, row, column});
        continue;
      }
      // Zero-fill: a copy of 0 source bytes writes 16 zero bytes.
      Value srcElements = select(valid, idx(v), idx(0));
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), smem,
          ValueRange{stage, row, column}, src, ValueRange{offset},
          b.getIndexAttr(v), srcElements, b.getUnitAttr()));
    }
    return tokens;
  }
  // Element gather. Consecutive threads take consecutive rows when the rows
  // are what is contiguous in memory (NCHW pixels), else consecutive k.
  bool rowsContiguous = op == Operand::A && !p.channelsInnermost;
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(p.elementType));
  // Element e = tid + i*T. The index math is written per thread so that what
  // does not change with i (the thread's row, and with it the image position
  // of an A row) is computed once: fewer live registers in the kernel.
  int64_t inner = rowsContiguous ? rows : t.blockK;
  bool perThread = t.threads() % inner == 0;
  Value fixedPart = rem(tid, inner), steppedPart = div(tid, inner);
  for (int64_t i = 0; i < rows * t.blockK / t.threads(); ++i) {
    Value e = add(tid, i * t.threads());
    Value fixed = perThread ? fixedPart : rem(e, inner);
    Value stepped = perThread ? add(steppedPart, i * (t.threads() / inner))
                              : div(e, inner);
    Value row = rowsContiguous ? fixed : stepped;
    Value kk = rowsContiguous ? stepped : fixed;
    auto [offset, valid] =
        elementOffset(op, add(rowBase, row), add(kBase, kk), group);
    Value data = memref::LoadOp::create(b, loc, src,
                                        ValueRange{select(valid, offset, idx(0))});
    data = select(valid, data, zero);
    Value column =
        add(swizzledColumn(row, div(kk, v)), rem(kk, v));
    memref::StoreOp::create(b, loc, data, smem, ValueRange{stage, row, column});
  }
  return tokens;
}

Value KernelBuilder::loadStage(Value stage, Value kTile, Value tid, Value bm,
                               Value bn, Value group, Value x, Value w,
                               Value smemA, Value smemB) {
  SmallVector<Value> tokens;
  forEach(t.threads(), tid, [&](Value thread) {
    Value rowA = mul(bm, t.blockM), rowB = mul(bn, t.blockN);
    llvm::append_range(tokens, loadTile(Operand::A, x, smemA, stage, kTile,
                                        thread, rowA, group));
    llvm::append_range(tokens, loadTile(Operand::B, w, smemB, stage, kTile,
                                        thread, rowB, group));
  });
  if (tokens.empty())
    return nullptr;
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, loc, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tokens);
}

std::pair<Value, Value> KernelBuilder::fragmentPosition(Value lane, int64_t i,
                                                        int64_t j, int64_t v) {
  Value groupId = div(lane, 4), inGroup = rem(lane, 4);
  Value row = add(groupId, i * 16 + (v / 2) * 8);
  Value col = add(mul(inGroup, 2), j * 8 + v % 2);
  return {row, col};
}

void KernelBuilder::storeOutput(Value y, Value m, Value f, Value group,
                                Value acc) {
  Value inside = both(lessThan(m, p.m()), lessThan(f, p.fg));
  auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value n = div(m, p.ho * p.wo), pixel = rem(m, p.ho * p.wo);
  Value oh = div(pixel, p.wo), ow = rem(pixel, p.wo);
  Value channel = add(mul(group, p.fg), f);
  Value offset = add(add(mul(n, p.yN), mul(channel, p.yC)),
                     add(mul(oh, p.yH), mul(ow, p.yW)));
  if (p.initValue != 0.0)
    acc = arith::AddFOp::create(
        b, loc, acc,
        arith::ConstantOp::create(b, loc, b.getF32FloatAttr(p.initValue)));
  if (p.biasType) {
    Value bias = memref::LoadOp::create(b, loc, biasBuffer, ValueRange{channel});
    if (!p.biasType.isF32())
      bias = arith::ExtFOp::create(b, loc, b.getF32Type(), bias);
    acc = arith::AddFOp::create(b, loc, acc, bias);
  }
  if (p.relu)
    acc = arith::MaximumFOp::create(
        b, loc, acc, arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)));
  if (!p.outputType.isF32())
    acc = arith::TruncFOp::create(b, loc, p.outputType, acc);
  memref::StoreOp::create(b, loc, acc, y, ValueRange{offset});
}

/// One mma.sync; `a` and the B registers come from ldmatrix, `acc` is the
/// thread's four f32 accumulators as vector<4xf32>.
Value KernelBuilder::gpuMma(Value a, Value bFrag0, Value bFrag1, Value acc) {
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  // A .b32 register of the fragment: f16 pairs stay vector<2xf16>; bf16
  // pairs and tf32 values travel as i32, as the PTX instruction wants.
  auto asRegister = [&](Value row) -> Value {
    if (p.kind == MmaKind::F16)
      return row;
    auto i32Vec = VectorType::get({1}, i32);
    Value bits = vector::BitCastOp::create(b, loc, i32Vec, row);
    return vector::ExtractOp::create(b, loc, bits, ArrayRef<int64_t>{0});
  };
  SmallVector<Value> aRegs, bRegs = {asRegister(bFrag0), asRegister(bFrag1)},
                            cRegs;
  for (int64_t r = 0; r < 4; ++r)
    aRegs.push_back(
        asRegister(vector::ExtractOp::create(b, loc, a, ArrayRef<int64_t>{r})));
  for (int64_t r = 0; r < 4; ++r)
    cRegs.push_back(
        vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{r}));
  NVVM::MMATypes ptxType = p.kind == MmaKind::F16    ? NVVM::MMATypes::f16
                           : p.kind == MmaKind::BF16 ? NVVM::MMATypes::bf16
                                                     : NVVM::MMATypes::tf32;
  int64_t k = p.kind == MmaKind::TF32 ? 8 : 16;
  auto structType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  Value d = NVVM::MmaOp::create(
      b, loc, structType, aRegs, bRegs, cRegs, ArrayRef<int64_t>{16, 8, k},
      std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  SmallVector<Value> out;
  for (int64_t r = 0; r < 4; ++r)
    out.push_back(LLVM::ExtractValueOp::create(b, loc, d, r));
  return vector::FromElementsOp::create(b, loc, VectorType::get({4}, f32), out);
}

// ldmatrix.x4: lanes 8j..8j+7 give the row addresses of 8x(16 bytes) matrix
// j, and the matrices land in registers 0..3. A: matrices (rows 0-7 | 8-15) x
// (chunk 0 | 1), in the order that makes registers 0..3 the mma's a0..a3. B
// (stored [n][k], the "col" operand): (n 0-7: chunk 0, chunk 1), (n 8-15:
// chunk 0, chunk 1): two n8 tiles per load.
std::pair<Value, Value> KernelBuilder::ldmatrixAddressA(Value lane,
                                                        Value warpRow,
                                                        int64_t i,
                                                        int64_t kk) {
  Value rowInTile = add(rem(lane, 8), mul(rem(div(lane, 8), 2), 8));
  Value row = add(add(warpRow, rowInTile), i * 16);
  return {row, swizzledColumn(row, add(div(lane, 16), 2 * kk))};
}

std::pair<Value, Value> KernelBuilder::ldmatrixAddressB(Value lane,
                                                        Value warpCol,
                                                        int64_t j,
                                                        int64_t kk) {
  Value rowInTile = add(rem(lane, 8), mul(div(lane, 16), 8));
  Value row = add(add(warpCol, rowInTile), j * 8);
  return {row, swizzledColumn(row, add(rem(div(lane, 8), 2), 2 * kk))};
}

SmallVector<Value> KernelBuilder::gpuComputeStage(Value smemA, Value smemB,
                                                  Value stage, Value tid,
                                                  ValueRange accs) {
  int64_t tilesM = t.warpM() / 16, tilesN = t.warpN() / 8;
  Value warp = div(tid, kWarpSize), lane = rem(tid, kWarpSize);
  Value warpRow = mul(div(warp, t.warpsN), t.warpM());
  Value warpCol = mul(rem(warp, t.warpsN), t.warpN());
  int64_t regElems = p.kind == MmaKind::TF32 ? 1 : 2;
  auto fragType = VectorType::get({4, regElems}, p.elementType);
  SmallVector<Value> out(accs.begin(), accs.end());
  int64_t chunksPerRow = t.blockK / p.chunkElements();
  for (int64_t kk = 0; kk < chunksPerRow / 2; ++kk) {
    SmallVector<Value> aFrags, bFrags;
    for (int64_t i = 0; i < tilesM; ++i) {
      auto [row, col] = ldmatrixAddressA(lane, warpRow, i, kk);
      aFrags.push_back(nvgpu::LdMatrixOp::create(
          b, loc, fragType, smemA, ValueRange{stage, row, col}, false, 4));
    }
    for (int64_t j = 0; j < tilesN; j += 2) {
      auto [row, col] = ldmatrixAddressB(lane, warpCol, j, kk);
      Value frag = nvgpu::LdMatrixOp::create(
          b, loc, fragType, smemB, ValueRange{stage, row, col}, false, 4);
      for (int64_t r = 0; r < 4; ++r)
        bFrags.push_back(
            vector::ExtractOp::create(b, loc, frag, ArrayRef<int64_t>{r}));
    }
    for (int64_t i = 0; i < tilesM; ++i)
      for (int64_t j = 0; j < tilesN; ++j)
        out[i * tilesN + j] = gpuMma(aFrags[i], bFrags[2 * j],
                                     bFrags[2 * j + 1], out[i * tilesN + j]);
  }
  return out;
}

void KernelBuilder::gpuEpilogue(Value y, Value bm, Value bn, Value group,
                                Value tid, ValueRange accs) {
  int64_t tilesN = t.warpN() / 8;
  Value warp = div(tid, kWarpSize), lane = rem(tid, kWarpSize);
  Value rowBase = add(mul(bm, t.blockM), mul(div(warp, t.warpsN), t.warpM()));
  Value colBase = add(mul(bn, t.blockN), mul(rem(warp, t.warpsN), t.warpN()));
  for (auto [index, acc] : llvm::enumerate(accs)) {
    int64_t i = index / tilesN, j = index % tilesN;
    for (int64_t v = 0; v < 4; ++v) {
      auto [row, col] = fragmentPosition(lane, i, j, v);
      Value value = vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{v});
      storeOutput(y, add(rowBase, row), add(colBase, col), group, value);
    }
  }
}

// The twin runs the warp-level instructions as the PTX ISA defines them, lane
// by lane, so that the GPU's ldmatrix addresses and fragment bookkeeping are
// what it checks (a plain dot product over the shared tiles would not be).
void KernelBuilder::twinComputeStage(Value smemA, Value smemB, Value stage,
                                     Value acc) {
  int64_t tilesM = t.warpM() / 16, tilesN = t.warpN() / 8;
  int64_t half = p.chunkElements(), chunksPerRow = t.blockK / half;
  int64_t e = p.kind == MmaKind::TF32 ? 1 : 2; // elements per .b32 register
  Type f32 = b.getF32Type();
  auto toF32 = [&](Value v) -> Value {
    return v.getType().isF32() ? v : arith::ExtFOp::create(b, loc, f32, v);
  };
  forEach(t.warpsM * t.warpsN, nullptr, [&](Value warp) {
    Value warpRow = mul(div(warp, t.warpsN), t.warpM());
    Value warpCol = mul(rem(warp, t.warpsN), t.warpN());
    for (int64_t kk = 0; kk < chunksPerRow / 2; ++kk) {
      // ldmatrix.x4: lane l receives in register j the 32 bits at byte
      // 4*(l%4) of row l/4 of matrix j, whose address lane 8j + l/4 gave.
      auto ldmatrix = [&](Value smem, Value frag, int64_t fragIndex,
                          function_ref<std::pair<Value, Value>(Value)> address) {
        forEach(kWarpSize, nullptr, [&](Value lane) {
          for (int64_t j = 0; j < 4; ++j) {
            auto [row, col] = address(add(div(lane, 4), 8 * j));
            for (int64_t el = 0; el < e; ++el) {
              Value column = add(add(col, mul(rem(lane, 4), e)), el);
              Value v = memref::LoadOp::create(b, loc, smem,
                                               ValueRange{stage, row, column});
              memref::StoreOp::create(
                  b, loc, v, frag,
                  ValueRange{idx(fragIndex), lane, idx(j), idx(el)});
            }
          }
        });
      };
      for (int64_t i = 0; i < tilesM; ++i)
        ldmatrix(smemA, twinFragA, i, [&](Value source) {
          return ldmatrixAddressA(source, warpRow, i, kk);
        });
      for (int64_t j = 0; j < tilesN; j += 2)
        ldmatrix(smemB, twinFragB, j / 2, [&](Value source) {
          return ldmatrixAddressB(source, warpCol, j, kk);
        });
      // mma.sync m16n8k(2*half): A(r, k) is element k%e of register
      // r/8 + 2*(k/half) of lane (r%8)*4 + (k%half)/e; B(k, n) element k%e of
      // register k/half of lane n*4 + (k%half)/e (the tile pair's second
      // tile in registers 2, 3); D(r, c) as fragmentPosition says.
      forEach(tilesM, nullptr, [&](Value i) {
        forEach(tilesN, nullptr, [&](Value jt) {
          forEach(kWarpSize, nullptr, [&](Value lane) {
            for (int64_t v = 0; v < 4; ++v) {
              auto [r, c] = fragmentPosition(lane, 0, 0, v);
              Value row = add(mul(i, 16), r), col = add(mul(jt, 8), c);
              Value init =
                  memref::LoadOp::create(b, loc, acc, ValueRange{warp, row, col});
              auto kLoop = scf::ForOp::create(b, loc, idx(0), idx(2 * half),
                                              idx(1), ValueRange{init});
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToStart(kLoop.getBody());
              Value k = kLoop.getInductionVar();
              Value kIn = div(rem(k, half), e), kReg = div(k, half),
                    kEl = rem(k, e);
              Value aLane = add(mul(rem(r, 8), 4), kIn);
              Value aReg = add(div(r, 8), mul(kReg, 2));
              Value bLane = add(mul(c, 4), kIn);
              Value bReg = add(mul(rem(jt, 2), 2), kReg);
              Value a = memref::LoadOp::create(
                  b, loc, twinFragA, ValueRange{i, aLane, aReg, kEl});
              Value bv = memref::LoadOp::create(
                  b, loc, twinFragB, ValueRange{div(jt, 2), bLane, bReg, kEl});
              Value sum = arith::AddFOp::create(
                  b, loc, kLoop.getRegionIterArgs()[0],
                  arith::MulFOp::create(b, loc, toF32(a), toF32(bv)));
              scf::YieldOp::create(b, loc, sum);
              b.setInsertionPointAfter(kLoop);
              memref::StoreOp::create(b, loc, kLoop.getResult(0), acc,
                                      ValueRange{warp, row, col});
            }
          });
        });
      });
    }
  });
}

void KernelBuilder::twinEpilogue(Value y, Value bm, Value bn, Value group,
                                 Value acc) {
  int64_t tilesM = t.warpM() / 16, tilesN = t.warpN() / 8;
  // Walk the accumulators the way the GPU threads hold them (lane, tile,
  // register), so the twin checks the fragment-to-output mapping too.
  forEach(t.warpsM * t.warpsN, nullptr, [&](Value warp) {
    Value warpRow = mul(div(warp, t.warpsN), t.warpM());
    Value warpCol = mul(rem(warp, t.warpsN), t.warpN());
    forEach(kWarpSize, nullptr, [&](Value lane) {
      for (int64_t i = 0; i < tilesM; ++i)
        for (int64_t j = 0; j < tilesN; ++j)
          for (int64_t v = 0; v < 4; ++v) {
            auto [row, col] = fragmentPosition(lane, i, j, v);
            Value value =
                memref::LoadOp::create(b, loc, acc, ValueRange{warp, row, col});
            storeOutput(y, add(add(mul(bm, t.blockM), warpRow), row),
                        add(add(mul(bn, t.blockN), warpCol), col), group,
                        value);
          }
    });
  });
}

void KernelBuilder::emitBlock(Value bm, Value bn, Value group, Value x,
                              Value w, Value y, Value smemA, Value smemB,
                              Value twinAcc) {
  int64_t kTiles = llvm::divideCeilSigned(p.k(), t.blockK);
  Value tid = twin ? nullptr : gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x)
                                   .getResult();
  Type f32 = b.getF32Type();

  SmallVector<Value> accs;
  if (twin) {
    Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
    auto fill = [&](Value warp) {
      forEach(t.warpM(), nullptr, [&](Value r) {
        forEach(t.warpN(), nullptr, [&](Value c) {
          memref::StoreOp::create(b, loc, zero, twinAcc,
                                  ValueRange{warp, r, c});
        });
      });
    };
    forEach(t.warpsM * t.warpsN, nullptr, fill);
  } else {
    auto accType = VectorType::get({4}, f32);
    Value zeros = arith::ConstantOp::create(
        b, loc, accType, DenseElementsAttr::get(accType, b.getF32FloatAttr(0)));
    accs.assign((t.warpM() / 16) * (t.warpN() / 8), zeros);
  }

  // Prologue: K tiles 0 .. stages-2, one group each (tiles past the end
  // load zeros and are never read).
  Value token;
  for (int64_t s = 0; s + 1 < t.stages; ++s)
    if (Value g = loadStage(idx(s), idx(s), tid, bm, bn, group, x, w, smemA,
                            smemB))
      token = g;

  SmallVector<Value> iterInits(accs);
  if (token)
    iterInits.push_back(token);
  auto loop = scf::ForOp::create(b, loc, idx(0), idx(kTiles), idx(1),
                                 iterInits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value kt = loop.getInductionVar();
    ValueRange carried = loop.getRegionIterArgs();
    if (token)
      nvgpu::DeviceAsyncWaitOp::create(b, loc, carried.back(),
                                       b.getI32IntegerAttr(t.stages - 2));
    if (!twin)
      gpu::BarrierOp::create(b, loc);
    Value next = add(kt, t.stages - 1);
    Value nextToken = loadStage(rem(next, t.stages), next, tid, bm, bn, group,
                                x, w, smemA, smemB);
    Value stage = rem(kt, t.stages);
    SmallVector<Value> yields;
    if (twin) {
      twinComputeStage(smemA, smemB, stage, twinAcc);
    } else {
      yields = gpuComputeStage(smemA, smemB, stage, tid,
                               carried.take_front(accs.size()));
    }
    if (nextToken)
      yields.push_back(nextToken);
    // Without loop-carried values the builder already added the yield.
    if (!loop.getBody()->mightHaveTerminator())
      scf::YieldOp::create(b, loc, yields);
  }
  if (twin)
    twinEpilogue(y, bm, bn, group, twinAcc);
  else
    gpuEpilogue(y, bm, bn, group, tid,
                loop.getResults().take_front(accs.size()));
}

//===----------------------------------------------------------------------===//
// Epilogue fusion: a bias add and a ReLU after the convolution
//===----------------------------------------------------------------------===//

/// The ops after the convolution that the kernel's epilogue absorbs, in
/// order: a collapse of the grouped dims, a per-channel bias add, a ReLU.
struct FusedEpilogue {
  SmallVector<Operation *> ops;
  Value bias;
  bool relu = false;
};

/// The one op using `v` (several operands of one op count once), or null.
Operation *soleUser(Value v) {
  Operation *user = nullptr;
  for (Operation *u : v.getUsers()) {
    if (user && u != user)
      return nullptr;
    user = u;
  }
  return user;
}

/// An elementwise linalg.generic over `y`'s shape whose inputs start with
/// `y` (identity map) and whose init block argument is unused.
bool isElementwiseOn(linalg::GenericOp g, Value y, unsigned inputs) {
  auto type = cast<RankedTensorType>(y.getType());
  if (g.getNumDpsInputs() != inputs || g.getNumDpsInits() != 1 ||
      g.getNumParallelLoops() != g.getNumLoops() ||
      g.getNumLoops() != static_cast<unsigned>(type.getRank()) ||
      g->getResult(0).getType() != type ||
      g.getDpsInputOperand(0)->get() != y)
    return false;
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), g.getContext());
  return g.getMatchingIndexingMap(g.getDpsInputOperand(0)) == identity &&
         g.getMatchingIndexingMap(g.getDpsInitOperand(0)) == identity &&
         g.getBlock()->getArguments().back().use_empty();
}

/// The value the body yields, defined by an op of type OpTy.
template <typename OpTy>
OpTy yieldedOp(linalg::GenericOp g) {
  auto yield = cast<linalg::YieldOp>(g.getBlock()->getTerminator());
  return yield.getValues()[0].getDefiningOp<OpTy>();
}

/// out = y + ext(bias[channel]), with bias a 1-D float tensor.
Value matchBiasAdd(linalg::GenericOp g, Value y, unsigned channelDim) {
  if (!isElementwiseOn(g, y, 2))
    return nullptr;
  OpOperand *biasOperand = g.getDpsInputOperand(1);
  auto biasType = dyn_cast<RankedTensorType>(biasOperand->get().getType());
  AffineMap map = g.getMatchingIndexingMap(biasOperand);
  if (!biasType || biasType.getRank() != 1 || !biasType.hasStaticShape() ||
      !(biasType.getElementType().isF32() || biasType.getElementType().isF16() ||
        biasType.getElementType().isBF16()) ||
      map.getNumResults() != 1 ||
      map.getResult(0) != getAffineDimExpr(channelDim, g.getContext()))
    return nullptr;
  auto addf = yieldedOp<arith::AddFOp>(g);
  if (!addf)
    return nullptr;
  Value acc = g.getBlock()->getArgument(0), bias = g.getBlock()->getArgument(1);
  auto isBias = [&](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      v = ext.getIn();
    return v == bias;
  };
  bool matches = (addf.getLhs() == acc && isBias(addf.getRhs())) ||
                 (addf.getRhs() == acc && isBias(addf.getLhs()));
  return matches ? biasOperand->get() : nullptr;
}

/// out = max(y, 0).
bool isRelu(linalg::GenericOp g, Value y) {
  if (!isElementwiseOn(g, y, 1))
    return false;
  Operation *max = yieldedOp<arith::MaximumFOp>(g);
  if (!max)
    max = yieldedOp<arith::MaxNumFOp>(g);
  if (!max)
    return false;
  Value in = g.getBlock()->getArgument(0);
  Value a = max->getOperand(0), c = max->getOperand(1);
  return (a == in && matchPattern(c, m_AnyZeroFloat())) ||
         (c == in && matchPattern(a, m_AnyZeroFloat()));
}

/// What follows `conv` that the epilogue can do: [collapse] bias [ReLU], or
/// a ReLU alone. Nothing is fused that anything else reads.
FusedEpilogue matchEpilogue(linalg::LinalgOp conv, const ConvForm &form) {
  FusedEpilogue e;
  Value y = conv->getResult(0);
  unsigned channelDim = getImageDims(form.layout).c;
  Operation *user = soleUser(y);
  // Grouped outputs reach the image layout through a collapse first.
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(user)) {
    auto next = dyn_cast_or_null<linalg::GenericOp>(soleUser(collapse));
    if (!next || !matchBiasAdd(next, collapse.getResult(), channelDim))
      return e;
    e.ops.push_back(collapse);
    y = collapse.getResult();
    user = next;
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(user);
  if (!generic || cast<RankedTensorType>(y.getType()).getRank() != 4)
    return e;
  if (Value bias = matchBiasAdd(generic, y, channelDim)) {
    e.bias = bias;
    e.ops.push_back(generic);
    y = generic->getResult(0);
    generic = dyn_cast_or_null<linalg::GenericOp>(soleUser(y));
  }
  if (generic && isRelu(generic, y)) {
    e.relu = true;
    e.ops.push_back(generic);
  }
  return e;
}

//===----------------------------------------------------------------------===//
// Host side: the kernel's module, its launch, and the twin's loop nest
//===----------------------------------------------------------------------===//

/// A flat static 1-D view of a tensor's buffer.
Value flatBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  Value buffer = bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                                   b.getUnitAttr());
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(type.getRank()));
  return memref::CollapseShapeOp::create(
      b, loc, buffer, ArrayRef<ReassociationIndices>{all});
}

/// A new host buffer for the result, and its flat 1-D view.
std::pair<Value, Value> allocateResult(OpBuilder &b, Location loc,
                                       RankedTensorType type) {
  Value result = memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()));
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(type.getRank()));
  Value flat = memref::CollapseShapeOp::create(
      b, loc, result, ArrayRef<ReassociationIndices>{all});
  return {result, flat};
}

struct Launch {
  int64_t gridX, gridY, gridZ;
};

Launch launchShape(const GemmProblem &p, const TileConfig &t) {
  return {llvm::divideCeilSigned(p.m(), t.blockM),
          llvm::divideCeilSigned(p.fg, t.blockN), p.groups};
}

MemRefType sharedType(const GemmProblem &p, const TileConfig &t, int64_t rows,
                      bool twin) {
  Attribute space;
  if (!twin)
    space = gpu::AddressSpaceAttr::get(p.elementType.getContext(),
                                       gpu::AddressSpace::Workgroup);
  return MemRefType::get({t.stages, rows, t.blockK}, p.elementType,
                         MemRefLayoutAttrInterface{}, space);
}

/// Records the tiles and the launch on the kernel, for readers of the IR and
/// for conv-run, which launches the binary itself.
void annotateKernel(Operation *kernel, const GemmProblem &p,
                    const TileConfig &t, const KernelBuilder &kb) {
  OpBuilder b(kernel->getContext());
  Launch l = launchShape(p, t);
  kernel->setAttr("conv_lower.grid",
                  b.getDenseI64ArrayAttr({l.gridX, l.gridY, l.gridZ}));
  kernel->setAttr("conv_lower.block",
                  b.getDenseI64ArrayAttr({t.threads(), 1, 1}));
  kernel->setAttr("conv_lower.tiles",
                  b.getDictionaryAttr({
                      b.getNamedAttr("block", b.getDenseI64ArrayAttr(
                                                  {t.blockM, t.blockN, t.blockK})),
                      b.getNamedAttr("warps", b.getDenseI64ArrayAttr(
                                                  {t.warpsM, t.warpsN})),
                      b.getNamedAttr("stages", b.getI64IntegerAttr(t.stages)),
                      b.getNamedAttr("a_vectorized",
                                     b.getBoolAttr(kb.isVectorized(Operand::A))),
                      b.getNamedAttr("b_vectorized",
                                     b.getBoolAttr(kb.isVectorized(Operand::B))),
                  }));
}

gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module) {
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  return gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModuleName);
}

/// Emits the kernel for `p` into the kernel module and returns it.
gpu::GPUFuncOp buildGpuKernel(ModuleOp module, StringRef name,
                              const GemmProblem &p, const TileConfig &t,
                              Location loc) {
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto flat = [&](int64_t n, Type e) { return MemRefType::get({n}, e); };
  // Arguments: input, filter, [bias,] output (the runtime manifest's order).
  SmallVector<Type> args = {
      flat(p.explicitIm2col ? p.im2colElements() : p.inputElements,
           p.elementType),
      flat(p.filterElements, p.elementType)};
  if (p.biasType)
    args.push_back(flat(p.biasElements, p.biasType));
  args.push_back(flat(p.outputElements, p.outputType));
  auto fnType = b.getFunctionType(args, {});
  auto fn = gpu::GPUFuncOp::create(
      b, loc, name, fnType,
      TypeRange{sharedType(p, t, t.blockM, false),
                sharedType(p, t, t.blockN, false)},
      TypeRange{});
  SymbolTable(kernels).insert(fn);
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(t.threads()), 1, 1}));
  Block &body = fn.getBody().front();
  b.setInsertionPointToStart(&body);
  KernelBuilder kb(b, loc, p, t, /*twin=*/false);
  Value bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value group = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  if (p.biasType)
    kb.setBias(body.getArgument(2));
  kb.emitBlock(bm, bn, group, body.getArgument(0), body.getArgument(1),
               body.getArgument(fnType.getNumInputs() - 1),
               fn.getWorkgroupAttributions()[0],
               fn.getWorkgroupAttributions()[1], nullptr);
  gpu::ReturnOp::create(b, loc);
  annotateKernel(fn, p, t, kb);
  return fn;
}

constexpr int64_t kIm2colThreads = 256;

/// Explicit mode's first kernel: one thread per X_col element.
gpu::GPUFuncOp buildIm2colKernel(ModuleOp module, StringRef name,
                                 const GemmProblem &p, const TileConfig &t,
                                 Location loc) {
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  OpBuilder b = OpBuilder::atBlockEnd(kernels.getBody());
  auto fnType = b.getFunctionType(
      {MemRefType::get({p.inputElements}, p.elementType),
       MemRefType::get({p.im2colElements()}, p.elementType)},
      {});
  auto fn = gpu::GPUFuncOp::create(b, loc, name, fnType, TypeRange{},
                                   TypeRange{});
  SymbolTable(kernels).insert(fn);
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {static_cast<int32_t>(kIm2colThreads), 1, 1}));
  Block &body = fn.getBody().front();
  b.setInsertionPointToStart(&body);
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value index = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, block,
                            arith::ConstantIndexOp::create(b, loc, kIm2colThreads)),
      thread);
  Value inside = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, index,
      arith::ConstantIndexOp::create(b, loc, p.im2colElements()));
  auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  KernelBuilder(b, loc, p, t, /*twin=*/false)
      .emitIm2colElement(index, body.getArgument(0), body.getArgument(1));
  b.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(b, loc);
  return fn;
}

/// Host code for the GPU: operands into managed memory, one launch, the
/// result copied back. (conv-run does not use this: it launches the binary
/// through the runtime on device buffers; this makes the module runnable
/// with mlir-runner and the mgpu* runtime library.)
Value buildGpuLaunch(OpBuilder &b, Location loc, gpu::GPUFuncOp kernel,
                     gpu::GPUFuncOp im2colKernel, const GemmProblem &p,
                     const TileConfig &t, Value input, Value filter, Value bias,
                     RankedTensorType outputType) {
  auto managedCopy = [&](Value tensor) {
    Value host = flatBuffer(b, loc, tensor);
    auto type = cast<MemRefType>(host.getType());
    Value dev = gpu::AllocOp::create(b, loc, type, Type(), ValueRange{},
                                     ValueRange{}, ValueRange{},
                                     b.getUnitAttr())
                    .getMemref();
    memref::CopyOp::create(b, loc, host, dev);
    return dev;
  };
  SmallVector<Value> buffers = {managedCopy(input), managedCopy(filter)};
  if (bias)
    buffers.push_back(managedCopy(bias));
  auto flatOut = MemRefType::get({p.outputElements}, p.outputType);
  Value y = gpu::AllocOp::create(b, loc, flatOut, Type(), ValueRange{},
                                 ValueRange{}, ValueRange{}, b.getUnitAttr())
                .getMemref();
  buffers.push_back(y);
  Launch l = launchShape(p, t);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  gpu::KernelDim3 grid{arith::ConstantIndexOp::create(b, loc, l.gridX),
                       arith::ConstantIndexOp::create(b, loc, l.gridY),
                       arith::ConstantIndexOp::create(b, loc, l.gridZ)};
  gpu::KernelDim3 block{arith::ConstantIndexOp::create(b, loc, t.threads()),
                        one, one};
  SmallVector<Value> freed(buffers);
  if (im2colKernel) {
    // X_col lives on the device only.
    auto type = MemRefType::get({p.im2colElements()}, p.elementType);
    Value xcol = gpu::AllocOp::create(b, loc, type, Type(), ValueRange{},
                                      ValueRange{}, ValueRange{}, UnitAttr())
                     .getMemref();
    gpu::KernelDim3 im2colGrid{
        arith::ConstantIndexOp::create(
            b, loc, llvm::divideCeilSigned(p.im2colElements(), kIm2colThreads)),
        one, one};
    gpu::KernelDim3 im2colBlock{
        arith::ConstantIndexOp::create(b, loc, kIm2colThreads), one, one};
    gpu::LaunchFuncOp::create(b, loc, im2colKernel, im2colGrid, im2colBlock,
                              Value(), ValueRange{buffers[0], xcol});
    buffers[0] = xcol;
    freed.push_back(xcol);
  }
  gpu::LaunchFuncOp::create(b, loc, kernel, grid, block, Value(), buffers);
  auto [result, resultFlat] = allocateResult(b, loc, outputType);
  memref::CopyOp::create(b, loc, y, resultFlat);
  // Frees go through an async chain: gpu-to-llvm lowers only async deallocs.
  Type tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value token =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange{}).getAsyncToken();
  for (Value buffer : freed)
    token = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{token}, buffer)
                .getAsyncToken();
  gpu::WaitOp::create(b, loc, Type(), ValueRange{token});
  return bufferization::ToTensorOp::create(b, loc, outputType, result,
                                           b.getUnitAttr(), b.getUnitAttr());
}

/// The twin: the grid and the block body as host loops.
Value buildTwin(OpBuilder &b, Location loc, const GemmProblem &p,
                const TileConfig &t, Value input, Value filter, Value bias,
                RankedTensorType outputType) {
  Value x = flatBuffer(b, loc, input), w = flatBuffer(b, loc, filter);
  Value biasFlat = bias ? flatBuffer(b, loc, bias) : Value();
  if (p.explicitIm2col) {
    Value xcol = memref::AllocOp::create(
        b, loc, MemRefType::get({p.im2colElements()}, p.elementType));
    auto loop = scf::ForOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, 0),
        arith::ConstantIndexOp::create(b, loc, p.im2colElements()),
        arith::ConstantIndexOp::create(b, loc, 1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    KernelBuilder(b, loc, p, t, /*twin=*/true)
        .emitIm2colElement(loop.getInductionVar(), x, xcol);
    b.setInsertionPointAfter(loop);
    x = xcol;
  }
  auto [result, y] = allocateResult(b, loc, outputType);
  // Stack buffers (at most 48 KiB + the accumulators): the deallocation
  // pipeline accepts no explicit frees.
  Value smemA =
      memref::AllocaOp::create(b, loc, sharedType(p, t, t.blockM, true));
  Value smemB =
      memref::AllocaOp::create(b, loc, sharedType(p, t, t.blockN, true));
  Value acc = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpsM * t.warpsN, t.warpM(), t.warpN()},
                      b.getF32Type()));
  int64_t regElems = p.kind == MmaKind::TF32 ? 1 : 2;
  Value fragA = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpM() / 16, kWarpSize, 4, regElems}, p.elementType));
  Value fragB = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpN() / 16, kWarpSize, 4, regElems}, p.elementType));
  Launch l = launchShape(p, t);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  scf::buildLoopNest(
      b, loc, ValueRange{c(0), c(0), c(0)},
      ValueRange{c(l.gridZ), c(l.gridY), c(l.gridX)}, ValueRange{c(1), c(1), c(1)},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
        KernelBuilder kb(nb, nloc, p, t, /*twin=*/true);
        kb.setBias(biasFlat);
        kb.setTwinFragments(fragA, fragB);
        kb.emitBlock(ivs[2], ivs[1], ivs[0], x, w, y, smemA, smemB, acc);
      });
  return bufferization::ToTensorOp::create(b, loc, outputType, result,
                                           b.getUnitAttr(), b.getUnitAttr());
}

struct ConvLowerImplicitGemmPass
    : conv_lower::impl::ConvLowerImplicitGemmBase<ConvLowerImplicitGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "cuda" && target != "cpu-twin") {
      module.emitError() << "conv-lower-implicit-gemm: unknown target '"
                         << target << "' (expected cuda or cpu-twin)";
      return signalPassFailure();
    }
    bool twin = target == "cpu-twin";
    if (!chip.empty()) {
      if (std::string bad = checkPtxFeatures(chip, features); !bad.empty()) {
        module.emitError() << "conv-lower-implicit-gemm: " << bad;
        return signalPassFailure();
      }
    }
    if (im2col != "implicit" && im2col != "explicit") {
      module.emitError() << "conv-lower-implicit-gemm: im2col must be implicit "
                            "or explicit, got '"
                         << im2col << "'";
      return signalPassFailure();
    }
    SmallVector<linalg::LinalgOp> convs;
    module.walk([&](linalg::LinalgOp op) {
      if (looksLikeConvolution(op))
        convs.push_back(op);
    });
    TileOverrides overrides{blockM, blockN, warpsM, warpsN, stages};
    int counter = 0;
    for (linalg::LinalgOp op : convs) {
      std::string whyNot;
      FailureOr<ConvPlan> plan = analyzeConv(op, whyNot);
      FailureOr<GemmProblem> problem = failure();
      if (succeeded(plan))
        problem = buildProblem(*plan, whyNot);
      if (failed(problem)) {
        if (requireAll) {
          op.emitError() << "conv-lower-implicit-gemm: unsupported "
                            "convolution: "
                         << whyNot;
          return signalPassFailure();
        }
        if (emitRemarks)
          op.emitRemark() << "conv-lower-implicit-gemm: left untouched: "
                          << whyNot;
        continue;
      }
      TileConfig tiles = chooseTiles(*problem, overrides);
      if (std::string bad = checkTiles(tiles, *problem); !bad.empty()) {
        op.emitError() << "conv-lower-implicit-gemm: invalid tiles: " << bad;
        return signalPassFailure();
      }
      FusedEpilogue epilogue = matchEpilogue(op, *plan->form);
      if (epilogue.bias) {
        auto biasType = cast<RankedTensorType>(epilogue.bias.getType());
        problem->biasType = biasType.getElementType();
        problem->biasElements = biasType.getNumElements();
      }
      problem->relu = epilogue.relu;
      problem->explicitIm2col = im2col == "explicit";
      rewrite(module, *plan, *problem, epilogue, tiles, twin, counter++);
    }
  }

  void rewrite(ModuleOp module, const ConvPlan &plan, const GemmProblem &p,
               const FusedEpilogue &epilogue, const TileConfig &t, bool twin,
               int counter) {
    linalg::LinalgOp op = plan.op;
    Location loc = op.getLoc();
    // The kernel's result replaces the last fused op (same elements, in the
    // same memory order: the collapse only merges contiguous dims).
    Operation *last = epilogue.ops.empty() ? op.getOperation()
                                           : epilogue.ops.back();
    OpBuilder b(last);
    auto outputType = cast<RankedTensorType>(last->getResult(0).getType());
    Value filter = op.getDpsInputOperand(1)->get();
    Value result;
    if (twin) {
      result = buildTwin(b, loc, p, t, plan.input, filter, epilogue.bias,
                         outputType);
    } else {
      std::string name = ("conv2d_implicit_gemm_" + Twine(counter)).str();
      gpu::GPUFuncOp kernel = buildGpuKernel(module, name, p, t, loc);
      gpu::GPUFuncOp im2colKernel;
      if (p.explicitIm2col)
        im2colKernel = buildIm2colKernel(
            module, ("conv2d_im2col_" + Twine(counter)).str(), p, t, loc);
      result = buildGpuLaunch(b, loc, kernel, im2colKernel, p, t, plan.input,
                              filter, epilogue.bias, outputType);
    }
    last->getResult(0).replaceAllUsesWith(result);
    for (Operation *fused : llvm::reverse(epilogue.ops))
      fused->erase();
    op->erase();
    if (plan.absorbedPad && plan.absorbedPad->use_empty())
      plan.absorbedPad->erase();
  }
};

} // namespace
