//===- ConvProblem.h - a 2-D convolution in torch's terms -------*- C++ -*-===//
//
// The problem conv-run builds, checks and reports: torch.nn.functional.conv2d
// semantics (DESIGN.md), with shapes always given in torch's logical order
// (input N,C,H,W; filter F,C/G,KH,KW) whatever the memory layout.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_CONVPROBLEM_H
#define CONVLOWER_RUNNER_CONVPROBLEM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "convrt/ConvProblem.h"

#include <array>
#include <cstdint>
#include <string>

namespace mlir::conv_lower {

enum class Layout { NCHW, NHWC };
/// Element type of input, filter and bias. f16/bf16 accumulate in f32 and
/// produce an f32 output.
enum class DType { F32, F16, BF16 };

/// The runtime's DType for ours (f16/bf16 conversions and rounding live in
/// runtime/'s host library, shared with convrt-run).
convrt::DType toRuntime(DType dtype);

llvm::StringRef toString(Layout layout);
llvm::StringRef toString(DType dtype);
/// Bytes per input/filter element.
int64_t elementBytes(DType dtype);

struct ConvProblem {
  Layout layout = Layout::NCHW;
  DType dtype = DType::F32;
  int64_t n = 1, c = 1, h = 1, w = 1; // input, torch order
  int64_t f = 1, kh = 1, kw = 1;      // filter F, KH, KW (C/G implied)
  int64_t groups = 1;
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> dilation = {1, 1};
  std::array<int64_t, 4> padding = {0, 0, 0, 0}; // top, left, bottom, right
  bool bias = false;

  /// The same problem in runtime/'s terms: it owns the output-size formula,
  /// the shapes and the float64 reference, shared with convrt-run.
  convrt::ConvProblem runtime() const;

  int64_t cg() const { return c / groups; }
  int64_t fg() const { return f / groups; }
  int64_t ho() const;
  int64_t wo() const;
  /// Depthwise: one input and one output channel per group.
  bool isDepthwise() const { return groups == c && groups == f && groups > 1; }

  /// Shapes in memory order: NCHW/FCHW for nchw, NHWC/FHWC for nhwc.
  llvm::SmallVector<int64_t> inputShape() const;
  llvm::SmallVector<int64_t> filterShape() const;
  llvm::SmallVector<int64_t> outputShape() const;
  llvm::SmallVector<int64_t> biasShape() const { return {f}; }

  /// 2 * N * F * Ho * Wo * Cg * KH * KW.
  double flops() const;
  int64_t inputBytes() const;
  /// Bytes of the explicit X_col: G * (N*Ho*Wo) * (Cg*KH*KW) elements.
  int64_t im2colBytes() const;

  /// Checks every relation; the error is one line naming the problem.
  llvm::Error validate() const;
  /// Rejects problems whose tensors exceed 2^31-1 elements.
  llvm::Error checkSizes() const;
  /// One-line description, e.g. "N16 C64 56x56 F128 3x3 s1 p1 g1 f32 nchw".
  std::string describe() const;
};

/// Parses "a,b,c" into exactly one of `allowedCounts` positive (or, with
/// `allowZero`, non-negative) integers; `flag` names the option in errors.
llvm::Expected<llvm::SmallVector<int64_t>>
parseIntList(llvm::StringRef text, llvm::StringRef flag,
             llvm::ArrayRef<size_t> allowedCounts, bool allowZero = false);

/// Fills a problem from torch-style flag values; validates.
struct ConvFlags {
  std::string inputShape, filterShape, stride = "1", dilation = "1",
                                       padding = "0", layout = "nchw",
                                       dtype = "f32";
  int64_t groups = 1;
  bool bias = false;
};
llvm::Expected<ConvProblem> problemFromFlags(const ConvFlags &flags);

} // namespace mlir::conv_lower

#endif
