//===- ConvAnalysis.h - Which convolutions the passes handle, and how -----===//
//
// The convolution forms as data (where H and W sit, how the filter regroups
// into the GEMM's B operand) and the analysis every rewrite starts from:
// strides, dilations, absorbed zero padding, group and channel counts.
// Shared by the im2col rewrite and the implicit-GEMM kernel generator, so
// both accept exactly the same convolutions.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_CONVANALYSIS_H
#define CONVLOWER_TRANSFORMS_CONVANALYSIS_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <string>

namespace mlir::conv_lower {

/// Role of a dimension of the regrouped filter B.
enum class Role { G, F, K };

/// The axes of a form's input, filter and output, one letter per dim as in
/// the named op's indexing maps: n batch, g group (depthwise: the channel),
/// c channel of a group, f filter of a group (depthwise: the multiplier),
/// d h w the output's depth, rows and columns (windowed in the input), q r s
/// the kernel's. A linalg.generic is this form when its maps name the same axes,
/// whatever its loop order (matchGenericConvolution).
struct FormAxes {
  StringRef x, w, y;
};

struct ConvForm {
  StringRef name;
  FormAxes axes;
  ImageLayout layout;
  KOrder kOrder;
  /// Spatial dims of the input (and output) operand, outer to inner: (h, w)
  /// for a 2-D form, (d, h, w) for a 3-D one.
  SmallVector<unsigned, 3> spatialDims;
  /// Spatial dims of the filter operand, in the same order.
  SmallVector<unsigned, 3> kernelDims;
  /// Collapses a grouped input/output (separate g and c, or g and f) to the
  /// image of the im2col and fold ops; empty when the operand is one already.
  SmallVector<ReassociationIndices> inputToImage, outputToImage;
  /// Collapses the filter into B, whose dims play `bRoles`.
  SmallVector<ReassociationIndices> filterToB;
  SmallVector<Role> bRoles;
  /// Matches the named op; fills strides and dilations.
  bool (*matchNamed)(linalg::LinalgOp, SmallVector<int64_t> &,
                     SmallVector<int64_t> &);
  /// Matches the form's quantized named op (`..._q`: the same maps, two more
  /// inputs, the input's and the filter's zero points); null when linalg has
  /// none.
  bool (*matchQuantized)(linalg::LinalgOp, SmallVector<int64_t> &,
                         SmallVector<int64_t> &) = nullptr;
};

/// Whether `op` computes the convolution of `axes`: its maps name those axes
/// (any loop order; the input's d, h and w are `o * stride + k * dilation`,
/// either term first), every output axis is parallel and every other loop a
/// reduction, and its body is a multiply-accumulate (acc + a * b in either
/// operand order, each factor its block argument or a widening cast of it to
/// the accumulator's type). Fills strides and dilations (in the input's
/// order of its windowed axes).
bool matchGenericConvolution(linalg::GenericOp op, const FormAxes &axes,
                             SmallVector<int64_t> &strides,
                             SmallVector<int64_t> &dilations);

/// Everything the rewrite needs, computed without touching the IR.
struct ConvPlan {
  const ConvForm *form = nullptr;
  linalg::LinalgOp op;
  Value input;                    // the image, or the source of a zero pad
  tensor::PadOp absorbedPad;      // the pad folded into `padding`, if any
  /// A grouped input split (channels into g, c) from a padded rank-4 image:
  /// the pad is absorbed through it, and `input` is that rank-4 image.
  tensor::ExpandShapeOp absorbedExpand;
  bool inputIsImage = false;      // `input` is the image already (no collapse)
  /// Per spatial dim (outer to inner), as the im2col op takes them.
  SmallVector<int64_t> strides, dilations, kernel, outSize;
  SmallVector<int64_t> crop;      // input extent the output never reads
  /// The low sides, then the high sides (2-D: top, left, bottom, right),
  /// trimmed to what the output reads: see fitOutput.
  SmallVector<int64_t> padding;
  /// What the absorbed padding reads: 0, or (analysis option
  /// absorbZeroPointPad) a quantized convolution's input zero point, which
  /// is torch's quantized padding (the real value 0).
  int64_t padValue = 0;
  int64_t groups, channels, filtersPerGroup;
  SmallVector<int64_t> bShape;    // the regrouped filter's shape
  /// A quantized convolution's scalar zero points (null otherwise): it
  /// computes sum (x - inputZeroPoint) * (w - filterZeroPoint).
  Value inputZeroPoint, filterZeroPoint;

  bool isQuantized() const { return static_cast<bool>(inputZeroPoint); }
  /// The GEMM's reduction size per group: Cg * KH * KW (* KD).
  int64_t reductionSize() const {
    int64_t k = channels / groups;
    for (int64_t size : kernel)
      k *= size;
    return k;
  }

  unsigned spatialRank() const { return kernel.size(); }
  /// The output pixels per image: prod(outSize).
  int64_t pixelsPerImage() const {
    int64_t pixels = 1;
    for (int64_t o : outSize)
      pixels *= o;
    return pixels;
  }
  bool isPointwise() const {
    auto all = [](ArrayRef<int64_t> values, int64_t v) {
      return llvm::all_of(values, [&](int64_t x) { return x == v; });
    };
    return all(kernel, 1) && all(strides, 1) && all(padding, 0) &&
           all(crop, 0);
  }
};

/// The supported forms, one entry per linalg named convolution.
ArrayRef<ConvForm> getConvForms();

/// Collapsed shape of `shape` under `reassociation` (identity when empty).
SmallVector<int64_t> collapseShape(ArrayRef<int64_t> shape,
                                   ArrayRef<ReassociationIndices> reassoc);

/// What a rewrite can absorb beyond zero padding.
struct AnalysisOptions {
  /// A quantized convolution's pad whose value is its (constant) input zero
  /// point: the implicit-GEMM kernel fills such padding with the zero point;
  /// the im2col op's padding reads 0, so its rewrite leaves the pad in place.
  bool absorbZeroPointPad = false;
};

/// The plan for `op`, or failure with `whyNot` saying why it is not handled.
FailureOr<ConvPlan> analyzeConv(linalg::LinalgOp op, std::string &whyNot,
                                const AnalysisOptions &options = {});

/// A tensor.pad with static amounts whose padding value is a constant zero
/// (the padding a convolution's rewrites absorb). Null-safe.
bool isStaticZeroPad(tensor::PadOp pad);

/// A named convolution, or a linalg.generic shaped like one.
bool looksLikeConvolution(linalg::LinalgOp op);

} // namespace mlir::conv_lower

#endif // CONVLOWER_TRANSFORMS_CONVANALYSIS_H
