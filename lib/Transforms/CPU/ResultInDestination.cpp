//===- ResultInDestination.cpp - the result computed in the output buffer -===//
//
// After one-shot bufferization the convolution's result lives in a buffer
// of its own (the tensor.empty the GEMM's blocks fill), which the wrapper's
// materialize_in_destination copies into the output argument before
// returning: a read and a write of the whole output after the computation,
// every call (ResNet-50 writes about 40 MB of activations a forward at
// batch 1). When that buffer is an allocation of the function, seen through
// reshapes, and the copy fills an otherwise unused identity-layout argument
// right before the return, the argument can be the buffer: the allocation
// is replaced by the argument reshaped back to the allocation's shape, and
// the copy is erased.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-result-in-destination"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERRESULTINDESTINATION
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// A reshape between the allocation and the copied value.
bool isReshape(Operation *op) {
  return isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(op);
}

bool hasIdentityLayout(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getLayout().isIdentity();
}

/// The copy that puts the result into the output argument: the last op
/// before the entry block's return, copying into an identity-layout
/// argument that it alone uses.
memref::CopyOp findResultCopy(func::FuncOp func) {
  if (func.isExternal())
    return {};
  Block &entry = func.getBody().front();
  Operation *terminator = entry.getTerminator();
  auto copy = dyn_cast_or_null<memref::CopyOp>(terminator->getPrevNode());
  if (!copy)
    return {};
  auto target = dyn_cast<BlockArgument>(copy.getTarget());
  if (!target || target.getOwner() != &entry || !target.hasOneUse() ||
      !hasIdentityLayout(target) || !hasIdentityLayout(copy.getSource()))
    return {};
  return copy;
}

/// The allocation `value` is, through reshapes (outermost last), or null.
memref::AllocOp rootAllocation(Value value,
                               SmallVectorImpl<Operation *> &reshapes) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return hasIdentityLayout(alloc) && alloc.getDynamicSizes().empty()
                 ? alloc
                 : memref::AllocOp();
    if (!isReshape(def))
      return {};
    reshapes.push_back(def);
    value = def->getOperand(0);
  }
  return {};
}

/// `target` reshaped by the inverse of each reshape in `reshapes` (the
/// copied value's, outermost first): the allocation's type.
Value inverseReshapes(RewriterBase &rewriter, Location loc, Value target,
                      ArrayRef<Operation *> reshapes) {
  for (Operation *op : reshapes) {
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(op)) {
      target = memref::CollapseShapeOp::create(
          rewriter, loc, expand.getSrcType(), target,
          expand.getReassociationIndices());
    } else {
      auto collapse = cast<memref::CollapseShapeOp>(op);
      target = memref::ExpandShapeOp::create(
          rewriter, loc, collapse.getSrcType().getShape(), target,
          collapse.getReassociationIndices());
    }
  }
  return target;
}

struct ConvLowerResultInDestinationPass
    : conv_lower::impl::ConvLowerResultInDestinationBase<
          ConvLowerResultInDestinationPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    memref::CopyOp copy = findResultCopy(func);
    if (!copy)
      return;
    SmallVector<Operation *> reshapes;
    memref::AllocOp alloc = rootAllocation(copy.getSource(), reshapes);
    if (!alloc || alloc->getBlock() != &func.getBody().front() ||
        copy.getSource().getType() != copy.getTarget().getType())
      return;
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << func.getName()
                            << ": the result is computed in "
                            << copy.getTarget() << "\n");
    IRRewriter rewriter(&getContext());
    rewriter.setInsertionPoint(alloc);
    Value destination =
        inverseReshapes(rewriter, alloc.getLoc(), copy.getTarget(), reshapes);
    // Element alignment only: the argument is the caller's buffer, which the
    // allocation's 64-byte alignment no longer describes. The lowering reads
    // and writes memrefs at their element alignment, so nothing relied on it.
    rewriter.replaceOp(alloc, destination);
    rewriter.eraseOp(copy);
  }
};

} // namespace
