//===- CpuRunner.h - compile a conv function and JIT it on the CPU -*- C++ -*-//

#ifndef CONVLOWER_RUNNER_CPURUNNER_H
#define CONVLOWER_RUNNER_CPURUNNER_H

#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Runner/DiskCache.h"
#include "ConvLower/Runner/Run.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace mlir::conv_lower {

/// A dense buffer the JIT'd function reads or writes.
struct BufferSpec {
  llvm::SmallVector<int64_t> shape;
  Type elementType;
  /// The same values on every call (inference weights). With the
  /// pipeline's constant-weights, what the function computes from these
  /// alone is computed once, by pack(), into buffers the runner owns.
  bool constant = false;
};

/// What CpuRunner::pack() computes from the constant inputs alone (the
/// transposed filter, Winograd's U), in buffers of its own: one per set of
/// constant values, so that layers of one shape with different weights
/// share the compiled code.
class PackedWeights {
public:
  /// The packed buffers' bytes.
  int64_t bytes() const { return bytes_; }

private:
  friend class CpuRunner;
  std::vector<std::unique_ptr<void, void (*)(void *)>> buffers;
  int64_t bytes_ = 0;
};

/// `func(inputs...) -> output` on tensors, wrapped into
/// `conv_run(memref inputs..., memref output)`, compiled with
/// conv-lower-to-llvm and loaded into an ExecutionEngine.
class CpuRunner {
public:
  /// Takes ownership of `module`. `inputs`/`output` give the concrete shapes
  /// (the function may have a dynamic batch).
  static llvm::Expected<std::unique_ptr<CpuRunner>>
  create(OwningOpRef<ModuleOp> module, llvm::StringRef functionName,
         llvm::ArrayRef<BufferSpec> inputs, const BufferSpec &output,
         const ConvLowerToLLVMOptions &options);

  /// Calls the compiled function on host buffers (inputs..., output), laid out
  /// densely in row-major order of the specs; `packed` is what pack() made
  /// of the constant inputs' values, required where readsPacked(). Safe to
  /// call from several threads at once.
  llvm::Error run(llvm::ArrayRef<void *> buffers,
                  const PackedWeights *packed = nullptr) const;

  /// Whether run() reads packed weights: constant inputs, the pipeline's
  /// constant-weights, and something computed from them alone was hoisted
  /// (not so where the kernel reads the filter in place).
  bool readsPacked() const { return packEntryPoint != nullptr; }
  /// Computes what depends on the constant inputs alone from `buffers` as
  /// run() takes them (only the constant ones are read: the others may be
  /// null) into new buffers, 64-byte aligned. Empty where !readsPacked().
  llvm::Expected<std::unique_ptr<PackedWeights>>
  pack(llvm::ArrayRef<void *> buffers) const;

  /// Wall time of the pass pipeline plus JIT compilation (or of loading the
  /// disk cache's object).
  double compileMs() const { return compileMillis; }
  /// The disk cache (DiskCache.h): "hit" (linked its object, nothing
  /// compiled), "miss" (compiled and stored) or "off".
  llvm::StringRef diskCache() const { return diskCacheState; }

  ~CpuRunner();

private:
  CpuRunner() = default;
  /// Runs the pipeline on `module` and JIT-compiles it into `engine`;
  /// returns the packed buffers' shapes.
  llvm::Expected<std::vector<CachedObject::Packed>>
  compile(ModuleOp module, PassManager &pm, const OpenMPRuntime *openmp);
  llvm::Error lookUpEntryPoints(bool packs);
  std::unique_ptr<ExecutionEngine> engine;
  std::unique_ptr<llvm::orc::LLJIT> cachedJit; // a disk cache hit's code
  llvm::StringRef diskCacheState = "off";
  void (*entryPoint)(void **) = nullptr; // the wrapper's packed interface
  void (*packEntryPoint)(void **) = nullptr; // conv_run_pack, when hoisted
  std::vector<int64_t> descriptors;     // the memref descriptors, in order
  std::vector<size_t> descriptorOffsets; // where each one starts
  size_t numBuffers = 0;                 // run()'s buffers (inputs, output)
  // The hoisted values' bytes (the trailing arguments after the output);
  // not their types: the module's context may not outlive create().
  std::vector<int64_t> packedBufferBytes;
  llvm::Error checkBuffers(llvm::ArrayRef<void *> buffers) const;
  void call(void (*entry)(void **), llvm::ArrayRef<void *> buffers,
            const PackedWeights *packed) const;
  double compileMillis = 0;
};

/// Registers the dialects, interface models and LLVM translations the runner
/// needs in `registry`.
void registerCpuRunnerDialects(DialectRegistry &registry);

} // namespace mlir::conv_lower

#endif
