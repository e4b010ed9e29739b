//===- CopiesToLinalg.cpp - strided memref copies as loops ----------------===//
//
// Bufferization writes a tensor.pad as a fill and a memref.copy of the image
// into a strided subview of the padded buffer. A copy that is not one
// contiguous block lowers to a call of the runner utilities' generic
// `memrefCopy`, which recomputes every element's address: on a 1.8 MB
// depthwise image it took 1.2 ms, ten times the convolution. As linalg.copy
// it becomes loops whose innermost dimension is contiguous, which LLVM
// vectorizes. Contiguous copies stay memref.copy (a memcpy).
//
// A short contiguous innermost run whose rows lie apart (a group's 8
// channels of an NHWC image, grouped-direct's per-task pad) is one vector
// load and store per row instead: LLVM unrolled those 8-element loops and
// vectorized the pixel loop across them with strided gathers and permutes
// (ResNeXt's g32 3x3 at batch 8: a third of the layer's time).
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-copies-to-linalg"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERCOPIESTOLINALG
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

bool isContiguous(Value memref) {
  return memref::isStaticShapeAndContiguousRowMajor(
      cast<MemRefType>(memref.getType()));
}

/// The longest innermost run copied as one vector (1 KiB of f32); longer
/// runs are LLVM's loop to vectorize.
constexpr int64_t kMaxVectorRun = 256;

/// The elements of the copy's innermost dimension when it is static, short
/// and contiguous on both sides, and its rows are apart on at least one
/// side (then each row is one vector), else 0. Rows that follow each other
/// on both sides (a whole image's pad copy: W x C floats in one run) are
/// LLVM's long loop.
int64_t vectorRun(memref::CopyOp copy) {
  auto source = cast<MemRefType>(copy.getSource().getType());
  auto target = cast<MemRefType>(copy.getTarget().getType());
  int64_t rank = source.getRank();
  if (rank < 2 || !source.getElementType().isIntOrFloat())
    return 0;
  int64_t run = source.getShape().back();
  if (ShapedType::isDynamic(run) || run < 2 || run > kMaxVectorRun)
    return 0;
  bool rowsApart = false;
  for (MemRefType type : {source, target}) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return 0;
    rowsApart |= strides[rank - 2] != run;
  }
  return rowsApart ? run : 0;
}

/// Loops over every dimension but the innermost, each row moved by one
/// vector load and store of `run` elements.
void copyRowsAsVectors(RewriterBase &rewriter, memref::CopyOp copy,
                       int64_t run) {
  Location loc = copy.getLoc();
  Value source = copy.getSource(), target = copy.getTarget();
  auto type = cast<MemRefType>(source.getType());
  auto rowType = VectorType::get({run}, type.getElementType());
  // One constant per value (the bounds, steps and the run's start).
  llvm::DenseMap<int64_t, Value> constants;
  auto index = [&](int64_t v) {
    Value &c = constants[v];
    if (!c)
      c = arith::ConstantIndexOp::create(rewriter, loc, v);
    return c;
  };
  Value zero = index(0);
  SmallVector<Value> lower, upper, steps;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d) {
    lower.push_back(zero);
    upper.push_back(type.isDynamicDim(d)
                        ? memref::DimOp::create(rewriter, loc, source, d)
                              .getResult()
                        : index(type.getDimSize(d)));
    steps.push_back(index(1));
  }
  scf::buildLoopNest(rewriter, loc, lower, upper, steps,
                     [&](OpBuilder &b, Location nested, ValueRange ivs) {
                       SmallVector<Value> at(ivs);
                       at.push_back(zero);
                       Value row = vector::LoadOp::create(b, nested, rowType,
                                                          source, at);
                       vector::StoreOp::create(b, nested, row, target, at);
                     });
}

struct ConvLowerCopiesToLinalgPass
    : conv_lower::impl::ConvLowerCopiesToLinalgBase<
          ConvLowerCopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> strided;
    getOperation()->walk([&](memref::CopyOp copy) {
      if (isa<MemRefType>(copy.getSource().getType()) &&
          isa<MemRefType>(copy.getTarget().getType()) &&
          !(isContiguous(copy.getSource()) && isContiguous(copy.getTarget())))
        strided.push_back(copy);
    });
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << strided.size()
                            << " strided copies as linalg.copy\n");
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp copy : strided) {
      rewriter.setInsertionPoint(copy);
      if (int64_t run = vectorRun(copy))
        copyRowsAsVectors(rewriter, copy, run);
      else
        linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(),
                               copy.getTarget());
      rewriter.eraseOp(copy);
    }
  }
};

} // namespace
