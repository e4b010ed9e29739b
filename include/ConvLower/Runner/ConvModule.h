//===- ConvModule.h - a conv problem as a linalg module ---------*- C++ -*-===//

#ifndef CONVLOWER_RUNNER_CONVMODULE_H
#define CONVLOWER_RUNNER_CONVMODULE_H

#include "ConvLower/Runner/ConvProblem.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::conv_lower {

/// The name of the convolution function in built modules.
inline constexpr llvm::StringLiteral kConvFunctionName = "conv";

/// The MLIR element type of a stored dtype (tf32 data is f32).
Type elementType(MLIRContext &context, DType dtype);

/// A linalg-on-tensors module with `func.func @conv(%input, %filter[, %bias])
/// -> output`, built with the ops' builders the way frontends emit
/// convolutions: a zero tensor.pad, a named linalg conv on a zero-filled init
/// (grouped forms through reshapes to the NGCHW/NHWGC ops, depthwise NCHW
/// through depthwise_conv_2d_nchw_chw) and a broadcast bias add. Inputs are
/// in the problem's dtype, the output is f32 (f16/bf16 accumulate in f32).
/// With `relu`, a ReLU (`arith.maximumf` with 0; `arith.maxsi` for i32)
/// follows, in the form the GPU kernel fuses into its epilogue.
/// The context must have the func, arith, tensor and linalg dialects loaded.
OwningOpRef<ModuleOp> buildConvModule(MLIRContext &context,
                                      const ConvProblem &problem,
                                      bool relu = false);

} // namespace mlir::conv_lower

#endif
