//===- ConvModule.h - a conv problem as a linalg module ---------*- C++ -*-===//

#ifndef CONVLOWER_RUNNER_CONVMODULE_H
#define CONVLOWER_RUNNER_CONVMODULE_H

#include "ConvLower/Runner/ConvProblem.h"

#include <string>

namespace mlir::conv_lower {

/// The name of the convolution function in built modules.
inline constexpr llvm::StringLiteral kConvFunctionName = "conv";

/// A linalg-on-tensors module with `func.func @conv(%input, %filter[, %bias])
/// -> output`, written the way frontends emit convolutions: a zero tensor.pad,
/// a named linalg conv on a zero-filled init (grouped forms through reshapes
/// to the NGCHW/NHWGC ops, depthwise NCHW through depthwise_conv_2d_nchw_chw)
/// and a broadcast bias add. Inputs are in the problem's dtype, the output is
/// f32 (f16/bf16 accumulate in f32).
std::string buildConvModule(const ConvProblem &problem);

} // namespace mlir::conv_lower

#endif
