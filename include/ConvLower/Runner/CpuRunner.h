//===- CpuRunner.h - compile a conv function and JIT it on the CPU -*- C++ -*-//

#ifndef CONVLOWER_RUNNER_CPURUNNER_H
#define CONVLOWER_RUNNER_CPURUNNER_H

#include "ConvLower/Pipelines/Pipelines.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

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
  /// densely in row-major order of the specs. Safe to call from several
  /// threads at once, once pack() has returned.
  llvm::Error run(llvm::ArrayRef<void *> buffers) const;

  /// With constant inputs and the pipeline's constant-weights: computes
  /// what depends on them alone (the transposed filter, Winograd's U) into
  /// the runner's packed buffers, from `buffers` as run() takes them; later
  /// runs read those instead. Call it once before the first run (again
  /// after the constant inputs change); a no-op where nothing was hoisted.
  llvm::Error pack(llvm::ArrayRef<void *> buffers);
  /// The packed buffers' bytes (0: nothing was hoisted).
  int64_t packedBytes() const { return packedBytes_; }

  /// Wall time of the pass pipeline plus JIT compilation.
  double compileMs() const { return compileMillis; }

private:
  CpuRunner() = default;
  std::unique_ptr<ExecutionEngine> engine;
  void (*entryPoint)(void **) = nullptr; // the wrapper's packed interface
  void (*packEntryPoint)(void **) = nullptr; // conv_run_pack, when hoisted
  std::vector<int64_t> descriptors;     // the memref descriptors, in order
  std::vector<size_t> descriptorOffsets; // where each one starts
  // The hoisted values' buffers (the trailing arguments after the output).
  std::vector<std::unique_ptr<void, void (*)(void *)>> packed;
  int64_t packedBytes_ = 0;
  void call(void (*entry)(void **), llvm::ArrayRef<void *> buffers) const;
  double compileMillis = 0;
};

/// Registers the dialects, interface models and LLVM translations the runner
/// needs in `registry`.
void registerCpuRunnerDialects(DialectRegistry &registry);

} // namespace mlir::conv_lower

#endif
