//===- CompiledConv.cpp - compile a convolution once, run it many times ---===//
//
// The same steps as run() for one problem, split at the line between
// compiling and running: the module built from the problem (with the
// layer's ReLU), the target chosen from the devices runtime/ finds, then the
// CPU JIT (conv-lower-to-llvm, the route conv-run's report names) or the
// tensor-core kernel (conv-lower-to-nvvm) loaded once into a
// convrt::KernelSession. Each compilation has its own MLIRContext, so
// several threads compile at once; nothing of it outlives compile() but the
// JIT'd code or the loaded kernel.
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

#include <chrono>

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

std::string ConvSpec::key() const {
  const ConvProblem &p = problem;
  std::string key = llvm::formatv(
      "{0} {1} {2} {3} acc {4} zp {5},{6} bias {7} relu {8} target {9} "
      "threads {10} chip {11}",
      p.describe(), toString(p.layout),
      convrt::filterLayoutName(p.filterLayout), toString(p.dtype),
      toString(p.accumulate), p.inputZeroPoint, p.filterZeroPoint, p.hasBias,
      relu, toString(target), threads,
      chip ? convrt::archName(*chip) : "default");
  if (p.hasDepth)
    key += llvm::formatv(" depth {0} k{1} s{2} d{3} p{4},{5}", p.d, p.kd,
                         p.strideD, p.dilationD, p.padFront, p.padBack)
               .str();
  return key;
}

struct CompiledConv::Impl {
  std::unique_ptr<CpuRunner> cpu;
  std::unique_ptr<convrt::KernelSession> gpu;
};

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

/// Where it runs and why. The devices are probed for cuda and auto only: a
/// CPU compilation does not start the driver.
llvm::Expected<Target> chooseTarget(const ConvSpec &spec, RunReport &report) {
  std::optional<DeviceStatus> status;
  if (spec.target == Target::Cuda || spec.target == Target::Auto)
    status = probeDevices();
  return resolveTarget(spec.target, status ? &*status : nullptr,
                       gpuRouteRefusal(spec.problem), "target", report);
}

llvm::Expected<std::unique_ptr<CpuRunner>>
compileForCpu(MLIRContext &ctx, const ConvSpec &spec, Target target,
              int64_t threads, RunReport &report, bool &winograd) {
  const ConvProblem &p = spec.problem;
  OwningOpRef<ModuleOp> module = buildConvModule(ctx, p, spec.relu);
  Type element = elementType(ctx, p.dtype);
  llvm::SmallVector<BufferSpec> inputs = {
      {llvm::to_vector(p.inputShape()), element},
      {llvm::to_vector(p.filterShape()), element}};
  if (p.hasBias)
    inputs.push_back({llvm::to_vector(p.biasShape()), element});
  BufferSpec output{llvm::to_vector(p.outputShape()),
                    elementType(ctx, p.outputType())};
  CpuRoute route = cpuRoute(target, /*implicit=*/true);
  RunOptions options;
  options.threads = threads;
  report.pipeline = pipelineName(route).str();
  report.threads = threads;
  ConvLowerToLLVMOptions pipeline = pipelineOptions(options, route);
  winograd = takesWinograd(*module, kConvFunctionName, pipeline);
  auto runner = CpuRunner::create(std::move(module), kConvFunctionName,
                                  inputs, output, pipeline);
  if (!runner)
    return asFailure(runner.takeError());
  report.compileMs = (*runner)->compileMs();
  return runner;
}

llvm::Expected<std::unique_ptr<convrt::KernelSession>>
compileForCuda(MLIRContext &ctx, const ConvSpec &spec, RunReport &report) {
  RunOptions options;
  options.chip = spec.chip;
  auto chip = chooseChip(options, report.devices);
  if (!chip)
    return chip.takeError();
  OwningOpRef<ModuleOp> module = buildConvModule(ctx, spec.problem, spec.relu);
  auto build = compileKernelFor(*module, kConvFunctionName, spec.problem, *chip);
  if (!build)
    return build.takeError();
  recordKernel(*build, *chip, report);
  auto driver = convrt::Driver::load();
  if (!driver.ok())
    return runner::failed(driver.error().message());
  auto session = convrt::KernelSession::load(build->manifest, build->cubin,
                                             build->ptx, *driver);
  if (!session.ok())
    return runner::failed(session.error().message());
  return std::move(*session);
}

} // namespace

llvm::Expected<std::unique_ptr<CompiledConv>>
CompiledConv::compile(const ConvSpec &spec) {
  if (llvm::Error e = validateProblem(spec.problem))
    return asBadInput(std::move(e));
  if (spec.threads < 0)
    return badInput("threads must be at least 1 (0: every core)");
  std::unique_ptr<CompiledConv> conv(new CompiledConv());
  conv->spec_ = spec;
  conv->impl_ = std::make_unique<Impl>();
  RunReport &report = conv->report_;
  report.problem = describeProblem(spec.problem);
  report.source = "ConvLower C API";
  auto target = chooseTarget(spec, report);
  if (!target)
    return target.takeError();
  report.inputBytes = inputBytes(spec.problem);
  report.im2colBytes = 0; // no route here stores X_col whole
  auto settle = [&](Target where) {
    conv->target_ = where;
    report.target = toString(where).str();
    report.im2col = im2colMode(spec.problem, where, /*implicit=*/true,
                               /*xcolSizeKnown=*/true);
  };

  std::unique_ptr<MLIRContext> ctx = compilationContext();
  if (*target == Target::Cuda) {
    auto session = compileForCuda(*ctx, spec, report);
    if (session) {
      conv->impl_->gpu = std::move(*session);
      settle(Target::Cuda);
      return conv;
    }
    // Chosen, not requested: a problem the kernel does not take runs on the
    // CPU, and the report says why.
    ErrorText error = takeErrorText(session.takeError());
    if (spec.target != Target::Auto || !error.badInput)
      return error.badInput ? badInput(error.message)
                            : runner::failed(error.message);
    report.targetReason = "a CUDA device is usable, but the tensor-core "
                          "kernel does not take this problem (" +
                          error.message + "); the CPU JIT runs instead";
    *target = Target::Cpu; // the kernel's fields were never recorded
  }
  int64_t threads = spec.threads ? spec.threads : defaultCpuThreads();
  bool winograd = false;
  auto runner = compileForCpu(*ctx, spec, *target, threads, report, winograd);
  if (!runner)
    return runner.takeError();
  conv->impl_->cpu = std::move(*runner);
  settle(*target);
  if (winograd)
    report.im2col = "winograd";
  return conv;
}

llvm::Error CompiledConv::run(const void *input, const void *filter,
                              const void *bias, void *output) {
  if (!input || !filter || !output || (spec_.problem.hasBias && !bias))
    return badInput(llvm::formatv(
        "run: a null buffer (input {0}, filter {1}, bias {2}, output {3}); "
        "the problem {4} a bias",
        input, filter, bias, output,
        spec_.problem.hasBias ? "has" : "has no"));
  double ms = 0;
  if (impl_->gpu) {
    auto kernelMs = impl_->gpu->run(input, filter, bias, output);
    if (!kernelMs.ok())
      return runner::failed(kernelMs.error().message());
    ms = *kernelMs;
  } else {
    llvm::SmallVector<void *, 4> buffers = {const_cast<void *>(input),
                                            const_cast<void *>(filter)};
    if (spec_.problem.hasBias)
      buffers.push_back(const_cast<void *>(bias));
    buffers.push_back(output);
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = impl_->cpu->run(buffers))
      return asFailure(std::move(e));
    ms = std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
             .count();
  }
  lastMs_.store(ms);
  runs_.fetch_add(1);
  return llvm::Error::success();
}

RunReport CompiledConv::report() const {
  RunReport r = report_;
  r.repeat = static_cast<int>(runs_.load());
  r.loweredMs = lastMs_.load();
  if (r.repeat > 0 && r.loweredMs > 0)
    r.gflops = spec_.problem.flops() / (r.loweredMs * 1e6);
  return r;
}

llvm::Expected<std::shared_ptr<CompiledConv>>
ConvCache::get(const ConvSpec &spec, bool *hit) {
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<Entry> &slot = entries_[spec.key()];
    if (!slot)
      slot = std::make_shared<Entry>();
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
  return entry->conv;
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
