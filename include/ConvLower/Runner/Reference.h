//===- Reference.h - checks against the float64 reference -------*- C++ -*-===//
//
// The independent reference: the formula of docs/design.md ("Convolution
// semantics") evaluated in float64 (by runtime/'s convrt::referenceOutput), one
// output element at a time, on the same (dtype-rounded) inputs. The verdict is
// runtime/'s one comparison (convrt::compareResults) at runtime/'s tolerances,
// so the CPU routes, the twin and the CUDA route pass or fail by the same rule.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_REFERENCE_H
#define CONVLOWER_RUNNER_REFERENCE_H

#include "ConvLower/Runner/ConvProblem.h"
#include "ConvLower/Runner/Tensor.h"

#include "convrt/ReferenceConv.h"

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

/// The check of a runtime comparison of `total` outputs.
CheckResult toCheckResult(const convrt::Comparison &comparison, int64_t total);

/// Compares `got` with `want` element by element at `tolerance`.
CheckResult compareOutputs(llvm::ArrayRef<double> got,
                           llvm::ArrayRef<double> want, double tolerance);

/// Compares `y` (output layout, of type `output`: f32, bf16, or i32 for a
/// quantized problem) with the reference (plus `residual`, in the output's
/// layout, when given), at runtime/'s checkTolerance for the problem and
/// output type (the rule every route shares): every element when
/// the problem has at most `maxFullMacs` multiply-adds, else `samples`
/// elements drawn with a fixed seed (say so when reporting).
CheckResult checkOutput(const ConvProblem &p, const HostTensor &x,
                        const HostTensor *w, const HostTensor *bias,
                        llvm::ArrayRef<double> y, DType output,
                        const HostTensor *residual = nullptr,
                        double maxFullMacs = 6.4e7, int64_t samples = 32768);

} // namespace mlir::conv_lower

#endif
