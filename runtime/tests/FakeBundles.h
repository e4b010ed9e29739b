//===- FakeBundles.h - Bundles whose kernel is the fake's conv --*- C++ -*-===//
//
// The fake libcuda's fake_conv2d kernel reads its problem from a "conv ..."
// line of the module image; these helpers write that line and a matching
// manifest, so runner and tool tests exercise real bundles end to end.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_TESTS_FAKEBUNDLES_H
#define CONVRT_TESTS_FAKEBUNDLES_H

#include "FakeCuda.h"

#include "convrt/Manifest.h"

#include <string>

namespace convrt::test {

/// The fake_conv2d configuration line for a problem (and a residual).
inline std::string convLine(const ConvProblem &p, DType out, DType bias,
                            bool residual = false) {
  auto s = [](int64_t v) { return std::to_string(v); };
  return std::string("conv layout=") + layoutName(p.layout) +
         " filter=" + filterLayoutName(p.filterLayout) +
         " in=" + dtypeName(storageType(p.dtype)) + " out=" + dtypeName(out) +
         " n=" + s(p.n) + " c=" + s(p.c) + " h=" + s(p.h) + " w=" + s(p.w) +
         " f=" + s(p.f) + " kh=" + s(p.kh) + " kw=" + s(p.kw) +
         " sh=" + s(p.strideH) + " sw=" + s(p.strideW) +
         " dh=" + s(p.dilationH) + " dw=" + s(p.dilationW) +
         " pt=" + s(p.padTop) + " pl=" + s(p.padLeft) +
         " pb=" + s(p.padBottom) + " pr=" + s(p.padRight) +
         " g=" + s(p.groups) + " bias=" + (p.hasBias ? "1" : "0") +
         " bias_dtype=" + dtypeName(bias) + (residual ? " residual=1" : "");
}

inline Manifest convManifest(const ConvProblem &p, DType out, DType bias,
                             const std::string &kernel = "fake_conv2d",
                             bool residual = false) {
  Manifest m;
  m.generator = "RunnerTest";
  m.kernel.name = kernel;
  m.kernel.binary = "kernel.cubin";
  m.kernel.grid = {4, 2, 1};
  m.kernel.block = {128, 1, 1};
  m.kernel.chip = "sm_90";
  m.problem = p;
  DType storage = storageType(p.dtype);
  m.arguments.push_back({"x", ArgumentRole::Input, storage, p.inputShape()});
  m.arguments.push_back({"w", ArgumentRole::Filter, storage, p.filterShape()});
  if (p.hasBias)
    m.arguments.push_back({"b", ArgumentRole::Bias, bias, p.biasShape()});
  if (residual)
    m.arguments.push_back({"r", ArgumentRole::Residual, out, p.outputShape()});
  m.arguments.push_back({"y", ArgumentRole::Output, out, p.outputShape()});
  return m;
}

/// Exercises everything: stride, dilation, asymmetric padding, groups, bias.
inline ConvProblem sampleProblem(Layout layout, FilterLayout filter,
                                 DType dtype) {
  ConvProblem p;
  p.layout = layout;
  p.filterLayout = filter;
  p.n = 2;
  p.c = 4;
  p.h = 9;
  p.w = 7;
  p.f = 6;
  p.kh = 3;
  p.kw = 3;
  p.strideH = 2;
  p.dilationW = 2;
  p.padTop = 1;
  p.padLeft = 2;
  p.padBottom = 0;
  p.padRight = 1;
  p.groups = 2;
  p.dtype = dtype;
  p.hasBias = true;
  return p;
}

/// A small NHWC f16 convolution whose operands a TMA kernel can map: rows of
/// 16 channels are 32 bytes, a multiple of the 16 the TMA wants.
inline ConvProblem tmaProblem() {
  ConvProblem p;
  p.layout = Layout::NHWC;
  p.filterLayout = FilterLayout::FHWC;
  p.n = 2;
  p.c = 16;
  p.h = 6;
  p.w = 5;
  p.f = 8;
  p.kh = 3;
  p.kw = 3;
  p.padTop = p.padLeft = p.padBottom = p.padRight = 1;
  p.dtype = DType::F16;
  p.hasBias = true;
  return p;
}

/// tmaProblem's manifest as an sm_90a TMA kernel's: pointers x, w, b, y,
/// then an im2col map of x (32 output pixels of 16 channels per copy) and a
/// tiled map of w as [F=8][K=144].
inline Manifest tmaManifest() {
  ConvProblem p = tmaProblem();
  Manifest m = convManifest(p, DType::F16, DType::F32);
  m.kernel.chip = "sm_90a";
  TensorMapSpec input;
  input.name = "x_im2col";
  input.argument = "x";
  input.mode = TensorMapMode::Im2col;
  input.dtype = DType::F16;
  input.dims = {16, 5, 6, 2};
  input.stridesBytes = {32, 160, 960};
  input.box = {16, 32};
  input.elementStrides = {1, 1, 1, 1};
  input.lowerCorner = {-1, -1};
  input.upperCorner = {-1, -1};
  input.swizzle = TensorMapSwizzle::B32;
  TensorMapSpec filter;
  filter.name = "w_tiles";
  filter.argument = "w";
  filter.mode = TensorMapMode::Tiled;
  filter.dtype = DType::F16;
  filter.dims = {144, 8};
  filter.stridesBytes = {288};
  filter.box = {64, 16};
  filter.elementStrides = {1, 1};
  filter.swizzle = TensorMapSwizzle::B128;
  m.tensorMaps = {input, filter};
  return m;
}

/// The fake kernel for tmaManifest: fake_conv2d computing the problem from
/// its pointers, declaring the two 128-byte map parameters after them.
inline std::string tmaImage() {
  return fakeImage(convLine(tmaProblem(), DType::F16, DType::F32) +
                   " tensor_maps=2");
}

/// A bundle directory for `p` whose kernel computes exactly `p`.
inline Error writeFakeBundle(const std::string &directory, const ConvProblem &p,
                             const ConvProblem &kernelProblem) {
  DType storage = storageType(p.dtype);
  return writeBundle(directory, convManifest(p, storage, storage),
                     fakeImage(convLine(kernelProblem, storage, storage)), "");
}

} // namespace convrt::test

#endif // CONVRT_TESTS_FAKEBUNDLES_H
