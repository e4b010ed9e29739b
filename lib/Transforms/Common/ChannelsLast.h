//===- ChannelsLast.h - convolution operands as channels-last tensors -*- C++ -*-===//
//
// The CPU passes that compute a convolution on channel vectors
// (conv-lower-depthwise-direct, conv-lower-winograd) read its image as
// [N, H, W, C]: these build that view of a ConvPlan's operands.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_CHANNELSLAST_H
#define CONVLOWER_TRANSFORMS_CHANNELSLAST_H

#include "Transforms/Common/ConvAnalysis.h"

namespace mlir::conv_lower {

/// `v` transposed by `perm` (a linalg.transpose into a new tensor).
Value transposed(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm);

/// `v` collapsed by `groups`; `v` itself when `groups` is empty.
Value collapsed(OpBuilder &b, Location loc, Value v,
                ArrayRef<ReassociationIndices> groups);

/// The image in its layout (2-D: [N, C, H, W] or [N, H, W, C]), cropped to
/// what the output reads (not padded: the consumer pads what it reads).
Value croppedImage(OpBuilder &b, Location loc, ConvPlan &plan);

/// The image as [N, H, W, C], cropped to what the output reads (not
/// padded: the consumer pads what it reads).
Value channelsLastImage(OpBuilder &b, Location loc, ConvPlan &plan);

} // namespace mlir::conv_lower

#endif
