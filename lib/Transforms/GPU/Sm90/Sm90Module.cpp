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

/// The spec as the dialect's tensor_maps entry (convrt's JSON field names).
static DictionaryAttr tensorMapAttr(Builder &b, const convrt::TensorMapSpec &s) {
  auto ints = [&](auto values) {
    SmallVector<int64_t> v(values.begin(), values.end());
    return b.getDenseI64ArrayAttr(v);
  };
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(s.name)),
      b.getNamedAttr("argument", b.getStringAttr(s.argument)),
      b.getNamedAttr("mode", b.getStringAttr(s.mode == convrt::TensorMapMode::Im2col
                                                 ? "im2col"
                                                 : "tiled")),
      b.getNamedAttr("dtype", b.getStringAttr(
                                  s.dtype == convrt::DType::BF16   ? "bf16"
                                  : s.dtype == convrt::DType::F32 ? "f32"
                                                                  : "f16")),
      b.getNamedAttr("dims", ints(s.dims)),
      b.getNamedAttr("strides_bytes", ints(s.stridesBytes)),
      b.getNamedAttr("box", ints(s.box)),
      b.getNamedAttr("element_strides", ints(s.elementStrides)),
  };
  if (s.mode == convrt::TensorMapMode::Im2col) {
    fields.push_back(b.getNamedAttr("lower_corner", ints(s.lowerCorner)));
    fields.push_back(b.getNamedAttr("upper_corner", ints(s.upperCorner)));
  }
  // The family only builds 128-byte swizzled maps.
  fields.push_back(b.getNamedAttr("swizzle", b.getStringAttr("128B")));
  return b.getDictionaryAttr(fields);
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
  Sm90KernelBuilder(b, loc, p, t, /*twin=*/false)
      .emitBlock(bm, bn, group, ops);
  gpu::ReturnOp::create(b, loc);

  MLIRContext *ctx = fn.getContext();
  Launch l = sm90LaunchShape(p, t);
  ConvLowerDialect::GridAttrHelper(ctx).setAttr(
      fn, b.getDenseI64ArrayAttr({l.gridX, l.gridY, l.gridZ}));
  ConvLowerDialect::BlockAttrHelper(ctx).setAttr(
      fn, b.getDenseI64ArrayAttr({t.threads(), 1, 1}));
  SmallVector<NamedAttribute> tiles = {
      b.getNamedAttr("family", b.getStringAttr(
                               stringifyKernelFamily(KernelFamily::Sm90TmaWgmma))),
      b.getNamedAttr("block",
                     b.getDenseI64ArrayAttr({t.blockM, t.blockN, t.blockK})),
      b.getNamedAttr("warpgroups", b.getDenseI64ArrayAttr({1, t.consumers})),
      b.getNamedAttr("stages", b.getI64IntegerAttr(t.stages)),
  };
  if (int64_t v = sm90Staging(p, t).vector)
    tiles.push_back(b.getNamedAttr("store_vector", b.getI64IntegerAttr(v)));
  if (t.gatherA)
    tiles.push_back(b.getNamedAttr("a_gathered", b.getUnitAttr()));
  ConvLowerDialect::TilesAttrHelper(ctx).setAttr(fn,
                                                 b.getDictionaryAttr(tiles));
  ConvLowerDialect::SharedMemoryAttrHelper(ctx).setAttr(
      fn, b.getI64IntegerAttr(t.sharedBytes(p.elementBytes())));
  SmallVector<Attribute> mapAttrs;
  for (const convrt::TensorMapSpec &map : maps)
    mapAttrs.push_back(tensorMapAttr(b, map));
  ConvLowerDialect::TensorMapsAttrHelper(ctx).setAttr(
      fn, b.getArrayAttr(mapAttrs));
  return fn;
}
