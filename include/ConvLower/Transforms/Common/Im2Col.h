//===- Im2Col.h - the im2col rewrite as a C++ API ---------------*- C++ -*-===//
//
// The rewrite behind `--conv-lower-im2col`, callable on one convolution (as
// rewriteToImplicitGemm is for the kernel, and upstream's
// linalg::rewriteInIm2Col next to its pass): the transform op
// `transform.conv_lower.im2col`, a frontend or a pattern can rewrite the
// convolutions it picks without running the pass.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_IM2COL_H
#define CONVLOWER_TRANSFORMS_IM2COL_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace mlir::conv_lower {

/// What the rewrite created.
struct Im2ColResult {
  /// The gather of the GEMM's A operand; null when A needs none (a 1x1,
  /// stride-1, unpadded convolution reads the image itself, reshaped).
  Im2ColOp im2col;
  /// The contraction: linalg.matmul, linalg.batch_matmul or a
  /// linalg.generic (other filter layouts, depthwise, the NCHW pointwise
  /// product).
  Operation *gemm = nullptr;
  /// A quantized convolution's zero-point correction of the GEMM's result
  /// (null otherwise).
  Operation *zeroPointCorrection = nullptr;
  /// The tensor that replaced the convolution's result.
  Value replacement;
};

/// Rewrites `conv` (a form of ConvAnalysis: a named 2-D convolution, its
/// quantized op or a linalg.generic computing one) into im2col + GEMM +
/// fold; an absorbed zero tensor.pad is erased when nothing else reads it.
/// On failure the IR is unchanged and `whyNot` (if given) says why.
FailureOr<Im2ColResult> rewriteToIm2Col(RewriterBase &rewriter,
                                        linalg::LinalgOp conv,
                                        std::string *whyNot = nullptr);

} // namespace mlir::conv_lower

#endif // CONVLOWER_TRANSFORMS_IM2COL_H
