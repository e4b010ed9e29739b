//===- CPU/Passes.h - ConvLower's CPU passes --------------------*- C++ -*-===//
//
// The CPU room: direct depthwise, Winograd, im2col panels, register tiling
// and vectorization, and the copies and transposes around them. Declared in
// CPU/Passes.td; nothing here names a GPU dialect, so a CPU-only consumer
// links no NVVM.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_CPU_PASSES_H
#define CONVLOWER_TRANSFORMS_CPU_PASSES_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir::conv_lower {

#define GEN_PASS_DECL
#include "ConvLower/Transforms/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "ConvLower/Transforms/CPU/Passes.h.inc"

/// conv-lower-grouped-direct as the CPU pipeline runs it (and as the runner's
/// route report predicts it): groups of fewer filters than the GEMM tile's
/// `tileN`, in multiples of 4, half an AVX2 vector (ResNeXt-50 32x4d's first
/// stage: as per-group GEMMs 4 columns wide its layers ran 2x slower;
/// docs/performance-journal.md, 2026-12-04, fourth session).
inline ConvLowerGroupedDirectOptions cpuGroupedDirectOptions(int64_t tileN) {
  ConvLowerGroupedDirectOptions options;
  options.maxFilters = tileN;
  options.filterLanes = 4;
  return options;
}

} // namespace mlir::conv_lower

#endif // CONVLOWER_TRANSFORMS_CPU_PASSES_H
