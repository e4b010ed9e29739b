//===- Reference.cpp - checking a result against the float64 reference ----===//
//
// The formula itself is runtime/'s (convrt::referenceOutput, shared with
// convrt-run on GPU machines); this file decides what to compare and how to
// judge it.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Reference.h"

#include "convrt/ReferenceConv.h"

#include <cmath>
#include <random>

using namespace mlir::conv_lower;

convrt::ConvProblem mlir::conv_lower::toRuntime(const ConvProblem &p) {
  convrt::ConvProblem r;
  r.layout = p.layout == Layout::NCHW ? convrt::Layout::NCHW
                                      : convrt::Layout::NHWC;
  r.filterLayout = p.layout == Layout::NCHW ? convrt::FilterLayout::FCHW
                                            : convrt::FilterLayout::FHWC;
  r.n = p.n, r.c = p.c, r.h = p.h, r.w = p.w;
  r.f = p.f, r.kh = p.kh, r.kw = p.kw;
  r.strideH = p.stride[0], r.strideW = p.stride[1];
  r.dilationH = p.dilation[0], r.dilationW = p.dilation[1];
  r.padTop = p.padding[0], r.padLeft = p.padding[1];
  r.padBottom = p.padding[2], r.padRight = p.padding[3];
  r.groups = p.groups;
  r.dtype = toRuntime(p.dtype);
  r.accumulate = convrt::DType::F32;
  r.hasBias = p.bias;
  return r;
}

double mlir::conv_lower::toleranceFor(DType output) {
  return output == DType::F32 ? 1e-5 : 1e-2;
}

bool mlir::conv_lower::withinTolerance(const CheckResult &r) {
  // The L2 bound judges the whole tensor; the max bound catches a single
  // wrong element that L2 would dilute.
  return std::isfinite(r.maxAbsDiff) && r.relL2Error <= r.tolerance &&
         r.maxAbsDiff <= 100 * r.tolerance * std::max(1.0, r.maxAbsReference);
}

CheckResult mlir::conv_lower::checkOutput(const ConvProblem &p,
                                          const HostTensor &x,
                                          const HostTensor &w,
                                          const HostTensor *bias,
                                          llvm::ArrayRef<float> y,
                                          double maxFullMacs, int64_t samples) {
  convrt::ConvProblem rp = toRuntime(p);
  std::vector<double> xd = x.asDoubles(), wd = w.asDoubles();
  std::vector<double> bd = bias ? bias->asDoubles() : std::vector<double>();
  CheckResult r;
  r.total = rp.outputElements();
  r.tolerance = toleranceFor(DType::F32); // f32 accumulation and output
  double errSq = 0, refSq = 0;
  auto compare = [&](int64_t n, int64_t f, int64_t oh, int64_t ow) {
    double ref = convrt::referenceOutput(rp, xd, wd, bd, n, f, oh, ow);
    double diff = std::fabs(double(y[rp.outputIndex(n, f, oh, ow)]) - ref);
    r.maxAbsDiff = std::isnan(diff) ? INFINITY : std::max(r.maxAbsDiff, diff);
    r.maxAbsReference = std::max(r.maxAbsReference, std::fabs(ref));
    errSq += diff * diff;
    refSq += ref * ref;
    ++r.checked;
  };
  if (p.flops() / 2 <= maxFullMacs) {
    for (int64_t n = 0; n < p.n; ++n)
      for (int64_t f = 0; f < p.f; ++f)
        for (int64_t oh = 0; oh < p.ho(); ++oh)
          for (int64_t ow = 0; ow < p.wo(); ++ow)
            compare(n, f, oh, ow);
  } else {
    std::mt19937_64 rng(0x5eed);
    for (int64_t i = 0; i < samples; ++i)
      compare(rng() % p.n, rng() % p.f, rng() % p.ho(), rng() % p.wo());
  }
  r.relL2Error = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  r.passed = withinTolerance(r);
  return r;
}
