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
                             << (size == 1 ? " entry" : " entries") << what
                             << ", got "
                             << formatList(values);
  if (llvm::any_of(values, [&](int64_t v) { return v < min; }))
    return op->emitOpError()
           << "expects " << name << " to be "
           << (min > 0 ? "positive" : "non-negative") << ", got "
           << formatList(values);
  return success();
}

/// "2*3*4" of a list of sizes.
static std::string formatProduct(ArrayRef<int64_t> values) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(values, os, "*");
  return s;
}

/// Checks the GEMM-side rows dimension M = N * O_0 * ... * O_{d-1}.
static LogicalResult verifyRows(Operation *op, int64_t batch, int64_t rows,
                                ArrayRef<int64_t> outSize, StringRef which) {
  if (ShapedType::isDynamic(batch)) {
    if (!ShapedType::isDynamic(rows))
      return op->emitOpError()
             << "expects the " << which
             << " M dimension to be dynamic when the batch is dynamic, got "
             << rows;
    return success();
  }
  int64_t expected = batch;
  for (int64_t o : outSize)
    expected *= o;
  if (ShapedType::isDynamic(rows) || rows != expected)
    return op->emitOpError()
           << "expects the " << which << " M dimension to be N*"
           << (outSize.size() == 2 ? "Ho*Wo" : "O_0*...*O_{d-1}") << " = "
           << batch << "*" << formatProduct(outSize) << " = " << expected
           << ", got " << formatDim(rows);
  return success();
}

/// The spatial rank an image of `rank` has, or failure with an error: the
/// ops take 1, 2 or 3 spatial dimensions.
static FailureOr<unsigned> verifyImageRank(Operation *op, int64_t rank,
                                           StringRef which) {
  if (rank < 3 || rank > 5) {
    op->emitOpError() << "expects a rank-3, 4 or 5 " << which
                      << " (1, 2 or 3 spatial dimensions; for 2-D [N, C, H, "
                         "W] or [N, H, W, C]), got rank "
                      << rank;
    return failure();
  }
  return unsigned(rank - 2);
}

//===----------------------------------------------------------------------===//
// Im2ColOp
//===----------------------------------------------------------------------===//

unsigned Im2ColOp::getSpatialRank() {
  return unsigned(getInput().getType().getRank() - 2);
}

int64_t Im2ColOp::getInputChannels() {
  return getInput().getType().getDimSize(
      getImageDims(getLayout(), getSpatialRank()).c);
}

SmallVector<int64_t> Im2ColOp::getInputSpatialSizes() {
  SmallVector<int64_t> sizes;
  for (unsigned d : getImageDims(getLayout(), getSpatialRank()).spatial)
    sizes.push_back(getInput().getType().getDimSize(d));
  return sizes;
}

FailureOr<SmallVector<int64_t>> Im2ColOp::getOutputSpatialSize() {
  ArrayRef<int64_t> k = getKernelSize(), s = getStrides(), d = getDilations(),
                    p = getPadding();
  unsigned rank = getSpatialRank();
  SmallVector<int64_t> in = getInputSpatialSizes(), out;
  for (unsigned i = 0; i < rank; ++i) {
    int64_t o = convOutputSize(in[i], p[i], p[rank + i], k[i], s[i], d[i]);
    if (o <= 0)
      return failure();
    out.push_back(o);
  }
  return out;
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
  FailureOr<unsigned> spatialRank =
      verifyImageRank(*this, inputType.getRank(), "input");
  if (failed(spatialRank))
    return failure();
  unsigned d = *spatialRank;
  std::string padNames = d == 2 ? " (top, left, bottom, right)"
                                : " (the low sides, then the high sides)";
  if (failed(verifyArray(*this, "kernel", getKernelSize(), d, 1, "")) ||
      failed(verifyArray(*this, "strides", getStrides(), d, 1, "")) ||
      failed(verifyArray(*this, "dilations", getDilations(), d, 1, "")) ||
      failed(verifyArray(*this, "padding", getPadding(), 2 * d, 0, padNames)))
    return failure();
  int64_t groups = getGroups();
  if (groups < 1)
    return emitOpError() << "expects groups to be positive, got " << groups;

  int64_t channels = getInputChannels();
  SmallVector<int64_t> spatial = getInputSpatialSizes();
  if (ShapedType::isDynamic(channels) ||
      llvm::any_of(spatial, ShapedType::isDynamic))
    return emitOpError() << "expects static input channels and spatial sizes; "
                            "only the batch may be dynamic";
  if (channels % groups != 0)
    return emitOpError() << "expects the input channels (" << channels
                         << ") to be divisible by groups (" << groups << ")";

  FailureOr<SmallVector<int64_t>> outSize = getOutputSpatialSize();
  if (failed(outSize)) {
    std::string in;
    llvm::raw_string_ostream os(in);
    llvm::interleave(spatial, os, "x");
    return emitOpError() << "expects the dilated kernel to fit the padded "
                            "input: kernel "
                         << formatList(getKernelSize()) << " with dilations "
                         << formatList(getDilations()) << " on input " << in
                         << " padded by " << formatList(getPadding());
  }

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
  int64_t expectedK = channels / groups;
  for (int64_t k : getKernelSize())
    expectedK *= k;
  if (shape[rank - 1] != expectedK)
    return emitOpError() << "expects the result K dimension to be "
                         << (d == 2 ? "Cg*KH*KW" : "Cg*K_0*...*K_{d-1}")
                         << " = " << expectedK << ", got "
                         << formatDim(shape[rank - 1]);
  return verifyRows(*this, inputType.getShape()[0], shape[rank - 2], *outSize,
                    "result");
}

namespace {
/// A 1x1, stride-1, unpadded, single-group channels-last im2col only
/// flattens the image: [N, H, W, C] -> [N*H*W, C] (any spatial rank).
struct Im2ColAsCollapse : OpRewritePattern<Im2ColOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Im2ColOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.isReshape() || op.getResult().getType().getRank() != 2)
      return rewriter.notifyMatchFailure(op, "not a reshape");
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, op.getResult().getType(), op.getInput(),
        getImageRowsReassociation(op.getSpatialRank()));
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
  FailureOr<unsigned> spatialRank =
      verifyImageRank(*this, resultType.getRank(), "result");
  if (failed(spatialRank))
    return failure();
  unsigned d = *spatialRank;
  if (failed(verifyArray(*this, "output_size", getOutputSize(), d, 1, "")))
    return failure();
  if (resultType.getElementType() != inputType.getElementType())
    return emitOpError() << "expects the result element type ("
                         << resultType.getElementType()
                         << ") to match the input element type ("
                         << inputType.getElementType() << ")";

  ArrayRef<int64_t> in = inputType.getShape(), out = resultType.getShape();
  SpatialImageDims dims = getImageDims(getLayout(), d);
  SmallVector<int64_t> spatial;
  for (unsigned dim : dims.spatial)
    spatial.push_back(out[dim]);
  if (ArrayRef<int64_t>(spatial) != getOutputSize()) {
    std::string got = "[";
    llvm::raw_string_ostream os(got);
    llvm::interleaveComma(spatial, os,
                          [&](int64_t v) { os << formatDim(v); });
    os << "]";
    return emitOpError() << "expects the result spatial size to be "
                            "output_size "
                         << formatList(getOutputSize()) << ", got " << got;
  }
  int64_t channels = out[dims.c];
  int64_t groups = getGroups();
  int64_t perGroup = in[inRank - 1];
  if (ShapedType::isDynamic(groups) || ShapedType::isDynamic(perGroup) ||
      ShapedType::isDynamic(channels))
    return emitOpError() << "expects static group and channel dimensions";
  if (channels != groups * perGroup)
    return emitOpError() << "expects the result channel count to be G*Fg = "
                         << groups << "*" << perGroup << " = "
                         << groups * perGroup << ", got " << channels;
  return verifyRows(*this, out[0], in[inRank - 2], spatial, "input");
}

namespace {
/// A single-group channels-last fold only unflattens: [N*Ho*Wo, F] ->
/// [N, Ho, Wo, F] (any spatial rank).
struct FoldAsExpand : OpRewritePattern<FoldOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FoldOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.isReshape())
      return rewriter.notifyMatchFailure(op, "not a reshape");
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
        op, op.getResult().getType(), op.getInput(),
        getImageRowsReassociation(op.getResult().getType().getRank() - 2));
    return success();
  }
};
} // namespace

void FoldOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<FoldAsExpand>(context);
}
