//===- DepthwiseKernel.cpp - the direct depthwise kernel's block ----------===//
//
// A depthwise convolution (one channel, one filter per group) on CUDA cores:
// each thread sums a vector of channels of one output pixel over the taps,
// then the mma.sync family's output store (init, bias, ReLU, narrowing).
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Depthwise/DepthwiseKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::conv_lower::igemm;

void DepthwiseKernelBuilder::emitBlock(Value block, Value x, Value w,
                                       Value y) {
  assert(t.directVector && p.groups % t.directVector == 0 &&
         "a direct kernel computes whole channel vectors");
  int64_t v = t.directVector, vectors = p.groups / v;
  Value tid = hw.threadId(b, loc);
  forEach(t.threads(), tid, [&](Value thread) {
    // Consecutive threads take consecutive channel vectors of one pixel:
    // the loads of a warp are contiguous where channels are innermost.
    Value item = add(mul(block, t.threads()), thread);
    auto ifOp = scf::IfOp::create(b, loc, lessThan(item, p.m() * vectors),
                                  /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value m = div(item, vectors), c0 = mul(rem(item, vectors), v);
    Value n = div(m, p.pixels()), pixel = rem(m, p.pixels());
    Value oh = div(pixel, p.wo), ow = rem(pixel, p.wo);
    Type accType = p.accumulatorType;
    auto vecType = VectorType::get({v}, p.elementType);
    auto accVecType = VectorType::get({v}, accType);
    auto widen = [&](Value data, int64_t zeroPoint) -> Value {
      if (p.isInteger()) {
        Value wide = arith::ExtSIOp::create(b, loc, accVecType, data);
        if (zeroPoint == 0)
          return wide;
        Value z = arith::ConstantOp::create(
            b, loc, accVecType,
            DenseElementsAttr::get(accVecType,
                                   b.getIntegerAttr(accType, zeroPoint)));
        return arith::SubIOp::create(b, loc, wide, z);
      }
      if (p.elementType == accType)
        return data;
      return arith::ExtFOp::create(b, loc, accVecType, data);
    };
    auto load = [&](Value buffer, Value offset) -> Value {
      if (v == 1)
        return vector::BroadcastOp::create(
            b, loc, vecType,
            memref::LoadOp::create(b, loc, buffer, ValueRange{offset}));
      return vector::LoadOp::create(b, loc, vecType, buffer,
                                    ValueRange{offset}, /*nontemporal=*/false,
                                    llvm::MaybeAlign(kChunkBytes));
    };
    Value acc = arith::ConstantOp::create(
        b, loc, accVecType,
        DenseElementsAttr::get(accVecType, b.getZeroAttr(accType)));
    // Every tap, unrolled: padding reads the pad value (the input zero point
    // of a quantized op, else 0), as the padded tensor would.
    for (int64_t kh = 0; kh < p.kh; ++kh)
      for (int64_t kw = 0; kw < p.kw; ++kw) {
        Value ih = add(mul(oh, p.strideH), kh * p.dilationH - p.padTop);
        Value iw = add(mul(ow, p.strideW), kw * p.dilationW - p.padLeft);
        Value inside = both(inRange(ih, p.h), inRange(iw, p.w));
        Value offset = add(add(mul(n, p.xN), mul(c0, p.xC)),
                           add(mul(ih, p.xH), mul(iw, p.xW)));
        Value image = loadWhere(inside, elementConstant(vecType, p.padValue),
                                [&] { return load(x, offset); });
        Value tapOffset = add(mul(c0, p.wG), kh * p.wKH + kw * p.wKW);
        Value tap;
        if (v == 1 || (p.wG == 1 && p.wKH % v == 0 && p.wKW % v == 0)) {
          tap = load(w, tapOffset);
        } else {
          SmallVector<Value> taps;
          for (int64_t i = 0; i < v; ++i)
            taps.push_back(memref::LoadOp::create(
                b, loc, w, ValueRange{add(tapOffset, i * p.wG)}));
          tap = vector::FromElementsOp::create(b, loc, vecType, taps);
        }
        Value xv = widen(image, p.inputZeroPoint);
        Value wv = widen(tap, p.filterZeroPoint);
        acc = p.isInteger()
                  ? arith::AddIOp::create(
                        b, loc, acc, arith::MulIOp::create(b, loc, xv, wv))
                        .getResult()
                  : vector::FMAOp::create(b, loc, xv, wv, acc).getResult();
      }
    // The GEMM's store: group c0, filter 0 of 1, the v channels from c0.
    SmallVector<Value> accs;
    for (int64_t i = 0; i < v; ++i)
      accs.push_back(
          vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{i}));
    storeOutputs(y, m, idx(0), c0, accs);
  });
}
