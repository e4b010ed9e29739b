//===- ConvProblem.h - a 2-D convolution in torch's terms -------*- C++ -*-===//
//
// The problem conv-run builds, checks and reports is runtime/'s
// convrt::ConvProblem (docs/design.md, "Convolution semantics": it owns the
// output-size formula, the shapes in memory order and the float64 reference,
// and it is what a bundle's manifest describes). This header adds what only the
// MLIR side needs: parsing torch-style flags, the report's one-line description
// and the byte counts of the memory report.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_CONVPROBLEM_H
#define CONVLOWER_RUNNER_CONVPROBLEM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "convrt/ConvProblem.h"

#include <cstdint>
#include <string>

namespace mlir::conv_lower {

/// One problem type for the compiler and the runtime.
using ConvProblem = convrt::ConvProblem;
using convrt::DType;
using convrt::Layout;

/// "nchw"/"nhwc" and "f32"/"tf32"/"f16"/"bf16"/"i8"/"i32".
llvm::StringRef toString(Layout layout);
llvm::StringRef toString(DType dtype);
/// Bytes per stored element (tf32 is stored as f32).
int64_t elementBytes(DType dtype);

/// Depthwise: one input and one output channel per group.
bool isDepthwise(const ConvProblem &p);
/// Bytes of the input tensor.
int64_t inputBytes(const ConvProblem &p);
/// Bytes of the explicit X_col: G * (N*Ho*Wo) * (Cg*KH*KW) elements.
int64_t im2colBytes(const ConvProblem &p);
/// One line, e.g. "N16 C64 56x56 F128 3x3 s1 p1 g1 f32 nchw".
std::string describeProblem(const ConvProblem &p);

/// Checks every relation with errors in conv-run's flag terms, refuses
/// absurd strides, dilations and paddings (the limit named) and tensors over
/// 2^31-1 elements.
llvm::Error validateProblem(const ConvProblem &p);

/// The largest stride, dilation or padding (runtime/'s limit, shared).
using convrt::kMaxWindowParameter;

/// Parses "a,b,c" into exactly one of `allowedCounts` positive (or, with
/// `allowZero`, non-negative) integers of at most `max`; `flag` names the
/// option in errors.
llvm::Expected<llvm::SmallVector<int64_t>>
parseIntList(llvm::StringRef text, llvm::StringRef flag,
             llvm::ArrayRef<size_t> allowedCounts, bool allowZero = false,
             int64_t max = INT64_MAX);

/// Torch-style flag values; layout and dtype are already parsed. Rank-3
/// shapes are torch's conv1d (N,C,L and F,C/G,K), run as the 2-D
/// convolution with H = KH = 1.
struct ConvFlags {
  std::string inputShape, filterShape, stride = "1", dilation = "1",
                                       padding = "0";
  /// "XZ,WZ": the zero points of a quantized (i8) convolution.
  std::string zeroPoints;
  Layout layout = Layout::NCHW;
  DType dtype = DType::F32;
  int64_t groups = 1;
  bool bias = false;
  /// A residual of the output's shape and type added after the bias (the
  /// module's epilogue, not the problem: problemFromFlags ignores it).
  bool residual = false;
  /// The output rounded to bfloat16, the residual given in bfloat16 (the
  /// module's epilogue too).
  bool bf16Output = false, bf16Residual = false;
  /// Max pooling over a window "KH,KW" (a rank-3 input: "K") instead of a
  /// convolution: no filter shape, the groups are the channels.
  bool maxPool = false;
  std::string window;
};
/// Fills a problem from the flags (NCHW pairs with torch's FCHW filter, NHWC
/// with FHWC; f32 accumulation); validates.
llvm::Expected<ConvProblem> problemFromFlags(const ConvFlags &flags);

} // namespace mlir::conv_lower

#endif
