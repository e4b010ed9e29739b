//===- CpuRunner.cpp - compile a conv function and JIT it on the CPU ------===//

#include "ConvLower/Runner/CpuRunner.h"
#include "ConvLower/Runner/DiskCache.h"
#include "ConvLower/Runner/Run.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/Threading.h"
#include "llvm/TargetParser/Host.h"

#include <chrono>
#include <cstdlib>
#include <mutex>

#define DEBUG_TYPE "conv-lower-runner"

using namespace mlir;
using namespace mlir::conv_lower;

void mlir::conv_lower::registerCpuRunnerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<ConvLowerDialect>();
}

static constexpr llvm::StringLiteral kWrapperName = "conv_run";

/// conv_run(%in..., %out) { out = func(to_tensor(in)...) } with C interface.
static LogicalResult addWrapper(ModuleOp module, func::FuncOp callee,
                                llvm::ArrayRef<BufferSpec> inputs,
                                const BufferSpec &output) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = callee.getLoc();
  SmallVector<Type> argTypes;
  for (const BufferSpec &s : inputs)
    argTypes.push_back(MemRefType::get(s.shape, s.elementType));
  auto outType = MemRefType::get(output.shape, output.elementType);
  argTypes.push_back(outType);
  auto wrapper = func::FuncOp::create(b, loc, kWrapperName,
                                      b.getFunctionType(argTypes, {}));
  wrapper->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  for (auto [i, s] : llvm::enumerate(inputs))
    if (s.constant)
      wrapper.setArgAttr(i, ConvLowerDialect::ConstantAttrHelper::getNameStr(),
                         b.getUnitAttr());
  Block *body = wrapper.addEntryBlock();
  b.setInsertionPointToStart(body);

  SmallVector<Value> operands;
  for (auto [i, type] : llvm::enumerate(callee.getArgumentTypes())) {
    auto memrefType = cast<MemRefType>(argTypes[i]);
    Value t = bufferization::ToTensorOp::create(
        b, loc, memref::getTensorTypeFromMemRefType(memrefType),
        body->getArgument(i), /*restrict=*/true);
    if (t.getType() != type)
      t = tensor::CastOp::create(b, loc, type, t);
    operands.push_back(t);
  }
  Value result = func::CallOp::create(b, loc, callee, operands).getResult(0);
  auto staticResult = memref::getTensorTypeFromMemRefType(outType);
  if (result.getType() != staticResult)
    result = tensor::CastOp::create(b, loc, staticResult, result);
  auto store = bufferization::MaterializeInDestinationOp::create(
      b, loc, result, body->getArguments().back());
  store.setRestrict(true);
  store.setWritable(true);
  func::ReturnOp::create(b, loc);
  return success();
}

/// The packed buffers conv-lower-hoist-constant-weights added to the
/// wrapper (trailing arguments), read off its attribute, which is dropped:
/// the LLVM IR translation has no use for it.
static std::vector<BufferSpec> takePackedSpecs(ModuleOp module) {
  std::vector<BufferSpec> specs;
  StringRef name = ConvLowerDialect::PackedAttrHelper::getNameStr();
  for (auto f : module.getOps<LLVM::LLVMFuncOp>()) {
    auto types = f->getAttrOfType<ArrayAttr>(name);
    if (!types)
      continue;
    if (f.getSymName() == kWrapperName)
      for (auto type : types.getAsValueRange<TypeAttr>()) {
        auto memref = cast<MemRefType>(type);
        specs.push_back({SmallVector<int64_t>(memref.getShape()),
                         memref.getElementType()});
      }
    f->removeAttr(name);
  }
  return specs;
}

static llvm::Error checkSignature(func::FuncOp func, size_t numInputs) {
  FunctionType type = func.getFunctionType();
  if (type.getNumInputs() != numInputs || type.getNumResults() != 1)
    return llvm::createStringError(llvm::formatv(
        "@{0} must take {1} tensors (input, filter[, bias][, residual]) and "
        "return one tensor; it takes {2} and returns {3}",
        func.getSymName(), numInputs, type.getNumInputs(),
        type.getNumResults()));
  for (Type t : llvm::concat<const Type>(type.getInputs(), type.getResults()))
    if (!isa<RankedTensorType>(t))
      return llvm::createStringError(
          llvm::formatv("@{0} must work on ranked tensors", func.getSymName()));
  return llvm::Error::success();
}

/// The pipeline can succeed and still leave ops it could not convert (an
/// unrealized cast, say); name the first one instead of failing later in
/// the LLVM translation with no location.
static llvm::Error checkFullyLowered(ModuleOp module) {
  Operation *leftover = nullptr;
  module.walk([&](Operation *op) {
    // OpenMP ops (threaded code) have their own translation to LLVM IR.
    StringRef dialect = op->getDialect()->getNamespace();
    if (op == module.getOperation() || dialect == "llvm" || dialect == "omp")
      return WalkResult::advance();
    leftover = op;
    return WalkResult::interrupt();
  });
  if (!leftover)
    return llvm::Error::success();
  std::string where;
  llvm::raw_string_ostream os(where);
  os << leftover->getLoc();
  return llvm::createStringError(
      llvm::formatv("conv-lower-to-llvm left '{0}' unconverted (at {1}); this "
                    "is a compiler bug: please report it with --emit-mlir",
                    leftover->getName(), where));
}

/// The symbols the JIT'd code calls outside itself: the C runner utilities'
/// memrefCopy (strided copies of bufferized pads and slices), and with
/// threads the OpenMP entry points, bound to the process's runtime.
static llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner &interner,
                                           const OpenMPRuntime *openmp) {
  llvm::orc::SymbolMap symbols;
  auto bind = [&](llvm::StringRef name, void *address) {
    symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                               llvm::JITSymbolFlags::Exported};
  };
  bind("memrefCopy", reinterpret_cast<void *>(&memrefCopy));
  if (openmp) {
    bind("GOMP_parallel", openmp->parallel);
    bind("omp_get_thread_num", openmp->threadNum);
    bind("omp_get_num_threads", openmp->numThreads);
  }
  return symbols;
}

/// The disk cache's key: the module as the pipeline gets it, the pipeline
/// with every option, and the host and build (DiskCache.h).
static std::string diskCacheKey(ModuleOp module, OpPassManager &pm) {
  std::string key;
  llvm::raw_string_ostream os(key);
  module->print(os, OpPrintingFlags().enableDebugInfo(false));
  os << "\npipeline ";
  pm.printAsTextualPipeline(os);
  os << "\n" << DiskCache::environmentKey();
  return key;
}

/// The object file the engine compiled (ExecutionEngine keeps it in memory
/// and writes it only to a file).
static std::optional<std::string> compiledObject(ExecutionEngine &engine) {
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createTemporaryFile("convlower", "o", path))
    return std::nullopt;
  engine.dumpToObjectFile(path);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  llvm::sys::fs::remove(path);
  if (!file || (*file)->getBufferSize() == 0)
    return std::nullopt;
  return (*file)->getBuffer().str();
}

/// Links a cached object file into a JIT of its own.
static llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>>
linkCachedObject(const CachedObject &entry, const OpenMPRuntime *openmp) {
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return jit.takeError();
  llvm::orc::JITDylib &main = (*jit)->getMainJITDylib();
  llvm::orc::MangleAndInterner interner((*jit)->getExecutionSession(),
                                        (*jit)->getDataLayout());
  if (llvm::Error e = main.define(
          llvm::orc::absoluteSymbols(runtimeSymbols(interner, openmp))))
    return std::move(e);
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  main.addGenerator(std::move(*process));
  if (llvm::Error e = (*jit)->addObjectFile(
          llvm::MemoryBuffer::getMemBufferCopy(entry.object)))
    return std::move(e);
  return std::move(*jit);
}

/// Once per process: LLVM's target registry is not safe to fill from two
/// threads compiling at once.
static void initializeNativeTarget() {
  static std::once_flag nativeTarget;
  std::call_once(nativeTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

llvm::Expected<std::unique_ptr<CpuRunner>>
CpuRunner::create(OwningOpRef<ModuleOp> module, llvm::StringRef functionName,
                  llvm::ArrayRef<BufferSpec> inputs, const BufferSpec &output,
                  const ConvLowerToLLVMOptions &options) {
  auto start = std::chrono::steady_clock::now();
  // The wrapper's ops, in a context that may have loaded only the conv's.
  module->getContext()
      ->loadDialect<bufferization::BufferizationDialect, func::FuncDialect,
                    memref::MemRefDialect, tensor::TensorDialect>();
  auto func = module->lookupSymbol<func::FuncOp>(functionName);
  if (!func)
    return llvm::createStringError(
        llvm::formatv("no function @{0} in the module", functionName));
  if (llvm::Error e = checkSignature(func, inputs.size()))
    return std::move(e);
  if (failed(addWrapper(*module, func, inputs, output)))
    return llvm::createStringError("cannot wrap the function for the JIT");

  // Only the wrapper and what it calls are compiled: a @main that prints
  // with the runner utilities, say, would otherwise need their symbols.
  for (auto f : module->getOps<func::FuncOp>())
    if (f.getSymName() != kWrapperName)
      f.setPrivate();
  PassManager pm(module->getContext());
  pm.addPass(createSymbolDCEPass());
  // The runner links the GPU pipeline: its twin route is the twin stage.
  if (options.implicitGemmTwin)
    enableImplicitGemmTwin();
  buildConvLowerToLLVMPipeline(pm, options);

  // Threaded code starts its regions through GCC's OpenMP ABI, bound to the
  // runtime the process already has (OpenMPRuntime.cpp).
  const OpenMPRuntime *openmp = nullptr;
  if (options.threads > 1) {
    openmp = &processOpenMPRuntime();
    if (!openmp->error.empty())
      return llvm::createStringError(openmp->error);
  }

  initializeNativeTarget();
  std::unique_ptr<CpuRunner> runner(new CpuRunner());
  const DiskCache &disk = DiskCache::process();
  std::string key = disk.enabled() ? diskCacheKey(*module, pm) : "";
  runner->diskCacheState = disk.enabled() ? "miss" : "off";
  std::vector<CachedObject::Packed> packedShapes;
  if (std::optional<CachedObject> hit = key.empty() ? std::nullopt
                                                    : disk.load(key)) {
    // A cached object that does not link (it should) is compiled again.
    if (auto jit = linkCachedObject(*hit, openmp)) {
      runner->cachedJit = std::move(*jit);
      packedShapes = hit->packed;
      runner->diskCacheState = "hit";
    } else {
      std::string why = llvm::toString(jit.takeError());
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] the disk cache's object "
                              << "did not link, compiling: " << why << "\n");
      (void)why;
    }
  }
  if (!runner->cachedJit) {
    auto compiled = runner->compile(*module, pm, openmp);
    if (!compiled)
      return compiled.takeError();
    packedShapes = std::move(*compiled);
    if (!key.empty())
      if (std::optional<std::string> object = compiledObject(*runner->engine))
        disk.store(key, CachedObject{packedShapes, std::move(*object)});
  }
  if (llvm::Error e = runner->lookUpEntryPoints(!packedShapes.empty()))
    return std::move(e);

  // A ranked memref descriptor: {base, data, offset, sizes[r], strides[r]},
  // one after the other.
  auto describe = [&](llvm::ArrayRef<int64_t> shape) {
    size_t at = runner->descriptors.size(), rank = shape.size();
    runner->descriptorOffsets.push_back(at);
    runner->descriptors.resize(at + 3 + 2 * rank, 0);
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      runner->descriptors[at + 3 + i] = shape[i];
      runner->descriptors[at + 3 + rank + i] = stride;
      stride *= shape[i];
    }
  };
  for (const BufferSpec &s : inputs)
    describe(s.shape);
  describe(output.shape);
  runner->numBuffers = inputs.size() + 1;
  for (const CachedObject::Packed &p : packedShapes) {
    describe(p.shape);
    int64_t bytes = p.elementBits / 8;
    for (int64_t d : p.shape)
      bytes *= d;
    runner->packedBufferBytes.push_back(bytes);
  }
  runner->compileMillis = std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  return runner;
}

llvm::Expected<std::vector<CachedObject::Packed>>
CpuRunner::compile(ModuleOp module, PassManager &pm,
                   const OpenMPRuntime *openmp) {
  std::string diagnostics;
  {
    llvm::raw_string_ostream os(diagnostics);
    ScopedDiagnosticHandler handler(module->getContext(), [&](Diagnostic &d) {
      os << d.getLocation() << ": " << d << "\n";
      return success();
    });
    if (failed(pm.run(module)))
      return llvm::createStringError("conv-lower-to-llvm failed:\n" +
                                     diagnostics);
  }
  if (llvm::Error e = checkFullyLowered(module))
    return std::move(e);
  std::vector<CachedObject::Packed> packedShapes;
  for (const BufferSpec &s : takePackedSpecs(module))
    packedShapes.push_back(
        {s.shape, static_cast<int64_t>(s.elementType.getIntOrFloatBitWidth())});

  // The IR is optimized for the host: without a target machine LLVM's
  // passes see a target with no vector registers, and the loops MLIR leaves
  // scalar (the copies into padded buffers, the fills) stay scalar. The
  // machine code is the host's either way (ExecutionEngine detects it).
  auto hostMachine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostMachine)
    return hostMachine.takeError();
  auto targetMachine = hostMachine->createTargetMachine();
  if (!targetMachine)
    return targetMachine.takeError();
  auto transformer = makeOptimizingTransformer(
      /*optLevel=*/3, /*sizeLevel=*/0, targetMachine->get());
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  // The object file, for the disk cache.
  engineOptions.enableObjectDump = DiskCache::process().enabled();
  // No GDB or perf JIT listeners: they are process-wide singletons that a
  // library (the C API, loaded into a Python process) must not wire up,
  // and the perf one crashed in its dump-file writes when loaded that way.
  engineOptions.enableGDBNotificationListener = false;
  engineOptions.enablePerfNotificationListener = false;
  auto created = ExecutionEngine::create(module, engineOptions);
  if (!created)
    return created.takeError();
  engine = std::move(*created);
  engine->registerSymbols([openmp](llvm::orc::MangleAndInterner interner) {
    return runtimeSymbols(interner, openmp);
  });
  // The JIT generates machine code on first lookup: do it now, so that it is
  // counted as compile time and not as the first timed run (and the object
  // exists for the disk cache).
  if (auto entry = engine->lookupPacked(("_mlir_ciface_" + kWrapperName).str());
      !entry)
    return entry.takeError();
  return packedShapes;
}

/// The packed interface's symbol of `function` (ExecutionEngine's wrappers).
static std::string packedSymbol(llvm::StringRef function) {
  return ("_mlir__mlir_ciface_" + function).str();
}

llvm::Error CpuRunner::lookUpEntryPoints(bool packs) {
  using Entry = void (*)(void **);
  auto lookUp = [&](llvm::StringRef function) -> llvm::Expected<Entry> {
    if (engine) {
      auto found = engine->lookupPacked(("_mlir_ciface_" + function).str());
      if (!found)
        return found.takeError();
      return *found;
    }
    auto found = cachedJit->lookup(packedSymbol(function));
    if (!found)
      return found.takeError();
    return found->toPtr<Entry>();
  };
  auto entry = lookUp(kWrapperName);
  if (!entry)
    return entry.takeError();
  entryPoint = *entry;
  if (packs) {
    auto pack = lookUp((kWrapperName + "_pack").str());
    if (!pack)
      return pack.takeError();
    packEntryPoint = *pack;
  }
  return llvm::Error::success();
}

CpuRunner::~CpuRunner() = default;

llvm::Error CpuRunner::checkBuffers(llvm::ArrayRef<void *> buffers) const {
  if (buffers.size() != numBuffers)
    return llvm::createStringError(
        llvm::formatv("{0} buffers for a function of {1} (inputs, output)",
                      buffers.size(), numBuffers));
  return llvm::Error::success();
}

llvm::Error CpuRunner::run(llvm::ArrayRef<void *> buffers,
                           const PackedWeights *packed) const {
  if (llvm::Error e = checkBuffers(buffers))
    return e;
  if (readsPacked() &&
      (!packed || packed->buffers.size() != packedBufferBytes.size()))
    return llvm::createStringError(
        "this function reads its constant weights packed: pack() them first");
  call(entryPoint, buffers, packed);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<PackedWeights>>
CpuRunner::pack(llvm::ArrayRef<void *> buffers) const {
  if (llvm::Error e = checkBuffers(buffers))
    return std::move(e);
  auto packed = std::make_unique<PackedWeights>();
  for (int64_t bytes : packedBufferBytes) {
    // Vector loads of whole cache lines; aligned_alloc wants a multiple.
    void *buffer = std::aligned_alloc(64, llvm::alignTo(bytes, 64));
    if (!buffer)
      return llvm::createStringError(llvm::formatv(
          "cannot allocate {0} bytes for the packed weights", bytes));
    packed->buffers.emplace_back(buffer, std::free);
    packed->bytes_ += bytes;
  }
  if (packEntryPoint)
    call(packEntryPoint, buffers, packed.get());
  return packed;
}

void CpuRunner::call(void (*entry)(void **), llvm::ArrayRef<void *> buffers,
                     const PackedWeights *packed) const {
  // A copy of the descriptors on the stack, so that several threads can run
  // at once without allocating.
  SmallVector<int64_t, 64> filled(descriptors.begin(), descriptors.end());
  SmallVector<void *, 8> descriptorPtrs;
  SmallVector<void *, 8> all(buffers.begin(), buffers.end());
  if (packed)
    for (const auto &p : packed->buffers)
      all.push_back(p.get());
  for (auto [at, ptr] : llvm::zip(descriptorOffsets, all)) {
    filled[at] = filled[at + 1] = reinterpret_cast<int64_t>(ptr);
    descriptorPtrs.push_back(&filled[at]);
  }
  // The packed interface takes a pointer to each argument; each argument of
  // the C interface is a pointer to a descriptor.
  SmallVector<void *, 8> args;
  for (void *&p : descriptorPtrs)
    args.push_back(&p);
  // The entry point looked up at creation: no symbol lookup per call.
  entry(args.data());
}

/// The host CPU's features, read once per process.
static const llvm::StringMap<bool> &hostFeatures() {
  static const llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return features;
}

const CpuGemmTile &mlir::conv_lower::hostGemmTile() {
  // AVX-512: 32 registers of 16 lanes; 8 x 32 is 16 accumulators (measured
  // against 8 x 16 and 4 x 64 on Zen 4: docs/performance-journal.md).
  // AVX2: 16 registers of 8 lanes; 6 x 16 is 12 accumulators, two B vectors
  // and a broadcast, the BLIS/MLAS Haswell tile. 8 x 32 there is 32
  // accumulators, twice the register file: spilled, 1x1 64->256 ran 2.5 ms
  // against 1.25 ms (docs/performance-journal.md, 2026-12-03).
  static const CpuGemmTile tile = [] {
    if (hostFeatures().lookup("avx512f"))
      return CpuGemmTile{8, 32, 8, "AVX-512"};
    return CpuGemmTile{6, 16, 8, "AVX2"};
  }();
  return tile;
}

bool mlir::conv_lower::hostHasAVX512BF16() {
  return hostFeatures().lookup("avx512bf16");
}

bool mlir::conv_lower::hostHasAVX512VNNI() {
  return hostFeatures().lookup("avx512vnni");
}

bool mlir::conv_lower::hostHasAMX() {
  // LLVM sets them only where XCR0 says the OS saves the tile state.
  return hostFeatures().lookup("amx-tile") &&
         hostFeatures().lookup("amx-bf16") && hostFeatures().lookup("amx-int8");
}

int64_t mlir::conv_lower::defaultCpuThreads() {
#ifdef CONV_LOWER_LIBOMP_PATH
  return std::max(1u, llvm::hardware_concurrency().compute_thread_count());
#else
  return 1;
#endif
}
