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

/// What a layer applies to the convolution's output after its bias, in this
/// order: torch's ResNet block is relu(bn(conv(x)) + identity), MobileNetV2's
/// activation is ReLU6 = clamp(y, 0, 6), its projection adds the block's
/// input. Each is an elementwise linalg.generic, which the CPU pipelines fuse
/// into one threaded pass with the bias (conv-lower-parallel-epilogue).
struct ConvEpilogue {
  /// y + residual: an operand of the output's shape and element type, the
  /// function's last argument.
  bool residual = false;
  /// max(y, 0).
  bool relu = false;
  /// min(max(y, clampMin), clampMax); float outputs only.
  bool clamp = false;
  double clampMin = 0, clampMax = 0;
  /// The result rounded to bfloat16 (round to nearest even) after
  /// everything above, which runs in f32: a network's activations kept in
  /// bf16 between layers, half the bytes written and read. The residual is
  /// then bf16 too (the output's type). Float convolutions on the CPU.
  bool bf16Output = false;
  /// The residual given in bfloat16 (added in f32) whatever the output's
  /// type: a block's identity kept in bf16 added into a float32 output.
  bool bf16Residual = false;
};

/// The output's element type: the problem's (f32, i32 for i8), or bf16.
DType outputDType(const ConvProblem &problem, const ConvEpilogue &epilogue);
/// The residual's: bf16 with bf16Output or bf16Residual, else the output's.
DType residualDType(const ConvProblem &problem, const ConvEpilogue &epilogue);
/// Why the tensor-core kernels (cuda, and the CPU twin that checks them)
/// cannot take `epilogue`, or "": a bf16 output or residual is the CPU
/// route's alone.
std::string gpuEpilogueRefusal(const ConvEpilogue &epilogue);

/// Bad input for a clamp or a bf16 output on an integer output, or a clamp
/// with bounds that are NaN or out of order.
llvm::Error validateEpilogue(const ConvProblem &problem,
                             const ConvEpilogue &epilogue);

/// A linalg-on-tensors module with `func.func @conv(%input, %filter[, %bias]
/// [, %residual]) -> output`, built with the ops' builders the way frontends
/// emit convolutions: a zero tensor.pad, a named linalg conv on a zero-filled
/// init (grouped forms through reshapes to the NGCHW/NHWGC ops, depthwise NCHW
/// through depthwise_conv_2d_nchw_chw) and a broadcast bias add. Inputs are
/// in the problem's dtype, the output is f32 (f16/bf16 accumulate in f32;
/// bf16 with epilogue.bf16Output).
/// The epilogue's ops follow (the ReLU: `arith.maximumf` with 0,
/// `arith.maxsi` for i32, the form the GPU kernel fuses into its own
/// epilogue). The context must have the func, arith, tensor and linalg
/// dialects loaded.
OwningOpRef<ModuleOp> buildConvModule(MLIRContext &context,
                                      const ConvProblem &problem,
                                      const ConvEpilogue &epilogue = {});

} // namespace mlir::conv_lower

#endif
