//===- HoistConstantWeights.cpp - pack constant weights once --------------===//
//
// A function whose weights are marked constant is split in two: @f_pack
// computes, once, every value derived from the weights alone that @f reads
// (the transposed filter, Winograd's U); @f reads them from new arguments.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-hoist-constant-weights"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERHOISTCONSTANTWEIGHTS
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

using mlir::conv_lower::ConvLowerDialect;
const llvm::StringLiteral kConstantAttr =
    ConvLowerDialect::ConstantAttrHelper::getNameStr();
const llvm::StringLiteral kPackedAttr =
    ConvLowerDialect::PackedAttrHelper::getNameStr();

/// What the function's top-level ops compute from: `invariant` values
/// depend on the constant arguments and constants only (the same on every
/// call); `weighted` ones among them on a constant argument.
struct ConstantSlice {
  llvm::DenseSet<Value> invariant, weighted;
  /// The invariant ops, in program order.
  SmallVector<Operation *> ops;
};

bool isConstantArgument(func::FuncOp func, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == &func.getBody().front() &&
         func.getArgAttr(arg.getArgNumber(), kConstantAttr);
}

/// Every value `op` reads: its operands and what its regions use from above.
SetVector<Value> inputsOf(Operation *op) {
  SetVector<Value> inputs(op->operand_begin(), op->operand_end());
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, inputs);
  return inputs;
}

ConstantSlice findConstantSlice(func::FuncOp func) {
  ConstantSlice slice;
  for (Operation &op : func.getBody().front().without_terminator()) {
    // The marked memrefs are read through to_tensor: the seed of the slice.
    bool seed = false;
    if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(op))
      seed = isConstantArgument(func, toTensor.getBuffer());
    if (!seed && !isMemoryEffectFree(&op))
      continue;
    bool invariant = true, weighted = seed;
    for (Value v : inputsOf(&op)) {
      if (seed)
        break;
      invariant &= slice.invariant.contains(v);
      weighted |= slice.weighted.contains(v);
    }
    if (!invariant)
      continue;
    slice.ops.push_back(&op);
    for (Value r : op.getResults()) {
      slice.invariant.insert(r);
      if (weighted)
        slice.weighted.insert(r);
    }
  }
  return slice;
}

/// Whether `user` is (or is nested in) one of the slice's ops: Winograd's
/// filter transform reads the transposed filter inside its scf.forall.
bool inSlice(const ConstantSlice &slice, Operation *user) {
  for (Operation *op = user; op; op = op->getParentOp())
    if (llvm::is_contained(slice.ops, op))
      return true;
  return false;
}

/// Ops that cost nothing per call: hoisting a value made only of these
/// (the filter reshaped, say) would copy it for no gain.
bool isFree(Operation *op) {
  return isa<bufferization::ToTensorOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::CastOp, tensor::EmptyOp>(op) ||
         op->hasTrait<OpTrait::ConstantLike>();
}

/// The slice's ops `value` is computed from (itself included), in program
/// order.
SmallVector<Operation *> producersOf(const ConstantSlice &slice,
                                     ArrayRef<Value> values) {
  llvm::DenseSet<Operation *> needed;
  SmallVector<Value> work(values.begin(), values.end());
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !needed.insert(def).second)
      continue;
    for (Value v : inputsOf(def))
      work.push_back(v);
  }
  SmallVector<Operation *> ordered;
  for (Operation *op : slice.ops)
    if (needed.contains(op))
      ordered.push_back(op);
  return ordered;
}

/// The weighted values the rest of the function reads that cost something
/// to compute: static tensors, read by an op outside the slice.
SmallVector<Value> valuesToHoist(const ConstantSlice &slice) {
  SmallVector<Value> hoisted;
  for (Operation *op : slice.ops) {
    for (Value r : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(r.getType());
      if (!slice.weighted.contains(r) || !type || !type.hasStaticShape())
        continue;
      bool readOutside = llvm::any_of(r.getUsers(), [&](Operation *user) {
        return !inSlice(slice, user);
      });
      if (!readOutside)
        continue;
      SmallVector<Operation *> producers = producersOf(slice, {r});
      if (llvm::all_of(producers, isFree))
        continue;
      hoisted.push_back(r);
    }
  }
  return hoisted;
}

MemRefType bufferTypeOf(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return MemRefType::get(type.getShape(), type.getElementType());
}

/// @<name>_pack: the function's signature (packed buffers included), the
/// producers of `hoisted` cloned, each written into its buffer.
void buildPackFunction(OpBuilder &b, func::FuncOp func,
                       const ConstantSlice &slice, ArrayRef<Value> hoisted,
                       unsigned firstPacked) {
  Location loc = func.getLoc();
  b.setInsertionPointAfter(func);
  auto pack = func::FuncOp::create(
      b, loc, (func.getSymName() + "_pack").str(),
      b.getFunctionType(func.getArgumentTypes(), {}));
  pack.setVisibility(func.getVisibility());
  for (NamedAttribute attr : func->getDiscardableAttrs())
    pack->setAttr(attr.getName(), attr.getValue());
  pack.setAllArgAttrs(func.getAllArgAttrs());
  // The pack function's weights are read every call: it is the packing.
  for (unsigned i = 0; i < firstPacked; ++i)
    pack.removeArgAttr(i, kConstantAttr);
  Block *body = pack.addEntryBlock();
  b.setInsertionPointToStart(body);

  IRMapping mapping;
  for (auto [from, to] : llvm::zip(func.getArguments(), body->getArguments()))
    mapping.map(from, to);
  for (Operation *op : producersOf(slice, hoisted))
    b.clone(*op, mapping);
  for (auto [i, value] : llvm::enumerate(hoisted)) {
    auto store = bufferization::MaterializeInDestinationOp::create(
        b, loc, mapping.lookup(value), body->getArgument(firstPacked + i));
    store.setRestrict(true);
    store.setWritable(true);
  }
  func::ReturnOp::create(b, loc);
}

/// New trailing memref arguments of `func`, one per hoisted value.
void addPackedArguments(func::FuncOp func, ArrayRef<Value> hoisted) {
  for (Value value : hoisted)
    if (failed(func.insertArgument(func.getNumArguments(),
                                   bufferTypeOf(value), DictionaryAttr(),
                                   value.getLoc())))
      llvm_unreachable("a function with a body takes a new argument");
}

/// Reads each hoisted value from its packed argument instead, and erases
/// what of the slice then feeds nothing.
void readFromPackedArguments(OpBuilder &b, func::FuncOp func,
                             const ConstantSlice &slice,
                             ArrayRef<Value> hoisted, unsigned firstPacked) {
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (auto [i, value] : llvm::enumerate(hoisted)) {
    Value packed = bufferization::ToTensorOp::create(
        b, value.getLoc(), value.getType(),
        entry.getArgument(firstPacked + i), /*restrict=*/true);
    Value(value).replaceUsesWithIf(packed, [&](OpOperand &use) {
      return !inSlice(slice, use.getOwner());
    });
  }
  for (Operation *op : llvm::reverse(slice.ops))
    if (op->use_empty())
      op->erase();
}

struct ConvLowerHoistConstantWeightsPass
    : conv_lower::impl::ConvLowerHoistConstantWeightsBase<
          ConvLowerHoistConstantWeightsPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> marked;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      // Hoisted once: a second run would find only views left.
      if (func.isExternal() || func->hasAttr(kPackedAttr))
        continue;
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
        if (!func.getArgAttr(i, kConstantAttr))
          continue;
        if (!isa<MemRefType>(func.getArgumentTypes()[i])) {
          func.emitError() << "conv-lower-hoist-constant-weights: argument "
                           << i << " is marked " << kConstantAttr
                           << " but is not a memref (the pass takes "
                              "destination-style functions, whose packed "
                              "values are written into memref arguments)";
          return signalPassFailure();
        }
        if (!llvm::is_contained(marked, func))
          marked.push_back(func);
      }
    }
    OpBuilder b(&getContext());
    for (func::FuncOp func : marked) {
      if (func.getNumResults() != 0) {
        func.emitError() << "conv-lower-hoist-constant-weights: @"
                         << func.getSymName()
                         << " returns values; the pass takes "
                            "destination-style functions (no results)";
        return signalPassFailure();
      }
      ConstantSlice slice = findConstantSlice(func);
      SmallVector<Value> hoisted = valuesToHoist(slice);
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] @" << func.getSymName()
                              << ": " << slice.ops.size()
                              << " constant ops, " << hoisted.size()
                              << " values hoisted\n");
      unsigned firstPacked = func.getNumArguments();
      SmallVector<Attribute> packedTypes;
      for (Value v : hoisted)
        packedTypes.push_back(TypeAttr::get(bufferTypeOf(v)));
      func->setAttr(kPackedAttr, b.getArrayAttr(packedTypes));
      addPackedArguments(func, hoisted);
      buildPackFunction(b, func, slice, hoisted, firstPacked);
      readFromPackedArguments(b, func, slice, hoisted, firstPacked);
    }
  }
};

} // namespace
