//===- GpuKernel.h - compile a conv to a tensor-core kernel and run it -*- C++ -*-//
//
// conv-run's GPU route: conv-lower-to-nvvm on the conv function, the kernel's
// launch read from the attributes the implicit-GEMM pass records, the PTX and
// the cubin (ptxas through MLIR's gpu-module-to-binary) taken out of the
// gpu.binary, and a runtime manifest describing it all. Compiling needs no
// GPU; running goes through runtime/ (convrt::runKernel) on device buffers.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_GPUKERNEL_H
#define CONVLOWER_RUNNER_GPUKERNEL_H

#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Runner/ConvProblem.h"
#include "ConvLower/Transforms/GPU/ImplicitGemm.h"

#include "convrt/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::conv_lower {

struct GpuKernelBuild {
  convrt::Manifest manifest; ///< Kernel spec, arguments (x, w, y), problem.
  std::string ptx;
  std::string cubin;
  std::string tiles; ///< The tile attributes, as printed in the IR.
  /// The kernel family (ImplicitGemmResult::family).
  KernelFamily family = KernelFamily::mma_sync;
  double compileMs = 0;
};

/// One kernel conv-lower-implicit-gemm builds: its family and its
/// conv_lower.tiles, as printed in the IR.
struct GpuKernelInfo {
  KernelFamily family = KernelFamily::mma_sync;
  std::string tiles;
  /// Whether its epilogue adds a residual (a kernel argument of its own).
  bool residual = false;
};

/// The GEMM kernels conv-lower-implicit-gemm builds for `chip` from the
/// convolutions of `function`, after conv-lower-lift-to-2d as both
/// pipelines run them, read off a copy of `module`: the kernels the CUDA
/// route compiles and the twin of the same chip emulates (the choice of
/// family and tiles does not depend on the target). Convolutions the kernel
/// does not take are left out.
llvm::SmallVector<GpuKernelInfo> describeGpuKernels(ModuleOp module,
                                                    llvm::StringRef function,
                                                    convrt::Arch chip,
                                                    Im2colMode im2col);

/// Compiles the one convolution in `function` of `module` (left unchanged)
/// for `options.chip`; the error names what the kernel cannot take.
llvm::Expected<GpuKernelBuild>
compileGpuKernel(ModuleOp module, llvm::StringRef function,
                 const ConvProblem &problem,
                 const ConvLowerToNVVMOptions &options);

/// Writes DIR/manifest.json, DIR/<kernel>.cubin and DIR/<kernel>.ptx
/// (creating DIR), the bundle convrt-run and bench/gpu read.
llvm::Error writeGpuBundle(const std::string &directory,
                           const GpuKernelBuild &build);

} // namespace mlir::conv_lower

#endif
