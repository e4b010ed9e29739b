//===- Module.cpp - the kernels' gpu.module, names and shared buffers ----===//
//
// The device side every family shares: one gpu.module per module holding
// every kernel, each kernel an empty gpu.func the family fills, its shared
// buffers' types, and the tap tables as constant globals.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/Core.h"

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
  auto type = MemRefType::get({int64_t(table.size() / 2), 2}, b.getI32Type(),
                              MemRefLayoutAttrInterface(),
                              memorySpace ? b.getI64IntegerAttr(memorySpace)
                                          : Attribute());
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

std::string igemm::gemmKernelName(int64_t index) {
  return ("conv2d_implicit_gemm_" + Twine(index)).str();
}

std::string igemm::im2colKernelName(int64_t index) {
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

Attribute igemm::workgroupMemory(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

MemRefType igemm::sharedType(const GemmProblem &p, const TileConfig &t,
                             Operand op, Attribute memorySpace) {
  SmallVector<int64_t> shape = {t.stages, t.blockN, t.blockK};
  if (op == Operand::A)
    shape = pixelRun(p, t) ? SmallVector<int64_t>{t.stages, t.blockK, t.blockM}
                           : SmallVector<int64_t>{t.stages, t.blockM, t.blockK};
  // (A pixel-run gather fills an M-major A tile.)
  return MemRefType::get(shape, p.elementType, MemRefLayoutAttrInterface{},
                         memorySpace);
}

MemRefType igemm::stagingType(const GemmProblem &p, const TileConfig &t,
                              const EpilogueStaging &s, Attribute memorySpace) {
  return MemRefType::get({t.warpsM * t.warpsN, s.rows, s.stride}, p.outputType,
                         MemRefLayoutAttrInterface{}, memorySpace);
}

/// Records the tiles and the launch on the kernel, for readers of the IR and
/// for conv-run, which launches the binary itself.
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
gpu::GPUFuncOp igemm::createKernel(RewriterBase &b, ModuleOp module,
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

/// The kernel's arguments: input (or X_col), filter, [bias,] [residual,]
/// output, flat; the runtime manifest's order.
SmallVector<Type> igemm::gemmKernelArguments(const GemmProblem &p) {
  auto flat = [](int64_t n, Type e) { return MemRefType::get({n}, e); };
  SmallVector<Type> args = {
      flat(p.explicitIm2col ? p.im2colElements() : p.inputElements,
           p.elementType),
      flat(p.filterElements, p.elementType)};
  if (p.biasType)
    args.push_back(flat(p.biasElements, p.biasType));
  if (p.residual)
    args.push_back(flat(p.outputElements, p.outputType));
  args.push_back(flat(p.outputElements, p.outputType));
  return args;
}

void igemm::recordLaunch(gpu::GPUFuncOp kernel, const Launch &launch,
                         int64_t threads) {
  MLIRContext *ctx = kernel.getContext();
  Builder b(ctx);
  ConvLowerDialect::GridAttrHelper(ctx).setAttr(
      kernel,
      b.getDenseI64ArrayAttr({launch.gridX, launch.gridY, launch.gridZ}));
  ConvLowerDialect::BlockAttrHelper(ctx).setAttr(
      kernel, b.getDenseI64ArrayAttr({threads, 1, 1}));
}
