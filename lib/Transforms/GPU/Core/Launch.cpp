//===- Launch.cpp - host side of the implicit-GEMM rewrite ------------------===//
//
// target=cuda: the operands into managed memory, one gpu.launch_func (two in
// explicit mode), the result copied back and the device buffers freed. This
// makes the module runnable by mlir-runner with an mgpu* runtime library;
// conv-run does not use it (it launches the binary through runtime/ on device
// buffers, from the kernel's conv_lower.grid / block attributes).
// The families' twins (their grid as host loops) are theirs: ../Sm80,
// ../Sm90, ../Depthwise.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/Core.h"

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

namespace mlir::conv_lower::igemm {

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

/// The host buffer as a tensor of `type` again.
Value toTensor(OpBuilder &b, Location loc, RankedTensorType type,
               Value buffer) {
  return bufferization::ToTensorOp::create(b, loc, type, buffer,
                                           b.getUnitAttr(), b.getUnitAttr());
}

/// A device buffer; `hostShared` makes it managed memory, reachable from both
/// sides (copies in and out are then plain memref.copy).
Value deviceAlloc(OpBuilder &b, Location loc, MemRefType type,
                  bool hostShared) {
  return gpu::AllocOp::create(b, loc, type, Type(), ValueRange{}, ValueRange{},
                              ValueRange{},
                              hostShared ? b.getUnitAttr() : UnitAttr())
      .getMemref();
}

/// A managed copy of a tensor operand, flat.
Value managedCopy(OpBuilder &b, Location loc, Value tensor) {
  Value host = flatBuffer(b, loc, tensor);
  Value dev = deviceAlloc(b, loc, cast<MemRefType>(host.getType()),
                          /*hostShared=*/true);
  memref::CopyOp::create(b, loc, host, dev);
  return dev;
}

/// Explicit mode's first launch: X_col, on the device only, from `input`.
std::pair<Value, gpu::LaunchFuncOp>
launchIm2col(OpBuilder &b, Location loc, gpu::GPUFuncOp im2colKernel,
             const GemmProblem &p, Value input, Value one) {
  auto type = MemRefType::get({p.im2colElements()}, p.elementType);
  Value xcol = deviceAlloc(b, loc, type, /*hostShared=*/false);
  gpu::KernelDim3 grid{
      arith::ConstantIndexOp::create(
          b, loc, llvm::divideCeilSigned(p.im2colElements(), kIm2colThreads)),
      one, one};
  gpu::KernelDim3 block{arith::ConstantIndexOp::create(b, loc, kIm2colThreads),
                        one, one};
  auto launch = gpu::LaunchFuncOp::create(b, loc, im2colKernel, grid, block,
                                          Value(), ValueRange{input, xcol});
  return {xcol, launch};
}

/// Frees through an async chain: gpu-to-llvm lowers only async deallocs.
void freeAll(OpBuilder &b, Location loc, ValueRange buffers) {
  Type tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value token =
      gpu::WaitOp::create(b, loc, tokenType, ValueRange{}).getAsyncToken();
  for (Value buffer : buffers)
    token = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{token}, buffer)
                .getAsyncToken();
  gpu::WaitOp::create(b, loc, Type(), ValueRange{token});
}

/// A launch's grid and (1-D) block as index constants.
std::pair<gpu::KernelDim3, gpu::KernelDim3>
launchDims(OpBuilder &b, Location loc, const Launch &l, int64_t threads) {
  auto c = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value one = c(1);
  return {gpu::KernelDim3{c(l.gridX), c(l.gridY), c(l.gridZ)},
          gpu::KernelDim3{c(threads), one, one}};
}

/// The kernel's buffer arguments in the manifest's order: managed copies of
/// input, filter [, bias] [, residual], then the managed output (last).
SmallVector<Value> managedOperands(OpBuilder &b, Location loc,
                                   const GemmProblem &p, Value input,
                                   Value filter, const FusedEpilogue &epilogue) {
  SmallVector<Value> buffers = {managedCopy(b, loc, input),
                                managedCopy(b, loc, filter)};
  if (epilogue.bias)
    buffers.push_back(managedCopy(b, loc, epilogue.bias));
  if (epilogue.residual)
    buffers.push_back(managedCopy(b, loc, epilogue.residual));
  auto flatOut = MemRefType::get({p.outputElements}, p.outputType);
  buffers.push_back(deviceAlloc(b, loc, flatOut, /*hostShared=*/true));
  return buffers;
}

/// After the launch: the output `y` copied into a new host tensor of
/// `outputType`, then the device buffers freed; returns the tensor.
Value copyBackAndFree(OpBuilder &b, Location loc, Value y, ValueRange freed,
                      RankedTensorType outputType) {
  auto [output, outputFlat] = allocateResult(b, loc, outputType);
  memref::CopyOp::create(b, loc, y, outputFlat);
  freeAll(b, loc, freed);
  return toTensor(b, loc, outputType, output);
}

} // namespace mlir::conv_lower::igemm

GpuLaunch igemm::buildGpuLaunch(OpBuilder &b, Location loc,
                                gpu::GPUFuncOp kernel,
                                gpu::GPUFuncOp im2colKernel,
                                const GemmProblem &p, const TileConfig &t,
                                Value input, Value filter,
                                const FusedEpilogue &epilogue,
                                RankedTensorType outputType) {
  GpuLaunch result;
  SmallVector<Value> buffers =
      managedOperands(b, loc, p, input, filter, epilogue);
  Value y = buffers.back();
  auto [grid, block] = launchDims(b, loc, launchShape(p, t), t.threads());
  SmallVector<Value> freed(buffers);
  if (im2colKernel) {
    auto [xcol, launch] = launchIm2col(b, loc, im2colKernel, p, buffers[0],
                                       block.y);
    result.im2colLaunch = launch;
    buffers[0] = xcol;
    freed.push_back(xcol);
  }
  result.launch =
      gpu::LaunchFuncOp::create(b, loc, kernel, grid, block, Value(), buffers);
  result.result = copyBackAndFree(b, loc, y, freed, outputType);
  return result;
}
