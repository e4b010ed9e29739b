//===- Reference.h - checks against the float64 reference -------*- C++ -*-===//
//
// The independent reference: DESIGN.md's formula evaluated in float64 (by
// runtime/'s convrt::referenceOutput), one output element at a time, on the
// same (dtype-rounded) inputs.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_REFERENCE_H
#define CONVLOWER_RUNNER_REFERENCE_H

#include "ConvLower/Runner/ConvProblem.h"
#include "ConvLower/Runner/Tensor.h"

namespace mlir::conv_lower {

struct CheckResult {
  double maxAbsDiff = 0;
  double maxAbsReference = 0;
  double relL2Error = 0;
  int64_t checked = 0; // output elements compared
  int64_t total = 0;   // output elements in all
  double tolerance = 0;
  bool passed = false;
};

/// Relative L2 tolerance by the output (= accumulation) type: f32 1e-5
/// (f16/bf16 inputs are exact in f32, so they get it too), f16/bf16 1e-2.
double toleranceFor(DType output);

/// rel_l2_error <= tolerance and max_abs_diff <= 100 * tolerance *
/// max(1, max|reference|).
bool withinTolerance(const CheckResult &r);

/// Compares `got` with `want` element by element: max_abs_diff (infinite for
/// a NaN), rel_l2_error, and the verdict of withinTolerance. `checked` and
/// `total` are the number of elements compared.
CheckResult compareValues(llvm::ArrayRef<float> got,
                          llvm::ArrayRef<double> want, double tolerance);

/// Compares `y` (output layout) with the reference: every element when the
/// problem has at most `maxFullMacs` multiply-adds, else `samples` elements
/// drawn with a fixed seed (say so when reporting).
CheckResult checkOutput(const ConvProblem &p, const HostTensor &x,
                        const HostTensor &w, const HostTensor *bias,
                        llvm::ArrayRef<float> y, double maxFullMacs = 6.4e7,
                        int64_t samples = 32768);

} // namespace mlir::conv_lower

#endif
