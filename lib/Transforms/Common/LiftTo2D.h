//===- LiftTo2D.h - 1-D and batchless convolutions as 2-D ones --*- C++ -*-===//
//
// The conv-lower-lift-to-2d rewrite as a function, for the passes that take
// a convolution only in its 2-D (or 3-D) form and must take every form the
// im2col route takes (conv-lower-implicit-gemm).
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_COMMON_LIFTTO2D_H
#define CONVLOWER_TRANSFORMS_COMMON_LIFTTO2D_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::conv_lower {

/// Rewrites every 1-D and batchless convolution under `root` (the named ops
/// and IREE's batchless channels-last generics) as the 2-D or 3-D named form
/// with unit dims; everything else is left untouched.
void liftConvolutionsTo2D(RewriterBase &rewriter, Operation *root);

} // namespace mlir::conv_lower

#endif // CONVLOWER_TRANSFORMS_COMMON_LIFTTO2D_H
