//===- Pipelines.h - ConvLower named pipelines ------------------*- C++ -*-===//

#ifndef CONVLOWER_PIPELINES_PIPELINES_H
#define CONVLOWER_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace conv_lower {

/// Options of `conv-lower-to-llvm`.
struct ConvLowerToLLVMOptions
    : public PassPipelineOptions<ConvLowerToLLVMOptions> {
  PassOptions::Option<int64_t> tileM{
      *this, "tile-m", llvm::cl::desc("GEMM tile size along M (output pixels)"),
      llvm::cl::init(8)};
  PassOptions::Option<int64_t> tileN{
      *this, "tile-n", llvm::cl::desc("GEMM tile size along N (filters)"),
      llvm::cl::init(32)};
  PassOptions::Option<int64_t> tileK{
      *this, "tile-k", llvm::cl::desc("GEMM tile size along K (reduction)"),
      llvm::cl::init(1)};
  PassOptions::Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Worker threads (OpenMP): above 1, the GEMMs run as "
                     "parallel blocks of rows; the code then needs libomp "
                     "at run time"),
      llvm::cl::init(1)};
  PassOptions::Option<bool> im2col{
      *this, "im2col",
      llvm::cl::desc("Run the im2col rewrite first (off: lower convs as-is)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> implicitGemmTwin{
      *this, "implicit-gemm-twin",
      llvm::cl::desc("Instead of the im2col rewrite, run every convolution "
                     "as the CPU twin of the GPU implicit-GEMM kernel (fails "
                     "on a convolution the kernel cannot take)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> twinExplicitIm2col{
      *this, "twin-explicit-im2col",
      llvm::cl::desc("With implicit-gemm-twin: the explicit mode (X_col "
                     "stored first, then the GEMM reads it)"),
      llvm::cl::init(false)};
};

/// Options of `conv-lower-to-nvvm`.
struct ConvLowerToNVVMOptions
    : public PassPipelineOptions<ConvLowerToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("GPU architecture: sm_80, sm_86, sm_89, sm_90 or sm_90a"),
      llvm::cl::init("sm_80")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features (default: +ptx80, which every supported "
                     "chip accepts)"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What the gpu.binary holds: isa (PTX text), bin (cubin, "
                     "assembled by ptxas) or fatbin"),
      llvm::cl::init("bin")};
  PassOptions::Option<std::string> im2col{
      *this, "im2col",
      llvm::cl::desc("implicit (the gather fused into the GEMM kernel's "
                     "loads) or explicit (an im2col kernel stores X_col, the "
                     "GEMM kernel reads it: for comparison)"),
      llvm::cl::init("implicit")};
  PassOptions::Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit holding bin/ptxas (default: $CUDA_HOME, "
                     "$CUDA_PATH or /usr/local/cuda, where ptxas exists)"),
      llvm::cl::init("")};
  PassOptions::Option<int64_t> blockM{
      *this, "block-m", llvm::cl::desc("CTA tile rows; 0: heuristic"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> blockN{
      *this, "block-n", llvm::cl::desc("CTA tile columns; 0: heuristic"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> warpsM{
      *this, "warps-m", llvm::cl::desc("Warps along M; 0: heuristic"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> warpsN{
      *this, "warps-n", llvm::cl::desc("Warps along N; 0: heuristic"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> stages{
      *this, "stages", llvm::cl::desc("Pipeline stages; 0: heuristic"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> requireAll{
      *this, "require-all",
      llvm::cl::desc("Fail on a convolution the kernel cannot take (default: "
                     "leave it to the host code)"),
      llvm::cl::init(false)};
};

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

/// Registers every named pipeline with the pass registry.
void registerConvLowerPipelines();

} // namespace conv_lower
} // namespace mlir

#endif
