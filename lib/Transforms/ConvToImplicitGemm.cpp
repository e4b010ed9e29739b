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
// copy, ldmatrix and mma.sync lane-by-lane emulations of the PTX ISA's
// definitions fed by the GPU code's own addresses. It is how the kernel's
// indexing is tested without a GPU. (The body itself: ImplicitGemmKernel.)
//
//===----------------------------------------------------------------------===//

#include "ConvAnalysis.h"
#include "ImplicitGemmKernel.h"
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
using namespace mlir::conv_lower::igemm;

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

constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;
// CUDA's grid limits (x: pixel tiles; y: filter tiles; z: groups).
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;
constexpr StringLiteral kKernelModuleName = "conv_lower_kernels";


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
      plan.inputIsImage ? llvm::to_vector(inputType.getShape())
                        : collapseShape(inputType.getShape(), form.inputToImage);
  SmallVector<int64_t> xStrides = rowMajorStrides(image);
  SmallVector<int64_t> outImage =
      collapseShape(outputType.getShape(), form.outputToImage);
  SmallVector<int64_t> yStrides = rowMajorStrides(outImage);
  p.batch = image[0];
  p.groups = plan.groups;
  if (p.groups > kMaxGridYZ)
    return fail("more than " + Twine(kMaxGridYZ) +
                " groups (one grid slice each)");
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
  else if (llvm::divideCeilSigned(p.fg, t.blockN) > kMaxGridYZ)
    os << "the grid would need more than " << kMaxGridYZ
       << " blocks along the filters";
  else if (llvm::divideCeilSigned(p.m(), t.blockM) > kMaxGridX)
    os << "the grid would need more than " << kMaxGridX
       << " blocks along the output pixels";
  return why;
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

/// The 1-D view of a static identity-layout memref.
Value flatten(OpBuilder &b, Location loc, Value memref) {
  int64_t rank = cast<MemRefType>(memref.getType()).getRank();
  ReassociationIndices all = llvm::to_vector(llvm::seq<int64_t>(rank));
  return memref::CollapseShapeOp::create(b, loc, memref,
                                         ArrayRef<ReassociationIndices>{all});
}

/// A flat static 1-D view of a tensor's buffer.
Value flatBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  return flatten(b, loc,
                 bufferization::ToBufferOp::create(b, loc, memrefType, tensor,
                                                   b.getUnitAttr()));
}

/// A new host buffer for the result, and its flat 1-D view.
std::pair<Value, Value> allocateResult(OpBuilder &b, Location loc,
                                       RankedTensorType type) {
  Value result = memref::AllocOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()));
  return {result, flatten(b, loc, result)};
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

/// An empty kernel `name` in the kernel module, launched with `threads`
/// threads per block; `b` is left at the start of its body.
gpu::GPUFuncOp createKernel(OpBuilder &b, ModuleOp module, StringRef name,
                            TypeRange args, TypeRange workgroup,
                            int64_t threads, Location loc) {
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(module);
  b.setInsertionPointToEnd(kernels.getBody());
  auto fn = gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(args, {}),
                                   workgroup, TypeRange{});
  SymbolTable(kernels).insert(fn);
  fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  fn.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  b.setInsertionPointToStart(&fn.getBody().front());
  return fn;
}

/// Emits the kernel for `p` into the kernel module and returns it.
gpu::GPUFuncOp buildGpuKernel(ModuleOp module, StringRef name,
                              const GemmProblem &p, const TileConfig &t,
                              Location loc) {
  OpBuilder b(module.getContext());
  auto flat = [&](int64_t n, Type e) { return MemRefType::get({n}, e); };
  // Arguments: input, filter, [bias,] output (the runtime manifest's order).
  SmallVector<Type> args = {
      flat(p.explicitIm2col ? p.im2colElements() : p.inputElements,
           p.elementType),
      flat(p.filterElements, p.elementType)};
  if (p.biasType)
    args.push_back(flat(p.biasElements, p.biasType));
  args.push_back(flat(p.outputElements, p.outputType));
  gpu::GPUFuncOp fn = createKernel(
      b, module, name, args,
      {sharedType(p, t, t.blockM, false), sharedType(p, t, t.blockN, false)},
      t.threads(), loc);
  // cp.async and ldmatrix need 16-byte aligned shared addresses, and the
  // swizzle assumes rows start on 128-byte bank lines (the lowering's default
  // is the element's own alignment).
  for (unsigned i = 0; i < 2; ++i)
    fn.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                   b.getI64IntegerAttr(128));
  Block &body = fn.getBody().front();
  KernelBuilder kb(b, loc, p, t, /*twin=*/false);
  Value bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value group = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  if (p.biasType)
    kb.setBias(body.getArgument(2));
  kb.emitBlock(bm, bn, group, body.getArgument(0), body.getArgument(1),
               body.getArgument(args.size() - 1),
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
  OpBuilder b(module.getContext());
  gpu::GPUFuncOp fn = createKernel(
      b, module, name,
      {MemRefType::get({p.inputElements}, p.elementType),
       MemRefType::get({p.im2colElements()}, p.elementType)},
      {}, kIm2colThreads, loc);
  Block &body = fn.getBody().front();
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
  int64_t regElems = p.registerElements();
  Value fragA = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpM() / 16, kThreadsPerWarp, 4, regElems}, p.elementType));
  Value fragB = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpN() / 16, kThreadsPerWarp, 4, regElems}, p.elementType));
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
    if (plan.absorbedExpand && plan.absorbedExpand->use_empty())
      plan.absorbedExpand->erase();
    if (plan.absorbedPad && plan.absorbedPad->use_empty())
      plan.absorbedPad->erase();
  }
};

} // namespace
