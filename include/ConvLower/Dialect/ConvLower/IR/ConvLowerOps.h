//===- ConvLowerOps.h - conv_lower ops --------------------------*- C++ -*-===//

#ifndef CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWEROPS_H
#define CONVLOWER_DIALECT_CONVLOWER_IR_CONVLOWEROPS_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"


namespace mlir::conv_lower {
/// Positions of the channel, height and width dimensions of a rank-4 image
/// in `layout` (the batch is always dimension 0).
struct ImageDims {
  unsigned c, h, w;
};
inline ImageDims getImageDims(ImageLayout layout) {
  return layout == ImageLayout::nchw ? ImageDims{1, 2, 3} : ImageDims{3, 1, 2};
}

/// The channel and spatial dimensions of a rank-(spatialRank + 2) image in
/// `layout` (nchw: channels first, nhwc: channels last; batch at 0).
struct SpatialImageDims {
  unsigned c;
  SmallVector<unsigned, 3> spatial;
};
inline SpatialImageDims getImageDims(ImageLayout layout, unsigned spatialRank) {
  bool channelsFirst = layout == ImageLayout::nchw;
  SpatialImageDims dims{channelsFirst ? 1u : spatialRank + 1, {}};
  for (unsigned i = 0; i < spatialRank; ++i)
    dims.spatial.push_back(channelsFirst ? i + 2 : i + 1);
  return dims;
}

/// [N, S..., C] <-> [N * prod(S), C]: a channels-last image as GEMM rows
/// (what a reshape-only im2col or fold does).
inline SmallVector<ReassociationIndices>
getImageRowsReassociation(unsigned spatialRank) {
  ReassociationIndices rows;
  for (unsigned i = 0; i <= spatialRank; ++i)
    rows.push_back(i);
  return {rows, {int64_t(spatialRank) + 1}};
}
} // namespace mlir::conv_lower

#define GET_OP_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h.inc"

#endif
