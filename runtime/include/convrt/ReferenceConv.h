//===- ReferenceConv.h - The host float64 convolution and checks -*- C++
//-*-===//
//
// The oracle every kernel is checked against: a direct convolution in float64
// that spells out the formula of docs/design.md ("Convolution semantics"),
// independent of im2col or any GPU code.
//
//     Y[n, g*Fg+f, oh, ow] = bias[g*Fg+f] + sum_{c<Cg, kh<KH, kw<KW}
//         W[g*Fg+f, c, kh, kw] * X[n, g*Cg+c, oh*sh - pt + kh*dh,
//                                            ow*sw - pl + kw*dw]   (0 outside)
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_REFERENCECONV_H
#define CONVRT_REFERENCECONV_H

#include "convrt/ConvProblem.h"

#include <cstddef>
#include <vector>

namespace convrt {

/// Y in problem.layout from X (problem.layout), W (problem.filterLayout) and
/// bias ([F], or empty for none). Spreads output rows over `threads` (0: the
/// machine's hardware threads).
/// One output element, Y[ni, fi, oh, ow] in logical (torch) indices, by the
/// formula, in float64; `bias` may be empty. Inputs are in the problem's
/// layouts. referenceConv2d is this for every element.
double referenceOutput(const ConvProblem &problem,
                       const std::vector<double> &input,
                       const std::vector<double> &filter,
                       const std::vector<double> &bias, int64_t ni, int64_t fi,
                       int64_t oh, int64_t ow, int64_t od = 0);

std::vector<double> referenceConv2d(const ConvProblem &problem,
                                    const std::vector<double> &input,
                                    const std::vector<double> &filter,
                                    const std::vector<double> &bias,
                                    unsigned threads = 0);

/// How a result compares with the reference: the one comparison of the
/// project (convrt-run, and conv-run on every route, judge by it).
struct Comparison {
  /// Elements compared: min(got.size(), want.size()).
  size_t checked = 0;
  /// max |got - want| (infinite when an element of `got` is not finite).
  double maxAbsDiff = 0;
  /// max |want|: the scale the max-abs bound is relative to.
  double maxAbsReference = 0;
  /// ||got - want||_2 / ||want||_2 (the absolute norm when want is all 0).
  double relL2Error = 0;
  double tolerance = 0;
  /// Elements of `got` that are NaN or infinite (unwritten output reads NaN).
  size_t nonFinite = 0;
  bool pass = false;
};

/// Compares a result with the reference. It passes when the sizes agree,
/// every element is finite, relL2Error <= tolerance (the whole tensor) and
/// maxAbsDiff <= 100 * tolerance * max(1, maxAbsReference) (a single wrong
/// element, which L2 dilutes in a large tensor). Tolerances per precision
/// are DType.h's tolerance().
Comparison compareResults(const std::vector<double> &got,
                          const std::vector<double> &want, double tolerance);

/// The tolerance a convolution's result is checked at, on every route (the
/// GPU kernel, cuDNN, the CPU JIT, the twin): the loosest of its input
/// precision, its accumulation type and the type its output is stored in,
/// each from DType.h's tolerance().
double checkTolerance(const ConvProblem &problem, DType output);

/// Seeded uniform values in [-1, 1) rounded to `dtype` (i8: uniform over
/// -128..127; i32 is no data type here): the same seed gives
/// the same tensor on every platform (splitmix64, not <random>'s
/// implementation-defined distributions).
std::vector<double> randomTensor(size_t count, DType dtype, uint64_t seed);

} // namespace convrt

#endif // CONVRT_REFERENCECONV_H
