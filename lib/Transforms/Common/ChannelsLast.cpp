//===- ChannelsLast.cpp - convolution operands as channels-last tensors ---===//

#include "Transforms/Common/ChannelsLast.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::conv_lower;

Value mlir::conv_lower::transposed(OpBuilder &b, Location loc, Value v,
                                   ArrayRef<int64_t> perm) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  Value empty = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  return linalg::TransposeOp::create(b, loc, v, empty, perm).getResult()[0];
}

Value mlir::conv_lower::collapsed(OpBuilder &b, Location loc, Value v,
                                  ArrayRef<ReassociationIndices> groups) {
  return groups.empty() ? v
                        : tensor::CollapseShapeOp::create(b, loc, v, groups)
                              .getResult();
}

Value mlir::conv_lower::croppedImage(OpBuilder &b, Location loc,
                                     ConvPlan &plan) {
  const ConvForm &form = *plan.form;
  Value image = plan.inputIsImage
                    ? plan.input
                    : collapsed(b, loc, plan.input, form.inputToImage);
  auto type = cast<RankedTensorType>(image.getType());
  SpatialImageDims dims = getImageDims(form.layout, 2);
  if (llvm::any_of(plan.crop, [](int64_t c) { return c != 0; })) {
    SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0)),
        strides(4, b.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(b.getContext(), type.getShape());
    for (auto [dim, crop] : llvm::zip(dims.spatial, plan.crop))
      sizes[dim] = b.getIndexAttr(type.getDimSize(dim) - crop);
    image = tensor::ExtractSliceOp::create(b, loc, image, offsets, sizes,
                                           strides);
  }
  return image;
}

Value mlir::conv_lower::channelsLastImage(OpBuilder &b, Location loc,
                                          ConvPlan &plan) {
  Value image = croppedImage(b, loc, plan);
  if (plan.form->layout == ImageLayout::nchw)
    image = transposed(b, loc, image, {0, 2, 3, 1});
  return image;
}
