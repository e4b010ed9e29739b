//===- CompiledConv.h - compile a convolution once, run it many times -*- C++ -*-//
//
// What a library user (the C API, the Python package, a framework's layer)
// needs instead of conv-run's one-shot run(): a convolution compiled once for
// its target — the JIT'd CPU function, the GPU kernel's CPU twin, or the
// tensor-core kernel loaded on a CUDA device through runtime/ — and then run
// on the caller's buffers as often as wanted, from any thread. ConvCache
// keeps one compilation per distinct problem, so a network's repeated layers
// compile once.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_COMPILEDCONV_H
#define CONVLOWER_RUNNER_COMPILEDCONV_H

#include "ConvLower/Runner/ConvModule.h"
#include "ConvLower/Runner/ConvProblem.h"
#include "ConvLower/Runner/Report.h"
#include "ConvLower/Runner/Run.h"

#include "llvm/Support/Error.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace mlir::conv_lower {

/// What to compile: the problem plus what a layer fuses after it.
struct ConvSpec {
  ConvProblem problem;
  /// The residual add, ReLU and clamp after the bias, fused on every route
  /// (the CPU's epilogue pass, the tensor-core kernels' store).
  ConvEpilogue epilogue;
  Target target = Target::Auto;
  /// CPU worker threads; 0 is defaultCpuThreads().
  int64_t threads = 0;
  /// The chip for cuda (default: the device's).
  std::optional<convrt::Arch> chip;
  /// The filter holds the same values on every run (inference): the CPU
  /// routes compute what depends on it alone (the transposed filter,
  /// Winograd's U) once, into a WeightsPack, and every run reads that.
  /// Nothing is packed on cuda (the kernel reads the filter as given).
  bool constantWeights = false;

  /// Every field, in one line: the cache's key.
  std::string key() const;
};

class PackedWeights;

/// One set of constant weights packed for a CompiledConv whose spec has
/// constantWeights: made from a filter once (CompiledConv::pack, or the
/// first run) and read by every later run. Several users of one shared
/// CompiledConv (C API handles, a network's layers of one shape) each have
/// their own.
class WeightsPack {
public:
  WeightsPack();
  ~WeightsPack();
  /// Whether it holds packed weights (after pack() or a first run).
  bool packed() const { return ready_.load(std::memory_order_acquire); }
  /// The packing's wall time and the packed buffers' bytes (0 where the
  /// route reads the filter in place).
  double packMs() const { return packMs_; }
  int64_t bytes() const;

private:
  friend class CompiledConv;
  std::mutex mutex_; // held while packing
  std::atomic<bool> ready_{false};
  std::unique_ptr<PackedWeights> weights_;
  double packMs_ = 0;
};

class CompiledConv {
public:
  /// Validates the spec, chooses the target (auto: cuda where a device is
  /// usable and the GPU route takes the problem, else cpu) and compiles.
  /// Errors are RunErrors (bad input, or a failure while compiling).
  static llvm::Expected<std::unique_ptr<CompiledConv>>
  compile(const ConvSpec &spec);
  ~CompiledConv();

  /// Runs on host buffers in the problem's layouts: input and filter (and
  /// bias, when the problem has one) in its dtype (f16/bf16 as 16-bit
  /// words, tf32 as f32), the output, and the residual when the epilogue
  /// has one, as f32 (i32 for a quantized problem). Safe to call from
  /// several threads at once.
  ///
  /// With spec().constantWeights, runs read `weights` (null: this
  /// CompiledConv's own pack), packed from `filter` at the first run unless
  /// pack() made it before; later runs do not read `filter`, so it must
  /// hold the same values (pack() again after changing them).
  llvm::Error run(const void *input, const void *filter, const void *bias,
                  const void *residual, void *output,
                  WeightsPack *weights = nullptr);

  /// spec().constantWeights: packs `filter` into `into` (null: this
  /// CompiledConv's own), replacing what it held; not while runs on it are
  /// in flight. Bad input without constantWeights.
  llvm::Error pack(const void *filter, WeightsPack *into = nullptr);

  const ConvSpec &spec() const { return spec_; }
  /// Where it runs: cpu, cpu-twin or cuda (never auto).
  Target target() const { return target_; }
  /// Target, route, compile time, tiles, memory; loweredMs is the last
  /// run's time (the kernel's on a GPU), repeat the number of runs so far;
  /// with constantWeights, the pack time and bytes of `weights` (null: its
  /// own) once packed.
  RunReport report(const WeightsPack *weights = nullptr) const;

private:
  struct Impl;
  CompiledConv();
  /// Packs into `into` under its mutex (unless it is ready and !repack).
  llvm::Error packLocked(const void *filter, WeightsPack &into, bool repack);
  /// `weights`, or this CompiledConv's own pack where it is null.
  WeightsPack &packOf(WeightsPack *weights) const;
  ConvSpec spec_;
  Target target_ = Target::Cpu;
  RunReport report_;
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> runs_{0};
  std::atomic<double> lastMs_{0};
};

/// One compilation per distinct ConvSpec::key(), shared: a second request
/// for the same problem returns the first one's CompiledConv without
/// compiling, and two threads asking for the same new key compile it once.
/// Failed compilations are not kept. At most capacity() compiled entries
/// are kept: past it, the least recently requested ones are dropped (a
/// server called with ever new batch sizes must not grow without bound;
/// each entry holds JIT'd code and its buffers). Handles keep theirs.
class ConvCache {
public:
  /// The default bound: $CONVLOWER_CACHE_ENTRIES where it is a positive
  /// integer, else kDefaultCapacity.
  static constexpr size_t kDefaultCapacity = 64;
  ConvCache();

  llvm::Expected<std::shared_ptr<CompiledConv>> get(const ConvSpec &spec,
                                                    bool *hit = nullptr);
  size_t size() const;
  void clear();
  size_t capacity() const;
  /// At least 1; entries past the new bound are dropped now.
  void setCapacity(size_t entries);
  /// The process-wide cache the C API uses.
  static ConvCache &global();

private:
  struct Entry {
    std::mutex compiling; // held while the entry's problem compiles
    std::shared_ptr<CompiledConv> conv;
    std::atomic<bool> ready{false}; // conv is set (read without `compiling`)
    uint64_t lastUse = 0;           // under the cache's mutex
  };
  /// Drops the least recently used compiled entries past capacity_.
  void evictLocked();
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  size_t capacity_;
  uint64_t clock_ = 0;
};

} // namespace mlir::conv_lower

#endif
