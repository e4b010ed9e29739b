//===- Reference.cpp - checking a result against the float64 reference ----===//
//
// The formula itself is runtime/'s (convrt::referenceOutput, shared with
// convrt-run on GPU machines); this file decides what to compare and how to
// judge it.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Reference.h"

#include "convrt/ReferenceConv.h"

#include <random>

using namespace mlir::conv_lower;

CheckResult mlir::conv_lower::toCheckResult(const convrt::Comparison &c,
                                            int64_t total) {
  CheckResult r;
  r.maxAbsDiff = c.maxAbsDiff;
  r.maxAbsReference = c.maxAbsReference;
  r.relL2Error = c.relL2Error;
  r.tolerance = c.tolerance;
  r.checked = static_cast<int64_t>(c.checked);
  r.total = total;
  r.passed = c.pass;
  return r;
}

CheckResult mlir::conv_lower::compareOutputs(llvm::ArrayRef<double> got,
                                             llvm::ArrayRef<double> want,
                                             double tolerance) {
  std::vector<double> gotValues(got.begin(), got.end());
  std::vector<double> wantValues(want.begin(), want.end());
  return toCheckResult(
      convrt::compareResults(gotValues, wantValues, tolerance), got.size());
}

CheckResult mlir::conv_lower::checkOutput(
    const ConvProblem &p, const HostTensor &x, const HostTensor *w,
    const HostTensor *bias, llvm::ArrayRef<double> y, DType output,
    const HostTensor *residual, double maxFullMacs, int64_t samples) {
  const ConvProblem &rp = p;
  // A pooling has no filter (w null).
  std::vector<double> xd = x.asDoubles(),
                      wd = w ? w->asDoubles() : std::vector<double>();
  std::vector<double> bd = bias ? bias->asDoubles() : std::vector<double>();
  std::vector<double> got;
  std::vector<double> want;
  auto take = [&](int64_t n, int64_t f, int64_t oh, int64_t ow, int64_t od) {
    int64_t at = rp.outputIndex(n, f, oh, ow, od);
    got.push_back(y[at]);
    want.push_back(convrt::referenceOutput(rp, xd, wd, bd, n, f, oh, ow, od) +
                   (residual ? residual->values[at] : 0.0));
  };
  const int64_t dd = rp.outD(), ho = rp.outH(), wo = rp.outW();
  // No more outputs than samples: every one costs less than drawing them
  // (with repeats: "32768 sampled of 25088 outputs").
  if (rp.flops() / 2 <= maxFullMacs || p.outputElements() <= samples) {
    for (int64_t n = 0; n < rp.n; ++n)
      for (int64_t f = 0; f < rp.f; ++f)
        for (int64_t od = 0; od < dd; ++od)
          for (int64_t oh = 0; oh < ho; ++oh)
            for (int64_t ow = 0; ow < wo; ++ow)
              take(n, f, oh, ow, od);
  } else {
    // 2-D problems draw the same samples as before (no depth draw).
    std::mt19937_64 rng(0x5eed);
    for (int64_t i = 0; i < samples; ++i) {
      int64_t n = rng() % rp.n, f = rng() % rp.f, oh = rng() % ho,
              ow = rng() % wo;
      take(n, f, oh, ow, rp.hasDepth ? int64_t(rng() % dd) : 0);
    }
  }
  // The output's type (f32, bf16, or i32: exact) and the problem's
  // precision set the tolerance.
  CheckResult r = compareOutputs(got, want, convrt::checkTolerance(p, output));
  r.total = p.outputElements();
  return r;
}
