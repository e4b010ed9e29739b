//===- GpuKernel.cpp - conv-run's GPU compile step ------------------------===//

#include "ConvLower/Runner/GpuKernel.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Transforms/Passes.h"
#include "Transforms/Common/ConvAnalysis.h"

#include "convrt/Json.h"
#include "convrt/TensorMap.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// Runs `build` on `module`, turning diagnostics into the error text.
llvm::Error runPipeline(ModuleOp module, const std::string &what,
                        llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(module->getContext());
  build(pm);
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(module->getContext(), [&](Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
  if (failed(pm.run(module)))
    return llvm::createStringError(what + " failed:\n" + diagnostics);
  return llvm::Error::success();
}

convrt::Dim3 toDim3(DenseI64ArrayAttr attr) {
  llvm::ArrayRef<int64_t> values = attr.asArrayRef();
  return {static_cast<unsigned>(values[0]), static_cast<unsigned>(values[1]),
          static_cast<unsigned>(values[2])};
}

/// The bytes of the gpu.binary's single object.
llvm::Expected<std::string> binaryObject(ModuleOp module) {
  std::string bytes;
  int count = 0;
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute a : binary.getObjects()) {
      bytes = cast<gpu::ObjectAttr>(a).getObject().getValue().str();
      ++count;
    }
  });
  if (count != 1)
    return llvm::createStringError(
        llvm::formatv("expected one GPU object, found {0}", count));
  return bytes;
}

convrt::ArgumentSpec argument(llvm::StringRef name, convrt::ArgumentRole role,
                              convrt::DType dtype,
                              const std::vector<int64_t> &shape) {
  convrt::ArgumentSpec a;
  a.name = name.str();
  a.role = role;
  a.dtype = dtype;
  a.shape = shape;
  return a;
}

/// The kernel's conv_lower.tensor_maps entries (the same field names as the
/// manifest's JSON), parsed and validated by the runtime's own reader.
llvm::Expected<std::vector<convrt::TensorMapSpec>>
tensorMaps(gpu::GPUFuncOp kernel) {
  std::vector<convrt::TensorMapSpec> specs;
  ArrayAttr maps =
      ConvLowerDialect::TensorMapsAttrHelper(kernel->getContext()).getAttr(kernel);
  if (!maps)
    return specs;
  for (auto [i, entry] : llvm::enumerate(maps)) {
    auto map = cast<TensorMapAttr>(entry);
    auto ints = [](ArrayRef<int64_t> values) {
      return std::vector<int64_t>(values.begin(), values.end());
    };
    convrt::JsonValue json = convrt::JsonValue::object();
    json["name"] = map.getName().str();
    json["argument"] = map.getArgument().str();
    json["mode"] = stringifyTensorMapMode(map.getMode()).str();
    json["dtype"] = map.getDtype().str();
    json["dims"] = ints(map.getDims());
    json["strides_bytes"] = ints(map.getStridesBytes());
    json["box"] = ints(map.getBox());
    json["element_strides"] = ints(map.getElementStrides());
    if (map.getMode() == TensorMapMode::im2col) {
      json["lower_corner"] = ints(map.getLowerCorner());
      json["upper_corner"] = ints(map.getUpperCorner());
    }
    json["swizzle"] = map.getSwizzle().str();
    auto spec = convrt::tensorMapFromJson(
        json, "tensor_maps[" + std::to_string(i) + "]");
    if (!spec.ok())
      return llvm::createStringError("internal error: " +
                                     spec.error().message());
    specs.push_back(std::move(*spec));
  }
  return specs;
}

} // namespace

SmallVector<GpuKernelInfo>
mlir::conv_lower::describeGpuKernels(ModuleOp module, llvm::StringRef function,
                                     convrt::Arch chip, Im2colMode im2col) {
  SmallVector<GpuKernelInfo> kernels;
  OwningOpRef<ModuleOp> copy(module.clone());
  MLIRContext *ctx = copy->getContext();
  // Whatever the copy's rewrites find wrong, the pipeline that compiles the
  // module says (as an error): nothing is printed here.
  ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
  // The rewrite runs outside its pass here: load what the pass would (the
  // GPU dialect's attributes, among others).
  DialectRegistry dependencies;
  createConvLowerImplicitGemm()->getDependentDialects(dependencies);
  ctx->appendDialectRegistry(dependencies);
  for (llvm::StringRef name : dependencies.getDialectNames())
    ctx->getOrLoadDialect(name);
  PassManager pm(ctx);
  pm.addPass(createConvLowerLiftTo2D());
  if (failed(pm.run(*copy)))
    return kernels;
  auto func = copy->lookupSymbol<func::FuncOp>(function);
  if (!func)
    return kernels;
  SmallVector<linalg::LinalgOp> convs;
  func.walk([&](linalg::LinalgOp op) {
    if (looksLikeConvolution(op))
      convs.push_back(op);
  });
  ImplicitGemmOptions options;
  options.target = ImplicitGemmTarget::Cuda;
  options.im2col = im2col;
  options.chip = chip;
  IRRewriter rewriter(ctx);
  for (linalg::LinalgOp conv : convs) {
    FailureOr<ImplicitGemmResult> result =
        rewriteToImplicitGemm(rewriter, conv, options);
    if (failed(result))
      continue;
    assert(result->kernel && "target=cuda builds a GEMM kernel");
    GpuKernelInfo info;
    info.family = result->family;
    info.residual = result->fusedResidual;
    llvm::raw_string_ostream tiles(info.tiles);
    tiles << ConvLowerDialect::TilesAttrHelper(ctx).getAttr(result->kernel);
    kernels.push_back(std::move(info));
  }
  return kernels;
}

llvm::Expected<GpuKernelBuild>
mlir::conv_lower::compileGpuKernel(ModuleOp module, llvm::StringRef function,
                                   const ConvProblem &problem,
                                   const ConvLowerToNVVMOptions &options) {
  auto start = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> owned(module.clone());
  ModuleOp kernels = *owned;
  if (llvm::Error e = runPipeline(kernels, "conv-lower-to-nvvm (kernels)",
                                  [&](OpPassManager &pm) {
                                    buildConvLowerToNVVMKernelPipeline(
                                        pm, options);
                                  }))
    return std::move(e);

  SmallVector<gpu::GPUFuncOp> funcs;
  kernels.walk([&](gpu::GPUFuncOp f) {
    if (ConvLowerDialect::GridAttrHelper(f->getContext()).isAttrPresent(f))
      funcs.push_back(f);
  });
  if (funcs.size() != 1)
    return llvm::createStringError(llvm::formatv(
        "@{0}: expected one convolution for the GPU kernel, found {1}",
        function, funcs.size()));
  gpu::GPUFuncOp kernel = funcs.front();

  GpuKernelBuild build;
  convrt::Manifest &m = build.manifest;
  const char *chip = convrt::archName(options.chip);
  m.generator = std::string("conv-run (conv-lower-to-nvvm chip=") + chip + ")";
  m.kernel.name = kernel.getName().str();
  MLIRContext *ctx = kernel->getContext();
  m.kernel.grid = toDim3(ConvLowerDialect::GridAttrHelper(ctx).getAttr(kernel));
  m.kernel.block =
      toDim3(ConvLowerDialect::BlockAttrHelper(ctx).getAttr(kernel));
  // Dynamic shared memory: the sm_90a kernels' rings (static shared memory
  // needs no launch parameter).
  if (IntegerAttr bytes =
          ConvLowerDialect::SharedMemoryAttrHelper(ctx).getAttr(kernel))
    m.kernel.sharedMemoryBytes = bytes.getInt();
  m.kernel.chip = chip;
  m.kernel.binary = m.kernel.name + ".cubin";
  m.kernel.ptx = m.kernel.name + ".ptx";
  llvm::raw_string_ostream tiles(build.tiles);
  tiles << ConvLowerDialect::TilesAttrHelper(ctx).getAttr(kernel);
  SmallVector<GpuKernelInfo> described =
      describeGpuKernels(module, function, options.chip, options.im2col);
  assert(described.size() == 1 && "the pipeline built one GEMM kernel");
  bool residual = false;
  if (!described.empty()) {
    build.family = described.front().family;
    residual = described.front().residual;
  }

  m.problem = problem;
  // f32 data runs on tensor cores as tf32: checked at tf32's tolerance.
  if (m.problem.dtype == convrt::DType::F32)
    m.problem.dtype = convrt::DType::TF32;
  convrt::DType stored = convrt::storageType(m.problem.dtype);
  // The kernel's parameters, in order: input, filter, [bias,] [residual,]
  // output.
  m.arguments = {argument("input", convrt::ArgumentRole::Input, stored,
                          m.problem.inputShape()),
                 argument("filter", convrt::ArgumentRole::Filter, stored,
                          m.problem.filterShape())};
  if (problem.hasBias)
    m.arguments.push_back(argument("bias", convrt::ArgumentRole::Bias, stored,
                                   m.problem.biasShape()));
  if (residual)
    m.arguments.push_back(argument("residual", convrt::ArgumentRole::Residual,
                                   m.problem.outputType(),
                                   m.problem.outputShape()));
  m.arguments.push_back(argument("output", convrt::ArgumentRole::Output,
                                 m.problem.outputType(),
                                 m.problem.outputShape()));
  // Then the tensor maps, passed by value after the pointers.
  auto maps = tensorMaps(kernel);
  if (!maps)
    return maps.takeError();
  m.tensorMaps = std::move(*maps);
  if (kernel.getNumArguments() != m.arguments.size() + m.tensorMaps.size())
    return llvm::createStringError(llvm::formatv(
        "internal error: the kernel takes {0} arguments, the manifest lists {1} "
        "and {2} tensor maps (were the bias and residual fused?)",
        kernel.getNumArguments(), m.arguments.size(), m.tensorMaps.size()));
  // The runtime fills buffers of the manifest's shapes: a kernel reading any
  // other size (an unabsorbed padded input, say) would read garbage.
  for (auto [arg, spec] : llvm::zip(kernel.getArguments(), m.arguments)) {
    int64_t want = 1;
    for (int64_t d : spec.shape)
      want *= d;
    int64_t got = cast<MemRefType>(arg.getType()).getNumElements();
    if (got != want)
      return llvm::createStringError(llvm::formatv(
          "internal error: kernel argument '{0}' has {1} elements, the "
          "manifest's shape {2}",
          spec.name, got, want));
  }

  // PTX and cubin from the same kernel IR.
  for (gpu::CompilationTarget format :
       {gpu::CompilationTarget::Assembly, gpu::CompilationTarget::Binary}) {
    bool isa = format == gpu::CompilationTarget::Assembly;
    OwningOpRef<ModuleOp> copy(kernels.clone());
    ConvLowerToNVVMOptions o;
    o.chip = options.chip;
    o.features = options.features;
    o.toolkit = options.toolkit;
    o.format = format;
    // The runtime passes tensor maps by value.
    o.gridConstantTensorMaps = true;
    if (llvm::Error e = runPipeline(*copy,
                                    isa ? "conv-lower-to-nvvm (isa)"
                                        : "conv-lower-to-nvvm (bin)",
                                    [&](OpPassManager &pm) {
                                      buildConvLowerToNVVMBinaryPipeline(pm, o);
                                    }))
      return std::move(e);
    auto object = binaryObject(*copy);
    if (!object)
      return object.takeError();
    (isa ? build.ptx : build.cubin) = std::move(*object);
  }
  if (convrt::Error e = convrt::validateManifest(m); !e.ok())
    return llvm::createStringError("internal error: invalid manifest: " +
                                   e.message());
  build.compileMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  return build;
}

llvm::Error mlir::conv_lower::writeGpuBundle(const std::string &directory,
                                             const GpuKernelBuild &build) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError("cannot create " + directory + ": " +
                                   ec.message());
  convrt::Error e =
      convrt::writeBundle(directory, build.manifest, build.cubin, build.ptx);
  if (!e.ok())
    return llvm::createStringError(e.message());
  return llvm::Error::success();
}
