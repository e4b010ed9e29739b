//===- ReferenceConv.cpp - The host float64 convolution and checks --------===//

#include "convrt/ReferenceConv.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

namespace convrt {

/// Calls visit(q, r, s, id, ih, iw) for each tap (q, r, s) of output
/// (od, oh, ow)'s window that lands in the image (id, ih, iw): the padding
/// is skipped (zero for a convolution, -infinity for max pooling: neither
/// changes the result).
template <typename Visit>
static void forEachTapInImage(const ConvProblem &p, int64_t oh, int64_t ow,
                              int64_t od, Visit visit) {
  for (int64_t q = 0; q < p.kd; ++q) {
    const int64_t id = od * p.strideD - p.padFront + q * p.dilationD;
    if (id < 0 || id >= p.d)
      continue; // a 2-D problem: d = kd = 1, id = 0
    for (int64_t r = 0; r < p.kh; ++r) {
      const int64_t ih = oh * p.strideH - p.padTop + r * p.dilationH;
      if (ih < 0 || ih >= p.h)
        continue;
      for (int64_t s = 0; s < p.kw; ++s) {
        const int64_t iw = ow * p.strideW - p.padLeft + s * p.dilationW;
        if (iw >= 0 && iw < p.w)
          visit(q, r, s, id, ih, iw);
      }
    }
  }
}

/// One output of the reference: the convolution's sum (quantized: of
/// (x - zx) * (w - zw), where a padded x is zx and adds nothing), or max
/// pooling's largest pixel of the window (validate() leaves no window all
/// padding).
double referenceOutput(const ConvProblem &p, const std::vector<double> &x,
                       const std::vector<double> &wt,
                       const std::vector<double> &bias, int64_t ni, int64_t fi,
                       int64_t oh, int64_t ow, int64_t od) {
  if (p.isPooling()) {
    double best = -std::numeric_limits<double>::infinity();
    forEachTapInImage(
        p, oh, ow, od,
        [&](int64_t, int64_t, int64_t, int64_t id, int64_t ih, int64_t iw) {
          best = std::max(best, x[p.inputIndex(ni, fi, ih, iw, id)]);
        });
    return best;
  }
  const int64_t cg = p.channelsPerGroup(), g = fi / p.filtersPerGroup();
  const double zx = double(p.inputZeroPoint), zw = double(p.filterZeroPoint);
  double sum = bias.empty() ? 0.0 : bias[fi];
  for (int64_t ci = 0; ci < cg; ++ci)
    forEachTapInImage(p, oh, ow, od,
                      [&](int64_t q, int64_t r, int64_t s, int64_t id,
                          int64_t ih, int64_t iw) {
                        sum +=
                            (wt[p.filterIndex(fi, ci, r, s, q)] - zw) *
                            (x[p.inputIndex(ni, g * cg + ci, ih, iw, id)] - zx);
                      });
  return sum;
}

static void convolvePlanes(const ConvProblem &p, const std::vector<double> &x,
                           const std::vector<double> &wt,
                           const std::vector<double> &bias,
                           std::vector<double> &y, int64_t begin, int64_t end) {
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t ni = plane / p.f, fi = plane % p.f;
    for (int64_t od = 0; od < p.outD(); ++od)
      for (int64_t oh = 0; oh < p.outH(); ++oh)
        for (int64_t ow = 0; ow < p.outW(); ++ow)
          y[p.outputIndex(ni, fi, oh, ow, od)] =
              referenceOutput(p, x, wt, bias, ni, fi, oh, ow, od);
  }
}

std::vector<double> referenceConv2d(const ConvProblem &problem,
                                    const std::vector<double> &input,
                                    const std::vector<double> &filter,
                                    const std::vector<double> &bias,
                                    unsigned threads) {
  std::vector<double> output(static_cast<size_t>(problem.outputElements()));
  const int64_t planes = problem.n * problem.f;
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<int64_t>(threads, planes));
  if (threads <= 1) {
    convolvePlanes(problem, input, filter, bias, output, 0, planes);
    return output;
  }
  // Each thread writes disjoint planes of the output.
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    int64_t begin = planes * t / threads, end = planes * (t + 1) / threads;
    workers.emplace_back([&, begin, end] {
      convolvePlanes(problem, input, filter, bias, output, begin, end);
    });
  }
  for (std::thread &worker : workers)
    worker.join();
  return output;
}

/// The max-abs bound: loose enough for accumulation-order differences in
/// every element, tight enough to catch one element that is plainly wrong.
static bool withinMaxAbsBound(const Comparison &c) {
  return c.maxAbsDiff <= 100 * c.tolerance * std::max(1.0, c.maxAbsReference);
}

double checkTolerance(const ConvProblem &problem, DType output) {
  return std::max({tolerance(problem.dtype), tolerance(problem.accumulate),
                   tolerance(output)});
}

Comparison compareResults(const std::vector<double> &got,
                          const std::vector<double> &want, double tolerance) {
  Comparison result;
  result.tolerance = tolerance;
  result.checked = std::min(got.size(), want.size());
  double diffSquares = 0, wantSquares = 0;
  for (size_t i = 0; i < result.checked; ++i) {
    result.maxAbsReference =
        std::max(result.maxAbsReference, std::fabs(want[i]));
    wantSquares += want[i] * want[i];
    if (!std::isfinite(got[i])) {
      ++result.nonFinite;
      continue;
    }
    double diff = got[i] - want[i];
    result.maxAbsDiff = std::max(result.maxAbsDiff, std::fabs(diff));
    diffSquares += diff * diff;
  }
  result.relL2Error = wantSquares > 0 ? std::sqrt(diffSquares / wantSquares)
                                      : std::sqrt(diffSquares);
  if (result.nonFinite) {
    result.maxAbsDiff = INFINITY;
    result.relL2Error = INFINITY;
  }
  result.pass = got.size() == want.size() && result.nonFinite == 0 &&
                result.relL2Error <= tolerance && withinMaxAbsBound(result);
  return result;
}

std::vector<double> randomTensor(size_t count, DType dtype, uint64_t seed) {
  std::vector<double> values(count);
  uint64_t state = seed;
  for (double &value : values) {
    // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double unit = static_cast<double>(z >> 11) * 0x1.0p-53; // [0, 1)
    // Integers: the whole range of i8 (-128..127); i32 (a residual added
    // to a quantized output) about what such an output holds.
    value = dtype == DType::I8    ? std::floor(256.0 * unit) - 128.0
            : dtype == DType::I32 ? std::floor(65536.0 * unit) - 32768.0
                                  : roundTo(dtype, 2.0 * unit - 1.0);
  }
  return values;
}

} // namespace convrt
