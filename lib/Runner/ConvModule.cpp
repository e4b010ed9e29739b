//===- ConvModule.cpp - a conv problem as a linalg module -----------------===//
//
// Built with the ops' builders (no text round trip), so the C++ API,
// conv-run --emit-mlir and every route start from the same construction.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/ConvModule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::conv_lower;

Type mlir::conv_lower::elementType(MLIRContext &ctx, DType dtype) {
  switch (dtype) {
  case DType::F16:
    return Float16Type::get(&ctx);
  case DType::BF16:
    return BFloat16Type::get(&ctx);
  case DType::I8:
    return IntegerType::get(&ctx, 8);
  case DType::I32:
    return IntegerType::get(&ctx, 32);
  case DType::F32:
  case DType::TF32:
    break;
  }
  return Float32Type::get(&ctx);
}

namespace {

/// Builds the body of @conv: pad, conv (plain, depthwise or grouped; the
/// quantized `_q` op with zero points for i8 data), bias, the epilogue.
class ConvBuilder {
public:
  ConvBuilder(ImplicitLocOpBuilder &b, const ConvProblem &p)
      : b(b), p(p), nchw(p.layout == Layout::NCHW),
        elem(elementType(*b.getContext(), p.dtype)),
        acc(elementType(*b.getContext(), p.outputType())) {}

  /// Emits the body into the current block and returns the result.
  Value build(Value input, Value filter, Value bias, Value residual,
              const ConvEpilogue &epilogue) {
    if (p.isQuantized()) {
      zeroPoints = {
          arith::ConstantOp::create(b, b.getI32IntegerAttr(p.inputZeroPoint)),
          arith::ConstantOp::create(b, b.getI32IntegerAttr(p.filterZeroPoint))};
    }
    Value x = padInput(input);
    Value y;
    if (p.isPooling())
      y = maxPool(x);
    else if (p.hasDepth)
      y = volumetric(x, filter); // validateProblem: one group, float data
    else if (p.groups == 1)
      y = ungrouped(x, filter);
    else if (nchw && isDepthwise(p) && !p.isQuantized())
      y = depthwiseNchw(x, filter); // linalg has no depthwise NCHW _q op
    else
      y = grouped(x, filter);
    if (bias)
      y = addBias(y, bias);
    if (residual)
      y = elementwise(
          y, residual,
          [&](OpBuilder &nested, Location loc, Value v, Value r) -> Value {
            if (isa<FloatType>(acc)) {
              // A bf16 output's residual is bf16: added in f32.
              if (r.getType() != acc)
                r = arith::ExtFOp::create(nested, loc, acc, r);
              return arith::AddFOp::create(nested, loc, v, r);
            }
            return arith::AddIOp::create(nested, loc, v, r);
          });
    if (epilogue.relu)
      y = addRelu(y);
    if (epilogue.clamp)
      y = elementwise(y, Value(), [&](OpBuilder &nested, Location loc, Value v,
                                      Value) -> Value {
        auto bound = [&](double value) {
          return arith::ConstantOp::create(
              nested, loc, nested.getFloatAttr(acc, value));
        };
        Value low = arith::MaximumFOp::create(nested, loc, v,
                                              bound(epilogue.clampMin));
        return arith::MinimumFOp::create(nested, loc, low,
                                         bound(epilogue.clampMax));
      });
    if (epilogue.bf16Output)
      y = elementwise(
          y, Value(),
          [&](OpBuilder &nested, Location loc, Value v, Value) -> Value {
            return arith::TruncFOp::create(nested, loc, b.getBF16Type(), v);
          },
          b.getBF16Type());
    return y;
  }

private:
  RankedTensorType tensor(llvm::ArrayRef<int64_t> shape, Type element) const {
    return RankedTensorType::get(shape, element);
  }

  /// The input's shape padded; a 3-D problem's depth sits before H.
  llvm::SmallVector<int64_t> paddedInputShape() const {
    int64_t hp = p.h + p.padTop + p.padBottom;
    int64_t wp = p.w + p.padLeft + p.padRight;
    llvm::SmallVector<int64_t> shape = nchw ? llvm::SmallVector<int64_t>{p.n, p.c, hp, wp}
                                            : llvm::SmallVector<int64_t>{p.n, hp, wp, p.c};
    if (p.hasDepth)
      shape.insert(shape.begin() + depthDim(), p.d + p.padFront + p.padBack);
    return shape;
  }

  /// Where the depth sits in a 3-D image (NCDHW: 2, NDHWC: 1).
  unsigned depthDim() const { return nchw ? 2 : 1; }

  /// -infinity in `type`: what max pooling's padding and accumulator start
  /// from.
  Value negativeInfinity(Type type) {
    return arith::ConstantOp::create(
        b, b.getFloatAttr(type, -std::numeric_limits<double>::infinity()));
  }

  /// The padded input. Zeros; for a quantized problem the input's zero
  /// point, which is the real value 0 (torch's quantized convolution); for
  /// max pooling -infinity, which no pixel loses to.
  Value padInput(Value input) {
    if (!p.padTop && !p.padLeft && !p.padBottom && !p.padRight &&
        !p.padFront && !p.padBack)
      return input;
    Value zero =
        p.isPooling() ? negativeInfinity(elem)
        : p.isQuantized()
            ? arith::ConstantOp::create(
                  b, b.getIntegerAttr(elem, p.inputZeroPoint))
                  .getResult()
            : arith::ConstantOp::create(b, b.getZeroAttr(elem)).getResult();
    unsigned rank = p.hasDepth ? 5 : 4;
    llvm::SmallVector<OpFoldResult> low(rank, b.getIndexAttr(0));
    llvm::SmallVector<OpFoldResult> high(rank, b.getIndexAttr(0));
    unsigned hDim = (nchw ? 2 : 1) + (p.hasDepth ? 1 : 0), wDim = hDim + 1;
    low[hDim] = b.getIndexAttr(p.padTop), low[wDim] = b.getIndexAttr(p.padLeft);
    high[hDim] = b.getIndexAttr(p.padBottom);
    high[wDim] = b.getIndexAttr(p.padRight);
    if (p.hasDepth) {
      low[depthDim()] = b.getIndexAttr(p.padFront);
      high[depthDim()] = b.getIndexAttr(p.padBack);
    }
    return tensor::PadOp::create(b, tensor(paddedInputShape(), elem), input,
                                 low, high, zero);
  }

  /// A zero-filled accumulator (f32, or i32 for i8 data) of `shape`.
  Value zeroInit(llvm::ArrayRef<int64_t> shape) {
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(acc));
    Value empty = tensor::EmptyOp::create(b, shape, acc);
    return linalg::FillOp::create(b, ValueRange{zero}, ValueRange{empty})
        .getResult(0);
  }

  /// A named conv's strides or dilations attribute (one entry per dim).
  DenseIntElementsAttr windowAttr(llvm::ArrayRef<int64_t> values) const {
    return DenseIntElementsAttr::get(
        RankedTensorType::get({int64_t(values.size())}, b.getI64Type()),
        values);
  }

  /// linalg.<ConvOp> with the problem's strides and dilations, or its
  /// quantized twin QConvOp with the zero points.
  template <typename ConvOp, typename QConvOp>
  Value conv(Value x, Value w, llvm::ArrayRef<int64_t> yShape) {
    Value init = zeroInit(yShape);
    auto strides = windowAttr({p.strideH, p.strideW});
    auto dilations = windowAttr({p.dilationH, p.dilationW});
    if (p.isQuantized())
      return QConvOp::create(b, TypeRange{init.getType()},
                             ValueRange{x, w, zeroPoints[0], zeroPoints[1]},
                             ValueRange{init}, strides, dilations)
          .getResult(0);
    return ConvOp::create(b, TypeRange{init.getType()}, ValueRange{x, w},
                          ValueRange{init}, strides, dilations)
        .getResult(0);
  }

  /// 3-D, one group: conv_3d_ncdhw_fcdhw takes the FCDHW filter as it is;
  /// conv_3d_ndhwc_dhwcf wants DHWCF, so the FDHWC filter is transposed
  /// first (the filter is small; linalg has no FDHWC op).
  Value volumetric(Value x, Value filter) {
    auto strides = windowAttr({p.strideD, p.strideH, p.strideW});
    auto dilations = windowAttr({p.dilationD, p.dilationH, p.dilationW});
    Value init = zeroInit(p.outputShape());
    if (nchw)
      return linalg::Conv3DNcdhwFcdhwOp::create(
                 b, TypeRange{init.getType()}, ValueRange{x, filter},
                 ValueRange{init}, strides, dilations)
          .getResult(0);
    Value dhwcf = tensor::EmptyOp::create(
        b, llvm::ArrayRef<int64_t>{p.kd, p.kh, p.kw, p.channelsPerGroup(), p.f},
        elem);
    Value w = linalg::TransposeOp::create(b, filter, dhwcf,
                                          llvm::ArrayRef<int64_t>{1, 2, 3, 4, 0})
                  .getResult()[0];
    return linalg::Conv3DNdhwcDhwcfOp::create(
               b, TypeRange{init.getType()}, ValueRange{x, w}, ValueRange{init},
               strides, dilations)
        .getResult(0);
  }

  /// linalg.pooling_{nchw,nhwc}_max over the padded image, from -infinity;
  /// the window operand only gives the window's shape.
  Value maxPool(Value x) {
    Value empty = tensor::EmptyOp::create(b, p.outputShape(), acc);
    Value init = linalg::FillOp::create(b, ValueRange{negativeInfinity(acc)},
                                        ValueRange{empty})
                     .getResult(0);
    Value window =
        tensor::EmptyOp::create(b, llvm::ArrayRef<int64_t>{p.kh, p.kw}, acc);
    auto strides = windowAttr({p.strideH, p.strideW});
    auto dilations = windowAttr({p.dilationH, p.dilationW});
    if (nchw)
      return linalg::PoolingNchwMaxOp::create(
                 b, TypeRange{init.getType()}, ValueRange{x, window},
                 ValueRange{init}, strides, dilations)
          .getResult(0);
    return linalg::PoolingNhwcMaxOp::create(
               b, TypeRange{init.getType()}, ValueRange{x, window},
               ValueRange{init}, strides, dilations)
        .getResult(0);
  }

  Value ungrouped(Value x, Value filter) {
    if (nchw)
      return conv<linalg::Conv2DNchwFchwOp, linalg::Conv2DNchwFchwQOp>(
          x, filter, p.outputShape());
    return conv<linalg::Conv2DNhwcFhwcOp, linalg::Conv2DNhwcFhwcQOp>(
        x, filter, p.outputShape());
  }

  /// Depthwise NCHW: the [C, 1, KH, KW] filter is a [C, KH, KW] one.
  Value depthwiseNchw(Value x, Value filter) {
    Value w = tensor::CollapseShapeOp::create(
        b, tensor({p.c, p.kh, p.kw}, elem), filter,
        llvm::ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
    Value init = zeroInit(p.outputShape());
    return linalg::DepthwiseConv2DNchwChwOp::create(
               b, TypeRange{init.getType()}, ValueRange{x, w},
               ValueRange{init}, windowAttr({p.strideH, p.strideW}),
               windowAttr({p.dilationH, p.dilationW}))
        .getResult(0);
  }

  /// Grouped: split C and F into (G, Cg) and (G, Fg) by reshapes and use the
  /// NGCHW/GFCHW or NHWGC/GFHWC op; merge (G, Fg) back afterwards.
  Value grouped(Value x, Value filter) {
    int64_t g = p.groups, cg = p.channelsPerGroup(), fg = p.filtersPerGroup();
    int64_t ho = p.outH(), wo = p.outW();
    llvm::SmallVector<int64_t> xs = paddedInputShape();
    llvm::SmallVector<int64_t> xg, wg, yg;
    llvm::SmallVector<ReassociationIndices> channels;
    if (nchw) {
      xg = {xs[0], g, cg, xs[2], xs[3]};
      wg = {g, fg, cg, p.kh, p.kw};
      yg = {p.n, g, fg, ho, wo};
      channels = {{0}, {1, 2}, {3}, {4}};
    } else {
      xg = {xs[0], xs[1], xs[2], g, cg};
      wg = {g, fg, p.kh, p.kw, cg};
      yg = {p.n, ho, wo, g, fg};
      channels = {{0}, {1}, {2}, {3, 4}};
    }
    Value xr = tensor::ExpandShapeOp::create(b, tensor(xg, elem), x, channels);
    Value wr = tensor::ExpandShapeOp::create(
        b, tensor(wg, elem), filter,
        llvm::ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}, {4}});
    Value y =
        nchw ? conv<linalg::Conv2DNgchwGfchwOp, linalg::Conv2DNgchwGfchwQOp>(
                   xr, wr, yg)
             : conv<linalg::Conv2DNhwgcGfhwcOp, linalg::Conv2DNhwgcGfhwcQOp>(
                   xr, wr, yg);
    return tensor::CollapseShapeOp::create(b, tensor(p.outputShape(), acc), y,
                                           channels);
  }

  /// y[n, f, h, w] += bias[f] (f at the layout's channel position).
  Value addBias(Value y, Value bias) {
    MLIRContext *ctx = b.getContext();
    unsigned rank = cast<RankedTensorType>(y.getType()).getRank();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap channel =
        AffineMap::get(rank, 0, b.getAffineDimExpr(nchw ? 1 : rank - 1), ctx);
    llvm::SmallVector<utils::IteratorType> parallel(
        rank, utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               b, TypeRange{y.getType()}, ValueRange{y, bias}, ValueRange{y},
               llvm::ArrayRef<AffineMap>{identity, channel, identity}, parallel,
               /*doc=*/"", /*libraryCall=*/"",
               [&](OpBuilder &nested, Location loc, ValueRange args) {
                 Value bv = args[1];
                 if (bv.getType() != acc)
                   bv = arith::ExtFOp::create(nested, loc, acc, bv);
                 Value sum = arith::AddFOp::create(nested, loc, args[0], bv);
                 linalg::YieldOp::create(nested, loc, sum);
               })
        .getResult(0);
  }

  /// body(y, other) elementwise, over y's shape, on a fresh init (as a
  /// frontend writes an activation or an add); `other` (may be null) is a
  /// second operand of y's type.
  /// `body` over y (and `other`) element by element, into a tensor of y's
  /// shape and `resultElement` (default: y's element type).
  Value elementwise(
      Value y, Value other,
      llvm::function_ref<Value(OpBuilder &, Location, Value, Value)> body,
      Type resultElement = {}) {
    MLIRContext *ctx = b.getContext();
    auto type = cast<RankedTensorType>(y.getType());
    if (resultElement)
      type = type.clone(resultElement);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(type.getRank(), ctx);
    llvm::SmallVector<utils::IteratorType> parallel(
        type.getRank(), utils::IteratorType::parallel);
    llvm::SmallVector<Value, 2> inputs = {y};
    if (other)
      inputs.push_back(other);
    llvm::SmallVector<AffineMap, 3> maps(inputs.size() + 1, identity);
    Value init = tensor::EmptyOp::create(b, type.getShape(),
                                         type.getElementType());
    return linalg::GenericOp::create(
               b, TypeRange{type}, inputs, ValueRange{init}, maps, parallel,
               /*doc=*/"", /*libraryCall=*/"",
               [&](OpBuilder &nested, Location loc, ValueRange args) {
                 Value result = body(nested, loc, args[0],
                                     other ? args[1] : Value());
                 linalg::YieldOp::create(nested, loc, result);
               })
        .getResult(0);
  }

  /// y = max(y, 0), elementwise.
  Value addRelu(Value y) {
    return elementwise(y, Value(), [&](OpBuilder &nested, Location loc,
                                       Value v, Value) -> Value {
      Value zero =
          arith::ConstantOp::create(nested, loc, nested.getZeroAttr(acc));
      if (isa<FloatType>(acc))
        return arith::MaximumFOp::create(nested, loc, v, zero);
      return arith::MaxSIOp::create(nested, loc, v, zero);
    });
  }

  ImplicitLocOpBuilder &b;
  const ConvProblem &p;
  bool nchw;
  Type elem, acc;
  /// The i32 zero points (x, w) of a quantized problem.
  llvm::SmallVector<Value, 2> zeroPoints;
};

} // namespace

DType mlir::conv_lower::outputDType(const ConvProblem &problem,
                                    const ConvEpilogue &epilogue) {
  return epilogue.bf16Output ? DType::BF16 : problem.outputType();
}

DType mlir::conv_lower::residualDType(const ConvProblem &problem,
                                      const ConvEpilogue &epilogue) {
  return epilogue.bf16Residual ? DType::BF16 : outputDType(problem, epilogue);
}

std::string mlir::conv_lower::gpuEpilogueRefusal(const ConvEpilogue &e) {
  if (!e.bf16Output && !e.bf16Residual)
    return "";
  return "a bf16 output or residual runs on the CPU route, not the twin or "
         "cuda (the tensor-core kernels' epilogue is f32)";
}

llvm::Error mlir::conv_lower::validateEpilogue(const ConvProblem &p,
                                               const ConvEpilogue &e) {
  if ((e.bf16Output || e.bf16Residual) && p.isQuantized())
    return llvm::createStringError(
        "a bf16 output or residual applies to float convolutions; an i8 "
        "convolution's output is int32");
  if (e.bf16Residual && !e.residual)
    return llvm::createStringError(
        "a bf16 residual needs a residual (--residual, desc.residual)");
  if (!e.clamp)
    return llvm::Error::success();
  if (p.isQuantized())
    return llvm::createStringError(
        "a clamp applies to float outputs; an i8 convolution's output is "
        "int32");
  if (std::isnan(e.clampMin) || std::isnan(e.clampMax) ||
      e.clampMin > e.clampMax)
    return llvm::createStringError(llvm::formatv(
        "clamp bounds {0}, {1}: expected min <= max, neither NaN", e.clampMin,
        e.clampMax));
  return llvm::Error::success();
}

OwningOpRef<ModuleOp>
mlir::conv_lower::buildConvModule(MLIRContext &ctx, const ConvProblem &p,
                                  const ConvEpilogue &epilogue) {
  Location loc = NameLoc::get(
      StringAttr::get(&ctx, "conv-run: " + describeProblem(p)));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  ImplicitLocOpBuilder b(loc, &ctx);
  b.setInsertionPointToEnd(module->getBody());
  Type elem = elementType(ctx, p.dtype);
  // A pooling reads no filter: its function takes the image alone.
  llvm::SmallVector<Type> inputs = {
      RankedTensorType::get(p.inputShape(), elem)};
  if (!p.isPooling())
    inputs.push_back(RankedTensorType::get(p.filterShape(), elem));
  if (p.hasBias)
    inputs.push_back(RankedTensorType::get(p.biasShape(), elem));
  Type output = RankedTensorType::get(
      p.outputShape(), elementType(ctx, outputDType(p, epilogue)));
  if (epilogue.residual)
    inputs.push_back(RankedTensorType::get(
        p.outputShape(), elementType(ctx, residualDType(p, epilogue))));
  auto func = func::FuncOp::create(b, kConvFunctionName,
                                   b.getFunctionType(inputs, output));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  Value filter = p.isPooling() ? Value() : entry->getArgument(1);
  Value bias = p.hasBias ? entry->getArgument(2) : Value();
  Value residual = epilogue.residual ? entry->getArguments().back() : Value();
  Value y = ConvBuilder(b, p).build(entry->getArgument(0), filter, bias,
                                    residual, epilogue);
  func::ReturnOp::create(b, y);
  return module;
}
