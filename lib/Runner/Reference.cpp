//===- Reference.cpp - float64 direct convolution -------------------------===//

#include "ConvLower/Runner/Reference.h"

#include <cmath>
#include <random>

using namespace mlir::conv_lower;

static int64_t inputIndex(const ConvProblem &p, int64_t n, int64_t c,
                          int64_t h, int64_t w) {
  if (p.layout == Layout::NCHW)
    return ((n * p.c + c) * p.h + h) * p.w + w;
  return ((n * p.h + h) * p.w + w) * p.c + c;
}

static int64_t filterIndex(const ConvProblem &p, int64_t f, int64_t c,
                           int64_t kh, int64_t kw) {
  if (p.layout == Layout::NCHW)
    return ((f * p.cg() + c) * p.kh + kh) * p.kw + kw;
  return ((f * p.kh + kh) * p.kw + kw) * p.cg() + c;
}

int64_t mlir::conv_lower::outputIndex(const ConvProblem &p, int64_t n,
                                      int64_t f, int64_t oh, int64_t ow) {
  if (p.layout == Layout::NCHW)
    return ((n * p.f + f) * p.ho() + oh) * p.wo() + ow;
  return ((n * p.ho() + oh) * p.wo() + ow) * p.f + f;
}

double mlir::conv_lower::referenceAt(const ConvProblem &p, const HostTensor &x,
                                     const HostTensor &w,
                                     const HostTensor *bias, int64_t n,
                                     int64_t f, int64_t oh, int64_t ow) {
  int64_t g = f / p.fg();
  double acc = bias ? static_cast<double>(bias->values[f]) : 0.0;
  for (int64_t c = 0; c < p.cg(); ++c) {
    for (int64_t kh = 0; kh < p.kh; ++kh) {
      int64_t ih = oh * p.stride[0] - p.padding[0] + kh * p.dilation[0];
      if (ih < 0 || ih >= p.h)
        continue; // zero padding
      for (int64_t kw = 0; kw < p.kw; ++kw) {
        int64_t iw = ow * p.stride[1] - p.padding[1] + kw * p.dilation[1];
        if (iw < 0 || iw >= p.w)
          continue;
        acc += static_cast<double>(
                   x.values[inputIndex(p, n, g * p.cg() + c, ih, iw)]) *
               static_cast<double>(w.values[filterIndex(p, f, c, kh, kw)]);
      }
    }
  }
  return acc;
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
  CheckResult r;
  r.total = p.n * p.f * p.ho() * p.wo();
  r.tolerance = toleranceFor(DType::F32); // f32 accumulation and output
  double errSq = 0, refSq = 0;
  auto compare = [&](int64_t n, int64_t f, int64_t oh, int64_t ow) {
    double ref = referenceAt(p, x, w, bias, n, f, oh, ow);
    double got = y[outputIndex(p, n, f, oh, ow)];
    double diff = std::fabs(got - ref);
    r.maxAbsDiff = std::isnan(diff) ? INFINITY : std::max(r.maxAbsDiff, diff);
    errSq += diff * diff;
    refSq += ref * ref;
    r.maxAbsReference = std::max(r.maxAbsReference, std::fabs(ref));
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
