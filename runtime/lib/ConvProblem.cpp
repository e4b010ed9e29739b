//===- ConvProblem.cpp - A 2-D convolution problem ------------------------===//

#include "convrt/ConvProblem.h"

#include <algorithm>

namespace convrt {

const char *layoutName(Layout layout) {
  return layout == Layout::NCHW ? "nchw" : "nhwc";
}

const char *filterLayoutName(FilterLayout layout) {
  switch (layout) {
  case FilterLayout::FCHW:
    return "fchw";
  case FilterLayout::HWCF:
    return "hwcf";
  case FilterLayout::FHWC:
    return "fhwc";
  }
  return "?";
}

Expected<Layout> parseLayout(const std::string &name) {
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    if (name == layoutName(layout))
      return layout;
  return Error::failure("unknown layout \"" + name +
                        "\" (expected nchw or nhwc)");
}

Expected<FilterLayout> parseFilterLayout(const std::string &name) {
  for (FilterLayout layout :
       {FilterLayout::FCHW, FilterLayout::HWCF, FilterLayout::FHWC})
    if (name == filterLayoutName(layout))
      return layout;
  return Error::failure("unknown filter layout \"" + name +
                        "\" (expected fchw, hwcf or fhwc)");
}

FilterLayout defaultFilterLayout(Layout layout) {
  return layout == Layout::NCHW ? FilterLayout::FCHW : FilterLayout::FHWC;
}

static int64_t outputSize(int64_t in, int64_t padBefore, int64_t padAfter,
                          int64_t kernel, int64_t stride, int64_t dilation) {
  int64_t span = in + padBefore + padAfter - dilation * (kernel - 1) - 1;
  // floor division: a negative span means no output at all.
  return span < 0 ? 0 : span / stride + 1;
}

int64_t ConvProblem::outD() const {
  return outputSize(d, padFront, padBack, kd, strideD, dilationD);
}

int64_t ConvProblem::outH() const {
  return outputSize(h, padTop, padBottom, kh, strideH, dilationH);
}

int64_t ConvProblem::outW() const {
  return outputSize(w, padLeft, padRight, kw, strideW, dilationW);
}

/// What max pooling adds: float data, one channel per group, no bias, 2-D,
/// and torch's bound on the padding (at most half the window before the
/// image; after it, ceil_mode's reach), which leaves no window all padding.
Error ConvProblem::validatePooling() const {
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16)
    return Error::failure(std::string("max pooling takes float data, got ") +
                          dtypeName(dtype));
  if (c != f || groups != c)
    return Error::failure("max pooling keeps the channels: c (" +
                          std::to_string(c) + "), f (" + std::to_string(f) +
                          ") and groups (" + std::to_string(groups) +
                          ") must be equal");
  if (hasBias)
    return Error::failure("max pooling has no bias");
  if (hasDepth)
    return Error::failure("max pooling is 2-D (or 1-D as H = 1)");
  // torch's rule for the padding it is given. More after the image is
  // ceil_mode's: windows up to the last one starting inside the image,
  // which keeps a pixel in every window (a window of padding alone would
  // be -inf).
  if (2 * padTop > kh || 2 * padLeft > kw)
    return Error::failure(
        "max pooling's padding must be at most half the window (" +
        std::to_string(kh) + "x" + std::to_string(kw) + "), as in torch; got " +
        std::to_string(padTop) + "," + std::to_string(padLeft) + "," +
        std::to_string(padBottom) + "," + std::to_string(padRight));
  if (2 * padBottom > kh && (outH() - 1) * strideH - padTop >= h)
    return Error::failure("max pooling's last window of rows starts past "
                          "the image (padding after " +
                          std::to_string(padBottom) + ")");
  if (2 * padRight > kw && (outW() - 1) * strideW - padLeft >= w)
    return Error::failure("max pooling's last window of columns starts past "
                          "the image (padding after " +
                          std::to_string(padRight) + ")");
  return Error::success();
}

Error ConvProblem::validate() const {
  struct Named {
    const char *name;
    int64_t value;
  };
  for (Named positive :
       {Named{"n", n}, Named{"c", c}, Named{"h", h}, Named{"w", w},
        Named{"f", f}, Named{"kh", kh}, Named{"kw", kw},
        Named{"stride[0]", strideH}, Named{"stride[1]", strideW},
        Named{"dilation[0]", dilationH}, Named{"dilation[1]", dilationW},
        Named{"groups", groups}, Named{"d", d}, Named{"kd", kd},
        Named{"stride (depth)", strideD}, Named{"dilation (depth)", dilationD}})
    if (positive.value <= 0)
      return Error::failure(std::string(positive.name) +
                            " must be positive, got " +
                            std::to_string(positive.value));
  for (Named pad :
       {Named{"padding[0]", padTop}, Named{"padding[1]", padLeft},
        Named{"padding[2]", padBottom}, Named{"padding[3]", padRight},
        Named{"padding (front)", padFront}, Named{"padding (back)", padBack}})
    if (pad.value < 0)
      return Error::failure(std::string(pad.name) +
                            " must not be negative, got " +
                            std::to_string(pad.value));
  // Bounds before any size arithmetic: products of absurd values would
  // overflow int64 (and a wrapped byte count would allocate nothing).
  for (Named dim : {Named{"n", n}, Named{"c", c}, Named{"h", h}, Named{"w", w},
                    Named{"f", f}, Named{"kh", kh}, Named{"kw", kw},
                    Named{"d", d}, Named{"kd", kd}})
    if (dim.value > kMaxTensorElements)
      return Error::failure(std::string(dim.name) + " = " +
                            std::to_string(dim.value) + " exceeds " +
                            std::to_string(kMaxTensorElements));
  for (Named window :
       {Named{"stride[0]", strideH}, Named{"stride[1]", strideW},
        Named{"dilation[0]", dilationH}, Named{"dilation[1]", dilationW},
        Named{"padding[0]", padTop}, Named{"padding[1]", padLeft},
        Named{"padding[2]", padBottom}, Named{"padding[3]", padRight},
        Named{"stride (depth)", strideD}, Named{"dilation (depth)", dilationD},
        Named{"padding (front)", padFront}, Named{"padding (back)", padBack}})
    if (window.value > kMaxWindowParameter)
      return Error::failure(std::string(window.name) + " = " +
                            std::to_string(window.value) +
                            " exceeds the limit " +
                            std::to_string(kMaxWindowParameter));
  if (c % groups != 0 || f % groups != 0)
    return Error::failure("groups (" + std::to_string(groups) +
                          ") must divide c (" + std::to_string(c) +
                          ") and f (" + std::to_string(f) + ")");
  if (isQuantized()) {
    if (accumulate != DType::I32)
      return Error::failure(std::string("an i8 problem accumulates in i32, "
                                        "got ") +
                            dtypeName(accumulate));
    if (hasBias)
      return Error::failure("an i8 problem has no bias (add it to the i32 "
                            "output)");
    for (Named zero : {Named{"the input zero point", inputZeroPoint},
                       Named{"the filter zero point", filterZeroPoint}})
      if (zero.value < -128 || zero.value > 127)
        return Error::failure(std::string(zero.name) +
                              " must be an i8 value (-128..127), got " +
                              std::to_string(zero.value));
  } else {
    if (accumulate != DType::F32 && accumulate != DType::F16)
      return Error::failure(std::string("accumulate must be f32 or f16, got ") +
                            dtypeName(accumulate));
    if (inputZeroPoint || filterZeroPoint)
      return Error::failure(std::string("zero points need i8 data, got ") +
                            dtypeName(dtype));
  }
  if (dtype == DType::I32)
    return Error::failure("i32 is an output type; the data of a quantized "
                          "problem is i8");
  if (isPooling())
    if (Error e = validatePooling(); !e.ok())
      return e;
  if (!hasDepth && (d != 1 || kd != 1 || padFront || padBack))
    return Error::failure("a 2-D problem has no depth (set hasDepth)");
  if (hasDepth && outD() <= 0)
    return Error::failure("the output is empty: the dilated depth kernel (" +
                          std::to_string(dilationD * (kd - 1) + 1) +
                          ") is longer than the padded depth");
  if (outH() <= 0 || outW() <= 0)
    return Error::failure("the output is empty: the dilated kernel (" +
                          std::to_string(dilationH * (kh - 1) + 1) + "x" +
                          std::to_string(dilationW * (kw - 1) + 1) +
                          ") is larger than the padded input");
  struct Tensor {
    const char *name;
    double elements;
  };
  for (Tensor t :
       {Tensor{"input", double(n) * c * d * h * w},
        Tensor{"filter", double(f) * channelsPerGroup() * kd * kh * kw},
        Tensor{"output", double(n) * f * outD() * outH() * outW()}})
    if (t.elements > double(kMaxTensorElements))
      return Error::failure(std::string("the ") + t.name + " would have " +
                            std::to_string(t.elements) +
                            " elements, more than " +
                            std::to_string(kMaxTensorElements));
  return Error::success();
}

double ConvProblem::flops() const {
  if (isPooling())
    return double(n) * double(c) * double(outH()) * double(outW()) *
           double(kh) * double(kw);
  return 2.0 * double(n) * double(f) * double(outD()) * double(outH()) *
         double(outW()) * double(channelsPerGroup()) * double(kd) *
         double(kh) * double(kw);
}

/// `shape` with the depth `depth` inserted before position `at` (the H or
/// KH dim) when the problem is 3-D.
static std::vector<int64_t> withDepth(std::vector<int64_t> shape, bool has,
                                      size_t at, int64_t depth) {
  if (has)
    shape.insert(shape.begin() + at, depth);
  return shape;
}

std::vector<int64_t> ConvProblem::inputShape() const {
  if (layout == Layout::NCHW)
    return withDepth({n, c, h, w}, hasDepth, 2, d);
  return withDepth({n, h, w, c}, hasDepth, 1, d);
}

std::vector<int64_t> ConvProblem::filterShape() const {
  int64_t cg = channelsPerGroup();
  switch (filterLayout) {
  case FilterLayout::FCHW:
    return withDepth({f, cg, kh, kw}, hasDepth, 2, kd);
  case FilterLayout::HWCF:
    return withDepth({kh, kw, cg, f}, hasDepth, 0, kd);
  case FilterLayout::FHWC:
    return withDepth({f, kh, kw, cg}, hasDepth, 1, kd);
  }
  return {};
}

std::vector<int64_t> ConvProblem::outputShape() const {
  if (layout == Layout::NCHW)
    return withDepth({n, f, outH(), outW()}, hasDepth, 2, outD());
  return withDepth({n, outH(), outW(), f}, hasDepth, 1, outD());
}

int64_t ConvProblem::inputElements() const { return n * c * d * h * w; }
int64_t ConvProblem::filterElements() const {
  return f * channelsPerGroup() * kd * kh * kw;
}
int64_t ConvProblem::outputElements() const {
  return n * f * outD() * outH() * outW();
}

int64_t ConvProblem::inputIndex(int64_t ni, int64_t ci, int64_t hi,
                                int64_t wi, int64_t di) const {
  if (layout == Layout::NCHW)
    return (((ni * c + ci) * d + di) * h + hi) * w + wi;
  return (((ni * d + di) * h + hi) * w + wi) * c + ci;
}

int64_t ConvProblem::filterIndex(int64_t fi, int64_t ci, int64_t khi,
                                 int64_t kwi, int64_t kdi) const {
  int64_t cg = channelsPerGroup();
  switch (filterLayout) {
  case FilterLayout::FCHW:
    return (((fi * cg + ci) * kd + kdi) * kh + khi) * kw + kwi;
  case FilterLayout::HWCF:
    return (((kdi * kh + khi) * kw + kwi) * cg + ci) * f + fi;
  case FilterLayout::FHWC:
    return (((fi * kd + kdi) * kh + khi) * kw + kwi) * cg + ci;
  }
  return 0;
}

int64_t ConvProblem::outputIndex(int64_t ni, int64_t fi, int64_t hi,
                                 int64_t wi, int64_t di) const {
  int64_t dd = outD(), ho = outH(), wo = outW();
  if (layout == Layout::NCHW)
    return (((ni * f + fi) * dd + di) * ho + hi) * wo + wi;
  return (((ni * dd + di) * ho + hi) * wo + wi) * f + fi;
}

std::string ConvProblem::describe() const {
  auto s = [](int64_t v) { return std::to_string(v); };
  if (hasDepth)
    return "n" + s(n) + " c" + s(c) + " d" + s(d) + " h" + s(h) + " w" +
           s(w) + " f" + s(f) + " k" + s(kd) + "x" + s(kh) + "x" + s(kw) +
           " s" + s(strideD) + "x" + s(strideH) + "x" + s(strideW) + " d" +
           s(dilationD) + "x" + s(dilationH) + "x" + s(dilationW) + " p" +
           s(padFront) + "," + s(padTop) + "," + s(padLeft) + "," +
           s(padBack) + "," + s(padBottom) + "," + s(padRight) + " g" +
           s(groups);
  return std::string(isPooling() ? "maxpool " : "") + "n" + s(n) + " c" + s(c) +
         " h" + s(h) + " w" + s(w) + " f" + s(f) + " k" + s(kh) + "x" + s(kw) +
         " s" + s(strideH) + "x" + s(strideW) + " d" + s(dilationH) + "x" +
         s(dilationW) + " p" + s(padTop) + "," + s(padLeft) + "," +
         s(padBottom) + "," + s(padRight) + " g" + s(groups) +
         (isQuantized() ? " zp" + s(inputZeroPoint) + "," + s(filterZeroPoint)
                        : std::string());
}

std::vector<double> convertFilterLayout(const ConvProblem &problem,
                                        const std::vector<double> &filter,
                                        FilterLayout target) {
  ConvProblem to = problem;
  to.filterLayout = target;
  std::vector<double> out(filter.size());
  for (int64_t fi = 0; fi < problem.f; ++fi)
    for (int64_t ci = 0; ci < problem.channelsPerGroup(); ++ci)
      for (int64_t z = 0; z < problem.kd; ++z)
        for (int64_t y = 0; y < problem.kh; ++y)
          for (int64_t x = 0; x < problem.kw; ++x)
            out[to.filterIndex(fi, ci, y, x, z)] =
                filter[problem.filterIndex(fi, ci, y, x, z)];
  return out;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

} // namespace convrt
