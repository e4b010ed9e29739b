//===- NchwToNhwc.cpp - channels-first windows computed channels last -----===//
//
// An NCHW convolution's im2col gathers each GEMM row from C planes, one
// element (or a run of a stride's worth) per plane and tap; NHWC gathers a
// run of C (or C/G) contiguous channels per tap. On the CPU the NCHW route
// lost up to 2x against the same layer in NHWC (ResNeXt's g32 3x3 on
// 1024 channels at 14x14, 2 Zen 4 threads: 1.51 against 0.71 ms). The
// image transposed to channels last, the NHWC convolution, and its output
// transposed back cost two passes over the activations and win that back;
// a constant filter's transpose is packed once with it.
//
// 1x1 layers keep their NCHW form: their GEMM reads the planes as they are
// (W . X[n]; strided, a plane's every other row and column), with no gather
// across planes.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "Transforms/Common/ChannelsLast.h"
#include "Transforms/Common/ConvAnalysis.h"
#include "Transforms/CPU/DirectConvUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"


#define DEBUG_TYPE "conv-lower-nchw-to-nhwc"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERNCHWTONHWC
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// The channels-first named ops this pass rewrites, and whether grouped.
/// Named ops only: a conv-shaped linalg.generic may widen its operands in
/// ways (extui) the named NHWC op would not reproduce.
std::optional<bool> channelsFirstForm(Operation *op) {
  if (isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNchwFchwQOp>(op))
    return false;
  if (isa<linalg::Conv2DNgchwGfchwOp, linalg::Conv2DNgchwGfchwQOp>(op))
    return true;
  return std::nullopt;
}

/// Whether every operand and result of `op` has a static shape.
bool hasStaticShapes(linalg::LinalgOp op) {
  auto isStatic = [](Type t) {
    auto shaped = dyn_cast<ShapedType>(t);
    return !shaped || shaped.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

/// `image` [N, C, H, W] as [N, H, W, C]. A tensor.pad of it (static
/// amounts, a constant value) moves onto the transposed image, so that the
/// small image is what is transposed and the im2col rewrite absorbs the pad
/// again as it does for any NHWC image. The geometry (sizes, padding) is
/// the original's: only the layout changes.
Value channelsLastImage4D(OpBuilder &b, Location loc, Value image) {
  auto pad = image.getDefiningOp<tensor::PadOp>();
  Value padValue = pad ? pad.getConstantPaddingValue() : Value();
  if (!pad || !padValue || !pad.getType().hasStaticShape())
    return transposed(b, loc, image, {0, 2, 3, 1});
  Value source = transposed(b, loc, pad.getSource(), {0, 2, 3, 1});
  auto permute = [](SmallVector<OpFoldResult> v) {
    return SmallVector<OpFoldResult>{v[0], v[2], v[3], v[1]};
  };
  auto type = pad.getType();
  auto newType = RankedTensorType::get(
      {type.getDimSize(0), type.getDimSize(2), type.getDimSize(3),
       type.getDimSize(1)},
      type.getElementType());
  return tensor::PadOp::create(b, loc, newType, source,
                               permute(pad.getMixedLowPad()),
                               permute(pad.getMixedHighPad()), padValue);
}

/// The convolution's input in the NHWC form's layout: [N, H, W, C], or
/// [N, H, W, G, C/G] for the grouped [N, G, C/G, H, W] (through the image
/// it was split from, where it was one).
Value channelsLastInput(OpBuilder &b, Location loc, Value input,
                        bool grouped) {
  if (!grouped)
    return channelsLastImage4D(b, loc, input);
  auto expand = input.getDefiningOp<tensor::ExpandShapeOp>();
  auto type = cast<RankedTensorType>(input.getType());
  if (!expand || expand.getReassociationIndices() !=
                     ArrayRef<ReassociationIndices>(
                         {{0}, {1, 2}, {3}, {4}}))
    return transposed(b, loc, input, {0, 3, 4, 1, 2});
  Value image = channelsLastImage4D(b, loc, expand.getSrc());
  auto imageType = cast<RankedTensorType>(image.getType());
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({imageType.getDimSize(0), imageType.getDimSize(1),
                             imageType.getDimSize(2), type.getDimSize(1),
                             type.getDimSize(2)},
                            type.getElementType()),
      image, SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}});
}

/// The accumulator's init in the channels-last order: a fill of it made
/// afresh (the im2col rewrite starts its GEMM from a recognized fill, not
/// from a transposed tensor), anything else transposed.
Value channelsLastInit(OpBuilder &b, Location loc, Value init,
                       ArrayRef<int64_t> perm) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return transposed(b, loc, init, perm);
  auto type = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  Value empty = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  return linalg::FillOp::create(b, loc, fill.getInputs(), ValueRange{empty})
      .getResult(0);
}

/// The NHWC convolution (conv_2d_nhwc_fhwc, or conv_2d_nhwgc_gfhwc when
/// grouped; their `_q` forms with zero points) of `plan`'s NCHW one,
/// returning the result in the original's layout.
Value rewriteChannelsLast(RewriterBase &rewriter, ConvPlan &plan,
                          bool grouped) {
  linalg::LinalgOp op = plan.op;
  Location loc = op.getLoc();
  OpBuilder &b = rewriter;
  Value x = channelsLastInput(b, loc, op.getDpsInputOperand(0)->get(),
                              grouped);
  Value filter = op.getDpsInputOperand(1)->get();
  Value init = op.getDpsInitOperand(0)->get();
  // FCHW -> FHWC; GFCHW -> GFHWC. NFHW -> NHWF; NGFHW -> NHWGF (and back).
  SmallVector<int64_t> filterPerm = grouped ? SmallVector<int64_t>{0, 1, 3, 4, 2}
                                            : SmallVector<int64_t>{0, 2, 3, 1};
  SmallVector<int64_t> outPerm = grouped ? SmallVector<int64_t>{0, 3, 4, 1, 2}
                                         : SmallVector<int64_t>{0, 2, 3, 1};
  SmallVector<int64_t> backPerm = grouped ? SmallVector<int64_t>{0, 3, 4, 1, 2}
                                          : SmallVector<int64_t>{0, 3, 1, 2};
  Value w = transposed(b, loc, filter, filterPerm);
  Value acc = channelsLastInit(b, loc, init, outPerm);
  auto strides = b.getI64TensorAttr(plan.strides);
  auto dilations = b.getI64TensorAttr(plan.dilations);
  SmallVector<Value> inputs = {x, w};
  if (plan.isQuantized())
    inputs.append({plan.inputZeroPoint, plan.filterZeroPoint});
  Type resultType = acc.getType();
  auto create = [&](auto opTag) -> Value {
    using OpTy = decltype(opTag);
    return OpTy::create(b, loc, TypeRange{resultType}, inputs, acc, strides,
                        dilations)
        .getResult(0);
  };
  Value y = grouped ? (plan.isQuantized() ? create(linalg::Conv2DNhwgcGfhwcQOp())
                                          : create(linalg::Conv2DNhwgcGfhwcOp()))
                    : (plan.isQuantized() ? create(linalg::Conv2DNhwcFhwcQOp())
                                          : create(linalg::Conv2DNhwcFhwcOp()));
  return transposed(b, loc, y, backPerm);
}

/// A 1x1 kernel (any stride): its NCHW GEMM reads each plane (strided or
/// not) as a row, with no gather across planes; transposing lost there
/// (r50's 1x1 256 -> 512 stride 2 at 56x56: 0.96 -> 1.07 ms).
bool isOneByOne(const ConvPlan &plan) {
  return llvm::all_of(plan.kernel, [](int64_t k) { return k == 1; });
}

struct ConvLowerNchwToNhwcPass
    : conv_lower::impl::ConvLowerNchwToNhwcBase<ConvLowerNchwToNhwcPass> {
  void runOnOperation() override {
    SmallVector<ConvPlan, 2> plans = collectPlans(
        getOperation(),
        [](const ConvPlan &plan) {
          return channelsFirstForm(plan.op) && hasStaticShapes(plan.op) &&
                 !isOneByOne(plan);
        },
        DEBUG_TYPE, "channels-first convolution computed channels last");
    IRRewriter rewriter(&getContext());
    for (ConvPlan &plan : plans) {
      rewriter.setInsertionPoint(plan.op);
      bool grouped = *channelsFirstForm(plan.op);
      rewriter.replaceOp(plan.op, rewriteChannelsLast(rewriter, plan, grouped));
    }
  }
};

} // namespace
