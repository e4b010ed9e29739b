//===- Routes.h - the report's routes: target, A operand ---*- C++ -*-===//
//
// A leaf: the route enums a RunReport holds (the target, how the GEMM's A
// operand is formed) and their names, which only printing uses.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_ROUTES_H
#define CONVLOWER_RUNNER_ROUTES_H

#include "llvm/ADT/StringRef.h"

namespace mlir::conv_lower {

/// Where the convolution runs.
enum class Target {
  Auto,    ///< cuda where a device is usable and the route applies, else cpu
  Cpu,     ///< im2col + tiled GEMM, JIT'd on the host
  CpuTwin, ///< the GPU kernel's tiled loop nest, JIT'd on the host
  Cuda,    ///< the tensor-core kernel on a CUDA device
};

/// How the route that ran forms the GEMM's A operand (the report's
/// "im2col").
enum class Im2colRoute {
  Explicit, ///< X_col materialized whole, then the GEMM
  Implicit, ///< the gather fused into the GPU kernel's (or its twin's) loads
  Panels,   ///< the CPU's X_col per block of output rows, never whole
  Direct,   ///< the CPU's depthwise convolution on vectors: no A operand
  Winograd, ///< the CPU's Winograd F(4x4, 3x3): no GEMM of the image
};

/// "auto", "cpu", "cpu-twin", "cuda": conv-run's --target spelling.
llvm::StringRef toString(Target target);
/// "explicit", "implicit", "panels", "direct", "winograd".
llvm::StringRef toString(Im2colRoute route);

} // namespace mlir::conv_lower

#endif
