//===- ImplicitGemmLaunch.cpp - host side of the implicit-GEMM rewrite ----===//
//
// target=cuda: the operands into managed memory, one gpu.launch_func (two in
// explicit mode), the result copied back and the device buffers freed. This
// makes the module runnable by mlir-runner with an mgpu* runtime library;
// conv-run does not use it (it launches the binary through runtime/ on device
// buffers, from the kernel's conv_lower.grid / block attributes).
//
// target=cpu-twin: the grid as host loops around the same CTA body, on
// stack buffers standing in for shared memory and the warps' registers.
//
//===----------------------------------------------------------------------===//

#include "ImplicitGemmSteps.h"

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

namespace {

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
/// input, filter [and bias], then the managed output (last).
SmallVector<Value> managedOperands(OpBuilder &b, Location loc,
                                   const GemmProblem &p, Value input,
                                   Value filter, Value bias) {
  SmallVector<Value> buffers = {managedCopy(b, loc, input),
                                managedCopy(b, loc, filter)};
  if (bias)
    buffers.push_back(managedCopy(b, loc, bias));
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

} // namespace

GpuLaunch igemm::buildGpuLaunch(OpBuilder &b, Location loc,
                                gpu::GPUFuncOp kernel,
                                gpu::GPUFuncOp im2colKernel,
                                const GemmProblem &p, const TileConfig &t,
                                Value input, Value filter, Value bias,
                                RankedTensorType outputType) {
  GpuLaunch result;
  SmallVector<Value> buffers =
      managedOperands(b, loc, p, input, filter, bias);
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

namespace {

/// Explicit mode on the host: X_col stored by a loop over its elements.
Value twinIm2col(OpBuilder &b, Location loc, const GemmProblem &p,
                 const TileConfig &t, Value x) {
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
  return xcol;
}

/// What a CTA keeps on chip, as stack buffers (at most 48 KiB + the
/// accumulators; the deallocation pipeline accepts no explicit frees).
struct TwinScratch {
  Value smemA, smemB, acc, fragA, fragB, rowSums, columnSums, staging;
  EpilogueStaging stagingShape;
};

TwinScratch allocateTwinScratch(OpBuilder &b, Location loc,
                                const GemmProblem &p, const TileConfig &t) {
  TwinScratch s;
  // 128-byte aligned, as the GPU's shared buffers: the twin's 16-byte vector
  // stores (a pixel run of 8 f16) are aligned x86 stores.
  auto ring = [&](Operand op) -> Value {
    return memref::AllocaOp::create(b, loc, sharedType(p, t, op, true),
                                    b.getI64IntegerAttr(128));
  };
  s.smemA = ring(Operand::A);
  s.smemB = ring(Operand::B);
  s.stagingShape = epilogueStaging(p, t);
  if (s.stagingShape.vector)
    s.staging = memref::AllocaOp::create(
        b, loc, stagingType(p, t, s.stagingShape, true),
        b.getI64IntegerAttr(16));
  int64_t warps = t.warpsM * t.warpsN;
  auto accumulators = [&](int64_t rows, int64_t cols) -> Value {
    return memref::AllocaOp::create(
        b, loc, MemRefType::get({warps, rows, cols}, p.accumulatorType));
  };
  s.acc = accumulators(t.warpM(), t.warpN());
  // The zero-point sums' D tiles: one n8 tile of row sums per A tile, one
  // m16 tile of column sums per B tile.
  if (p.needsRowSums())
    s.rowSums = accumulators(t.warpM(), 8);
  if (p.needsColumnSums())
    s.columnSums = accumulators(16, t.warpN());
  // Each warp's fragment registers: [tiles, lanes, 4 registers, elements].
  int64_t regElems = p.registerElements();
  s.fragA = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpM() / 16, kThreadsPerWarp, 4, regElems},
                      p.elementType));
  s.fragB = memref::AllocaOp::create(
      b, loc,
      MemRefType::get({t.warpN() / 16, kThreadsPerWarp, 4, regElems},
                      p.elementType));
  return s;
}

} // namespace

TwinLoops igemm::buildTwin(OpBuilder &b, Location loc, const GemmProblem &p,
                           const TileConfig &t, Value input, Value filter,
                           Value bias, RankedTensorType outputType) {
  Value x = flatBuffer(b, loc, input), w = flatBuffer(b, loc, filter);
  Value biasFlat = bias ? flatBuffer(b, loc, bias) : Value();
  if (p.explicitIm2col)
    x = twinIm2col(b, loc, p, t, x);
  Value output, y; // y is captured below: no structured binding (C++17)
  std::tie(output, y) = allocateResult(b, loc, outputType);
  // The direct depthwise kernel has no shared ring and no fragments.
  TwinScratch s =
      t.directVector ? TwinScratch{} : allocateTwinScratch(b, loc, p, t);
  // The kernel's tap table, in host memory (no constant-space budget).
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  Value tapTable = module ? createTapTable(b, module, p, t, /*memorySpace=*/0,
                                           /*budgetBytes=*/0, loc)
                          : Value();
  Launch l = launchShape(p, t);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  scf::LoopNest grid = scf::buildLoopNest(
      b, loc, ValueRange{c(0), c(0), c(0)},
      ValueRange{c(l.gridZ), c(l.gridY), c(l.gridX)},
      ValueRange{c(1), c(1), c(1)},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
        KernelBuilder kb(nb, nloc, p, t, /*twin=*/true);
        kb.setBias(biasFlat);
        kb.setTwinFragments(s.fragA, s.fragB);
        kb.setTwinSums(s.rowSums, s.columnSums);
        kb.setTapTable(tapTable);
        if (s.staging)
          kb.setStaging(s.staging, s.stagingShape);
        kb.emitBlock(ivs[2], ivs[1], ivs[0], x, w, y, s.smemA, s.smemB, s.acc);
      });
  return {toTensor(b, loc, outputType, output), grid.loops.front()};
}

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

GpuLaunch igemm::buildHopperGpuLaunch(OpBuilder &b, Location loc,
                                      gpu::GPUFuncOp kernel,
                                      const GemmProblem &p,
                                      const HopperTiles &t, Value input,
                                      Value filter, Value bias,
                                      RankedTensorType outputType) {
  GpuLaunch result;
  SmallVector<Value> buffers =
      managedOperands(b, loc, p, input, filter, bias);
  auto module = kernel->getParentOfType<ModuleOp>();
  SmallVector<Value> operands(buffers);
  SmallVector<convrt::TensorMapSpec> maps = hopperTensorMaps(p, t);
  for (const convrt::TensorMapSpec &map : maps)
    operands.push_back(encodeTensorMap(
        b, loc, module, map, map.argument == "input" ? buffers[0] : buffers[1]));
  auto [grid, block] =
      launchDims(b, loc, hopperLaunchShape(p, t), t.threads());
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

TwinLoops igemm::buildHopperTwin(OpBuilder &b, Location loc,
                                 const GemmProblem &p, const HopperTiles &t,
                                 Value input, Value filter, Value bias,
                                 RankedTensorType outputType) {
  HopperOperands ops;
  ops.x = flatBuffer(b, loc, input);
  ops.w = flatBuffer(b, loc, filter);
  ops.bias = bias ? flatBuffer(b, loc, bias) : Value();
  if (t.gatherA)
    ops.tapTable = createTapTable(
        b, b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>(),
        hopperTapTable(p, t), /*memorySpace=*/0, /*budgetBytes=*/0, loc);
  Value output;
  std::tie(output, ops.y) = allocateResult(b, loc, outputType);
  HopperKernelBuilder sizes(b, loc, p, t, /*twin=*/true);
  // Shared memory, the barriers' state, the consumers' registers: stack
  // buffers of one CTA, reused by the next.
  auto stackBuffer = [&](ArrayRef<int64_t> shape, Type type) -> Value {
    return memref::AllocaOp::create(b, loc, MemRefType::get(shape, type),
                                    b.getI64IntegerAttr(128));
  };
  ops.twinShared = stackBuffer({sizes.twinSharedBytes() / p.elementBytes()},
                          p.elementType);
  ops.twinBarriers = stackBuffer({2 * t.stages, 4}, b.getI32Type());
  ops.twinAcc = stackBuffer(
      {t.consumers, kWarpgroupThreads, sizes.accumulatorsPerThread()},
      b.getF32Type());
  ops.twinPoison = stackBuffer({1}, b.getI32Type());
  if (EpilogueStaging staged = hopperStaging(p, t); staged.vector)
    ops.staging = stackBuffer(
        stagingType(p, hopperEpilogueTiles(t), staged, true).getShape(),
        p.outputType);
  auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
  memref::StoreOp::create(b, loc, arith::ConstantIntOp::create(b, loc, 0, 32),
                          ops.twinPoison, ValueRange{c(0)});
  Launch l = hopperLaunchShape(p, t);
  scf::LoopNest grid = scf::buildLoopNest(
      b, loc, ValueRange{c(0), c(0), c(0)},
      ValueRange{c(l.gridZ), c(l.gridY), c(l.gridX)},
      ValueRange{c(1), c(1), c(1)},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs) {
        HopperKernelBuilder(nb, nloc, p, t, /*twin=*/true)
            .emitBlock(ivs[2], ivs[1], ivs[0], ops);
      });
  // Where the GPU would hang or fault, every output is NaN: no comparison
  // passes.
  Value poisoned = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      memref::LoadOp::create(b, loc, ops.twinPoison, ValueRange{c(0)}),
      arith::ConstantIntOp::create(b, loc, 0, 32));
  auto ifPoisoned = scf::IfOp::create(b, loc, poisoned, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifPoisoned.getThenRegion().front());
    auto fill = scf::ForOp::create(b, loc, c(0), c(p.outputElements), c(1));
    b.setInsertionPointToStart(fill.getBody());
    Value nan = arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(p.outputType,
                       APFloat::getQNaN(
                           cast<FloatType>(p.outputType).getFloatSemantics())));
    memref::StoreOp::create(b, loc, nan, ops.y,
                            ValueRange{fill.getInductionVar()});
  }
  return {toTensor(b, loc, outputType, output), grid.loops.front()};
}
