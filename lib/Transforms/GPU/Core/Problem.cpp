//===- Problem.cpp - a convolution as the kernel sees it --------------------===//
//
// Every supported form (layouts, groups, depthwise, absorbed padding) reduces
// to sizes and the element strides of logical coordinates, so one kernel
// body serves them all; and the checks of what the kernel cannot take
// (element types, dynamic shapes, a non-constant init, too many groups).
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/Core.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

namespace {

/// Row-major element strides of a static shape.
SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

FailureOr<MmaKind> getMmaKind(Type input, Type filter, Type output,
                              std::string &whyNot) {
  if (input != filter) {
    whyNot = "input and filter element types differ";
    return failure();
  }
  if (input.isSignlessInteger(8)) {
    if (output.isSignlessInteger(32))
      return MmaKind::S8;
    whyNot = "i8 data needs an i32 output (the s8 MMA accumulates in s32)";
    return failure();
  }
  if (!output.isF32() && !output.isF16() && !output.isBF16()) {
    whyNot = "the output must be f32, f16 or bf16";
    return failure();
  }
  if (input.isF16())
    return MmaKind::F16;
  if (input.isBF16())
    return MmaKind::BF16;
  if (input.isF32())
    return MmaKind::TF32;
  whyNot = "tensor cores take f16, bf16, f32 (as tf32) or i8 data";
  return failure();
}

/// A constant integer that fits 32 bits (a zero point, an i32 init).
FailureOr<int64_t> getConstantInt32(Value value) {
  APInt integer;
  if (!matchPattern(value, m_ConstantInt(&integer)) ||
      integer.getSignificantBits() > 32)
    return failure();
  return integer.getSExtValue();
}

/// The init as a constant, when it is a fill of one (zero when the fill
/// value is a zero of any type).
FailureOr<double> getConstantInit(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return failure();
  Value value = fill.getInputs()[0];
  FloatAttr attr;
  if (matchPattern(value, m_Constant(&attr)))
    return attr.getValueAsDouble();
  // An integer init: i32 values are exact as doubles.
  if (FailureOr<int64_t> integer = getConstantInt32(value); succeeded(integer))
    return static_cast<double>(*integer);
  return failure();
}

/// Sizes, padding, strides and dilations from the analysis; a 3-D
/// convolution's depth is its first spatial dim (h and w stay the last two).
void setSizes(GemmProblem &p, const ConvPlan &plan, ArrayRef<int64_t> image,
              const SpatialImageDims &dims) {
  unsigned rank = plan.spatialRank(), h = rank - 2, w = rank - 1;
  p.batch = image[0];
  p.groups = plan.groups;
  p.cg = plan.channels / plan.groups;
  p.fg = plan.filtersPerGroup;
  p.h = image[dims.spatial[h]];
  p.w = image[dims.spatial[w]];
  p.kh = plan.kernel[h];
  p.kw = plan.kernel[w];
  p.ho = plan.outSize[h];
  p.wo = plan.outSize[w];
  p.strideH = plan.strides[h];
  p.strideW = plan.strides[w];
  p.dilationH = plan.dilations[h];
  p.dilationW = plan.dilations[w];
  p.padTop = plan.padding[h];
  p.padLeft = plan.padding[w];
  if (rank == 3) {
    p.hasDepth = true;
    p.d = image[dims.spatial[0]];
    p.kd = plan.kernel[0];
    p.od = plan.outSize[0];
    p.strideD = plan.strides[0];
    p.dilationD = plan.dilations[0];
    p.padFront = plan.padding[0];
  }
}

/// Input and output strides of (n, c, [d,] h, w), both as images.
void setImageStrides(GemmProblem &p, ArrayRef<int64_t> image,
                     ArrayRef<int64_t> outImage, const SpatialImageDims &dims) {
  SmallVector<int64_t> xStrides = rowMajorStrides(image);
  SmallVector<int64_t> yStrides = rowMajorStrides(outImage);
  unsigned rank = dims.spatial.size();
  unsigned h = dims.spatial[rank - 2], w = dims.spatial[rank - 1];
  p.xN = xStrides[0];
  p.xC = xStrides[dims.c];
  p.xH = xStrides[h];
  p.xW = xStrides[w];
  p.yN = yStrides[0];
  p.yC = yStrides[dims.c];
  p.yH = yStrides[h];
  p.yW = yStrides[w];
  if (rank == 3) {
    p.xD = xStrides[dims.spatial[0]];
    p.yD = yStrides[dims.spatial[0]];
  }
  p.channelsInnermost = p.xC == 1;
}

/// Filter strides by role: the group and filter dims are single dims of the
/// filter; the K group holds kh, kw and (unless Cg == 1) the channel dim.
void setFilterStrides(GemmProblem &p, const ConvForm &form,
                      ArrayRef<int64_t> filterShape) {
  SmallVector<int64_t> fStrides = rowMajorStrides(filterShape);
  p.wG = p.wF = p.wC = 0;
  unsigned rank = form.kernelDims.size();
  p.wKH = fStrides[form.kernelDims[rank - 2]];
  p.wKW = fStrides[form.kernelDims[rank - 1]];
  if (rank == 3)
    p.wKD = fStrides[form.kernelDims[0]];
  for (auto [group, role] : llvm::zip(form.filterToB, form.bRoles)) {
    if (role == Role::G)
      p.wG = fStrides[group.front()];
    else if (role == Role::F)
      p.wF = fStrides[group.front()];
    else
      for (int64_t d : group)
        if (!llvm::is_contained(form.kernelDims, unsigned(d)))
          p.wC = fStrides[d];
  }
}

} // namespace

FailureOr<GemmProblem> igemm::buildProblem(const ConvPlan &plan,
                                           std::string &whyNot) {
  const ConvForm &form = *plan.form;
  linalg::LinalgOp op = plan.op;
  auto fail = [&](const Twine &reason) {
    whyNot = reason.str();
    return failure();
  };
  auto inputType = cast<RankedTensorType>(plan.input.getType());
  auto filterType =
      cast<RankedTensorType>(op.getDpsInputOperand(1)->get().getType());
  Value init = op.getDpsInitOperand(0)->get();
  auto outputType = cast<RankedTensorType>(init.getType());
  if (!inputType.hasStaticShape() || !outputType.hasStaticShape())
    return fail("the kernel needs static shapes (dynamic batch is not "
                "supported yet)");
  GemmProblem p;
  if (plan.isQuantized()) {
    FailureOr<int64_t> zx = getConstantInt32(plan.inputZeroPoint);
    FailureOr<int64_t> zw = getConstantInt32(plan.filterZeroPoint);
    if (failed(zx) || failed(zw))
      return fail("the zero points are not constants (the kernel folds them "
                  "into its epilogue; --conv-lower-im2col takes any)");
    p.inputZeroPoint = *zx;
    p.filterZeroPoint = *zw;
    p.padValue = plan.padValue;
  }
  FailureOr<MmaKind> kind =
      getMmaKind(inputType.getElementType(), filterType.getElementType(),
                 outputType.getElementType(), whyNot);
  if (failed(kind))
    return failure();
  FailureOr<double> initValue = getConstantInit(init);
  if (failed(initValue))
    return fail("the convolution's init must be a constant fill");
  if (plan.groups > kMaxGridYZ)
    return fail("more than " + Twine(kMaxGridYZ) +
                " groups (one grid slice each)");
  p.kind = *kind;
  p.elementType = inputType.getElementType();
  p.outputType = outputType.getElementType();
  p.accumulatorType = p.kind == MmaKind::S8
                          ? Type(IntegerType::get(op->getContext(), 32))
                          : Type(Float32Type::get(op->getContext()));
  p.initValue = *initValue;

  SpatialImageDims dims = getImageDims(form.layout, plan.spatialRank());
  SmallVector<int64_t> image =
      plan.inputIsImage ? llvm::to_vector(inputType.getShape())
                        : collapseShape(inputType.getShape(), form.inputToImage);
  SmallVector<int64_t> outImage =
      collapseShape(outputType.getShape(), form.outputToImage);
  setSizes(p, plan, image, dims);
  setImageStrides(p, image, outImage, dims);
  setFilterStrides(p, form, filterType.getShape());
  p.inputElements = inputType.getNumElements();
  p.filterElements = filterType.getNumElements();
  p.outputElements = outputType.getNumElements();
  return p;
}
