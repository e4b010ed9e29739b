//===- ImplicitGemmModule.cpp - the kernels' gpu.module and gpu.funcs -----===//
//
// The device side around the CTA body of ImplicitGemmKernel: one gpu.module
// per module holding every kernel, each kernel a gpu.func with its shared
// buffers as workgroup attributions, and the launch it needs recorded on it
// through the attributes the conv_lower dialect declares.
//
//===----------------------------------------------------------------------===//

#include "ImplicitGemmSteps.h"
#include "HopperKernel.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

/// One gpu.module for all kernels: one binary for the runtime to load.
static constexpr StringLiteral kKernelModuleName = "conv_lower_kernels";

static constexpr StringLiteral kTapTablePrefix = "conv_lower_taps";
// PTX's constant space is 64 KiB per module; leave room for the kernel
// parameters and what else the module holds.
static constexpr int64_t kConstantBudgetBytes = 48 * 1024;

Value igemm::createTapTable(OpBuilder &b, Operation *symbolTableOp,
                            const GemmProblem &p, const TileConfig &t,
                            unsigned memorySpace, int64_t budgetBytes,
                            Location loc) {
  if (tapTableBytes(p, t) == 0)
    return nullptr;
  return createTapTable(b, symbolTableOp, buildTapTable(p, t), memorySpace,
                        budgetBytes, loc);
}

Value igemm::createTapTable(OpBuilder &b, Operation *symbolTableOp,
                            ArrayRef<int32_t> table, unsigned memorySpace,
                            int64_t budgetBytes, Location loc) {
  int64_t bytes = int64_t(table.size()) * int64_t(sizeof(int32_t));
  Region &region = symbolTableOp->getRegion(0);
  auto type = MemRefType::get(
      {int64_t(table.size() / 2), 2}, b.getI32Type(), MemRefLayoutAttrInterface(),
      memorySpace ? b.getI64IntegerAttr(memorySpace) : Attribute());
  // The budget is the memory space's (the constant space's 64 KiB).
  int64_t used = 0;
  for (auto global : region.getOps<memref::GlobalOp>())
    if (global.getSymName().starts_with(kTapTablePrefix) &&
        global.getType().getMemorySpace() == type.getMemorySpace())
      used += global.getType().getNumElements() * 4;
  if (budgetBytes > 0 && used + bytes > budgetBytes)
    return nullptr;
  auto tensorType = RankedTensorType::get(type.getShape(), b.getI32Type());
  // Built detached: SymbolTable::insert places it first in the module and
  // renames it past the tables already there.
  OpBuilder detached(b.getContext());
  auto global = memref::GlobalOp::create(
      detached, loc, kTapTablePrefix, b.getStringAttr("private"), type,
      DenseElementsAttr::get(tensorType, ArrayRef<int32_t>(table)),
      /*constant=*/true, /*alignment=*/b.getI64IntegerAttr(8));
  SymbolTable(symbolTableOp).insert(global, region.front().begin());
  return memref::GetGlobalOp::create(b, loc, type, global.getSymName());
}

static std::string gemmKernelName(int64_t index) {
  return ("conv2d_implicit_gemm_" + Twine(index)).str();
}

static std::string im2colKernelName(int64_t index) {
  return ("conv2d_im2col_" + Twine(index)).str();
}

int64_t igemm::nextKernelIndex(ModuleOp module) {
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  int64_t index = 0;
  while (kernels && (kernels.lookupSymbol(gemmKernelName(index)) ||
                     kernels.lookupSymbol(im2colKernelName(index))))
    ++index;
  return index;
}

MemRefType igemm::sharedType(const GemmProblem &p, const TileConfig &t,
                             Operand op, bool twin) {
  Attribute space;
  if (!twin)
    space = gpu::AddressSpaceAttr::get(p.elementType.getContext(),
                                       gpu::AddressSpace::Workgroup);
  SmallVector<int64_t> shape = {t.stages, t.blockN, t.blockK};
  if (op == Operand::A)
    shape = pixelRun(p, t) ? SmallVector<int64_t>{t.stages, t.blockK, t.blockM}
                           : SmallVector<int64_t>{t.stages, t.blockM, t.blockK};
  // (A pixel-run gather fills an M-major A tile.)
  return MemRefType::get(shape, p.elementType, MemRefLayoutAttrInterface{},
                         space);
}

MemRefType igemm::stagingType(const GemmProblem &p, const TileConfig &t,
                              const EpilogueStaging &s, bool twin) {
  Attribute space;
  if (!twin)
    space = gpu::AddressSpaceAttr::get(p.elementType.getContext(),
                                       gpu::AddressSpace::Workgroup);
  return MemRefType::get({t.warpsM * t.warpsN, s.rows, s.stride}, p.outputType,
                         MemRefLayoutAttrInterface{}, space);
}

/// Records the tiles and the launch on the kernel, for readers of the IR and
/// for conv-run, which launches the binary itself.
static void annotateKernel(gpu::GPUFuncOp kernel, const GemmProblem &p,
                           const TileConfig &t, const KernelBuilder &kb) {
  MLIRContext *ctx = kernel.getContext();
  Builder b(ctx);
  Launch l = launchShape(p, t);
  ConvLowerDialect::GridAttrHelper(ctx).setAttr(
      kernel, b.getDenseI64ArrayAttr({l.gridX, l.gridY, l.gridZ}));
  ConvLowerDialect::BlockAttrHelper(ctx).setAttr(
      kernel, b.getDenseI64ArrayAttr({t.threads(), 1, 1}));
  auto tilesHelper = ConvLowerDialect::TilesAttrHelper(ctx);
  if (t.directVector) {
    tilesHelper.setAttr(kernel, KernelTilesAttr::get(
                                    ctx, KernelFamily::direct_depthwise, {},
                                    {}, {}, std::nullopt, {}, {}, std::nullopt,
                                    std::nullopt, {}, t.directVector));
    return;
  }
  auto ifNonZero = [](int64_t v) -> std::optional<int64_t> {
    return v ? std::optional<int64_t>(v) : std::nullopt;
  };
  // store_vector: the staged epilogue's vector stores, when it is the one
  // built; a_pixel_run: the pixel-run gather into an M-major A tile, when it
  // is the one built.
  tilesHelper.setAttr(
      kernel,
      KernelTilesAttr::get(ctx, KernelFamily::mma_sync,
                           {t.blockM, t.blockN, t.blockK},
                           {t.warpsM, t.warpsN}, {}, t.stages,
                           b.getBoolAttr(kb.isVectorized(Operand::A)),
                           b.getBoolAttr(kb.isVectorized(Operand::B)),
                           ifNonZero(epilogueStaging(p, t).vector),
                           ifNonZero(pixelRun(p, t)), {}, std::nullopt));
}

static gpu::GPUModuleOp getOrCreateKernelModule(RewriterBase &b,
                                                ModuleOp module) {
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName))
    return existing;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  b.modifyOpInPlace(module, [&] {
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
  });
  return gpu::GPUModuleOp::create(b, module.getLoc(), kKernelModuleName);
}

/// An empty kernel `name` in the kernel module, launched with `threads`
/// threads per block; `b` is left at the start of its body.
static gpu::GPUFuncOp createKernel(RewriterBase &b, ModuleOp module,
                                   StringRef name, TypeRange args,
                                   TypeRange workgroup, int64_t threads,
                                   Location loc) {
  gpu::GPUModuleOp kernels = getOrCreateKernelModule(b, module);
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

/// The kernel's arguments: input (or X_col), filter, [bias,] output, flat;
/// the runtime manifest's order.
static SmallVector<Type> gemmKernelArguments(const GemmProblem &p) {
  auto flat = [](int64_t n, Type e) { return MemRefType::get({n}, e); };
  SmallVector<Type> args = {
      flat(p.explicitIm2col ? p.im2colElements() : p.inputElements,
           p.elementType),
      flat(p.filterElements, p.elementType)};
  if (p.biasType)
    args.push_back(flat(p.biasElements, p.biasType));
  args.push_back(flat(p.outputElements, p.outputType));
  return args;
}

gpu::GPUFuncOp igemm::buildGpuKernel(RewriterBase &b, ModuleOp module,
                                     int64_t index, const GemmProblem &p,
                                     const TileConfig &t, Location loc) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Type> args = gemmKernelArguments(p);
  // The direct depthwise kernel keeps everything in registers; the others
  // have one shared buffer, the rings and the staged epilogue's tiles being
  // views of it.
  SmallVector<Type> workgroup;
  if (!t.directVector)
    workgroup = {MemRefType::get(
        {sharedBufferBytes(p, t)}, b.getI8Type(), MemRefLayoutAttrInterface{},
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup))};
  gpu::GPUFuncOp fn = createKernel(b, module, gemmKernelName(index), args,
                                   workgroup, t.threads(), loc);
  // cp.async and ldmatrix need 16-byte aligned shared addresses, and the
  // swizzle assumes rows start on 128-byte bank lines (the lowering's default
  // is the element's own alignment).
  for (unsigned i = 0; i < workgroup.size(); ++i)
    fn.setWorkgroupAttributionAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                                   b.getI64IntegerAttr(128));
  Block &body = fn.getBody().front();
  KernelBuilder kb(b, loc, p, t, /*twin=*/false);
  // The register budget: an 8-warp kernel gathering A element by element
  // (register-staged, latency-bound) gets two CTAs per SM, at most 128
  // registers a thread. They fit with no spill (tf32 NCHW: 80-128); the
  // unrolled 8-warp kernels (zero-point sums, pixel runs) are left to ptxas:
  // capped, the i8 ones spilled 52-64 bytes.
  if (t.threads() >= 256 && !t.directVector && !kb.unrollsRing())
    fn->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(2));
  Value bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value group = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  if (p.biasType)
    kb.setBias(body.getArgument(2));
  kb.setTapTable(createTapTable(b, fn->getParentOp(), p, t, /*memorySpace=*/4,
                                kConstantBudgetBytes, loc));
  Value smemA, smemB;
  if (!t.directVector) {
    Value buffer = fn.getWorkgroupAttributions()[0];
    auto view = [&](int64_t offset, MemRefType type) -> Value {
      return memref::ViewOp::create(
          b, loc, type, buffer, arith::ConstantIndexOp::create(b, loc, offset),
          ValueRange{});
    };
    MemRefType typeA = sharedType(p, t, Operand::A, false);
    smemA = view(0, typeA);
    smemB = view(typeA.getNumElements() * p.elementBytes(),
                 sharedType(p, t, Operand::B, false));
    if (EpilogueStaging staged = epilogueStaging(p, t); staged.vector)
      kb.setStaging(view(0, stagingType(p, t, staged, false)), staged);
  }
  kb.emitBlock(bm, bn, group, body.getArgument(0), body.getArgument(1),
               body.getArgument(args.size() - 1), smemA, smemB, nullptr);
  gpu::ReturnOp::create(b, loc);
  annotateKernel(fn, p, t, kb);
  return fn;
}

gpu::GPUFuncOp igemm::buildIm2colKernel(RewriterBase &b, ModuleOp module,
                                        int64_t index, const GemmProblem &p,
                                        const TileConfig &t, Location loc) {
  OpBuilder::InsertionGuard guard(b);
  gpu::GPUFuncOp fn = createKernel(
      b, module, im2colKernelName(index),
      {MemRefType::get({p.inputElements}, p.elementType),
       MemRefType::get({p.im2colElements()}, p.elementType)},
      {}, kIm2colThreads, loc);
  Block &body = fn.getBody().front();
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value element = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, block,
                            arith::ConstantIndexOp::create(b, loc, kIm2colThreads)),
      thread);
  Value inside = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, element,
      arith::ConstantIndexOp::create(b, loc, p.im2colElements()));
  auto ifOp = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  KernelBuilder(b, loc, p, t, /*twin=*/false)
      .emitIm2colElement(element, body.getArgument(0), body.getArgument(1));
  b.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(b, loc);
  return fn;
}

//===----------------------------------------------------------------------===//
// The sm_90a family's kernel
//===----------------------------------------------------------------------===//

/// The spec as the dialect's tensor map attribute (convrt's field names).
static TensorMapAttr tensorMapAttr(Builder &b, const convrt::TensorMapSpec &s) {
  auto ints = [](auto values) {
    return SmallVector<int64_t>(values.begin(), values.end());
  };
  bool im2col = s.mode == convrt::TensorMapMode::Im2col;
  StringRef dtype = s.dtype == convrt::DType::BF16  ? "bf16"
                    : s.dtype == convrt::DType::F32 ? "f32"
                                                    : "f16";
  // The family only builds 128-byte swizzled maps.
  return TensorMapAttr::get(
      b.getContext(), s.name, s.argument,
      im2col ? TensorMapMode::im2col : TensorMapMode::tiled, dtype,
      ints(s.dims), ints(s.stridesBytes), ints(s.box), ints(s.elementStrides),
      im2col ? ints(s.lowerCorner) : SmallVector<int64_t>(),
      im2col ? ints(s.upperCorner) : SmallVector<int64_t>(), "128B");
}

gpu::GPUFuncOp igemm::buildHopperGpuKernel(RewriterBase &b, ModuleOp module,
                                           int64_t index, const GemmProblem &p,
                                           const HopperTiles &t,
                                           Location loc) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Type> args = gemmKernelArguments(p);
  // The tensor maps, last: generic pointers to 128-byte CUtensorMaps
  // (by value, as __grid_constant__ parameters, once
  // conv-lower-grid-constant-tensor-maps has marked them). A gathering
  // producer has the filter's only.
  SmallVector<convrt::TensorMapSpec> maps = hopperTensorMaps(p, t);
  auto pointer = LLVM::LLVMPointerType::get(b.getContext());
  args.append(maps.size(), pointer);
  gpu::GPUFuncOp fn = createKernel(b, module, gemmKernelName(index), args,
                                   /*workgroup=*/{}, t.threads(), loc);
  Block &body = fn.getBody().front();
  HopperOperands ops;
  ops.x = body.getArgument(0);
  ops.w = body.getArgument(1);
  if (p.biasType)
    ops.bias = body.getArgument(2);
  ops.y = body.getArgument(args.size() - maps.size() - 1);
  if (!t.gatherA)
    ops.imageMap = body.getArgument(args.size() - 2);
  ops.filterMap = body.getArgument(args.size() - 1);
  // The gather's tap table: the 128 producer threads read the same entry,
  // in the constant space a uniform load (ULDC, off the vector pipe), else
  // in global memory where the budget has no room (one entry per k: C =
  // 1024, 3x3 takes 72 KiB).
  if (t.gatherA) {
    std::vector<int32_t> table = hopperTapTable(p, t);
    ops.tapTable = createTapTable(b, fn->getParentOp(), table,
                                  /*memorySpace=*/4, kConstantBudgetBytes, loc);
    if (!ops.tapTable)
      ops.tapTable = createTapTable(b, fn->getParentOp(), table,
                                    /*memorySpace=*/1, /*budgetBytes=*/0, loc);
  }
  Value bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value group = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  HopperKernelBuilder(b, loc, p, t, /*twin=*/false)
      .emitBlock(bm, bn, group, ops);
  gpu::ReturnOp::create(b, loc);

  MLIRContext *ctx = fn.getContext();
  Launch l = hopperLaunchShape(p, t);
  ConvLowerDialect::GridAttrHelper(ctx).setAttr(
      fn, b.getDenseI64ArrayAttr({l.gridX, l.gridY, l.gridZ}));
  ConvLowerDialect::BlockAttrHelper(ctx).setAttr(
      fn, b.getDenseI64ArrayAttr({t.threads(), 1, 1}));
  int64_t storeVector = hopperStaging(p, t).vector;
  ConvLowerDialect::TilesAttrHelper(ctx).setAttr(
      fn, KernelTilesAttr::get(
              ctx, KernelFamily::sm90a_tma_wgmma,
              {t.blockM, t.blockN, t.blockK}, {}, {1, t.consumers}, t.stages,
              {}, {}, storeVector ? std::optional<int64_t>(storeVector)
                                  : std::nullopt,
              std::nullopt, t.gatherA ? b.getBoolAttr(true) : BoolAttr(),
              std::nullopt));
  ConvLowerDialect::SharedMemoryAttrHelper(ctx).setAttr(
      fn, b.getI64IntegerAttr(t.sharedBytes(p.elementBytes())));
  SmallVector<Attribute> mapAttrs;
  for (const convrt::TensorMapSpec &map : maps)
    mapAttrs.push_back(tensorMapAttr(b, map));
  ConvLowerDialect::TensorMapsAttrHelper(ctx).setAttr(
      fn, b.getArrayAttr(mapAttrs));
  return fn;
}
