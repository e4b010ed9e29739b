//===- ConvToIm2Col.cpp - linalg convs into im2col + GEMM + fold ----------===//
//
// Every supported 2-D convolution becomes
//
//   A = conv_lower.im2col(X)          [G, M, K]   (or [M, K] for one group)
//   B = reshape(W)                    filter dims regrouped as (g, f, k)
//   C = contraction(A, B)             [G, M, Fg]  (or [M, F])
//   Y = conv_lower.fold(C)            output layout
//
// The forms differ only in data: where H and W sit, how the filter regroups
// into B, and how grouped (rank-5) images collapse to rank 4. That table is
// `getConvForms()`; the rewrite itself is form-agnostic.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERIM2COL
#include "ConvLower/Transforms/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

//===----------------------------------------------------------------------===//
// The convolution forms, as data
//===----------------------------------------------------------------------===//

/// Role of a dimension of the regrouped filter B.
enum class Role { G, F, K };

struct ConvForm {
  StringRef name;
  ImageLayout layout;
  KOrder kOrder;
  /// Spatial dims of the input (and output) operand.
  unsigned hDim, wDim;
  /// Spatial dims of the filter operand.
  unsigned khDim, kwDim;
  /// Collapses a rank-5 grouped input/output to the rank-4 image; empty when
  /// the operand is already rank 4.
  SmallVector<ReassociationIndices> inputToImage, outputToImage;
  /// Collapses the filter into B, whose dims play `bRoles`.
  SmallVector<ReassociationIndices> filterToB;
  SmallVector<Role> bRoles;
  /// Matches the named op, or a linalg.generic computing the same thing;
  /// fills strides and dilations.
  bool (*match)(linalg::LinalgOp, SmallVector<int64_t> &,
                SmallVector<int64_t> &);
};

template <typename OpTy>
bool matchConv(linalg::LinalgOp op, SmallVector<int64_t> &strides,
               SmallVector<int64_t> &dilations) {
  if (auto named = dyn_cast<OpTy>(op.getOperation())) {
    strides = llvm::to_vector(named.getStrides().template getValues<int64_t>());
    dilations =
        llvm::to_vector(named.getDilations().template getValues<int64_t>());
    return true;
  }
  if (!isa<linalg::GenericOp>(op.getOperation()))
    return false;
  strides.clear();
  dilations.clear();
  return linalg::isaConvolutionOpOfType<OpTy>(op, &dilations, &strides);
}

const SmallVector<ConvForm> &getConvForms() {
  using IL = ImageLayout;
  using KO = KOrder;
  static const SmallVector<ConvForm> forms = {
      {"conv_2d_nchw_fchw", IL::nchw, KO::chw, 2, 3, 2, 3, {}, {},
       {{0}, {1, 2, 3}}, {Role::F, Role::K},
       matchConv<linalg::Conv2DNchwFchwOp>},
      {"conv_2d_nhwc_hwcf", IL::nhwc, KO::hwc, 1, 2, 0, 1, {}, {},
       {{0, 1, 2}, {3}}, {Role::K, Role::F},
       matchConv<linalg::Conv2DNhwcHwcfOp>},
      {"conv_2d_nhwc_fhwc", IL::nhwc, KO::hwc, 1, 2, 1, 2, {}, {},
       {{0}, {1, 2, 3}}, {Role::F, Role::K},
       matchConv<linalg::Conv2DNhwcFhwcOp>},
      {"conv_2d_ngchw_fgchw", IL::nchw, KO::chw, 3, 4, 3, 4,
       {{0}, {1, 2}, {3}, {4}}, {{0}, {1, 2}, {3}, {4}},
       {{0}, {1}, {2, 3, 4}}, {Role::F, Role::G, Role::K},
       matchConv<linalg::Conv2DNgchwFgchwOp>},
      {"conv_2d_ngchw_gfchw", IL::nchw, KO::chw, 3, 4, 3, 4,
       {{0}, {1, 2}, {3}, {4}}, {{0}, {1, 2}, {3}, {4}},
       {{0}, {1}, {2, 3, 4}}, {Role::G, Role::F, Role::K},
       matchConv<linalg::Conv2DNgchwGfchwOp>},
      {"conv_2d_nhwgc_gfhwc", IL::nhwc, KO::hwc, 1, 2, 2, 3,
       {{0}, {1}, {2}, {3, 4}}, {{0}, {1}, {2}, {3, 4}},
       {{0}, {1}, {2, 3, 4}}, {Role::G, Role::F, Role::K},
       matchConv<linalg::Conv2DNhwgcGfhwcOp>},
      {"depthwise_conv_2d_nchw_chw", IL::nchw, KO::chw, 2, 3, 1, 2, {}, {},
       {{0}, {1, 2}}, {Role::G, Role::K},
       matchConv<linalg::DepthwiseConv2DNchwChwOp>},
      {"depthwise_conv_2d_nhwc_hwc", IL::nhwc, KO::hwc, 1, 2, 0, 1, {}, {},
       {{0, 1}, {2}}, {Role::K, Role::G},
       matchConv<linalg::DepthwiseConv2DNhwcHwcOp>},
      {"depthwise_conv_2d_nhwc_hwcm", IL::nhwc, KO::hwc, 1, 2, 0, 1, {},
       {{0}, {1}, {2}, {3, 4}}, {{0, 1}, {2}, {3}},
       {Role::K, Role::G, Role::F},
       matchConv<linalg::DepthwiseConv2DNhwcHwcmOp>},
  };
  return forms;
}

//===----------------------------------------------------------------------===//
// Analysis: is this op a convolution we can rewrite, and how?
//===----------------------------------------------------------------------===//

/// Everything the rewrite needs, computed without touching the IR.
struct ConvPlan {
  const ConvForm *form = nullptr;
  linalg::LinalgOp op;
  Value input;                    // the image, or the source of a zero pad
  tensor::PadOp absorbedPad;      // the pad folded into `padding`, if any
  SmallVector<int64_t> strides, dilations;
  SmallVector<int64_t> padding;   // top, left, bottom, right
  int64_t cropH = 0, cropW = 0;   // input rows/cols the output never reads
  int64_t kh, kw, groups, channels, filtersPerGroup, ho, wo;
  SmallVector<int64_t> bShape;    // the regrouped filter's shape

  bool isPointwise() const {
    return kh == 1 && kw == 1 && strides == ArrayRef<int64_t>{1, 1} &&
           llvm::all_of(padding, [](int64_t p) { return p == 0; }) &&
           cropH == 0 && cropW == 0;
  }
};

/// Collapsed shape of `shape` under `reassociation` (identity when empty).
SmallVector<int64_t> collapseShape(ArrayRef<int64_t> shape,
                                   ArrayRef<ReassociationIndices> reassoc) {
  if (reassoc.empty())
    return llvm::to_vector(shape);
  SmallVector<int64_t> result;
  for (const ReassociationIndices &group : reassoc) {
    int64_t size = 1;
    for (int64_t d : group) {
      if (ShapedType::isDynamic(shape[d]))
        return SmallVector<int64_t>(reassoc.size(), ShapedType::kDynamic);
      size *= shape[d];
    }
    result.push_back(size);
  }
  return result;
}

/// A tensor.pad of zeros on the spatial dims only, with static amounts.
tensor::PadOp getAbsorbablePad(Value input, const ConvForm &form) {
  auto pad = input.getDefiningOp<tensor::PadOp>();
  if (!pad || !pad.getLow().empty() || !pad.getHigh().empty())
    return nullptr;
  Value padValue = pad.getConstantPaddingValue();
  if (!padValue || !(matchPattern(padValue, m_AnyZeroFloat()) ||
                     matchPattern(padValue, m_Zero())))
    return nullptr;
  for (auto [dim, amounts] :
       llvm::enumerate(llvm::zip(pad.getStaticLow(), pad.getStaticHigh()))) {
    if (dim == form.hDim || dim == form.wDim)
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
  return success();
}

/// Why a convolution-like op matches none of the forms.
std::string unsupportedFormReason(linalg::LinalgOp op) {
  StringRef name = op->getName().getStringRef();
  if (name.starts_with("linalg.pooling"))
    return "pooling has no filter to multiply with";
  if (name.ends_with("_q"))
    return "quantized convolutions (with zero points) are not rewritten";
  FailureOr<linalg::ConvolutionDimensions> dims =
      linalg::inferConvolutionDims(op);
  if (succeeded(dims) && dims->outputImage.size() != 2) {
    size_t n = dims->outputImage.size();
    return ("only 2-D convolutions are rewritten (this one has " + Twine(n) +
            " spatial dimension" + (n == 1 ? ")" : "s)"))
        .str();
  }
  return ("not one of the supported 2-D convolution forms (" + name + ")")
      .str();
}

FailureOr<ConvPlan> analyzeConv(linalg::LinalgOp op, std::string &whyNot) {
  auto fail = [&](const Twine &reason) {
    whyNot = reason.str();
    return failure();
  };
  ConvPlan plan;
  plan.op = op;
  for (const ConvForm &form : getConvForms()) {
    if (form.match(op, plan.strides, plan.dilations)) {
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
  auto filterType = cast<RankedTensorType>(filter.getType());
  auto outputType = cast<RankedTensorType>(op.getDpsInitOperand(0)->get().getType());
  if (!filterType.hasStaticShape())
    return fail("the filter shape must be static");
  for (int64_t i = 1; i < outputType.getRank(); ++i)
    if (outputType.isDynamicDim(i))
      return fail("only the batch dimension may be dynamic");

  plan.padding = {0, 0, 0, 0};
  if (tensor::PadOp pad = getAbsorbablePad(input, form)) {
    plan.absorbedPad = pad;
    plan.padding = {pad.getStaticLow()[form.hDim], pad.getStaticLow()[form.wDim],
                    pad.getStaticHigh()[form.hDim],
                    pad.getStaticHigh()[form.wDim]};
    input = pad.getSource();
  }
  plan.input = input;
  auto inputType = cast<RankedTensorType>(input.getType());
  for (int64_t i = 1; i < inputType.getRank(); ++i)
    if (inputType.isDynamicDim(i))
      return fail("only the batch dimension may be dynamic");

  plan.kh = filterType.getDimSize(form.khDim);
  plan.kw = filterType.getDimSize(form.kwDim);
  plan.bShape = collapseShape(filterType.getShape(), form.filterToB);
  auto roleSize = [&](Role role) -> int64_t {
    auto it = llvm::find(form.bRoles, role);
    return it == form.bRoles.end() ? 1 : plan.bShape[it - form.bRoles.begin()];
  };
  plan.groups = roleSize(Role::G);
  plan.filtersPerGroup = roleSize(Role::F);
  SmallVector<int64_t> image =
      collapseShape(inputType.getShape(), form.inputToImage);
  ImageDims dims = getImageDims(form.layout);
  plan.channels = image[dims.c];
  plan.ho = outputType.getDimSize(form.hDim);
  plan.wo = outputType.getDimSize(form.wDim);
  if (failed(fitOutput(image[dims.h], plan.padding[0], plan.padding[2],
                       plan.cropH, plan.kh, plan.strides[0], plan.dilations[0],
                       plan.ho)) ||
      failed(fitOutput(image[dims.w], plan.padding[1], plan.padding[3],
                       plan.cropW, plan.kw, plan.strides[1], plan.dilations[1],
                       plan.wo)))
    return fail("the output is larger than the padded input allows");
  return plan;
}

//===----------------------------------------------------------------------===//
// IR construction helpers
//===----------------------------------------------------------------------===//

Value collapseIfNeeded(OpBuilder &b, Location loc, Value v,
                       ArrayRef<ReassociationIndices> reassoc) {
  if (reassoc.empty())
    return v;
  return tensor::CollapseShapeOp::create(b, loc, v, reassoc);
}

Value expandIfNeeded(OpBuilder &b, Location loc, Value v, RankedTensorType type,
                     ArrayRef<ReassociationIndices> reassoc) {
  if (reassoc.empty())
    return v;
  return tensor::ExpandShapeOp::create(b, loc, type, v, reassoc);
}

/// `batch * factor` as an index value (batch may be dynamic).
SmallVector<Value> dynamicRows(OpBuilder &b, Location loc, Value image,
                               int64_t factor) {
  if (!cast<RankedTensorType>(image.getType()).isDynamicDim(0))
    return {};
  Value n = tensor::DimOp::create(b, loc, image, 0);
  Value f = arith::ConstantIndexOp::create(b, loc, factor);
  return {arith::MulIOp::create(b, loc, n, f)};
}

/// A tensor of `shape` holding the convolution's initial value, when that is
/// a fill; otherwise zeros (the original init is added back after the fold).
Value buildAccumulator(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                       Type elementType, ValueRange dynSizes, Value init,
                       bool &initIsFill) {
  Value fillValue;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    fillValue = fill.getInputs()[0];
    initIsFill = true;
  } else {
    fillValue = arith::ConstantOp::create(b, loc, b.getZeroAttr(elementType));
    initIsFill = false;
  }
  Value empty = tensor::EmptyOp::create(b, loc, shape, elementType, dynSizes);
  return linalg::FillOp::create(b, loc, fillValue, empty).getResult(0);
}

SmallVector<AffineMap> makeMaps(MLIRContext *ctx,
                                ArrayRef<SmallVector<AffineExpr, 4>> exprs) {
  return AffineMap::inferFromExprList(exprs, ctx);
}

/// A linalg.generic multiply-accumulate: out += ext(a) * ext(b), signed.
Value buildGenericContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                              Value acc, ArrayRef<AffineMap> maps,
                              ArrayRef<utils::IteratorType> iterators) {
  auto body = [](OpBuilder &nb, Location nloc, ValueRange args) {
    Type accType = args[2].getType();
    Value a = convertScalarToDtype(nb, nloc, args[0], accType, false);
    Value c = convertScalarToDtype(nb, nloc, args[1], accType, false);
    Value r;
    if (isa<FloatType>(accType))
      r = arith::AddFOp::create(nb, nloc, args[2],
                                arith::MulFOp::create(nb, nloc, a, c));
    else
      r = arith::AddIOp::create(nb, nloc, args[2],
                                arith::MulIOp::create(nb, nloc, a, c));
    linalg::YieldOp::create(nb, nloc, r);
  };
  return linalg::GenericOp::create(b, loc, acc.getType(), ValueRange{lhs, rhs},
                                   ValueRange{acc}, maps, iterators, body)
      .getResult(0);
}

/// C[g, m, f] += A[g, m, k] * B[roles(g, f, k)]: a named matmul or
/// batch_matmul where the filter layout allows one, else a linalg.generic.
Value buildGemm(OpBuilder &b, Location loc, Value lhs, Value rhs, Value acc,
                ArrayRef<Role> roles) {
  MLIRContext *ctx = b.getContext();
  bool grouped = llvm::is_contained(roles, Role::G);
  auto resultType = acc.getType();
  if (!grouped) {
    // linalg.matmul: (m, n, k); B is [K, F] natively or [F, K] transposed.
    auto mm = linalg::MatmulOp::create(b, loc, TypeRange{resultType},
                                       ValueRange{lhs, rhs}, ValueRange{acc});
    if (roles.front() == Role::F) {
      AffineExpr m, n, k;
      bindDims(ctx, m, n, k);
      SmallVector<AffineMap> maps = makeMaps(ctx, {{m, k}, {n, k}, {m, n}});
      mm.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
    }
    return mm.getResult(0);
  }
  AffineExpr g, m, f, k;
  bindDims(ctx, g, m, f, k);
  if (roles.size() == 3 && roles[0] == Role::G) {
    auto bmm = linalg::BatchMatmulOp::create(
        b, loc, TypeRange{resultType}, ValueRange{lhs, rhs}, ValueRange{acc});
    if (roles[1] == Role::F) {
      SmallVector<AffineMap> maps = makeMaps(ctx, {{g, m, k}, {g, f, k}, {g, m, f}});
      bmm.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
    }
    return bmm.getResult(0);
  }
  SmallVector<AffineExpr, 4> rhsExprs;
  for (Role role : roles)
    rhsExprs.push_back(role == Role::G ? g : role == Role::F ? f : k);
  SmallVector<AffineMap> maps =
      makeMaps(ctx, {{g, m, k}, rhsExprs, {g, m, f}});
  using IT = utils::IteratorType;
  return buildGenericContraction(
      b, loc, lhs, rhs, acc, maps,
      {IT::parallel, IT::parallel, IT::parallel, IT::reduction});
}

/// Crops input rows/cols that the (smaller than maximal) output never reads.
Value cropImage(OpBuilder &b, Location loc, Value image, const ConvPlan &plan) {
  if (plan.cropH == 0 && plan.cropW == 0)
    return image;
  ImageDims dims = getImageDims(plan.form->layout);
  unsigned hDim = dims.h, wDim = dims.w;
  SmallVector<OpFoldResult> offsets(4, b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, image);
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  auto type = cast<RankedTensorType>(image.getType());
  sizes[hDim] = b.getIndexAttr(type.getDimSize(hDim) - plan.cropH);
  sizes[wDim] = b.getIndexAttr(type.getDimSize(wDim) - plan.cropW);
  return tensor::ExtractSliceOp::create(b, loc, image, offsets, sizes, strides);
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

/// 1x1, stride 1, unpadded NCHW, one group: Y[n] = W . X[n] with X viewed as
/// [N, C, H*W]. No im2col and no fold: the data never moves.
Value rewritePointwiseNchw(OpBuilder &b, Location loc, Value image,
                           Value filterB, const ConvPlan &plan, Value init,
                           RankedTensorType imageOutType, bool &initIsFill) {
  MLIRContext *ctx = b.getContext();
  Value x = tensor::CollapseShapeOp::create(
      b, loc, image, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  int64_t pixels = plan.ho * plan.wo;
  SmallVector<int64_t> accShape = {imageOutType.getDimSize(0),
                                   plan.filtersPerGroup, pixels};
  SmallVector<Value> dyn;
  if (imageOutType.isDynamicDim(0))
    dyn.push_back(tensor::DimOp::create(b, loc, image, 0));
  Value acc = buildAccumulator(b, loc, accShape, imageOutType.getElementType(),
                               dyn, init, initIsFill);
  AffineExpr n, f, p, c;
  bindDims(ctx, n, f, p, c);
  SmallVector<AffineMap> maps =
      makeMaps(ctx, {{f, c}, {n, c, p}, {n, f, p}});
  using IT = utils::IteratorType;
  // The filter is the left operand: then the contraction's M is F, N is the
  // pixel dimension (contiguous in both X and Y) and K is C, so every
  // operand is read in its natural row-major order.
  Value y = buildGenericContraction(
      b, loc, filterB, x, acc, maps,
      {IT::parallel, IT::parallel, IT::parallel, IT::reduction});
  return tensor::ExpandShapeOp::create(
      b, loc, imageOutType, y,
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
}

/// The GEMM's A operand: the im2col of the image, or the image itself
/// flattened when the im2col would only reshape it (NHWC pointwise).
Value buildLhs(OpBuilder &b, Location loc, Value image, const ConvPlan &plan,
               int64_t rows) {
  auto imageType = cast<RankedTensorType>(image.getType());
  int64_t k = plan.channels / plan.groups * plan.kh * plan.kw;
  bool grouped = llvm::is_contained(plan.form->bRoles, Role::G);
  SmallVector<int64_t> shape =
      grouped ? SmallVector<int64_t>{plan.groups, rows, k}
              : SmallVector<int64_t>{rows, k};
  auto type = RankedTensorType::get(shape, imageType.getElementType());
  if (!grouped && plan.isPointwise() &&
      plan.form->layout == ImageLayout::nhwc)
    return tensor::CollapseShapeOp::create(
        b, loc, type, image, SmallVector<ReassociationIndices>{{0, 1, 2}, {3}});
  return Im2ColOp::create(b, loc, type, image, plan.form->layout,
                          ArrayRef<int64_t>{plan.kh, plan.kw}, plan.strides,
                          plan.dilations, plan.padding, plan.groups,
                          plan.form->kOrder);
}

void rewriteConv(RewriterBase &rewriter, const ConvPlan &plan) {
  linalg::LinalgOp op = plan.op;
  const ConvForm &form = *plan.form;
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);

  Value init = op.getDpsInitOperand(0)->get();
  auto outType = cast<RankedTensorType>(init.getType());
  Type accElemType = outType.getElementType();
  Value filterB = collapseIfNeeded(rewriter, loc,
                                   op.getDpsInputOperand(1)->get(),
                                   form.filterToB);
  Value image = collapseIfNeeded(rewriter, loc, plan.input, form.inputToImage);
  image = cropImage(rewriter, loc, image, plan);
  Value initImage = collapseIfNeeded(rewriter, loc, init, form.outputToImage);
  auto imageOutType = cast<RankedTensorType>(initImage.getType());

  bool initIsFill = false;
  Value result;
  if (plan.isPointwise() && form.layout == ImageLayout::nchw &&
      form.bRoles == ArrayRef<Role>{Role::F, Role::K}) {
    result = rewritePointwiseNchw(rewriter, loc, image, filterB, plan, init,
                                  imageOutType, initIsFill);
  } else {
    int64_t n = imageOutType.getDimSize(0);
    int64_t rows = ShapedType::isDynamic(n) ? ShapedType::kDynamic
                                            : n * plan.ho * plan.wo;
    SmallVector<Value> dynRows =
        dynamicRows(rewriter, loc, image, plan.ho * plan.wo);
    Value lhs = buildLhs(rewriter, loc, image, plan, rows);
    auto lhsType = cast<RankedTensorType>(lhs.getType());
    SmallVector<int64_t> accShape = llvm::to_vector(lhsType.getShape());
    accShape.back() = lhsType.getRank() == 3
                          ? plan.filtersPerGroup
                          : plan.groups * plan.filtersPerGroup;
    Value acc = buildAccumulator(rewriter, loc, accShape, accElemType, dynRows,
                                 init, initIsFill);
    Value gemm = buildGemm(rewriter, loc, lhs, filterB, acc, form.bRoles);
    result = FoldOp::create(rewriter, loc, imageOutType, gemm, form.layout,
                            ArrayRef<int64_t>{plan.ho, plan.wo});
  }
  result = expandIfNeeded(rewriter, loc, result, outType, form.outputToImage);
  if (!initIsFill) {
    // Linalg convolutions accumulate into their init: add it back.
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, tensor::getMixedSizes(rewriter, loc, init),
        accElemType);
    result = linalg::AddOp::create(rewriter, loc, TypeRange{outType},
                                   ValueRange{result, init}, ValueRange{empty})
                 .getResult(0);
  }
  rewriter.replaceOp(op, result);
  if (plan.absorbedPad && plan.absorbedPad->use_empty())
    rewriter.eraseOp(plan.absorbedPad);
}

bool looksLikeConvolution(linalg::LinalgOp op) {
  return isa<linalg::ConvolutionOpInterface>(op.getOperation()) ||
         (isa<linalg::GenericOp>(op.getOperation()) &&
          linalg::isaConvolutionOpInterface(op));
}

struct ConvLowerIm2ColPass
    : conv_lower::impl::ConvLowerIm2ColBase<ConvLowerIm2ColPass> {
  using Base::Base;
  void runOnOperation() override {
    // One walk, one decision per convolution: the pass is deterministic and
    // each untouched op gets exactly one remark.
    SmallVector<linalg::LinalgOp> convs;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (looksLikeConvolution(op))
        convs.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : convs) {
      std::string whyNot;
      FailureOr<ConvPlan> plan = analyzeConv(op, whyNot);
      if (succeeded(plan))
        rewriteConv(rewriter, *plan);
      else if (emitRemarks)
        op.emitRemark() << "conv-lower-im2col: left untouched: " << whyNot;
    }
  }
};

} // namespace
