//===- CpuRoute.cpp - the CPU routes: compile, JIT, time ------------------===//
//
// conv-lower-to-llvm with the route's options (RoutePlan.h: im2col + tiled
// GEMM, the direct lowering of the original conv, or the GPU kernel's twin),
// loaded into an ExecutionEngine, run warm-up + repeat times on the run's
// data.
//
//===----------------------------------------------------------------------===//

#include "RunSteps.h"

#include <algorithm>
#include <chrono>

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

namespace {

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Runs `runner` warm-up + repeat times; returns the median in ms.
llvm::Expected<double> timeRuns(const CpuRunner &runner,
                                llvm::ArrayRef<void *> buffers,
                                const PackedWeights *packed, int warmup,
                                int repeat) {
  std::vector<double> times;
  for (int i = 0; i < warmup + repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = runner.run(buffers, packed))
      return std::move(e);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (i >= warmup)
      times.push_back(ms);
  }
  return medianOf(times);
}

} // namespace

llvm::Expected<Execution> runner::compileAndRun(
    ModuleOp module, llvm::StringRef func, const RunData &data,
    const ConvLowerToLLVMOptions &pipeline, int warmup, int repeat) {
  // The filter (input 1: input, filter[, bias]) is the constant one.
  std::vector<BufferSpec> inputSpecs = data.inputSpecs;
  if (pipeline.constantWeights && inputSpecs.size() > 1)
    inputSpecs[1].constant = true;
  auto runner = CpuRunner::create(OwningOpRef<ModuleOp>(module.clone()), func,
                                  inputSpecs, data.outputSpec, pipeline);
  if (!runner)
    return asFailure(runner.takeError());
  std::vector<std::vector<uint8_t>> storage;
  std::vector<void *> buffers;
  for (const HostTensor &t : data.inputs)
    storage.push_back(t.storage());
  for (auto &s : storage)
    buffers.push_back(s.data());
  std::vector<uint8_t> out(data.outputElements *
                               elementBytes(data.outputDType),
                           0);
  buffers.push_back(out.data());
  Execution e;
  e.compileMs = (*runner)->compileMs();
  e.diskCache = (*runner)->diskCache().str();
  std::unique_ptr<PackedWeights> packed;
  if (pipeline.constantWeights) {
    auto start = std::chrono::steady_clock::now();
    auto made = (*runner)->pack(buffers);
    if (!made)
      return asFailure(made.takeError());
    e.packMs = std::chrono::duration<double, std::milli>(
                   std::chrono::steady_clock::now() - start)
                   .count();
    packed = std::move(*made);
    e.packedBytes = packed->bytes();
  }
  auto ms = timeRuns(**runner, buffers, packed.get(), warmup, repeat);
  if (!ms)
    return asFailure(ms.takeError());
  e.medianMs = *ms;
  e.output = convrt::decode(data.outputDType, out);
  return e;
}
