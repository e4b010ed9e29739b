//===- Bufferize.h - the bufferization step both pipelines share -*- C++ -*-===//

#ifndef CONVLOWER_PIPELINES_BUFFERIZE_H
#define CONVLOWER_PIPELINES_BUFFERIZE_H

#include "ConvLower/Transforms/Common/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::conv_lower {

/// One-shot bufferization across function boundaries, with identity-layout
/// memrefs at the boundaries (what the JIT wrapper and the runtime pass).
/// Pads of empty tensors become fills first: MLIR 22 cannot bufferize them.
inline void addOneShotBufferize(OpPassManager &pm) {
  pm.addPass(createConvLowerFillEmptyPads());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
}

} // namespace mlir::conv_lower

#endif
