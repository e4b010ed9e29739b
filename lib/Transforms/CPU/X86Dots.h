//===- X86Dots.h - a register tile in K groups on x86 dot products -*- C++ -*-//
//
// conv-lower-x86-dot-product's lowering of one tile, for the passes after it
// that meet a tile they cannot place otherwise (conv-lower-amx-tiles: a
// whole AMX tile whose operand cannot be addressed in memory).
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_LIB_TRANSFORMS_CPU_X86DOTS_H
#define CONVLOWER_LIB_TRANSFORMS_CPU_X86DOTS_H

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::conv_lower {

/// `contract`, a register tile in K groups (A [M, R, g] x B [R, N, g] into
/// [M, N]: bf16 pairs into f32, i8 quads into i32 with A zero-extended, or,
/// with `signedI8`, sign-extended or as i8), rewritten as VDPBF16PS or
/// VPDPBUSD dot products on its accumulator's lanes; failure, with nothing
/// changed, where it is no such tile.
LogicalResult lowerGroupTileToDots(RewriterBase &rewriter,
                                   vector::ContractionOp contract,
                                   bool signedI8);

} // namespace mlir::conv_lower

#endif // CONVLOWER_LIB_TRANSFORMS_CPU_X86DOTS_H
