//===- PackVNNI.cpp - GEMM operands in K groups of 32 bits (VNNI layout) --===//
//
// x86's dot-product instructions multiply groups of adjacent K elements that
// fill one 32-bit lane and add each group's products into that lane:
// AVX512-BF16's VDPBF16PS pairs of bf16 into f32 (32 multiply-adds an
// instruction, twice an f32 FMA's), AVX512-VNNI's VPDPBUSD quads of 8-bit
// integers into i32 (64). The groups run along K, so both operands must
// hold K's consecutive elements side by side: the broadcast operand (A
// [M, K], row-major) already does, the streamed one (B [K, N], or the
// filter panels [P, K, nr]) does not. This pass rewrites a bf16 x bf16 ->
// f32 or i8 x i8 -> i32 contraction with one static K into the same
// contraction over (k / g, k % g), g = 2 or 4, every input read through its
// K split with the group innermost: A as [.., m, k / g, g], the streamed B
// as [.., k / g, n, g] (n: the output's innermost dimension, the vector
// lanes). Where the split alone gives that order (A = X_col, K innermost)
// the input is only reshaped (tensor.expand_shape); otherwise (B [K, N],
// the filter panels, W [N, K]) it is reshaped and transposed once, where it
// is defined (outside the GEMM's loops: a constant filter's repack is then
// hoisted into the packing function). A K in no whole groups gets zeros
// more in both inputs.
//
// VPDPBUSD multiplies unsigned bytes by signed ones. A signed A is made
// unsigned by adding 128 (flipping its sign bit, in the body: the register
// tile flips each broadcast group): the contraction then reads A's bytes
// flipped and zero-extended and starts from C - 128 * sum_k B[k, n], the
// column sums of B (computed where B is defined: once, at packing time, for
// constant weights), which takes the added 128s back out exactly (i32
// arithmetic wraps the same way both ways).
//
// AMX's TDPBSSD multiplies signed bytes by signed bytes: with `signed-i8`
// the body stays the signed product (A first), with neither the flip nor
// the column sums, since AMX's tiles load A from memory as it lies.
//
// conv-lower-tile-and-vectorize keeps each group whole in every tile, and
// conv-lower-x86-dot-product turns the tiles into the dot instructions.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Transforms/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-pack-vnni"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERPACKVNNI
#include "ConvLower/Transforms/CPU/Passes.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;

namespace {

/// The output's innermost dimension (the register tile's vector lanes)
/// where exactly one input indexes it: that input is the streamed one.
std::optional<AffineExpr> vectorDim(linalg::LinalgOp op) {
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (out.getNumResults() == 0)
    return std::nullopt;
  AffineExpr n = out.getResults().back();
  int readers = llvm::count_if(op.getDpsInputOperands(), [&](OpOperand *in) {
    return llvm::is_contained(op.getMatchingIndexingMap(in).getResults(), n);
  });
  if (readers != 1)
    return std::nullopt;
  return n;
}

/// What packGroups needs of a contraction: its K loop, the output's
/// innermost dimension (the streamed operand's vector lanes), K's group
/// (2 bf16, 4 i8) and whether A's bytes are moved to unsigned ones.
struct GroupedDims {
  unsigned k;
  AffineExpr n;
  int64_t group;
  bool unsignedA;
};

/// Whether `op`'s body is the signed 8-bit product sum(extsi(a) *
/// extsi(b)) into i32 (linalg.matmul's on i8), the form the unsigned-A
/// rewrite knows how to restate.
bool isSignedI8Product(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  if (body->getOperations().size() != 5)
    return false;
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddIOp>();
  if (!add)
    return false;
  Value acc = body->getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  auto mul = product.getDefiningOp<arith::MulIOp>();
  if (!mul || (add.getLhs() != acc && add.getRhs() != acc))
    return false;
  auto extendsArg = [&](Value v, unsigned arg) {
    auto ext = v.getDefiningOp<arith::ExtSIOp>();
    return ext && ext.getIn() == body->getArgument(arg);
  };
  return (extendsArg(mul.getLhs(), 0) && extendsArg(mul.getRhs(), 1)) ||
         (extendsArg(mul.getLhs(), 1) && extendsArg(mul.getRhs(), 0));
}

/// K's group where `op`'s element types have a dot instruction this pass
/// is asked for: 2 for bf16 x bf16 -> f32, 4 for i8 x i8 -> i32 (with the
/// signed product body); 0 otherwise.
int64_t groupOf(linalg::LinalgOp op, bool bf16, bool i8) {
  auto elementOf = [](Value v) { return getElementTypeOrSelf(v.getType()); };
  Type a = elementOf(op.getDpsInputOperand(0)->get());
  Type b = elementOf(op.getDpsInputOperand(1)->get());
  Type c = elementOf(op.getDpsInitOperand(0)->get());
  if (bf16 && a.isBF16() && b.isBF16() && c.isF32())
    return 2;
  if (i8 && a.isInteger(8) && b.isInteger(8) && c.isInteger(32) &&
      isSignedI8Product(op))
    return 4;
  return 0;
}

/// The K loop, vector dimension and group of `op` where it is a
/// contraction this pass rewrites: tensors, two inputs of a grouped type
/// (groupOf), one reduction loop of static extent (at least 2; one in no
/// whole groups is padded with zeros) that each input indexes exactly once
/// by itself, the output's innermost dimension read by one input
/// (vectorDim) and of a static extent that is a multiple of 4, no
/// linalg.index in the body. For i8, every dimension of the streamed input
/// but K is one of the output's (its column sums are subtracted there).
std::optional<GroupedDims> groupableReduction(linalg::LinalgOp op, bool bf16,
                                              bool i8, bool signedI8) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  int64_t group = groupOf(op, bf16, i8);
  if (group == 0 || !op.getBlock()->getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->k.size() != 1)
    return std::nullopt;
  unsigned k = dims->k.front();
  int64_t extent = op.getStaticLoopRanges()[k];
  if (ShapedType::isDynamic(extent) || extent < 2)
    return std::nullopt;
  AffineExpr kExpr = getAffineDimExpr(k, op.getContext());
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isProjectedPermutation() ||
        llvm::count(map.getResults(), kExpr) != 1)
      return std::nullopt;
  }
  // The register tiles' columns must come in whole dots (4, 8 or 16
  // lanes): vectorTile splits a static N into multiples of 16 and a
  // remainder, a multiple of 4 where N is.
  std::optional<AffineExpr> n = vectorDim(op);
  if (!n)
    return std::nullopt;
  int64_t columns =
      op.getStaticLoopRanges()[cast<AffineDimExpr>(*n).getPosition()];
  if (ShapedType::isDynamic(columns) || columns % 4)
    return std::nullopt;
  bool unsignedA = group == 4 && !signedI8;
  if (unsignedA) {
    AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      if (!llvm::is_contained(map.getResults(), *n))
        continue;
      for (AffineExpr e : map.getResults())
        if (e != kExpr && !llvm::is_contained(out.getResults(), e))
          return std::nullopt;
    }
  }
  return GroupedDims{k, *n, group, unsignedA};
}

/// The layout each input gets, as its results in order: every dimension
/// but K (and, for the streamed operand, the output's innermost dimension
/// n) in its own order, then K's groups, then n for the streamed operand,
/// then the group. The register tile broadcasts A's group per row (A: [..,
/// m, k / g, g]) and loads L groups of B's columns as one vector (B: [..,
/// k / g, n, g]). `kExpr` stands for K's groups, `member` for the index in
/// the group.
SmallVector<AffineExpr> groupedResults(AffineMap map, AffineExpr kExpr,
                                       AffineExpr member,
                                       std::optional<AffineExpr> n) {
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map.getResults())
    if (e != kExpr && e != n)
      results.push_back(e);
  results.push_back(kExpr);
  if (n)
    results.push_back(*n);
  results.push_back(member);
  return results;
}

/// `input` with zeros after its last element along `dim` up to a whole
/// number of groups (the RGB stem's K = 3 * 7 * 7 = 147): the padded
/// products add nothing. A copy of the input (the filter's at packing time;
/// the im2col rows' per block).
Value padToGroups(RewriterBase &rewriter, Location loc, Value input,
                  unsigned dim, int64_t group) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t missing = (group - type.getDimSize(dim) % group) % group;
  if (missing == 0)
    return input;
  SmallVector<OpFoldResult> low(type.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> high = low;
  high[dim] = rewriter.getIndexAttr(missing);
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] += missing;
  Value zero = arith::ConstantOp::create(
      rewriter, loc, rewriter.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(rewriter, loc, type.clone(shape), input, low,
                               high, zero);
}

/// The sign bit flipped: 128 added to an i8, read as unsigned.
Value flipSignBit(OpBuilder &b, Location loc, Value byte) {
  Value signBit =
      arith::ConstantOp::create(b, loc, b.getIntegerAttr(b.getI8Type(), -128));
  return arith::XOrIOp::create(b, loc, byte, signBit);
}

/// How one input is laid out: its map in the contraction, K's and the
/// group member's expressions, the target order (groupedResults), the
/// group.
struct GroupLayout {
  AffineMap map;
  AffineExpr kExpr, member;
  SmallVector<AffineExpr> target;
  int64_t group;
};

Value layOutGroups(RewriterBase &rewriter, Location loc, Value input,
                   const GroupLayout &layout);

/// `input` laid out by laying out the tensor it is a slice of (whole along
/// K, unit strides, not rank-reducing) and slicing that: the im2col panels'
/// blocks slice the filter panels per block of filters inside their
/// scf.forall, where a repack of the slice would run on every call (r50 512
/// 7x7: 2.4 MB a block, 0.86 ms against 0.60 without it). Null where
/// `input` is no such slice.
Value layOutSliceSource(RewriterBase &rewriter, Location loc, Value input,
                        const GroupLayout &layout) {
  auto slice = input.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || slice.getSourceType().getRank() != slice.getType().getRank() ||
      !slice.hasUnitStride())
    return nullptr;
  unsigned k = *layout.map.getResultPosition(layout.kExpr);
  if (!isZeroInteger(slice.getMixedOffsets()[k]) ||
      slice.getSourceType().isDynamicDim(k) ||
      getConstantIntValue(slice.getMixedSizes()[k]) !=
          slice.getSourceType().getDimSize(k))
    return nullptr;
  Value packed = layOutGroups(rewriter, loc, slice.getSource(), layout);
  auto packedType = cast<RankedTensorType>(packed.getType());
  SmallVector<OpFoldResult> offsets, sizes;
  for (auto [at, e] : llvm::enumerate(layout.target)) {
    if (e == layout.kExpr || e == layout.member) {
      offsets.push_back(rewriter.getIndexAttr(0));
      sizes.push_back(rewriter.getIndexAttr(packedType.getDimSize(at)));
      continue;
    }
    unsigned d = *layout.map.getResultPosition(e);
    offsets.push_back(slice.getMixedOffsets()[d]);
    sizes.push_back(slice.getMixedSizes()[d]);
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfter(slice);
  return tensor::ExtractSliceOp::create(
      rewriter, loc, packed, offsets, sizes,
      SmallVector<OpFoldResult>(layout.target.size(),
                                rewriter.getIndexAttr(1)));
}

/// `input` (read through `layout.map`) laid out as `layout.target`: padded
/// to whole groups, its K dimension split into
/// (K / g, g) by a reshape, then, where that is not already the order, one
/// transpose, all where `input` is defined.
Value layOutGroups(RewriterBase &rewriter, Location loc, Value input,
                   const GroupLayout &layout) {
  if (Value sliced = layOutSliceSource(rewriter, loc, input, layout))
    return sliced;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfterValue(input);
  input = padToGroups(rewriter, loc, input,
                      *layout.map.getResultPosition(layout.kExpr),
                      layout.group);
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape;
  SmallVector<ReassociationIndices> groups;
  SmallVector<AffineExpr> expandedOrder;
  for (auto [d, e] : llvm::enumerate(layout.map.getResults())) {
    int64_t at = shape.size();
    if (e == layout.kExpr) {
      groups.push_back({at, at + 1});
      shape.append({type.getDimSize(d) / layout.group, layout.group});
      expandedOrder.append({layout.kExpr, layout.member});
      continue;
    }
    groups.push_back({at});
    shape.push_back(type.getDimSize(d));
    expandedOrder.push_back(e);
  }
  Value expanded = tensor::ExpandShapeOp::create(
      rewriter, loc, type.clone(shape), input, groups);
  SmallVector<int64_t> perm;
  for (AffineExpr e : layout.target)
    perm.push_back(llvm::find(expandedOrder, e) - expandedOrder.begin());
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return expanded;
  SmallVector<OpFoldResult> expandedSizes =
      tensor::getMixedSizes(rewriter, loc, expanded);
  SmallVector<OpFoldResult> packedSizes;
  for (int64_t from : perm)
    packedSizes.push_back(expandedSizes[from]);
  Value empty = tensor::EmptyOp::create(rewriter, loc, packedSizes,
                                        type.getElementType());
  return linalg::TransposeOp::create(rewriter, loc, expanded, empty, perm)
      .getResult()[0];
}

/// 128 * sum over K of `b` (i8, read through `map`), as i32 over b's other
/// dimensions in their order: what flipping A's sign bits adds to every
/// output. Computed where `b` is defined, or, for a slice whole along K,
/// on its source and sliced (the filter panels' per-block slices).
Value shiftedColumnSums(RewriterBase &rewriter, Location loc, Value b,
                        AffineMap map, AffineExpr kExpr) {
  unsigned k = *map.getResultPosition(kExpr);
  auto type = cast<RankedTensorType>(b.getType());
  if (auto slice = b.getDefiningOp<tensor::ExtractSliceOp>();
      slice && slice.getSourceType().getRank() == type.getRank() &&
      slice.hasUnitStride() && isZeroInteger(slice.getMixedOffsets()[k]) &&
      !slice.getSourceType().isDynamicDim(k) &&
      getConstantIntValue(slice.getMixedSizes()[k]) ==
          slice.getSourceType().getDimSize(k)) {
    Value sums =
        shiftedColumnSums(rewriter, loc, slice.getSource(), map, kExpr);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (unsigned d = 0; d < type.getRank(); ++d) {
      if (d == k)
        continue;
      offsets.push_back(slice.getMixedOffsets()[d]);
      sizes.push_back(slice.getMixedSizes()[d]);
      strides.push_back(rewriter.getIndexAttr(1));
    }
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfter(slice);
    return tensor::ExtractSliceOp::create(rewriter, loc, sums, offsets, sizes,
                                          strides);
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointAfterValue(b);
  MLIRContext *ctx = rewriter.getContext();
  unsigned rank = type.getRank();
  SmallVector<OpFoldResult> bSizes = tensor::getMixedSizes(rewriter, loc, b);
  SmallVector<OpFoldResult> shape;
  SmallVector<AffineExpr> kept;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < rank; ++d) {
    iterators.push_back(d == k ? utils::IteratorType::reduction
                               : utils::IteratorType::parallel);
    if (d == k)
      continue;
    shape.push_back(bSizes[d]);
    kept.push_back(getAffineDimExpr(d, ctx));
  }
  Type i32 = rewriter.getI32Type();
  Value zero = arith::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(0));
  Value init = linalg::FillOp::create(
                   rewriter, loc, zero,
                   ValueRange{tensor::EmptyOp::create(rewriter, loc, shape, i32)})
                   .getResult(0);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, kept, ctx)};
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{init.getType()}, ValueRange{b},
             ValueRange{init}, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value wide = arith::ExtSIOp::create(nb, l, i32, args[0]);
               Value shift = arith::ConstantOp::create(
                   nb, l, nb.getI32IntegerAttr(7));
               Value scaled = arith::ShLIOp::create(nb, l, wide, shift);
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{arith::AddIOp::create(nb, l, args[1], scaled)});
             })
      .getResult(0);
}

/// `init` - `sums` (sums over b's non-K dimensions `sumDims`, each one of
/// the output's dimensions in `outMap`), made before `op`.
Value subtractColumnSums(RewriterBase &rewriter, Location loc, Value init,
                         Value sums, AffineMap outMap,
                         ArrayRef<AffineExpr> sumDims) {
  MLIRContext *ctx = rewriter.getContext();
  unsigned rank = outMap.getNumResults();
  SmallVector<AffineExpr> sumResults;
  for (AffineExpr e : sumDims)
    sumResults.push_back(
        getAffineDimExpr(*outMap.getResultPosition(e), ctx));
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, sumResults, ctx),
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  return linalg::GenericOp::create(
             rewriter, loc, TypeRange{init.getType()}, ValueRange{sums},
             ValueRange{init}, maps,
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [](OpBuilder &b, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   b, l,
                   ValueRange{arith::SubIOp::create(b, l, args[1], args[0])});
             })
      .getResult(0);
}

/// The i8 body with A's bytes read unsigned, their sign bits flipped (128
/// added): sum(extui(a ^ 0x80) * extsi(b)). The flip stays in the body, so
/// that the register tile applies it to each broadcast group of A (one
/// instruction a group, conv-lower-x86-dot-product) instead of a pass over
/// A (a 1x1 layer's A is the image itself: 6.4 MB read and written again
/// per call at r50's 256->64 56x56 N8).
void buildUnsignedAProduct(OpBuilder &b, Location loc, ValueRange args) {
  Type i32 = b.getI32Type();
  Value a = arith::ExtUIOp::create(b, loc, i32, flipSignBit(b, loc, args[0]));
  Value w = arith::ExtSIOp::create(b, loc, i32, args[1]);
  Value product = arith::MulIOp::create(b, loc, a, w);
  linalg::YieldOp::create(
      b, loc, ValueRange{arith::AddIOp::create(b, loc, args[2], product)});
}

/// The i8 body as linalg's signed product, A first: sum(extsi(a) *
/// extsi(b)) (signed-i8: AMX's TDPBSSD reads both signed).
void buildSignedProduct(OpBuilder &b, Location loc, ValueRange args) {
  Type i32 = b.getI32Type();
  Value a = arith::ExtSIOp::create(b, loc, i32, args[0]);
  Value w = arith::ExtSIOp::create(b, loc, i32, args[1]);
  Value product = arith::MulIOp::create(b, loc, a, w);
  linalg::YieldOp::create(
      b, loc, ValueRange{arith::AddIOp::create(b, loc, args[2], product)});
}

/// Rewrites `op` over (k / g, k % g); the new loop (the group member) is
/// the last.
void packGroups(RewriterBase &rewriter, linalg::LinalgOp op,
                const GroupedDims &dims) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  unsigned loops = op.getNumLoops();
  AffineExpr kExpr = getAffineDimExpr(dims.k, ctx);
  AffineExpr member = getAffineDimExpr(loops, ctx);
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  Value init = op.getDpsInitOperand(0)->get();

  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    std::optional<AffineExpr> streamed;
    if (llvm::is_contained(map.getResults(), dims.n))
      streamed = dims.n;
    // K's result now counts groups; the member's index comes last.
    GroupLayout layout{map,
                       kExpr,
                       member,
                       groupedResults(map, kExpr, member, streamed),
                       dims.group};
    if (dims.unsignedA && streamed) {
      Value sums = shiftedColumnSums(rewriter, loc, input->get(), map, kExpr);
      SmallVector<AffineExpr> sumDims;
      for (AffineExpr e : map.getResults())
        if (e != kExpr)
          sumDims.push_back(e);
      rewriter.setInsertionPoint(op);
      init = subtractColumnSums(rewriter, loc, init, sums, outMap, sumDims);
    }
    inputs.push_back(layOutGroups(rewriter, loc, input->get(), layout));
    maps.push_back(AffineMap::get(loops + 1, 0, layout.target, ctx));
  }
  maps.push_back(AffineMap::get(loops + 1, 0, outMap.getResults(), ctx));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  iterators.push_back(utils::IteratorType::reduction);

  rewriter.setInsertionPoint(op);
  if (dims.group == 4) {
    // The A operand is the first input (groupableReduction's body check
    // takes either order of the product; A is the non-streamed input,
    // the unsigned one or, signed-i8, the one the tiles read as rows).
    bool aFirst = !llvm::is_contained(
        op.getMatchingIndexingMap(op.getDpsInputOperand(0)).getResults(),
        dims.n);
    if (!aFirst) {
      std::swap(inputs[0], inputs[1]);
      std::swap(maps[0], maps[1]);
    }
    auto packed = linalg::GenericOp::create(
        rewriter, loc, op->getResultTypes(), inputs, ValueRange{init}, maps,
        iterators, dims.unsignedA ? buildUnsignedAProduct : buildSignedProduct);
    rewriter.replaceOp(op, packed->getResults());
    return;
  }
  // The body (multiply the two, add into the accumulator) is unchanged.
  auto packed = linalg::GenericOp::create(
      rewriter, loc, op->getResultTypes(), inputs, ValueRange{init}, maps,
      iterators);
  rewriter.cloneRegionBefore(op->getRegion(0), packed.getRegion(),
                             packed.getRegion().end());
  rewriter.replaceOp(op, packed->getResults());
}

struct ConvLowerPackVNNIPass
    : conv_lower::impl::ConvLowerPackVNNIBase<ConvLowerPackVNNIPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<std::pair<linalg::LinalgOp, GroupedDims>> contractions;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (std::optional<GroupedDims> dims =
              groupableReduction(op, bf16, i8, signedI8))
        contractions.emplace_back(op, *dims);
    });
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << contractions.size()
                            << " contractions in K groups\n");
    for (auto [op, dims] : contractions) {
      // Named contractions (linalg.matmul) become generics first (the same
      // loops): only a generic takes the extra loop.
      if (!isa<linalg::GenericOp>(op.getOperation())) {
        rewriter.setInsertionPoint(op);
        FailureOr<linalg::GenericOp> generic =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generic))
          continue;
        op = *generic;
      }
      packGroups(rewriter, op, dims);
    }
  }
};

} // namespace
