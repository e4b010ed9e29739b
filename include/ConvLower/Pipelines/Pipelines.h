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
};

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
