//===- LiftTo2D.cpp - 1-D and batchless convolutions as named forms -------===//
//
// See the pass description (Passes.td). Each lifted form is a row of a
// table: the 2-D op it becomes and where its operands gain unit dims.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/Common/Passes.h"

#include "Transforms/Common/ConvAnalysis.h"
#include "Transforms/Common/LiftTo2D.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-lift-to-2d"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERLIFTTO2D
#include "ConvLower/Transforms/Common/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// The unit dims each operand gains, as positions in the 2-D operand.
struct UnitDims {
  SmallVector<int64_t> input, filter, output;
};

/// `values` with `inserted` at the positions `units` (of the result): 1 for
/// a shape, 0 for pad amounts.
SmallVector<int64_t> withUnitDims(ArrayRef<int64_t> values,
                                  ArrayRef<int64_t> units,
                                  int64_t inserted = 1) {
  SmallVector<int64_t> result;
  size_t next = 0;
  for (size_t i = 0, e = values.size() + units.size(); i < e; ++i)
    result.push_back(llvm::is_contained(units, int64_t(i)) ? inserted
                                                           : values[next++]);
  return result;
}

/// The reassociation from a shape to itself with 1s at `units`: every unit
/// dim joins the group of the next original dim (the last one's, at the end).
SmallVector<ReassociationIndices> unitReassociation(int64_t rank,
                                                    ArrayRef<int64_t> units) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  for (int64_t i = 0; i < rank + int64_t(units.size()); ++i) {
    pending.push_back(i);
    if (!llvm::is_contained(units, i)) {
      groups.push_back(pending);
      pending.clear();
    }
  }
  if (!pending.empty()) {
    if (groups.empty())
      groups.push_back({});
    groups.back().append(pending.begin(), pending.end());
  }
  return groups;
}

Value expandWithUnitDims(RewriterBase &rewriter, Location loc, Value value,
                         ArrayRef<int64_t> units) {
  if (units.empty())
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  auto expanded = RankedTensorType::get(withUnitDims(type.getShape(), units),
                                        type.getElementType());
  return tensor::ExpandShapeOp::create(
      rewriter, loc, expanded, value,
      unitReassociation(type.getRank(), units));
}

/// The 2-D input: a zero pad of the 1-D input is rebuilt after the reshape,
/// so that the 2-D rewrites find (and absorb) it.
Value liftInput(RewriterBase &rewriter, Location loc, Value input,
                ArrayRef<int64_t> units) {
  auto pad = input.getDefiningOp<tensor::PadOp>();
  if (!conv_lower::isStaticZeroPad(pad))
    return expandWithUnitDims(rewriter, loc, input, units);
  Value source = expandWithUnitDims(rewriter, loc, pad.getSource(), units);
  auto amounts = [&](ArrayRef<int64_t> of) {
    return getAsIndexOpFoldResult(rewriter.getContext(),
                                  withUnitDims(of, units, /*inserted=*/0));
  };
  auto type = cast<RankedTensorType>(input.getType());
  auto paddedType = RankedTensorType::get(
      withUnitDims(type.getShape(), units), type.getElementType());
  return tensor::PadOp::create(rewriter, loc, paddedType, source,
                               amounts(pad.getStaticLow()),
                               amounts(pad.getStaticHigh()),
                               pad.getConstantPaddingValue());
}

/// The 2-D init: a fill is rebuilt after the reshape, so that the rewrites
/// still see a constant-fill init (the GPU kernel requires one).
Value liftInit(RewriterBase &rewriter, Location loc, Value init,
               ArrayRef<int64_t> units) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return expandWithUnitDims(rewriter, loc, init, units);
  Value out = expandWithUnitDims(rewriter, loc, fill.getOutputs()[0], units);
  return linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], out)
      .getResult(0);
}

/// Strides or dilations of a 1-D op as the 2-D op's: unit along the new H.
DenseIntElementsAttr liftWindow(Builder &b, std::optional<Attribute> attr) {
  int64_t value = 1;
  if (auto dense = dyn_cast_or_null<DenseIntElementsAttr>(
          attr ? *attr : Attribute()))
    value = (*dense.getValues<int64_t>().begin());
  return b.getI64TensorAttr({1, value});
}

/// Strides and dilations of the lifted op: read from a 1-D op's attributes
/// (unit along the new H), all ones for a batchless named op, or those a
/// generic's maps say.
struct Window {
  enum class From { OneDimensional, Unit, Given } from;
  SmallVector<int64_t> strides, dilations;
};

template <typename To>
void lift(RewriterBase &rewriter, linalg::LinalgOp op, const UnitDims &units,
          const Window &window) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value input =
      liftInput(rewriter, loc, op.getDpsInputOperand(0)->get(), units.input);
  Value filter = expandWithUnitDims(rewriter, loc,
                                    op.getDpsInputOperand(1)->get(),
                                    units.filter);
  Value init =
      liftInit(rewriter, loc, op.getDpsInitOperand(0)->get(), units.output);
  // A batchless conv_2d or conv_3d has unit strides and dilations.
  int64_t spatialRank =
      cast<RankedTensorType>(init.getType()).getRank() - 2;
  DenseIntElementsAttr strides =
      rewriter.getI64TensorAttr(SmallVector<int64_t>(spatialRank, 1));
  DenseIntElementsAttr dilations = strides;
  if (window.from == Window::From::OneDimensional) {
    strides = liftWindow(rewriter, op->getAttr("strides"));
    dilations = liftWindow(rewriter, op->getAttr("dilations"));
  } else if (window.from == Window::From::Given) {
    assert(int64_t(window.strides.size()) == spatialRank &&
           int64_t(window.dilations.size()) == spatialRank &&
           "a window per spatial dim of the lifted op");
    strides = rewriter.getI64TensorAttr(window.strides);
    dilations = rewriter.getI64TensorAttr(window.dilations);
  }
  auto conv = To::create(rewriter, loc, TypeRange{init.getType()},
                         ValueRange{input, filter}, ValueRange{init}, strides,
                         dilations);
  auto outputType = cast<RankedTensorType>(op->getResult(0).getType());
  Value result = tensor::CollapseShapeOp::create(
      rewriter, loc, outputType, conv->getResult(0),
      unitReassociation(outputType.getRank(), units.output));
  rewriter.replaceOp(op, result);
}

/// A linalg.generic computing a channels-last convolution without its batch
/// dim, as IREE writes one once it has dropped a unit batch: (h, w, c) images
/// and (oh, ow, f) outputs, becomes the named NHWC op with N = 1 (strides and
/// dilations from the maps). Returns whether it did.
bool liftIfBatchlessGeneric(RewriterBase &rewriter, linalg::LinalgOp op) {
  auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic)
    return false;
  struct BatchlessForm {
    conv_lower::FormAxes axes;
    void (*lift)(RewriterBase &, linalg::LinalgOp, const UnitDims &,
                 const Window &);
    StringRef name;
  };
  static const BatchlessForm forms[] = {
      {{"hwc", "rscf", "hwf"},
       lift<linalg::Conv2DNhwcHwcfOp>,
       "conv_2d_nhwc_hwcf"},
      {{"hwc", "frsc", "hwf"},
       lift<linalg::Conv2DNhwcFhwcOp>,
       "conv_2d_nhwc_fhwc"},
      {{"hwg", "rsg", "hwg"},
       lift<linalg::DepthwiseConv2DNhwcHwcOp>,
       "depthwise_conv_2d_nhwc_hwc"},
  };
  for (const BatchlessForm &form : forms) {
    Window window{Window::From::Given, {}, {}};
    if (!conv_lower::matchGenericConvolution(generic, form.axes, window.strides,
                                             window.dilations))
      continue;
    LLVM_DEBUG(llvm::dbgs()
               << "[" DEBUG_TYPE "] batchless generic (" << form.axes.x << ", "
               << form.axes.w << ") -> " << form.name << " with N = 1\n");
    // The batch joins the image's and the output's first dim; the filter
    // has none.
    form.lift(rewriter, op, {{0}, {}, {0}}, window);
    return true;
  }
  return false;
}

/// Lifts `op` if it is one of the forms; returns whether it did.
bool liftIfOneDimensional(RewriterBase &rewriter, linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op->getNumResults() != 1)
    return false;
  Operation *o = op.getOperation();
  // (n, w, c) -> (n, 1, w, c): H joins before W.
  if (isa<linalg::Conv1DNwcWcfOp>(o))
    lift<linalg::Conv2DNhwcHwcfOp>(rewriter, op, {{1}, {0}, {1}},
                                   {Window::From::OneDimensional});
  else if (isa<linalg::Conv1DNcwFcwOp>(o))
    lift<linalg::Conv2DNchwFchwOp>(rewriter, op, {{2}, {2}, {2}},
                                   {Window::From::OneDimensional});
  else if (isa<linalg::DepthwiseConv1DNwcWcOp>(o))
    lift<linalg::DepthwiseConv2DNhwcHwcOp>(rewriter, op, {{1}, {0}, {1}},
                                           {Window::From::OneDimensional});
  else if (isa<linalg::DepthwiseConv1DNcwCwOp>(o))
    lift<linalg::DepthwiseConv2DNchwChwOp>(rewriter, op, {{2}, {1}, {2}},
                                           {Window::From::OneDimensional});
  else if (isa<linalg::DepthwiseConv1DNwcWcmOp>(o))
    lift<linalg::DepthwiseConv2DNhwcHwcmOp>(rewriter, op, {{1}, {0}, {1}},
                                            {Window::From::OneDimensional});
  // No batch, no channels: (w) -> (1, 1, w, 1), (h, w) -> (1, h, w, 1),
  // (d, h, w) -> (1, d, h, w, 1).
  else if (isa<linalg::Conv1DOp>(o))
    lift<linalg::Conv2DNhwcHwcfOp>(
        rewriter, op, {{0, 1, 3}, {0, 2, 3}, {0, 1, 3}}, {Window::From::Unit});
  else if (isa<linalg::Conv2DOp>(o))
    lift<linalg::Conv2DNhwcHwcfOp>(rewriter, op, {{0, 3}, {2, 3}, {0, 3}},
                                   {Window::From::Unit});
  else if (isa<linalg::Conv3DOp>(o))
    lift<linalg::Conv3DNdhwcDhwcfOp>(rewriter, op, {{0, 4}, {3, 4}, {0, 4}},
                                     {Window::From::Unit});
  else
    return liftIfBatchlessGeneric(rewriter, op);
  return true;
}

struct ConvLowerLiftTo2DPass
    : conv_lower::impl::ConvLowerLiftTo2DBase<ConvLowerLiftTo2DPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    conv_lower::liftConvolutionsTo2D(rewriter, getOperation());
  }
};

} // namespace

void mlir::conv_lower::liftConvolutionsTo2D(RewriterBase &rewriter,
                                            Operation *root) {
  SmallVector<linalg::LinalgOp> convs;
  root->walk([&](linalg::LinalgOp op) { convs.push_back(op); });
  for (linalg::LinalgOp op : convs) {
    // The pad and fill it was built from, rebuilt in 2-D by the lift.
    Operation *pad = op->getNumOperands()
                         ? op->getOperand(0).getDefiningOp<tensor::PadOp>()
                         : nullptr;
    Operation *fill =
        op.getNumDpsInits()
            ? op.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>()
            : nullptr;
    if (!liftIfOneDimensional(rewriter, op))
      continue;
    for (Operation *dead : {pad, fill})
      if (dead && dead->use_empty())
        rewriter.eraseOp(dead);
  }
}
