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
  /// threads at once.
  llvm::Error run(llvm::ArrayRef<void *> buffers) const;

  /// Wall time of the pass pipeline plus JIT compilation.
  double compileMs() const { return compileMillis; }

private:
  CpuRunner() = default;
  std::unique_ptr<ExecutionEngine> engine;
  void (*entryPoint)(void **) = nullptr; // the wrapper's packed interface
  std::vector<int64_t> descriptors;     // the memref descriptors, in order
  std::vector<size_t> descriptorOffsets; // where each one starts
  double compileMillis = 0;
};

/// Registers the dialects, interface models and LLVM translations the runner
/// needs in `registry`.
void registerCpuRunnerDialects(DialectRegistry &registry);

} // namespace mlir::conv_lower

#endif
