//===- Sm90Launch.cpp - the sm_90a family's host side ---------------------===//
//
// target=cuda: the tensor maps encoded on the host and the launch with the
// dynamic shared memory the kernel records.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Sm90/Sm90.h"
#include "Transforms/GPU/Sm90/Sm90Kernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/IR/SymbolTable.h"

#include <tuple>

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;
//===----------------------------------------------------------------------===//
// The sm_90a family
//===----------------------------------------------------------------------===//

namespace {

/// A memref's aligned pointer as an !llvm.ptr (for runtime calls).
Value pointerOf(OpBuilder &b, Location loc, Value memref) {
  Value address = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref));
  return LLVM::IntToPtrOp::create(b, loc,
                                  LLVM::LLVMPointerType::get(b.getContext()),
                                  address);
}

/// A device copy of the map `spec` describes for `buffer`, encoded on the
/// host by the mgpu runtime.
Value encodeTensorMap(OpBuilder &b, Location loc, ModuleOp module,
                      const convrt::TensorMapSpec &spec, Value buffer) {
  constexpr StringLiteral kEncode = "mgpuConvLowerEncodeTensorMap";
  auto pointer = LLVM::LLVMPointerType::get(b.getContext());
  if (!module.lookupSymbol(kEncode)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto decl = func::FuncOp::create(
        b, loc, kEncode, b.getFunctionType({pointer, pointer}, {pointer}));
    decl.setPrivate();
  }
  std::vector<int64_t> record = convrt::tensorMapRecord(spec);
  auto type = MemRefType::get({int64_t(record.size())}, b.getI64Type());
  OpBuilder detached(b.getContext());
  auto global = memref::GlobalOp::create(
      detached, loc, "conv_lower_tensor_map", b.getStringAttr("private"), type,
      DenseElementsAttr::get(
          RankedTensorType::get(type.getShape(), b.getI64Type()),
          ArrayRef<int64_t>(record)),
      /*constant=*/true, /*alignment=*/b.getI64IntegerAttr(8));
  SymbolTable(module).insert(global, module.getBody()->begin());
  Value recordBuffer =
      memref::GetGlobalOp::create(b, loc, type, global.getSymName());
  return func::CallOp::create(b, loc, kEncode, TypeRange{pointer},
                              ValueRange{pointerOf(b, loc, buffer),
                                         pointerOf(b, loc, recordBuffer)})
      .getResult(0);
}

/// mgpuMemFree(map, no stream): the allocation mgpuConvLowerEncodeTensorMap
/// made.
void freeTensorMap(OpBuilder &b, Location loc, ModuleOp module, Value map) {
  constexpr StringLiteral kFree = "mgpuMemFree";
  auto pointer = LLVM::LLVMPointerType::get(b.getContext());
  if (!module.lookupSymbol(kFree)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(b, loc, kFree,
                         b.getFunctionType({pointer, pointer}, {}))
        .setPrivate();
  }
  func::CallOp::create(b, loc, kFree, TypeRange{},
                       ValueRange{map, LLVM::ZeroOp::create(b, loc, pointer)});
}

} // namespace

GpuLaunch igemm::buildSm90GpuLaunch(OpBuilder &b, Location loc,
                                      gpu::GPUFuncOp kernel,
                                      const GemmProblem &p,
                                      const Sm90Tiles &t, Value input,
                                      Value filter,
                                      const FusedEpilogue &epilogue,
                                      RankedTensorType outputType) {
  GpuLaunch result;
  SmallVector<Value> buffers =
      managedOperands(b, loc, p, input, filter, epilogue);
  auto module = kernel->getParentOfType<ModuleOp>();
  SmallVector<Value> operands(buffers);
  SmallVector<convrt::TensorMapSpec> maps = sm90TensorMaps(p, t);
  for (const convrt::TensorMapSpec &map : maps)
    operands.push_back(encodeTensorMap(
        b, loc, module, map, map.argument == "input" ? buffers[0] : buffers[1]));
  auto [grid, block] =
      launchDims(b, loc, sm90LaunchShape(p, t), t.threads());
  Value shared = arith::ConstantIntOp::create(
      b, loc, t.sharedBytes(p.elementBytes()), 32);
  result.launch = gpu::LaunchFuncOp::create(b, loc, kernel, grid, block,
                                            shared, operands);
  // The launch has completed when it returns (a synchronous launch_func):
  // the maps' device copies go back now (mgpuMemFree, as the runtime asks).
  for (Value map : ArrayRef<Value>(operands).take_back(maps.size()))
    freeTensorMap(b, loc, module, map);
  result.result =
      copyBackAndFree(b, loc, buffers.back(), buffers, outputType);
  return result;
}
