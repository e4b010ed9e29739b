//===- Sm90Module.cpp - the sm_90a family's gpu.func ---------------------===//
//
// The sm_90a kernel as a gpu.func in the kernel module, its launch,
// dynamic shared memory and tensor maps recorded on it.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Sm90/Sm90.h"
#include "Transforms/GPU/Sm90/Sm90Kernel.h"

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

gpu::GPUFuncOp igemm::buildSm90GpuKernel(RewriterBase &b, ModuleOp module,
                                           int64_t index, const GemmProblem &p,
                                           const Sm90Tiles &t,
                                           Location loc) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<Type> args = gemmKernelArguments(p);
  // The tensor maps, last: generic pointers to 128-byte CUtensorMaps
  // (by value, as __grid_constant__ parameters, once
  // conv-lower-grid-constant-tensor-maps has marked them). A gathering
  // producer has the filter's only.
  SmallVector<convrt::TensorMapSpec> maps = sm90TensorMaps(p, t);
  auto pointer = LLVM::LLVMPointerType::get(b.getContext());
  args.append(maps.size(), pointer);
  gpu::GPUFuncOp fn = createKernel(b, module, gemmKernelName(index), args,
                                   /*workgroup=*/{}, t.threads(), loc);
  Block &body = fn.getBody().front();
  Sm90Operands ops;
  ops.x = body.getArgument(0);
  ops.w = body.getArgument(1);
  if (p.biasType)
    ops.bias = body.getArgument(biasArgument(p));
  if (p.residual)
    ops.residual = body.getArgument(residualArgument(p));
  ops.y = body.getArgument(args.size() - maps.size() - 1);
  if (!t.gatherA)
    ops.imageMap = body.getArgument(args.size() - 2);
  ops.filterMap = body.getArgument(args.size() - 1);
  // The gather's tap table: the 128 producer threads read the same entry,
  // in the constant space a uniform load (ULDC, off the vector pipe), else
  // in global memory where the budget has no room (one entry per k: C =
  // 1024, 3x3 takes 72 KiB).
  if (t.gatherA) {
    std::vector<int32_t> table = sm90TapTable(p, t);
    ops.tapTable = createTapTable(b, fn->getParentOp(), table,
                                  /*memorySpace=*/4, kConstantBudgetBytes, loc);
    if (!ops.tapTable)
      ops.tapTable = createTapTable(b, fn->getParentOp(), table,
                                    /*memorySpace=*/1, /*budgetBytes=*/0, loc);
  }
  Value bm = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value bn = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value group = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  Sm90Gpu gpu;
  Sm90KernelBuilder(b, loc, p, t, gpu)
      .emitBlock(bm, bn, group, ops);
  gpu::ReturnOp::create(b, loc);

  MLIRContext *ctx = fn.getContext();
  recordLaunch(fn, sm90LaunchShape(p, t), t.threads());
  int64_t storeVector = sm90Staging(p, t).vector;
  ConvLowerDialect::TilesAttrHelper(ctx).setAttr(
      fn, KernelTilesAttr::get(
              ctx, KernelFamily::sm90a_tma_wgmma,
              {t.blockM, t.blockN, t.blockK}, /*warps=*/{},
              /*warpgroups=*/{1, t.consumers}, t.stages, /*a_vectorized=*/{},
              /*b_vectorized=*/{},
              storeVector ? std::optional<int64_t>(storeVector) : std::nullopt,
              /*a_pixel_run=*/std::nullopt,
              t.gatherA ? b.getBoolAttr(true) : BoolAttr(),
              /*channels_per_thread=*/std::nullopt));
  ConvLowerDialect::SharedMemoryAttrHelper(ctx).setAttr(
      fn, b.getI64IntegerAttr(t.sharedBytes(p.elementBytes())));
  SmallVector<Attribute> mapAttrs;
  for (const convrt::TensorMapSpec &map : maps)
    mapAttrs.push_back(tensorMapAttr(b, map));
  ConvLowerDialect::TensorMapsAttrHelper(ctx).setAttr(
      fn, b.getArrayAttr(mapAttrs));
  return fn;
}
