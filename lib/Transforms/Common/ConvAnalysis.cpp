//===- ConvAnalysis.cpp - The convolution forms and their analysis --------===//

#include "Transforms/Common/ConvAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

template <typename OpTy>
bool matchNamedConv(linalg::LinalgOp op, SmallVector<int64_t> &strides,
                    SmallVector<int64_t> &dilations) {
  auto named = dyn_cast<OpTy>(op.getOperation());
  if (!named)
    return false;
  strides = llvm::to_vector(named.getStrides().template getValues<int64_t>());
  dilations =
      llvm::to_vector(named.getDilations().template getValues<int64_t>());
  return true;
}

/// `d_pos` or `d_pos * coefficient` (coefficient > 0).
bool matchScaledDim(AffineExpr expr, unsigned &pos, int64_t &coefficient) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    pos = dim.getPosition();
    coefficient = 1;
    return true;
  }
  auto mul = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!mul || mul.getKind() != AffineExprKind::Mul)
    return false;
  auto dim = dyn_cast<AffineDimExpr>(mul.getLHS());
  auto constant = dyn_cast<AffineConstantExpr>(mul.getRHS());
  if (!dim || !constant || constant.getValue() <= 0)
    return false;
  pos = dim.getPosition();
  coefficient = constant.getValue();
  return true;
}

/// `out * stride + kernel * dilation`, the terms in either order.
bool matchWindow(AffineExpr expr, unsigned outLoop, unsigned kernelLoop,
                 int64_t &stride, int64_t &dilation) {
  auto add = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!add || add.getKind() != AffineExprKind::Add)
    return false;
  unsigned lhsPos, rhsPos;
  int64_t lhsCoef, rhsCoef;
  if (!matchScaledDim(add.getLHS(), lhsPos, lhsCoef) ||
      !matchScaledDim(add.getRHS(), rhsPos, rhsCoef))
    return false;
  if (lhsPos == kernelLoop && rhsPos == outLoop) {
    std::swap(lhsPos, rhsPos);
    std::swap(lhsCoef, rhsCoef);
  }
  if (lhsPos != outLoop || rhsPos != kernelLoop)
    return false;
  stride = lhsCoef;
  dilation = rhsCoef;
  return true;
}

/// `value` is block argument `arg`, or one widening cast of it to `type`
/// (what the GEMM emitted for the convolution does to its operands).
bool isOperandOrWidened(Value value, BlockArgument arg, Type type) {
  if (value == arg)
    return value.getType() == type;
  Operation *cast = value.getDefiningOp();
  if (!cast || cast->getNumOperands() != 1 || cast->getOperand(0) != arg ||
      value.getType() != type)
    return false;
  return isa<arith::ExtFOp, arith::ExtSIOp, arith::SIToFPOp>(cast);
}

/// The body is yield(acc + a * b), commuted either way, with nothing else
/// but the widening casts of a and b.
bool isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3)
    return false;
  BlockArgument a = body.getArgument(0), b = body.getArgument(1),
                acc = body.getArgument(2);
  Type accType = acc.getType();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  Operation *add = yield.getOperand(0).getDefiningOp();
  bool isFloat = isa<FloatType>(accType);
  if (!add || add->getBlock() != &body ||
      !(isFloat ? isa<arith::AddFOp>(add) : isa<arith::AddIOp>(add)))
    return false;
  Value product = add->getOperand(0) == acc   ? add->getOperand(1)
                  : add->getOperand(1) == acc ? add->getOperand(0)
                                              : Value();
  Operation *mul = product ? product.getDefiningOp() : nullptr;
  if (!mul || mul->getBlock() != &body ||
      !(isFloat ? isa<arith::MulFOp>(mul) : isa<arith::MulIOp>(mul)) ||
      product.getType() != accType)
    return false;
  Value lhs = mul->getOperand(0), rhs = mul->getOperand(1);
  bool factorsMatch =
      (isOperandOrWidened(lhs, a, accType) &&
       isOperandOrWidened(rhs, b, accType)) ||
      (isOperandOrWidened(lhs, b, accType) && isOperandOrWidened(rhs, a, accType));
  // Nothing else in the body: yield, add, mul and the factors' casts.
  size_t casts = size_t(lhs.getDefiningOp() != nullptr) +
                 size_t(rhs.getDefiningOp() != nullptr);
  return factorsMatch && body.getOperations().size() == 3 + casts;
}

bool isWindowedAxis(char axis) {
  return axis == 'd' || axis == 'h' || axis == 'w';
}
char kernelAxisOf(char axis) {
  return axis == 'd' ? 'q' : axis == 'h' ? 'r' : 's';
}

} // namespace

bool mlir::conv_lower::matchGenericConvolution(
    linalg::GenericOp op, const FormAxes &axes, SmallVector<int64_t> &strides,
    SmallVector<int64_t> &dilations) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap xMap = maps[0], wMap = maps[1], yMap = maps[2];
  if (xMap.getNumResults() != axes.x.size() ||
      wMap.getNumResults() != axes.w.size() ||
      yMap.getNumResults() != axes.y.size() || xMap.getNumSymbols() ||
      wMap.getNumSymbols() || yMap.getNumSymbols())
    return false;

  // Name each loop by the output and filter axes it indexes.
  unsigned numLoops = op.getNumLoops();
  SmallVector<char> axisOfLoop(numLoops, 0);
  auto nameLoops = [&](AffineMap map, StringRef letters) {
    for (auto [expr, letter] : llvm::zip(map.getResults(), letters)) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim)
        return false;
      char &slot = axisOfLoop[dim.getPosition()];
      if (slot && slot != letter)
        return false;
      slot = letter;
    }
    return true;
  };
  if (!nameLoops(yMap, axes.y) || !nameLoops(wMap, axes.w))
    return false;
  llvm::SmallDenseMap<char, unsigned> loopOfAxis;
  for (unsigned loop = 0; loop < numLoops; ++loop)
    if (!axisOfLoop[loop] ||
        !loopOfAxis.try_emplace(axisOfLoop[loop], loop).second)
      return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned loop = 0; loop < numLoops; ++loop) {
    bool parallel = iterators[loop] == utils::IteratorType::parallel;
    if (parallel != axes.y.contains(axisOfLoop[loop]))
      return false;
  }

  // The input: windowed rows and columns, every other axis a plain loop.
  strides.clear();
  dilations.clear();
  for (auto [expr, letter] : llvm::zip(xMap.getResults(), axes.x)) {
    if (isWindowedAxis(letter)) {
      auto out = loopOfAxis.find(letter);
      auto kernel = loopOfAxis.find(kernelAxisOf(letter));
      int64_t stride, dilation;
      if (out == loopOfAxis.end() || kernel == loopOfAxis.end() ||
          !matchWindow(expr, out->second, kernel->second, stride, dilation))
        return false;
      strides.push_back(stride);
      dilations.push_back(dilation);
      continue;
    }
    auto dim = dyn_cast<AffineDimExpr>(expr);
    auto loop = loopOfAxis.find(letter);
    if (!dim || loop == loopOfAxis.end() || dim.getPosition() != loop->second)
      return false;
  }
  return isMultiplyAccumulate(op);
}

namespace {

/// The named op (plain or quantized), or a generic with the form's axes.
bool matchForm(const ConvForm &form, linalg::LinalgOp op,
               SmallVector<int64_t> &strides, SmallVector<int64_t> &dilations) {
  if (form.matchNamed(op, strides, dilations) ||
      (form.matchQuantized && form.matchQuantized(op, strides, dilations)))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  return generic &&
         matchGenericConvolution(generic, form.axes, strides, dilations);
}

} // namespace

ArrayRef<ConvForm> mlir::conv_lower::getConvForms() {
  using IL = ImageLayout;
  using KO = KOrder;
  // Columns: name, axes, layout, k_order, spatial dims of the input/output,
  // of the filter, input and output collapses to the image, the filter's
  // collapse to B and its roles, the named op and its quantized op.
  static const SmallVector<ConvForm, 14> forms = {
      {"conv_2d_nchw_fchw", {"nchw", "fcrs", "nfhw"},
       IL::nchw, KO::chw, {2, 3}, {2, 3}, {}, {},
       {{0}, {1, 2, 3}}, {Role::F, Role::K},
       matchNamedConv<linalg::Conv2DNchwFchwOp>,
       matchNamedConv<linalg::Conv2DNchwFchwQOp>},
      {"conv_2d_nhwc_hwcf", {"nhwc", "rscf", "nhwf"},
       IL::nhwc, KO::hwc, {1, 2}, {0, 1}, {}, {},
       {{0, 1, 2}, {3}}, {Role::K, Role::F},
       matchNamedConv<linalg::Conv2DNhwcHwcfOp>,
       matchNamedConv<linalg::Conv2DNhwcHwcfQOp>},
      {"conv_2d_nhwc_fhwc", {"nhwc", "frsc", "nhwf"},
       IL::nhwc, KO::hwc, {1, 2}, {1, 2}, {}, {},
       {{0}, {1, 2, 3}}, {Role::F, Role::K},
       matchNamedConv<linalg::Conv2DNhwcFhwcOp>,
       matchNamedConv<linalg::Conv2DNhwcFhwcQOp>},
      {"conv_2d_ngchw_fgchw", {"ngchw", "fgcrs", "ngfhw"},
       IL::nchw, KO::chw, {3, 4}, {3, 4},
       {{0}, {1, 2}, {3}, {4}}, {{0}, {1, 2}, {3}, {4}},
       {{0}, {1}, {2, 3, 4}}, {Role::F, Role::G, Role::K},
       matchNamedConv<linalg::Conv2DNgchwFgchwOp>},
      {"conv_2d_ngchw_gfchw", {"ngchw", "gfcrs", "ngfhw"},
       IL::nchw, KO::chw, {3, 4}, {3, 4},
       {{0}, {1, 2}, {3}, {4}}, {{0}, {1, 2}, {3}, {4}},
       {{0}, {1}, {2, 3, 4}}, {Role::G, Role::F, Role::K},
       matchNamedConv<linalg::Conv2DNgchwGfchwOp>,
       matchNamedConv<linalg::Conv2DNgchwGfchwQOp>},
      {"conv_2d_nhwgc_gfhwc", {"nhwgc", "gfrsc", "nhwgf"},
       IL::nhwc, KO::hwc, {1, 2}, {2, 3},
       {{0}, {1}, {2}, {3, 4}}, {{0}, {1}, {2}, {3, 4}},
       {{0}, {1}, {2, 3, 4}}, {Role::G, Role::F, Role::K},
       matchNamedConv<linalg::Conv2DNhwgcGfhwcOp>,
       matchNamedConv<linalg::Conv2DNhwgcGfhwcQOp>},
      {"depthwise_conv_2d_nchw_chw", {"nghw", "grs", "nghw"},
       IL::nchw, KO::chw, {2, 3}, {1, 2}, {}, {},
       {{0}, {1, 2}}, {Role::G, Role::K},
       matchNamedConv<linalg::DepthwiseConv2DNchwChwOp>},
      {"depthwise_conv_2d_nhwc_hwc", {"nhwg", "rsg", "nhwg"},
       IL::nhwc, KO::hwc, {1, 2}, {0, 1}, {}, {},
       {{0, 1}, {2}}, {Role::K, Role::G},
       matchNamedConv<linalg::DepthwiseConv2DNhwcHwcOp>,
       matchNamedConv<linalg::DepthwiseConv2DNhwcHwcQOp>},
      {"depthwise_conv_2d_nhwc_hwcm", {"nhwg", "rsgf", "nhwgf"},
       IL::nhwc, KO::hwc, {1, 2}, {0, 1}, {},
       {{0}, {1}, {2}, {3, 4}}, {{0, 1}, {2}, {3}},
       {Role::K, Role::G, Role::F},
       matchNamedConv<linalg::DepthwiseConv2DNhwcHwcmOp>,
       matchNamedConv<linalg::DepthwiseConv2DNhwcHwcmQOp>},
      // 3-D: the same table with a depth dim (d, kernel q) before h and w.
      {"conv_3d_ndhwc_dhwcf", {"ndhwc", "qrscf", "ndhwf"},
       IL::nhwc, KO::hwc, {1, 2, 3}, {0, 1, 2}, {}, {},
       {{0, 1, 2, 3}, {4}}, {Role::K, Role::F},
       matchNamedConv<linalg::Conv3DNdhwcDhwcfOp>,
       matchNamedConv<linalg::Conv3DNdhwcDhwcfQOp>},
      {"conv_3d_ncdhw_fcdhw", {"ncdhw", "fcqrs", "nfdhw"},
       IL::nchw, KO::chw, {2, 3, 4}, {2, 3, 4}, {}, {},
       {{0}, {1, 2, 3, 4}}, {Role::F, Role::K},
       matchNamedConv<linalg::Conv3DNcdhwFcdhwOp>},
      {"depthwise_conv_3d_ndhwc_dhwc", {"ndhwg", "qrsg", "ndhwg"},
       IL::nhwc, KO::hwc, {1, 2, 3}, {0, 1, 2}, {}, {},
       {{0, 1, 2}, {3}}, {Role::K, Role::G},
       matchNamedConv<linalg::DepthwiseConv3DNdhwcDhwcOp>},
      {"depthwise_conv_3d_ncdhw_cdhw", {"ngdhw", "gqrs", "ngdhw"},
       IL::nchw, KO::chw, {2, 3, 4}, {1, 2, 3}, {}, {},
       {{0}, {1, 2, 3}}, {Role::G, Role::K},
       matchNamedConv<linalg::DepthwiseConv3DNcdhwCdhwOp>},
      {"depthwise_conv_3d_ndhwc_dhwcm", {"ndhwg", "qrsgf", "ndhwgf"},
       IL::nhwc, KO::hwc, {1, 2, 3}, {0, 1, 2}, {},
       {{0}, {1}, {2}, {3}, {4, 5}}, {{0, 1, 2}, {3}, {4}},
       {Role::K, Role::G, Role::F},
       matchNamedConv<linalg::DepthwiseConv3DNdhwcDhwcmOp>},
  };
  return forms;
}

SmallVector<int64_t>
mlir::conv_lower::collapseShape(ArrayRef<int64_t> shape,
                                   ArrayRef<ReassociationIndices> reassoc) {
  if (reassoc.empty())
    return llvm::to_vector(shape);
  // Only a group holding a dynamic dim is dynamic: a dynamic batch must not
  // make the static H, W and C of a grouped image unknown (the rewrite did
  // arithmetic on them, and kDynamic in sizes became garbage).
  SmallVector<int64_t> result;
  for (const ReassociationIndices &group : reassoc) {
    int64_t size = 1;
    for (int64_t d : group) {
      if (ShapedType::isDynamic(shape[d])) {
        size = ShapedType::kDynamic;
        break;
      }
      size *= shape[d];
    }
    result.push_back(size);
  }
  return result;
}

namespace {

/// The constant a tensor.pad with static amounts pads with: 0 for a zero of
/// any type, an integer's value; none for anything else.
std::optional<int64_t> getStaticPadConstant(tensor::PadOp pad) {
  if (!pad || !pad.getLow().empty() || !pad.getHigh().empty())
    return std::nullopt;
  Value padValue = pad.getConstantPaddingValue();
  if (!padValue)
    return std::nullopt;
  if (matchPattern(padValue, m_AnyZeroFloat()))
    return 0;
  APInt integer;
  if (matchPattern(padValue, m_ConstantInt(&integer)) &&
      integer.getSignificantBits() <= 64)
    return integer.getSExtValue();
  return std::nullopt;
}

/// A tensor.pad on the spatial dims only, with static amounts, of zeros or
/// (when `alsoValue` is set) of that value; `padValue` is set to which.
tensor::PadOp getAbsorbablePad(Value input, ArrayRef<unsigned> spatialDims,
                               std::optional<int64_t> alsoValue,
                               int64_t &padValue) {
  auto pad = input.getDefiningOp<tensor::PadOp>();
  std::optional<int64_t> constant = getStaticPadConstant(pad);
  if (!constant || (*constant != 0 && constant != alsoValue))
    return nullptr;
  padValue = *constant;
  // An empty source cannot even be sliced (MLIR rejects any offset into a
  // dimension of size 0): the convolution reads the padded tensor, which is
  // all zeros (conv-lower-fill-empty-pads makes it a fill).
  if (llvm::is_contained(pad.getSourceType().getShape(), 0))
    return nullptr;
  for (auto [dim, amounts] :
       llvm::enumerate(llvm::zip(pad.getStaticLow(), pad.getStaticHigh()))) {
    if (llvm::is_contained(spatialDims, dim))
      continue;
    if (std::get<0>(amounts) != 0 || std::get<1>(amounts) != 0)
      return nullptr;
  }
  return pad;
}

/// The body must be a signed (or float) multiply-accumulate: an unsigned
/// extension would change the meaning of the GEMM we emit.
bool hasUnsignedCast(linalg::LinalgOp op) {
  return op.getBlock()
      ->walk([](Operation *inner) {
        return isa<arith::ExtUIOp, arith::UIToFPOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The input extent that the output actually reads along one spatial dim,
/// with the padding trimmed (bottom/right first, then the input cropped)
/// when the output is smaller than the convolution formula gives. Linalg
/// allows such outputs; the im2col op states the exact formula.
LogicalResult fitOutput(int64_t in, int64_t &padBefore, int64_t &padAfter,
                        int64_t &crop, int64_t kernel, int64_t stride,
                        int64_t dilation, int64_t out) {
  int64_t needed = (out - 1) * stride + dilation * (kernel - 1) + 1;
  int64_t excess = in + padBefore + padAfter - needed;
  if (excess < 0)
    return failure();
  int64_t fromPad = std::min(excess, padAfter);
  padAfter -= fromPad;
  crop = excess - fromPad;
  if (crop > in) {
    // The kept window ends inside the leading padding (it reads only zeros):
    // the whole input goes, and the rest comes off the leading padding. Every
    // position read is still below the new padBefore, so still a zero; the
    // padded extent is exactly `needed`, as the im2col formula wants.
    padBefore -= crop - in;
    crop = in;
  }
  return success();
}

/// Why a convolution-like op matches none of the forms.
std::string unsupportedFormReason(linalg::LinalgOp op) {
  StringRef name = op->getName().getStringRef();
  if (name.starts_with("linalg.pooling"))
    return "pooling has no filter to multiply with";
  // The spatial rank: inferred from the maps, or (for the quantized ops,
  // whose zero points upstream's inference does not take) from the name.
  FailureOr<linalg::ConvolutionDimensions> dims =
      linalg::inferConvolutionDims(op);
  size_t n = succeeded(dims)                ? dims->outputImage.size()
             : name.contains("conv_1d")     ? 1
             : name.contains("conv_3d")     ? 3
                                            : 2;
  if (n == 1)
    return "a 1-D convolution: --conv-lower-lift-to-2d (the first pass of "
           "both pipelines) writes it as a 2-D form";
  if (n > 3)
    return ("only 1-D, 2-D and 3-D convolutions are rewritten (this one has " +
            Twine(n) + " spatial dimensions)")
        .str();
  if (name.ends_with("_q"))
    return ("a quantized convolution with no plain form here (" + name + ")")
        .str();
  return ("not one of the supported convolution forms (" + name + ")").str();
}

} // namespace

FailureOr<ConvPlan>
mlir::conv_lower::analyzeConv(linalg::LinalgOp op, std::string &whyNot,
                              const AnalysisOptions &options) {
  auto fail = [&](const Twine &reason) {
    whyNot = reason.str();
    return failure();
  };
  ConvPlan plan;
  plan.op = op;
  for (const ConvForm &form : getConvForms()) {
    if (matchForm(form, op, plan.strides, plan.dilations)) {
      plan.form = &form;
      break;
    }
  }
  if (!plan.form)
    return fail(unsupportedFormReason(op));
  const ConvForm &form = *plan.form;
  if (!op.hasPureTensorSemantics())
    return fail("the convolution works on buffers; only tensors are rewritten");
  if (hasUnsignedCast(op))
    return fail("the body extends unsigned; the GEMM would extend signed");
  for (OpOperand &operand : op->getOpOperands())
    if (!getElementTypeOrSelf(operand.get().getType()).isIntOrFloat())
      return fail("element types must be integers or floats (complex and "
                  "other types are left alone)");

  Value input = op.getDpsInputOperand(0)->get();
  Value filter = op.getDpsInputOperand(1)->get();
  if (op.getNumDpsInputs() == 4) {
    // The quantized ops' zero points: scalars, by their verifier.
    plan.inputZeroPoint = op.getDpsInputOperand(2)->get();
    plan.filterZeroPoint = op.getDpsInputOperand(3)->get();
    if (!isa<IntegerType>(getElementTypeOrSelf(op.getDpsInitOperand(0)->get())))
      return fail("a quantized convolution with a float accumulator (the "
                  "zero-point expansion is exact in integers only)");
  }
  auto filterType = cast<RankedTensorType>(filter.getType());
  auto outputType = cast<RankedTensorType>(op.getDpsInitOperand(0)->get().getType());
  if (!filterType.hasStaticShape())
    return fail("the filter shape must be static");
  // A zero-size dimension leaves nothing to compute (an empty output) or
  // nothing to sum (the output is its init); the im2col formulas assume
  // windows of at least one tap and outputs of at least one pixel.
  auto convInputType = cast<RankedTensorType>(input.getType());
  for (RankedTensorType type : {convInputType, filterType, outputType})
    if (llvm::is_contained(type.getShape(), 0))
      return fail("a dimension of size 0 (an empty tensor): nothing to "
                  "rewrite");
  for (int64_t i = 1; i < outputType.getRank(); ++i)
    if (outputType.isDynamicDim(i))
      return fail("only the batch dimension may be dynamic");

  unsigned rank = form.spatialDims.size();
  plan.padding.assign(2 * rank, 0);
  // The input zero point, when a pad of it may be absorbed.
  std::optional<int64_t> zeroPointPad;
  APInt zx;
  if (options.absorbZeroPointPad && plan.inputZeroPoint &&
      matchPattern(plan.inputZeroPoint, m_ConstantInt(&zx)) &&
      zx.getSignificantBits() <= 64 && !zx.isZero())
    zeroPointPad = zx.getSExtValue();
  auto absorb = [&](tensor::PadOp pad, ArrayRef<unsigned> spatialDims,
                    int64_t padValue) {
    plan.absorbedPad = pad;
    plan.padValue = padValue;
    for (auto [i, dim] : llvm::enumerate(spatialDims)) {
      plan.padding[i] = pad.getStaticLow()[dim];
      plan.padding[rank + i] = pad.getStaticHigh()[dim];
    }
    input = pad.getSource();
  };
  SpatialImageDims imageDims = getImageDims(form.layout, rank);
  int64_t padValue = 0;
  if (tensor::PadOp pad =
          getAbsorbablePad(input, form.spatialDims, zeroPointPad, padValue)) {
    absorb(pad, form.spatialDims, padValue);
  } else if (auto expand = input.getDefiningOp<tensor::ExpandShapeOp>()) {
    // Frontends pad the image, then split its channels into groups.
    tensor::PadOp padBefore = getAbsorbablePad(
        expand.getSrc(), imageDims.spatial, zeroPointPad, padValue);
    if (padBefore && !form.inputToImage.empty() &&
        expand.getReassociationIndices() ==
            ArrayRef<ReassociationIndices>(form.inputToImage)) {
      absorb(padBefore, imageDims.spatial, padValue);
      plan.absorbedExpand = expand;
      plan.inputIsImage = true;
    }
  }
  plan.input = input;
  auto inputType = cast<RankedTensorType>(input.getType());
  for (int64_t i = 1; i < inputType.getRank(); ++i)
    if (inputType.isDynamicDim(i))
      return fail("only the batch dimension may be dynamic");
  // The rewrites size every batch-derived tensor from one side; a batch
  // static in one operand and dynamic in the other would give them types
  // that disagree.
  if (inputType.isDynamicDim(0) != outputType.isDynamicDim(0))
    return fail("the batch is static in one of input and output and dynamic "
                "in the other");

  plan.bShape = collapseShape(filterType.getShape(), form.filterToB);
  auto roleSize = [&](Role role) -> int64_t {
    auto it = llvm::find(form.bRoles, role);
    return it == form.bRoles.end() ? 1 : plan.bShape[it - form.bRoles.begin()];
  };
  plan.groups = roleSize(Role::G);
  plan.filtersPerGroup = roleSize(Role::F);
  SmallVector<int64_t> image =
      plan.inputIsImage ? llvm::to_vector(inputType.getShape())
                        : collapseShape(inputType.getShape(), form.inputToImage);
  plan.channels = image[imageDims.c];
  plan.crop.assign(rank, 0);
  for (unsigned i = 0; i < rank; ++i) {
    plan.kernel.push_back(filterType.getDimSize(form.kernelDims[i]));
    plan.outSize.push_back(outputType.getDimSize(form.spatialDims[i]));
    if (failed(fitOutput(image[imageDims.spatial[i]], plan.padding[i],
                         plan.padding[rank + i], plan.crop[i], plan.kernel[i],
                         plan.strides[i], plan.dilations[i], plan.outSize[i])))
      return fail("the output is larger than the padded input allows");
  }
  return plan;
}

bool mlir::conv_lower::isStaticZeroPad(tensor::PadOp pad) {
  return getStaticPadConstant(pad) == 0;
}

bool mlir::conv_lower::looksLikeConvolution(linalg::LinalgOp op) {
  if (isa<linalg::ConvolutionOpInterface>(op.getOperation()))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return false;
  if (linalg::isaConvolutionOpInterface(op))
    return true;
  // Upstream's interface check misses some spellings the forms take (a
  // commuted accumulate, say).
  SmallVector<int64_t> strides, dilations;
  return llvm::any_of(getConvForms(), [&](const ConvForm &form) {
    return matchGenericConvolution(generic, form.axes, strides, dilations);
  });
}

