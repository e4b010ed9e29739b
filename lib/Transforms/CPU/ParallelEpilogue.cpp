//===- ParallelEpilogue.cpp - the ops after a convolution, fused, threaded -===//
//
// What a model applies to a convolution's output (ConvModule: a bias add,
// then a ReLU, each a linalg.generic with a fresh init) survives the
// convolution's rewrite as whole-tensor generics after the GEMM's threaded
// blocks: serial loops over the output, one pass over memory each. On
// memory-bound layers those passes cost more than the convolution's own
// threaded work (MobileNetV2's 32-channel 112x112 depthwise: 0.45 ms with
// the bias, 0.78 with the ReLU too). Fused into one generic and split into
// blocks for the threads, the epilogue is one parallel pass.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "TilingUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-parallel-epilogue"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPARALLELEPILOGUE
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

namespace {

/// An elementwise generic on static tensors: every loop parallel, projected
/// permutation maps, identity-like output maps, a scalar body.
bool isStaticElementwise(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.hasPureTensorSemantics() &&
         !generic.hasDynamicShape() && linalg::isElementwise(generic);
}

/// Fuses a producer into its consumer when both are static elementwise
/// generics and the consumer is the producer's only user (so nothing is
/// computed twice and no intermediate stays live).
bool fusesIntoConsumer(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  return isStaticElementwise(producer) &&
         isStaticElementwise(fused->getOwner()) &&
         producer->getResult(0).hasOneUse() && producer->getNumResults() == 1;
}

/// Fuses each static elementwise generic's producers of the same kind into
/// it, as long as one reads another alone. Upstream's fusion alone, not its
/// pattern set, whose RemoveOutsDependency gives every generic a fresh init
/// (a bias added in place on the GEMM's output then wrote a new buffer:
/// 1x1 64 -> 256 at 56x56, 0.60 -> 0.68 ms).
LogicalResult fuseChains(RewriterBase &rewriter, func::FuncOp func) {
  while (true) {
    OpOperand *fused = nullptr;
    func.walk([&](linalg::GenericOp consumer) {
      for (OpOperand *input : consumer.getDpsInputOperands()) {
        if (fusesIntoConsumer(input) &&
            linalg::areElementwiseOpsFusable(input)) {
          fused = input;
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (!fused)
      return success();
    Operation *producer = fused->get().getDefiningOp();
    Operation *consumer = fused->getOwner();
    rewriter.setInsertionPoint(consumer);
    FailureOr<linalg::ElementwiseOpFusionResult> result =
        linalg::fuseElementwiseOps(rewriter, fused);
    if (failed(result))
      return failure();
    // The consumer's results (and any the producer keeps) now come from the
    // fused op.
    for (auto [original, replacement] : result->replacements)
      rewriter.replaceAllUsesWith(original, replacement);
    rewriter.eraseOp(consumer);
    if (producer->use_empty())
      rewriter.eraseOp(producer);
  }
}

/// Whether `generic`'s body reads its init (a fresh init then changes what
/// it computes).
bool readsInit(linalg::GenericOp generic) {
  return llvm::any_of(generic.getDpsInitsMutable(), [&](OpOperand &init) {
    return generic.payloadUsesValueFromOperand(&init);
  });
}

/// A generic whose init is a fresh tensor.empty writes a new buffer; where an
/// input of the same type and map is read by it alone (the GEMM's output,
/// before its bias and ReLU), that input becomes the init: the epilogue runs
/// in place, one pass. A computed input is preferred to a function argument
/// (a residual operand): bufferization would copy an argument before
/// writing into it.
void reuseInputAsInit(RewriterBase &rewriter, linalg::GenericOp generic) {
  if (generic.getNumDpsInits() != 1 || readsInit(generic))
    return;
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>())
    return;
  AffineMap initMap = generic.getMatchingIndexingMap(init);
  OpOperand *chosen = nullptr;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    if (input->get().getType() != init->get().getType() ||
        generic.getMatchingIndexingMap(input) != initMap ||
        !input->get().hasOneUse())
      continue;
    if (!chosen || (isa<BlockArgument>(chosen->get()) &&
                    !isa<BlockArgument>(input->get())))
      chosen = input;
  }
  if (chosen)
    rewriter.modifyOpInPlace(generic, [&] { init->set(chosen->get()); });
}

/// In a block of an in-place epilogue (its init is an input), that input's
/// slice read from the shared output instead of from the value outside the
/// forall: the same elements, but bufferization then sees each block read
/// and write its own part of one buffer and computes it in place, where a
/// read from outside makes it copy the whole buffer first.
void readInputFromSharedOutput(RewriterBase &rewriter, linalg::LinalgOp tile) {
  if (tile.getNumDpsInits() != 1)
    return;
  auto initSlice =
      tile.getDpsInitOperand(0)->get().getDefiningOp<tensor::ExtractSliceOp>();
  auto shared = initSlice ? dyn_cast<BlockArgument>(initSlice.getSource())
                          : BlockArgument();
  auto forall = shared ? dyn_cast<scf::ForallOp>(shared.getOwner()->getParentOp())
                       : scf::ForallOp();
  if (!forall)
    return;
  Value outside = forall.getTiedOpOperand(shared)->get();
  for (OpOperand *input : tile.getDpsInputOperands()) {
    auto slice = input->get().getDefiningOp<tensor::ExtractSliceOp>();
    if (slice && slice.getSource() == outside &&
        slice.getMixedOffsets() == initSlice.getMixedOffsets() &&
        slice.getMixedSizes() == initSlice.getMixedSizes() &&
        slice.getMixedStrides() == initSlice.getMixedStrides() &&
        slice.getType() == initSlice.getType())
      rewriter.modifyOpInPlace(tile, [&] { input->set(initSlice); });
  }
}

/// The dimension to split into blocks and its tile: the outermost whose
/// extent gives `blocks` blocks or more, else the largest extent; the tile
/// divides the extent (static tiles).
std::pair<int64_t, int64_t> blockDimension(ArrayRef<int64_t> ranges,
                                           int64_t blocks) {
  int64_t dim = 0;
  for (auto [d, extent] : llvm::enumerate(ranges)) {
    if (extent >= blocks) {
      dim = d;
      break;
    }
    if (extent > ranges[dim])
      dim = d;
  }
  int64_t extent = ranges[dim];
  int64_t tile = largestDividingTile(extent, llvm::divideCeil(extent, blocks));
  return {dim, tile};
}

struct ConvLowerParallelEpiloguePass
    : conv_lower::impl::ConvLowerParallelEpilogueBase<
          ConvLowerParallelEpiloguePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (threads < 1 || minElements < 0) {
      func.emitError() << "conv-lower-parallel-epilogue: threads must be "
                          "positive and min-elements not negative";
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    if (failed(fuseChains(rewriter, func)))
      return signalPassFailure();
    SmallVector<linalg::GenericOp> epilogues;
    for (Operation &op : func.getBody().front())
      if (isStaticElementwise(&op))
        epilogues.push_back(cast<linalg::GenericOp>(op));
    for (linalg::GenericOp generic : epilogues) {
      reuseInputAsInit(rewriter, generic);
      SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
      int64_t elements = ShapedType::getNumElements(ranges);
      if (threads == 1 || ranges.empty() || elements == 0 ||
          elements < minElements)
        continue; // one serial pass (or nothing to do)
      auto [dim, tile] = blockDimension(ranges, 4 * threads);
      if (tile == ranges[dim])
        continue; // one block
      SmallVector<int64_t> sizes(ranges.size(), 0);
      sizes[dim] = tile;
      LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << elements
                              << " elements in blocks of " << tile
                              << " along dimension " << dim << "\n");
      FailureOr<linalg::LinalgOp> tiled = tileInPlace(
          rewriter, generic, sizes, scf::SCFTilingOptions::LoopType::ForallOp);
      if (failed(tiled))
        return signalPassFailure();
      readInputFromSharedOutput(rewriter, *tiled);
    }
  }
};

} // namespace
