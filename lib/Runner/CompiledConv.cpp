//===- CompiledConv.cpp - compile a convolution once, run it many times ---===//
//
// The same steps as run() for one problem, split at the line between
// compiling and running: the module built from the problem (with the
// layer's ReLU), the route planned as run() plans it (RoutePlan.h) from the
// devices runtime/ finds, then the CPU JIT (conv-lower-to-llvm, the route
// conv-run's report names) or the tensor-core kernel (conv-lower-to-nvvm,
// compiled as run() compiles it) loaded once into a convrt::KernelSession.
// Each compilation has its own MLIRContext, so several threads compile at
// once; nothing of it outlives compile() but the JIT'd code or the loaded
// kernel.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/CompiledConv.h"

#include "RunSteps.h"

#include "ConvLower/Runner/ConvModule.h"
#include "ConvLower/Runner/CpuRunner.h"
#include "ConvLower/Runner/Device.h"

#include "convrt/Driver.h"
#include "convrt/Runner.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

std::string ConvSpec::key() const {
  const ConvProblem &p = problem;
  std::string key = llvm::formatv(
      "{0} {1} {2} {3} acc {4} zp {5},{6} bias {7} residual {8} relu {9} "
      "target {10} threads {11} chip {12} constant-weights {13} out {14} "
      "residual-type {15}",
      p.describe(), toString(p.layout),
      convrt::filterLayoutName(p.filterLayout), toString(p.dtype),
      toString(p.accumulate), p.inputZeroPoint, p.filterZeroPoint, p.hasBias,
      epilogue.residual, epilogue.relu, toString(target), threads,
      chip ? convrt::archName(*chip) : "default", constantWeights,
      toString(outputDType(p, epilogue)), toString(residualDType(p, epilogue)));
  if (epilogue.clamp) {
    // %a: the bounds' exact values, so two clamps share code only when equal.
    char bounds[80];
    std::snprintf(bounds, sizeof(bounds), " clamp %a,%a", epilogue.clampMin,
                  epilogue.clampMax);
    key += bounds;
  }
  if (p.hasDepth)
    key += llvm::formatv(" depth {0} k{1} s{2} d{3} p{4},{5}", p.d, p.kd,
                         p.strideD, p.dilationD, p.padFront, p.padBack)
               .str();
  return key;
}

struct CompiledConv::Impl {
  std::unique_ptr<CpuRunner> cpu;
  std::unique_ptr<convrt::KernelSession> gpu;
  // The weights of runs given no pack of their own (constantWeights).
  WeightsPack own;
};

WeightsPack::WeightsPack() = default;
WeightsPack::~WeightsPack() = default;
int64_t WeightsPack::bytes() const {
  return weights_ ? weights_->bytes() : 0;
}

CompiledConv::CompiledConv() = default;
CompiledConv::~CompiledConv() = default;

namespace {

/// A context of its own for one compilation, without a thread pool (the
/// caller's threads are the parallelism), with what buildConvModule needs.
std::unique_ptr<MLIRContext> compilationContext() {
  DialectRegistry registry;
  registerRunDialects(registry);
  auto context = std::make_unique<MLIRContext>(registry,
                                               MLIRContext::Threading::DISABLED);
  context->loadDialect<func::FuncDialect, arith::ArithDialect,
                       tensor::TensorDialect, linalg::LinalgDialect>();
  return context;
}

/// Whether runs read a packed copy of the filter (constantWeights): a
/// pooling reads no filter, and nothing is packed for it.
bool packsFilter(const ConvSpec &spec) {
  return spec.constantWeights && !spec.problem.isPooling();
}

/// What the spec asks of the route (RoutePlan.h).
RouteRequest routeRequest(const ConvSpec &spec) {
  RouteRequest r;
  r.target = spec.target;
  r.chip = spec.chip;
  r.threads = spec.threads ? spec.threads : defaultCpuThreads();
  r.constantWeights = packsFilter(spec);
  r.targetFlag = "target";
  return r;
}

/// The plan for `target` (the devices are probed for cuda and auto only: a
/// CPU compilation does not start the driver).
llvm::Expected<RoutePlan> plan(const ConvSpec &spec, Target target,
                               ModuleOp module, RunReport &report) {
  std::optional<DeviceStatus> status;
  if (target == Target::Cuda || target == Target::Auto)
    status = probeDevices();
  RouteRequest request = routeRequest(spec);
  request.target = target;
  RouteInputs inputs;
  inputs.module = module;
  inputs.function = kConvFunctionName;
  inputs.problem = &spec.problem;
  inputs.xcolSizeKnown = true;
  std::string whyNot;
  if (failed(checkGpuRoute(spec.problem, whyNot)) ||
      !(whyNot = gpuEpilogueRefusal(spec.epilogue)).empty())
    inputs.gpuRefusal = whyNot;
  inputs.devices = status ? &*status : nullptr;
  return planRoute(request, inputs, report);
}

llvm::Expected<std::unique_ptr<CpuRunner>> compileForCpu(const ConvSpec &spec,
                                                         ModuleOp module,
                                                         const RoutePlan &plan,
                                                         RunReport &report) {
  assert(plan.cpuRoute && "a CPU plan");
  MLIRContext &ctx = *module.getContext();
  const ConvProblem &p = spec.problem;
  Type element = elementType(ctx, p.dtype);
  llvm::SmallVector<BufferSpec> inputs = {
      {llvm::to_vector(p.inputShape()), element}};
  if (!p.isPooling())
    inputs.push_back(
        {llvm::to_vector(p.filterShape()), element, spec.constantWeights});
  if (p.hasBias)
    inputs.push_back({llvm::to_vector(p.biasShape()), element});
  BufferSpec output{llvm::to_vector(p.outputShape()),
                    elementType(ctx, outputDType(p, spec.epilogue))};
  if (spec.epilogue.residual)
    inputs.push_back({llvm::to_vector(p.outputShape()),
                      elementType(ctx, residualDType(p, spec.epilogue))});
  auto runner =
      CpuRunner::create(OwningOpRef<ModuleOp>(module.clone()),
                        kConvFunctionName, inputs, output, plan.pipeline);
  if (!runner)
    return asFailure(runner.takeError());
  report.compileMs = (*runner)->compileMs();
  report.diskCache = (*runner)->diskCache().str();
  return runner;
}

llvm::Expected<std::unique_ptr<convrt::KernelSession>>
compileForCuda(const ConvSpec &spec, ModuleOp module, RunReport &report) {
  auto kernel = compileCudaKernel(module, kConvFunctionName, spec.problem,
                                  spec.chip, /*progress=*/nullptr, report);
  if (!kernel)
    return kernel.takeError();
  const GpuKernelBuild &build = kernel->build;
  auto session = convrt::KernelSession::load(build.manifest, build.cubin,
                                             build.ptx, kernel->driver);
  if (!session.ok())
    return runner::failed(session.error().message());
  return std::move(*session);
}

/// The compiled function's buffers in its argument order (buildConvModule's):
/// input, filter (not a pooling's), [bias,] [residual,] output.
llvm::SmallVector<void *, 5> functionArguments(const ConvSpec &spec,
                                               const void *input,
                                               const void *filter,
                                               const void *bias,
                                               const void *residual,
                                               void *output) {
  llvm::SmallVector<void *, 5> buffers = {const_cast<void *>(input)};
  if (!spec.problem.isPooling())
    buffers.push_back(const_cast<void *>(filter));
  if (spec.problem.hasBias)
    buffers.push_back(const_cast<void *>(bias));
  if (spec.epilogue.residual)
    buffers.push_back(const_cast<void *>(residual));
  buffers.push_back(output);
  return buffers;
}

} // namespace

llvm::Expected<std::unique_ptr<CompiledConv>>
CompiledConv::compile(const ConvSpec &spec) {
  if (llvm::Error e = validateProblem(spec.problem))
    return asBadInput(std::move(e));
  if (spec.threads < 0)
    return badInput("threads must be at least 1 (0: every core)");
  if (llvm::Error e = validateEpilogue(spec.problem, spec.epilogue))
    return asBadInput(std::move(e));
  if (std::string why = gpuEpilogueRefusal(spec.epilogue);
      !why.empty() && spec.target == Target::CpuTwin)
    return badInput(why);
  if (auto why = poolingTargetRefusal(spec.problem, spec.target, "target"))
    return badInput(*why);
  std::unique_ptr<CompiledConv> conv(new CompiledConv());
  conv->spec_ = spec;
  conv->impl_ = std::make_unique<Impl>();
  RunReport &report = conv->report_;
  report.problem = describeProblem(spec.problem);
  report.source = "ConvLower C API";
  report.inputBytes = inputBytes(spec.problem);
  report.im2colBytes = 0; // no route here stores X_col whole

  std::unique_ptr<MLIRContext> ctx = compilationContext();
  OwningOpRef<ModuleOp> module =
      buildConvModule(*ctx, spec.problem, spec.epilogue);
  auto route = plan(spec, spec.target, *module, report);
  if (!route)
    return route.takeError();
  if (route->target == Target::Cuda) {
    auto session = compileForCuda(spec, *module, report);
    if (session) {
      conv->impl_->gpu = std::move(*session);
      conv->target_ = Target::Cuda;
      return conv;
    }
    // Chosen, not requested: a problem the kernel does not take runs on the
    // CPU, and the report says why.
    ErrorText error = takeErrorText(session.takeError());
    if (spec.target != Target::Auto || !error.badInput)
      return error.badInput ? badInput(error.message)
                            : runner::failed(error.message);
    // The kernel's fields are recorded only once it compiled.
    assert(report.kernel.empty() && report.chip.empty());
    route = plan(spec, Target::Cpu, *module, report);
    if (!route)
      return route.takeError();
    report.targetReason = "a CUDA device is usable, but the tensor-core "
                          "kernel does not take this problem (" +
                          error.message + "); the CPU JIT runs instead";
  }
  auto runner = compileForCpu(spec, *module, *route, report);
  if (!runner)
    return runner.takeError();
  conv->impl_->cpu = std::move(*runner);
  conv->target_ = route->target;
  return conv;
}

llvm::Error CompiledConv::run(const void *input, const void *filter,
                              const void *bias, const void *residual,
                              void *output, WeightsPack *weights) {
  bool hasResidual = spec_.epilogue.residual;
  bool readsFilter = !spec_.problem.isPooling();
  if (!input || (readsFilter && !filter) || !output ||
      (spec_.problem.hasBias && !bias) || (hasResidual && !residual))
    return badInput(llvm::formatv(
        "run: a null buffer (input {0}, filter {1}, bias {2}, residual {3}, "
        "output {4}); the problem has {5} bias and {6} residual",
        input, filter, bias, residual, output,
        spec_.problem.hasBias ? "a" : "no", hasResidual ? "a" : "no"));
  double ms = 0;
  if (impl_->gpu) {
    auto kernelMs = impl_->gpu->run(input, filter, bias, residual, output);
    if (!kernelMs.ok())
      return runner::failed(kernelMs.error().message());
    ms = *kernelMs;
  } else {
    const PackedWeights *packed = nullptr;
    if (packsFilter(spec_)) {
      WeightsPack &pack = packOf(weights);
      if (!pack.packed())
        if (llvm::Error e = packLocked(filter, pack, /*repack=*/false))
          return e;
      packed = pack.weights_.get();
    }
    llvm::SmallVector<void *, 5> buffers =
        functionArguments(spec_, input, filter, bias, residual, output);
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = impl_->cpu->run(buffers, packed))
      return asFailure(std::move(e));
    ms = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
             .count();
  }
  lastMs_.store(ms);
  runs_.fetch_add(1);
  return llvm::Error::success();
}

WeightsPack &CompiledConv::packOf(WeightsPack *weights) const {
  return weights ? *weights : impl_->own;
}

llvm::Error CompiledConv::pack(const void *filter, WeightsPack *into) {
  if (!spec_.constantWeights)
    return badInput("pack: this convolution was compiled without constant "
                    "weights: its runs read the filter they are given");
  if (!packsFilter(spec_))
    return llvm::Error::success(); // a pooling: nothing to pack
  if (!filter)
    return badInput("pack: a null filter");
  return packLocked(filter, packOf(into), /*repack=*/true);
}

llvm::Error CompiledConv::packLocked(const void *filter, WeightsPack &into,
                                     bool repack) {
  std::lock_guard<std::mutex> lock(into.mutex_);
  // Another run packed it while this one waited.
  if (into.packed() && !repack)
    return llvm::Error::success();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<PackedWeights> weights;
  if (impl_->cpu) {
    // The packing function reads the constant filter alone: the image,
    // bias, residual and output are not touched.
    llvm::SmallVector<void *, 5> buffers =
        functionArguments(spec_, nullptr, filter, nullptr, nullptr, nullptr);
    auto made = impl_->cpu->pack(buffers);
    if (!made)
      return asFailure(made.takeError());
    weights = std::move(*made);
  }
  into.ready_.store(false, std::memory_order_release);
  into.weights_ = std::move(weights);
  into.packMs_ = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  into.ready_.store(true, std::memory_order_release);
  return llvm::Error::success();
}

RunReport CompiledConv::report(const WeightsPack *weights) const {
  RunReport r = report_;
  const WeightsPack &pack = weights ? *weights : impl_->own;
  if (spec_.constantWeights && pack.packed()) {
    r.packMs = pack.packMs();
    r.packedBytes = pack.bytes();
  }
  r.repeat = static_cast<int>(runs_.load());
  r.loweredMs = lastMs_.load();
  if (r.repeat > 0 && r.loweredMs > 0)
    r.gflops = spec_.problem.flops() / (r.loweredMs * 1e6);
  return r;
}

/// $CONVLOWER_CACHE_ENTRIES where it is a positive integer.
static size_t capacityFromEnvironment() {
  const char *text = std::getenv("CONVLOWER_CACHE_ENTRIES");
  unsigned long long entries = 0;
  if (text && !llvm::StringRef(text).getAsInteger(10, entries) && entries > 0)
    return static_cast<size_t>(entries);
  return ConvCache::kDefaultCapacity;
}

ConvCache::ConvCache() : capacity_(capacityFromEnvironment()) {}

llvm::Expected<std::shared_ptr<CompiledConv>>
ConvCache::get(const ConvSpec &spec, bool *hit) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<Entry> &slot = entries_[spec.key()];
    if (!slot)
      slot = std::make_shared<Entry>();
    slot->lastUse = ++clock_;
    entry = slot;
  }
  // A second thread asking for the same new key waits here for the first
  // one's compilation instead of compiling it again.
  std::lock_guard<std::mutex> compiling(entry->compiling);
  if (hit)
    *hit = entry->conv != nullptr;
  if (entry->conv)
    return entry->conv;
  auto conv = CompiledConv::compile(spec);
  if (!conv) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(spec.key());
    if (it != entries_.end() && it->second == entry)
      entries_.erase(it);
    return conv.takeError();
  }
  entry->conv = std::move(*conv);
  entry->ready = true;
  std::lock_guard<std::mutex> lock(mutex_);
  evictLocked();
  return entry->conv;
}

void ConvCache::evictLocked() {
  size_t compiled = 0;
  for (const auto &[key, entry] : entries_)
    compiled += entry->ready.load();
  // Entries still compiling are neither counted nor dropped.
  for (; compiled > capacity_; --compiled) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second->ready &&
          (oldest == entries_.end() ||
           it->second->lastUse < oldest->second->lastUse))
        oldest = it;
    entries_.erase(oldest);
  }
}

size_t ConvCache::capacity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_;
}

void ConvCache::setCapacity(size_t entries) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = std::max<size_t>(1, entries);
  evictLocked();
}

size_t ConvCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t compiled = 0;
  for (const auto &[key, entry] : entries_)
    compiled += entry->ready.load();
  return compiled;
}

void ConvCache::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
}

ConvCache &ConvCache::global() {
  // Never destroyed: at exit, the JIT'd code's LLVM state and the driver
  // library its kernels live in may already be torn down (static
  // destruction order across shared libraries is unspecified), so the
  // process-lifetime cache is left to the OS.
  static ConvCache *cache = new ConvCache();
  return *cache;
}
