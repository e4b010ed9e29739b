//===- ConvProblem.h - A 2-D convolution problem ----------------*- C++ -*-===//
//
// The convolution of docs/design.md, "Convolution semantics": input X
// [N, C, H, W] (NCHW) or [N, H, W, C] (NHWC); filter [F, C/G, KH, KW]
// (FCHW), [KH, KW, C/G, F] (HWCF) or [F, KH, KW, C/G] (FHWC); optional bias
// [F]; output in the input's layout; zero padding (top, left, bottom,
// right), strides, dilations, G groups.
//
//     Ho = floor((H + pt + pb - dh*(KH-1) - 1) / sh) + 1      (Wo alike)
//
// A quantized problem (dtype i8, accumulate and output i32) has zero points
// zx, zw and computes sum (x - zx) * (w - zw) over the window, as torch's
// quantized convolution does: a padded position reads as zx, so it adds 0.
//
// A max pooling problem (pooling = Max) takes the maximum over each
// channel's window instead: C = F in C groups, shaped as a depthwise
// convolution whose filter is never read (linalg's pooling ops take a
// window operand alike), float data, and a padded position reads as
// -infinity, so it never wins (torch's max_pool2d). The padding is at most half
// the window, as torch requires, so every window holds an image pixel.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_CONVPROBLEM_H
#define CONVRT_CONVPROBLEM_H

#include "convrt/DType.h"
#include "convrt/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace convrt {

enum class Layout { NCHW, NHWC };
enum class FilterLayout { FCHW, HWCF, FHWC };
/// What the window computes: a convolution's weighted sum, or the maximum.
enum class Pooling { None, Max };

const char *layoutName(Layout layout);
const char *filterLayoutName(FilterLayout layout);
Expected<Layout> parseLayout(const std::string &name);
Expected<FilterLayout> parseFilterLayout(const std::string &name);
/// The filter layout that goes with an image layout when none is given:
/// FCHW for NCHW (torch), FHWC for NHWC (cuDNN's KRSC).
FilterLayout defaultFilterLayout(Layout layout);

/// Limits validate() enforces, far beyond any real layer: every tensor is
/// indexable with 32-bit element counts, and no stride, dilation or padding
/// can make the size arithmetic overflow.
inline constexpr int64_t kMaxTensorElements = 2147483647; // 2^31 - 1
inline constexpr int64_t kMaxWindowParameter = int64_t(1) << 20;

struct ConvProblem {
  Layout layout = Layout::NCHW;
  FilterLayout filterLayout = FilterLayout::FCHW;
  int64_t n = 1, c = 1, h = 1, w = 1, f = 1, kh = 1, kw = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t groups = 1;
  /// Input/filter precision (TF32: f32 data, TF32 math).
  DType dtype = DType::F32;
  /// Accumulation type (F32 or F16; I32 for I8 data).
  DType accumulate = DType::F32;
  bool hasBias = false;
  /// The zero points of a quantized (I8) problem.
  int64_t inputZeroPoint = 0, filterZeroPoint = 0;
  /// A 3-D (volumetric) problem: a depth D before H in the input and output
  /// (NCDHW / NDHWC), KD before KH in the filter (FCDHW, DHWCF, FDHWC), with
  /// its stride, dilation and front/back padding. A 2-D problem keeps the
  /// defaults, and every shape, index and formula is the 2-D one.
  bool hasDepth = false;
  int64_t d = 1, kd = 1, strideD = 1, dilationD = 1, padFront = 0,
          padBack = 0;
  /// Max pooling instead of a convolution (see the file's comment).
  Pooling pooling = Pooling::None;

  bool isPooling() const { return pooling != Pooling::None; }

  bool isQuantized() const { return dtype == DType::I8; }
  /// The output's element type: I32 for a quantized problem, else F32.
  DType outputType() const { return isQuantized() ? DType::I32 : DType::F32; }

  int64_t outD() const;
  int64_t outH() const;
  int64_t outW() const;
  int64_t channelsPerGroup() const { return c / groups; }
  int64_t filtersPerGroup() const { return f / groups; }

  /// Positive sizes within the limits above, C and F divisible by G, a
  /// non-empty output.
  Error validate() const;
  Error validatePooling() const;

  /// 2 * N * F * Ho * Wo * Cg * KH * KW; a pooling's N * C * Ho * Wo * KH *
  /// KW comparisons.
  double flops() const;

  std::vector<int64_t> inputShape() const;
  std::vector<int64_t> filterShape() const;
  std::vector<int64_t> biasShape() const { return {f}; }
  std::vector<int64_t> outputShape() const;
  int64_t inputElements() const;
  int64_t filterElements() const;
  int64_t outputElements() const;

  /// Linear offsets of logical coordinates in each tensor's layout (the
  /// depth coordinate last, 0 for a 2-D problem).
  int64_t inputIndex(int64_t ni, int64_t ci, int64_t hi, int64_t wi,
                     int64_t di = 0) const;
  int64_t filterIndex(int64_t fi, int64_t ci, int64_t khi, int64_t kwi,
                      int64_t kdi = 0) const;
  int64_t outputIndex(int64_t ni, int64_t fi, int64_t hi, int64_t wi,
                      int64_t di = 0) const;

  /// One line: "n1 c64 h56 w56 f64 k3x3 s1x1 d1x1 p1,1,1,1 g1" (a
  /// quantized problem adds " zp3,-1"; a pooling starts with "maxpool ").
  std::string describe() const;
};

/// Re-lays a filter from `problem.filterLayout` to `target`.
std::vector<double> convertFilterLayout(const ConvProblem &problem,
                                        const std::vector<double> &filter,
                                        FilterLayout target);

std::string formatShape(const std::vector<int64_t> &shape);

} // namespace convrt

#endif // CONVRT_CONVPROBLEM_H
