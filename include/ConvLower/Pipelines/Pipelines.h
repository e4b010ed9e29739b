//===- Pipelines.h - ConvLower named pipelines ------------------*- C++ -*-===//
//
// conv-lower-to-llvm and conv-lower-to-nvvm. Their options are declared in
// Pipelines.td, listing the same option records as the passes they run
// (ConvLower/Transforms/PassOptions.td): ConvLowerToLLVMOptions and
// ConvLowerToNVVMOptions below are generated from it, plain structs whose
// fields have the pass options' types and defaults. Pipelines.td says why
// the pipelines are declared as passes.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_PIPELINES_PIPELINES_H
#define CONVLOWER_PIPELINES_PIPELINES_H

#include "ConvLower/Transforms/EnumOptionParser.h"
#include "ConvLower/Transforms/GPU/ImplicitGemm.h"
#include "convrt/Arch.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

// The `format` option's parser names the allowed values on a bad one. (No
// other code in the program parses a gpu::CompilationTarget option; one
// that did would have to include this header first.)
CONV_LOWER_ENUM_OPTION_PARSER(::mlir::gpu::CompilationTarget)

namespace mlir {
class OpPassManager;
namespace conv_lower {

/// ConvLowerToLLVMOptions {tileM, tileN, tileK, threads, im2col,
/// implicitGemmTwin, twinExplicitIm2col} and ConvLowerToNVVMOptions {chip
/// (convrt::Arch), features, im2col (Im2colMode), blockM, blockN, warpsM,
/// warpsN, stages, requireAll, format (gpu::CompilationTarget), toolkit},
/// and createConvLowerToLLVM/NVVM.
#define GEN_PASS_DECL
#include "ConvLower/Pipelines/Pipelines.h.inc"

/// The CUDA toolkit directory to take ptxas from: `requested` if given,
/// else the first of $CUDA_HOME, $CUDA_PATH, /usr/local/cuda holding
/// bin/ptxas, else "" (ptxas from PATH).
std::string findCudaToolkit(llvm::StringRef requested);

/// The kernel half of conv-lower-to-nvvm: from the implicit-GEMM rewrite up
/// to (not including) serialization, so callers can read the kernels'
/// launch attributes before the gpu.module becomes a binary.
void buildConvLowerToNVVMKernelPipeline(OpPassManager &pm,
                                        const ConvLowerToNVVMOptions &options);
/// The rest: NVVM to PTX/cubin (gpu.binary) and the host code to LLVM.
void buildConvLowerToNVVMBinaryPipeline(OpPassManager &pm,
                                        const ConvLowerToNVVMOptions &options);
/// Linalg-on-tensors convolutions to implicit-GEMM tensor-core kernels in a
/// gpu.binary, with LLVM host code that launches them.
void buildConvLowerToNVVMPipeline(OpPassManager &pm,
                                  const ConvLowerToNVVMOptions &options);

/// Linalg-on-tensors to the LLVM dialect on the CPU: im2col rewrite,
/// decomposition, tiling + vectorization of the contraction, bufferization,
/// and conversion to LLVM. The result runs under mlir-runner or the JIT.
void buildConvLowerToLLVMPipeline(OpPassManager &pm,
                                  const ConvLowerToLLVMOptions &options);

/// The stage conv-lower-to-llvm runs instead of the im2col rewrite with
/// implicit-gemm-twin: the GPU kernel's CPU twin. It lives with the GPU
/// pipeline (MLIRConvLowerPipelines), which installs it
/// (enableImplicitGemmTwin, registerConvLowerPipelines); the CPU pipeline
/// alone (MLIRConvLowerCPUPipelines) links no GPU code, and without the
/// stage implicit-gemm-twin fails with a diagnostic that says so.
using ImplicitGemmTwinStage = void (*)(OpPassManager &,
                                       const ConvLowerToLLVMOptions &);
void setImplicitGemmTwinStage(ImplicitGemmTwinStage stage);
/// Installs the twin stage (MLIRConvLowerPipelines); idempotent.
void enableImplicitGemmTwin();

/// Registers conv-lower-to-llvm only (MLIRConvLowerCPUPipelines: a CPU-only
/// program, no implicit-gemm-twin).
void registerConvLowerCPUPipelines();
/// Registers every named pipeline (conv-lower-to-llvm, conv-lower-to-nvvm)
/// with the pass registry and installs the twin stage
/// (MLIRConvLowerPipelines).
void registerConvLowerPipelines();

} // namespace conv_lower
} // namespace mlir

#endif
