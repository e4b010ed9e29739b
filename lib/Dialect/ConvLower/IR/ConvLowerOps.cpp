//===- ConvLowerOps.cpp - conv_lower op verifiers and folds --------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::conv_lower;

#define GET_OP_CLASSES
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

static std::string formatList(ArrayRef<int64_t> values) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(values, os);
  os << "]";
  return s;
}

/// A dimension size for a message: "?" when dynamic.
static std::string formatDim(int64_t size) {
  return ShapedType::isDynamic(size) ? std::string("?") : std::to_string(size);
}

/// Output size of one spatial dimension by the convolution formula, or a
/// non-positive number when the dilated kernel does not fit the padded input.
static int64_t convOutputSize(int64_t in, int64_t padBefore, int64_t padAfter,
                              int64_t kernel, int64_t stride,
                              int64_t dilation) {
  int64_t span = in + padBefore + padAfter - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  return span / stride + 1;
}

/// Checks an attribute array's length and that every entry is at least `min`.
static LogicalResult verifyArray(Operation *op, StringRef name,
                                 ArrayRef<int64_t> values, size_t size,
                                 int64_t min, StringRef what) {
  if (values.size() != size)
    return op->emitOpError() << "expects " << name << " to have " << size
                             << " entries" << what << ", got "
                             << formatList(values);
  if (llvm::any_of(values, [&](int64_t v) { return v < min; }))
    return op->emitOpError()
           << "expects " << name << " to be "
           << (min > 0 ? "positive" : "non-negative") << ", got "
           << formatList(values);
  return success();
}

/// Checks the GEMM-side rows dimension M = N * Ho * Wo.
static LogicalResult verifyRows(Operation *op, int64_t batch, int64_t rows,
                                int64_t ho, int64_t wo, StringRef which) {
  if (ShapedType::isDynamic(batch)) {
    if (!ShapedType::isDynamic(rows))
      return op->emitOpError()
             << "expects the " << which
             << " M dimension to be dynamic when the batch is dynamic, got "
             << rows;
    return success();
  }
  int64_t expected = batch * ho * wo;
  if (ShapedType::isDynamic(rows) || rows != expected)
    return op->emitOpError()
           << "expects the " << which << " M dimension to be N*Ho*Wo = "
           << batch << "*" << ho << "*" << wo << " = " << expected << ", got "
           << formatDim(rows);
  return success();
}

//===----------------------------------------------------------------------===//
// Im2ColOp
//===----------------------------------------------------------------------===//

int64_t Im2ColOp::getInputChannels() {
  return getInput().getType().getDimSize(getImageDims(getLayout()).c);
}
int64_t Im2ColOp::getInputHeight() {
  return getInput().getType().getDimSize(getImageDims(getLayout()).h);
}
int64_t Im2ColOp::getInputWidth() {
  return getInput().getType().getDimSize(getImageDims(getLayout()).w);
}

FailureOr<std::pair<int64_t, int64_t>> Im2ColOp::getOutputSpatialSize() {
  ArrayRef<int64_t> k = getKernelSize(), s = getStrides(), d = getDilations(),
                    p = getPadding();
  int64_t ho = convOutputSize(getInputHeight(), p[0], p[2], k[0], s[0], d[0]);
  int64_t wo = convOutputSize(getInputWidth(), p[1], p[3], k[1], s[1], d[1]);
  if (ho <= 0 || wo <= 0)
    return failure();
  return std::make_pair(ho, wo);
}

bool Im2ColOp::isReshape() {
  auto ones = [](ArrayRef<int64_t> a) {
    return llvm::all_of(a, [](int64_t v) { return v == 1; });
  };
  auto zeros = [](ArrayRef<int64_t> a) {
    return llvm::all_of(a, [](int64_t v) { return v == 0; });
  };
  return getLayout() == ImageLayout::nhwc && getGroups() == 1 &&
         ones(getKernelSize()) && ones(getStrides()) && zeros(getPadding());
}

LogicalResult Im2ColOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getResult().getType();
  if (inputType.getRank() != 4)
    return emitOpError() << "expects a rank-4 input ([N, C, H, W] or "
                            "[N, H, W, C]), got rank "
                         << inputType.getRank();
  if (failed(verifyArray(*this, "kernel", getKernelSize(), 2, 1, "")) ||
      failed(verifyArray(*this, "strides", getStrides(), 2, 1, "")) ||
      failed(verifyArray(*this, "dilations", getDilations(), 2, 1, "")) ||
      failed(verifyArray(*this, "padding", getPadding(), 4, 0,
                         " (top, left, bottom, right)")))
    return failure();
  int64_t groups = getGroups();
  if (groups < 1)
    return emitOpError() << "expects groups to be positive, got " << groups;

  int64_t channels = getInputChannels();
  if (ShapedType::isDynamic(channels) ||
      ShapedType::isDynamic(getInputHeight()) ||
      ShapedType::isDynamic(getInputWidth()))
    return emitOpError() << "expects static input channels and spatial sizes; "
                            "only the batch may be dynamic";
  if (channels % groups != 0)
    return emitOpError() << "expects the input channels (" << channels
                         << ") to be divisible by groups (" << groups << ")";

  FailureOr<std::pair<int64_t, int64_t>> outSize = getOutputSpatialSize();
  if (failed(outSize))
    return emitOpError() << "expects the dilated kernel to fit the padded "
                            "input: kernel "
                         << formatList(getKernelSize()) << " with dilations "
                         << formatList(getDilations()) << " on input "
                         << getInputHeight() << "x" << getInputWidth()
                         << " padded by " << formatList(getPadding());

  if (resultType.getElementType() != inputType.getElementType())
    return emitOpError() << "expects the result element type ("
                         << resultType.getElementType()
                         << ") to match the input element type ("
                         << inputType.getElementType() << ")";

  int64_t rank = resultType.getRank();
  if (rank != 3 && !(rank == 2 && groups == 1))
    return emitOpError() << "expects a [G, M, K] result, or [M, K] with one "
                            "group; got rank "
                         << rank << " with " << groups << " group(s)";
  ArrayRef<int64_t> shape = resultType.getShape();
  if (rank == 3 && shape[0] != groups)
    return emitOpError() << "expects result dimension 0 to be the group count "
                         << groups << ", got " << formatDim(shape[0]);
  int64_t expectedK =
      channels / groups * getKernelSize()[0] * getKernelSize()[1];
  if (shape[rank - 1] != expectedK)
    return emitOpError() << "expects the result K dimension to be "
                            "Cg*KH*KW = "
                         << expectedK << ", got " << formatDim(shape[rank - 1]);
  return verifyRows(*this, inputType.getShape()[0], shape[rank - 2],
                    outSize->first, outSize->second, "result");
}

namespace {
/// A 1x1, stride-1, unpadded, single-group NHWC im2col only flattens the
/// image: [N, H, W, C] -> [N*H*W, C].
struct Im2ColAsCollapse : OpRewritePattern<Im2ColOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Im2ColOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.isReshape() || op.getResult().getType().getRank() != 2)
      return rewriter.notifyMatchFailure(op, "not a reshape");
    SmallVector<ReassociationIndices> reassociation = {{0, 1, 2}, {3}};
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, op.getResult().getType(), op.getInput(), reassociation);
    return success();
  }
};
} // namespace

void Im2ColOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<Im2ColAsCollapse>(context);
}

//===----------------------------------------------------------------------===//
// FoldOp
//===----------------------------------------------------------------------===//

int64_t FoldOp::getGroups() {
  RankedTensorType type = getInput().getType();
  return type.getRank() == 3 ? type.getShape()[0] : 1;
}

bool FoldOp::isReshape() {
  return getLayout() == ImageLayout::nhwc && getInput().getType().getRank() == 2;
}

LogicalResult FoldOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getResult().getType();
  int64_t inRank = inputType.getRank();
  if (inRank != 2 && inRank != 3)
    return emitOpError() << "expects a [G, M, Fg] or [M, F] input, got rank "
                         << inRank;
  if (resultType.getRank() != 4)
    return emitOpError() << "expects a rank-4 result ([N, F, Ho, Wo] or "
                            "[N, Ho, Wo, F]), got rank "
                         << resultType.getRank();
  if (failed(verifyArray(*this, "output_size", getOutputSize(), 2, 1, "")))
    return failure();
  if (resultType.getElementType() != inputType.getElementType())
    return emitOpError() << "expects the result element type ("
                         << resultType.getElementType()
                         << ") to match the input element type ("
                         << inputType.getElementType() << ")";

  ArrayRef<int64_t> in = inputType.getShape(), out = resultType.getShape();
  ImageDims dims = getImageDims(getLayout());
  int64_t ho = out[dims.h], wo = out[dims.w], channels = out[dims.c];
  if (ho != getOutputSize()[0] || wo != getOutputSize()[1])
    return emitOpError() << "expects the result spatial size to be "
                            "output_size "
                         << formatList(getOutputSize()) << ", got ["
                         << formatDim(ho) << ", " << formatDim(wo) << "]";
  int64_t groups = getGroups();
  int64_t perGroup = in[inRank - 1];
  if (ShapedType::isDynamic(groups) || ShapedType::isDynamic(perGroup) ||
      ShapedType::isDynamic(channels))
    return emitOpError() << "expects static group and channel dimensions";
  if (channels != groups * perGroup)
    return emitOpError() << "expects the result channel count to be G*Fg = "
                         << groups << "*" << perGroup << " = "
                         << groups * perGroup << ", got " << channels;
  return verifyRows(*this, out[0], in[inRank - 2], ho, wo, "input");
}

namespace {
/// A single-group NHWC fold only unflattens: [N*Ho*Wo, F] -> [N, Ho, Wo, F].
struct FoldAsExpand : OpRewritePattern<FoldOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FoldOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.isReshape())
      return rewriter.notifyMatchFailure(op, "not a reshape");
    SmallVector<ReassociationIndices> reassociation = {{0, 1, 2}, {3}};
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
        op, op.getResult().getType(), op.getInput(), reassociation);
    return success();
  }
};
} // namespace

void FoldOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<FoldAsExpand>(context);
}
