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

double mlir::conv_lower::toleranceFor(DType output) {
  return output == DType::F32 ? 1e-5 : 1e-2;
}

bool mlir::conv_lower::withinTolerance(const CheckResult &r) {
  // The L2 bound judges the whole tensor; the max bound catches a single
  // wrong element that L2 would dilute.
  return std::isfinite(r.maxAbsDiff) && r.relL2Error <= r.tolerance &&
         r.maxAbsDiff <= 100 * r.tolerance * std::max(1.0, r.maxAbsReference);
}

CheckResult mlir::conv_lower::compareValues(llvm::ArrayRef<float> got,
                                            llvm::ArrayRef<double> want,
                                            double tolerance) {
  CheckResult r;
  r.checked = r.total = got.size();
  r.tolerance = tolerance;
  double errSq = 0, refSq = 0;
  for (auto [g, ref] : llvm::zip(got, want)) {
    double diff = std::fabs(double(g) - ref);
    r.maxAbsDiff = std::isnan(diff) ? INFINITY : std::max(r.maxAbsDiff, diff);
    r.maxAbsReference = std::max(r.maxAbsReference, std::fabs(ref));
    errSq += diff * diff;
    refSq += ref * ref;
  }
  r.relL2Error = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  r.passed = withinTolerance(r);
  return r;
}

CheckResult mlir::conv_lower::checkOutput(const ConvProblem &p,
                                          const HostTensor &x,
                                          const HostTensor &w,
                                          const HostTensor *bias,
                                          llvm::ArrayRef<float> y,
                                          double maxFullMacs, int64_t samples) {
  convrt::ConvProblem rp = p.runtime();
  std::vector<double> xd = x.asDoubles(), wd = w.asDoubles();
  std::vector<double> bd = bias ? bias->asDoubles() : std::vector<double>();
  std::vector<float> got;
  std::vector<double> want;
  auto take = [&](int64_t n, int64_t f, int64_t oh, int64_t ow) {
    got.push_back(y[rp.outputIndex(n, f, oh, ow)]);
    want.push_back(convrt::referenceOutput(rp, xd, wd, bd, n, f, oh, ow));
  };
  const int64_t ho = rp.outH(), wo = rp.outW();
  if (rp.flops() / 2 <= maxFullMacs) {
    for (int64_t n = 0; n < rp.n; ++n)
      for (int64_t f = 0; f < rp.f; ++f)
        for (int64_t oh = 0; oh < ho; ++oh)
          for (int64_t ow = 0; ow < wo; ++ow)
            take(n, f, oh, ow);
  } else {
    std::mt19937_64 rng(0x5eed);
    for (int64_t i = 0; i < samples; ++i)
      take(rng() % rp.n, rng() % rp.f, rng() % ho, rng() % wo);
  }
  // f32 accumulation and output.
  CheckResult r = compareValues(got, want, toleranceFor(DType::F32));
  r.total = rp.outputElements();
  return r;
}
