//===- Epilogue.cpp - a bias add and a ReLU fused into the store ------------===//
//
// The kernel's epilogue writes each accumulator to its place in the output
// layout; the ops a model puts right after a convolution (a per-channel bias
// add, reached through the collapse of a grouped output, and a ReLU) cost one
// more load and a max there, instead of another pass over the output. Only
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
  // The bias and ReLU are matched on rank-4 images: a 3-D convolution keeps
  // its epilogue ops (they run after the kernel).
  if (form.spatialDims.size() != 2)
    return e;
  Value y = conv->getResult(0);
  unsigned channelDim = getImageDims(form.layout).c;
  Operation *user = soleUser(y);
  // Grouped outputs reach the image layout through a collapse first.
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(user)) {
    auto next = dyn_cast_or_null<linalg::GenericOp>(soleUser(collapse));
    if (!next || !matchBiasAdd(next, collapse.getResult(), channelDim))
      return e;
    e.ops.push_back(collapse);
    y = collapse.getResult();
    user = next;
  }
  auto generic = dyn_cast_or_null<linalg::GenericOp>(user);
  if (!generic || cast<RankedTensorType>(y.getType()).getRank() != 4)
    return e;
  if (Value bias = matchBiasAdd(generic, y, channelDim)) {
    e.bias = bias;
    e.ops.push_back(generic);
    y = generic->getResult(0);
    generic = dyn_cast_or_null<linalg::GenericOp>(soleUser(y));
  }
  if (generic && isRelu(generic, y)) {
    e.relu = true;
    e.ops.push_back(generic);
  }
  return e;
}

