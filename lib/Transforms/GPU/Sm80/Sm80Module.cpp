//===- Sm80Module.cpp - the mma.sync family's gpu.funcs -------------------===//
//
// The mma.sync kernel (and explicit mode's im2col kernel) as gpu.funcs in
// the kernel module, with the launch recorded on them through the
// attributes the conv_lower dialect declares.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Sm80/Sm80.h"
#include "Transforms/GPU/Sm80/Sm80Kernel.h"

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


/// Records the tiles and the launch on the kernel, for readers of the IR and
/// for conv-run, which launches the binary itself.
static void annotateKernel(gpu::GPUFuncOp kernel, const GemmProblem &p,
                           const TileConfig &t, const Sm80KernelBuilder &kb) {
  MLIRContext *ctx = kernel.getContext();
  Builder b(ctx);
  recordLaunch(kernel, launchShape(p, t), t.threads());
  auto ifNonZero = [](int64_t v) -> std::optional<int64_t> {
    return v ? std::optional<int64_t>(v) : std::nullopt;
  };
  // store_vector: the staged epilogue's vector stores, when it is the one
  // built; a_pixel_run: the pixel-run gather into an M-major A tile, when it
  // is the one built.
  ConvLowerDialect::TilesAttrHelper(ctx).setAttr(
      kernel,
      KernelTilesAttr::get(ctx, KernelFamily::mma_sync,
                           {t.blockM, t.blockN, t.blockK}, {t.warpsM, t.warpsN},
                           /*warpgroups=*/{}, t.stages,
                           b.getBoolAttr(kb.isVectorized(Operand::A)),
                           b.getBoolAttr(kb.isVectorized(Operand::B)),
                           ifNonZero(epilogueStaging(p, t).vector),
                           ifNonZero(pixelRun(p, t)), /*a_gathered=*/{},
                           /*channels_per_thread=*/std::nullopt));
}


gpu::GPUFuncOp igemm::buildSm80GpuKernel(RewriterBase &b, ModuleOp module,
                                     int64_t index, const GemmProblem &p,
                                     const TileConfig &t, Location loc) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Type> args = gemmKernelArguments(p);
  assert(!t.directVector && "the direct depthwise kernel is Depthwise's");
  // One shared buffer, the rings and the staged epilogue's tiles being views
  // of it.
  SmallVector<Type> workgroup = {MemRefType::get(
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
  Sm80Gpu gpu;
  Sm80KernelBuilder kb(b, loc, p, t, gpu);
  // The register budget: an 8-warp kernel gathering A element by element
  // (register-staged, latency-bound) gets two CTAs per SM, at most 128
  // registers a thread. They fit with no spill (tf32 NCHW: 80-128); the
  // unrolled 8-warp kernels (zero-point sums, pixel runs) are left to ptxas:
  // capped, the i8 ones spilled 52-64 bytes.
  if (t.threads() >= 256 && !kb.unrollsRing())
    fn->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(2));
  Value bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value group = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  if (p.biasType)
    kb.setBias(body.getArgument(biasArgument(p)));
  if (p.residual)
    kb.setResidual(body.getArgument(residualArgument(p)));
  kb.setTapTable(createTapTable(b, fn->getParentOp(), p, t, /*memorySpace=*/4,
                                kConstantBudgetBytes, loc));
  Value smemA, smemB;
  {
    Value buffer = fn.getWorkgroupAttributions()[0];
    auto view = [&](int64_t offset, MemRefType type) -> Value {
      return memref::ViewOp::create(
          b, loc, type, buffer, arith::ConstantIndexOp::create(b, loc, offset),
          ValueRange{});
    };
    Attribute shared = workgroupMemory(b.getContext());
    MemRefType typeA = sharedType(p, t, Operand::A, shared);
    smemA = view(0, typeA);
    smemB = view(typeA.getNumElements() * p.elementBytes(),
                 sharedType(p, t, Operand::B, shared));
    if (EpilogueStaging staged = epilogueStaging(p, t); staged.vector)
      kb.setStaging(view(0, stagingType(p, t, staged, shared)), staged);
  }
  kb.emitBlock(bm, bn, group, body.getArgument(0), body.getArgument(1),
               body.getArgument(args.size() - 1), smemA, smemB);
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
  Sm80Gpu gpu;
  Sm80KernelBuilder(b, loc, p, t, gpu)
      .emitIm2colElement(element, body.getArgument(0), body.getArgument(1));
  b.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(b, loc);
  return fn;
}
