//===- Epilogue.cpp - bias, residual and activation fused into the store ---===//
//
// The kernel's epilogue writes each accumulator to its place in the output
// layout; the ops a model puts right after a convolution (a per-channel bias
// add, reached through the collapse of a grouped output; a residual add, the
// skip connection of a ResNet block; a ReLU or a clamp such as ReLU6) cost a
// load or a max there, instead of another pass over the output each. Only
// ops that nothing else reads are fused.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/Core.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

namespace {

/// The one op using `v` (several operands of one op count once), or null.
Operation *soleUser(Value v) {
  Operation *user = nullptr;
  for (Operation *u : v.getUsers()) {
    if (user && u != user)
      return nullptr;
    user = u;
  }
  return user;
}

/// An elementwise linalg.generic over `y`'s shape whose inputs start with
/// `y` (identity map) and whose init block argument is unused.
bool isElementwiseOn(linalg::GenericOp g, Value y, unsigned inputs) {
  auto type = cast<RankedTensorType>(y.getType());
  if (g.getNumDpsInputs() != inputs || g.getNumDpsInits() != 1 ||
      g.getNumParallelLoops() != g.getNumLoops() ||
      g.getNumLoops() != static_cast<unsigned>(type.getRank()) ||
      g->getResult(0).getType() != type ||
      g.getDpsInputOperand(0)->get() != y)
    return false;
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), g.getContext());
  return g.getMatchingIndexingMap(g.getDpsInputOperand(0)) == identity &&
         g.getMatchingIndexingMap(g.getDpsInitOperand(0)) == identity &&
         g.getBlock()->getArguments().back().use_empty();
}

/// The value the body yields, defined by an op of type OpTy.
template <typename OpTy>
OpTy yieldedOp(linalg::GenericOp g) {
  auto yield = cast<linalg::YieldOp>(g.getBlock()->getTerminator());
  return yield.getValues()[0].getDefiningOp<OpTy>();
}

/// out = y + ext(bias[channel]), with bias a 1-D float tensor.
Value matchBiasAdd(linalg::GenericOp g, Value y, unsigned channelDim) {
  if (!isElementwiseOn(g, y, 2))
    return nullptr;
  OpOperand *biasOperand = g.getDpsInputOperand(1);
  auto biasType = dyn_cast<RankedTensorType>(biasOperand->get().getType());
  AffineMap map = g.getMatchingIndexingMap(biasOperand);
  if (!biasType || biasType.getRank() != 1 || !biasType.hasStaticShape() ||
      !(biasType.getElementType().isF32() || biasType.getElementType().isF16() ||
        biasType.getElementType().isBF16()) ||
      map.getNumResults() != 1 ||
      map.getResult(0) != getAffineDimExpr(channelDim, g.getContext()))
    return nullptr;
  auto addf = yieldedOp<arith::AddFOp>(g);
  if (!addf)
    return nullptr;
  Value acc = g.getBlock()->getArgument(0), bias = g.getBlock()->getArgument(1);
  auto isBias = [&](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      v = ext.getIn();
    return v == bias;
  };
  bool matches = (addf.getLhs() == acc && isBias(addf.getRhs())) ||
                 (addf.getRhs() == acc && isBias(addf.getLhs()));
  return matches ? biasOperand->get() : nullptr;
}

/// out = y + residual, with the residual of y's type read at the same
/// element (float or integer); returns the residual.
Value matchResidualAdd(linalg::GenericOp g, Value y) {
  if (!isElementwiseOn(g, y, 2))
    return nullptr;
  OpOperand *residualOperand = g.getDpsInputOperand(1);
  Value residual = residualOperand->get();
  if (residual == y || residual.getType() != y.getType() ||
      !g.getMatchingIndexingMap(residualOperand).isIdentity())
    return nullptr;
  Operation *add = yieldedOp<arith::AddFOp>(g);
  if (!add)
    add = yieldedOp<arith::AddIOp>(g);
  if (!add)
    return nullptr;
  Value acc = g.getBlock()->getArgument(0), r = g.getBlock()->getArgument(1);
  Value lhs = add->getOperand(0), rhs = add->getOperand(1);
  bool matches = (lhs == acc && rhs == r) || (lhs == r && rhs == acc);
  return matches ? residual : nullptr;
}

/// The float constant `v` is, if it is one.
std::optional<double> floatConstant(Value v) {
  FloatAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  return attr.getValueAsDouble();
}

/// out = minimumf(maximumf(y, low), high) with constant bounds (ReLU6,
/// hardtanh): the kernel emits the same two ops, so any bounds keep the
/// op's meaning, NaN included.
bool matchClamp(linalg::GenericOp g, Value y, double &low, double &high) {
  if (!isElementwiseOn(g, y, 1))
    return false;
  auto min = yieldedOp<arith::MinimumFOp>(g);
  if (!min)
    return false;
  Value in = g.getBlock()->getArgument(0);
  // One operand is the max, the other the upper bound.
  for (unsigned i = 0; i < 2; ++i) {
    auto max = min->getOperand(i).getDefiningOp<arith::MaximumFOp>();
    std::optional<double> upper = floatConstant(min->getOperand(1 - i));
    if (!max || !upper)
      continue;
    for (unsigned j = 0; j < 2; ++j) {
      std::optional<double> lower = floatConstant(max->getOperand(1 - j));
      if (max->getOperand(j) == in && lower) {
        low = *lower, high = *upper;
        return true;
      }
    }
  }
  return false;
}

/// out = max(y, 0).
bool isRelu(linalg::GenericOp g, Value y) {
  if (!isElementwiseOn(g, y, 1))
    return false;
  Operation *max = yieldedOp<arith::MaximumFOp>(g);
  if (!max)
    max = yieldedOp<arith::MaxNumFOp>(g);
  if (!max)
    return false;
  Value in = g.getBlock()->getArgument(0);
  Value a = max->getOperand(0), c = max->getOperand(1);
  return (a == in && matchPattern(c, m_AnyZeroFloat())) ||
         (c == in && matchPattern(a, m_AnyZeroFloat()));
}

} // namespace

FusedEpilogue igemm::matchEpilogue(linalg::LinalgOp conv,
                                   const ConvForm &form) {
  FusedEpilogue e;
  // The epilogue is matched on rank-4 images: a 3-D convolution keeps its
  // epilogue ops (they run after the kernel).
  if (form.spatialDims.size() != 2)
    return e;
  Value y = conv->getResult(0);
  unsigned channelDim = getImageDims(form.layout).c;
  Operation *user = soleUser(y);
  // Grouped outputs reach the image layout through a collapse first; it is
  // fused when a bias or a residual add follows it.
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(user)) {
    auto next = dyn_cast_or_null<linalg::GenericOp>(soleUser(collapse));
    Value collapsed = collapse.getResult();
    if (!next || (!matchBiasAdd(next, collapsed, channelDim) &&
                  !matchResidualAdd(next, collapsed)))
      return e;
    e.ops.push_back(collapse);
    y = collapsed;
    user = next;
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(user);
  if (!generic || cast<RankedTensorType>(y.getType()).getRank() != 4)
    return e;
  // Takes the matched op into the epilogue and moves on to its sole user.
  auto absorb = [&] {
    e.ops.push_back(generic);
    y = generic->getResult(0);
    generic = dyn_cast_or_null<linalg::GenericOp>(soleUser(y));
  };
  if (Value bias = matchBiasAdd(generic, y, channelDim)) {
    e.bias = bias;
    absorb();
  }
  if (!generic)
    return e;
  if (Value residual = matchResidualAdd(generic, y)) {
    e.residual = residual;
    absorb();
  }
  if (!generic)
    return e;
  Activation &a = e.activation;
  if (isRelu(generic, y)) {
    a.relu = true;
    e.ops.push_back(generic);
  } else if (matchClamp(generic, y, a.clampMin, a.clampMax)) {
    a.clamp = true;
    e.ops.push_back(generic);
  }
  return e;
}
