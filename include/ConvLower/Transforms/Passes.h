//===- Passes.h - every ConvLower pass --------------------------*- C++ -*-===//
//
// The three rooms' passes together, for drivers that register them all
// (conv-opt, conv-fuzz, a consumer's opt tool). A library of one room
// includes that room's header only: Common/Passes.h, CPU/Passes.h or
// GPU/Passes.h.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_PASSES_H
#define CONVLOWER_TRANSFORMS_PASSES_H

#include "ConvLower/Transforms/CPU/Passes.h"
#include "ConvLower/Transforms/Common/Passes.h"
#include "ConvLower/Transforms/GPU/Passes.h"

namespace mlir::conv_lower {

/// Registers the passes of every room with the pass registry.
inline void registerConvLowerPasses() {
  registerConvLowerCommonPasses();
  registerConvLowerCPUPasses();
  registerConvLowerGPUPasses();
}

} // namespace mlir::conv_lower

#endif // CONVLOWER_TRANSFORMS_PASSES_H
