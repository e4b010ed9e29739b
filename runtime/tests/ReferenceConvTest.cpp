//===- ReferenceConvTest.cpp - The float64 oracle on hand-computed convs --===//

#include "convrt/ReferenceConv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

using namespace convrt;

namespace {

/// 1x1x3x3 NCHW input 1..9.
ConvProblem threeByThree(int64_t k) {
  ConvProblem p;
  p.c = 1;
  p.h = 3;
  p.w = 3;
  p.f = 1;
  p.kh = k;
  p.kw = k;
  return p;
}

const std::vector<double> kOneToNine = {1, 2, 3, 4, 5, 6, 7, 8, 9};

TEST(ReferenceConvTest, PlainCorrelation) {
  ConvProblem p = threeByThree(2);
  // W = [[1, 0], [0, 1]]: each output sums a diagonal pair.
  std::vector<double> y = referenceConv2d(p, kOneToNine, {1, 0, 0, 1}, {}, 1);
  EXPECT_EQ(y, (std::vector<double>{6, 8, 12, 14}));
}

TEST(ReferenceConvTest, ZeroPaddingOnEverySide) {
  ConvProblem p = threeByThree(3);
  p.padTop = p.padLeft = p.padBottom = p.padRight = 1;
  std::vector<double> ones(9, 1.0);
  EXPECT_EQ(referenceConv2d(p, kOneToNine, ones, {}),
            (std::vector<double>{12, 21, 16, 27, 45, 33, 24, 39, 28}));
}

// Quantized: sum (x - zx)(w - zw); a padded position is zx (torch), so it
// adds nothing. A 3x3 filter of ones with zw = 0, zx = 1: the padded 3x3
// sums of x - 1 over the in-bounds taps.
TEST(ReferenceConvTest, QuantizedZeroPointsAndPadding) {
  ConvProblem p = threeByThree(3);
  p.padTop = p.padLeft = p.padBottom = p.padRight = 1;
  p.dtype = DType::I8;
  p.accumulate = DType::I32;
  p.inputZeroPoint = 1;
  std::vector<double> ones(9, 1.0);
  // The sums of ZeroPaddingOnEverySide minus one per in-bounds tap (4, 6 or
  // 9 of them): padding contributes 0, not -zx.
  EXPECT_EQ(referenceConv2d(p, kOneToNine, ones, {}),
            (std::vector<double>{8, 15, 12, 21, 36, 27, 20, 33, 24}));
  // A filter zero point: (x - 1) * (w - 3) with w = 1 is -2 (x - 1).
  p.filterZeroPoint = 3;
  EXPECT_EQ(referenceConv2d(p, kOneToNine, ones, {}),
            (std::vector<double>{-16, -30, -24, -42, -72, -54, -40, -66, -48}));
  EXPECT_TRUE(p.validate().ok());
  p.inputZeroPoint = 128;
  EXPECT_FALSE(p.validate().ok());
}

// 3-D: a 2x2x2 volume 1..8 (NCDHW) and a 2x2x2 filter of ones with one
// plane of front padding: the first output sums the first plane, the second
// the whole volume. The shapes gain D (and KD) before H (KH).
TEST(ReferenceConvTest, DepthWithFrontPadding) {
  ConvProblem p;
  p.hasDepth = true;
  p.d = p.h = p.w = 2;
  p.kd = p.kh = p.kw = 2;
  p.padFront = 1;
  ASSERT_TRUE(p.validate().ok());
  EXPECT_EQ(p.inputShape(), (std::vector<int64_t>{1, 1, 2, 2, 2}));
  EXPECT_EQ(p.filterShape(), (std::vector<int64_t>{1, 1, 2, 2, 2}));
  EXPECT_EQ(p.outputShape(), (std::vector<int64_t>{1, 1, 2, 1, 1}));
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8}, ones(8, 1.0);
  EXPECT_EQ(referenceConv2d(p, x, ones, {}), (std::vector<double>{10, 36}));
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 2 * 8);
  // Channels last: D follows N; the depth index is the last argument.
  p.layout = Layout::NHWC;
  p.filterLayout = FilterLayout::FHWC;
  p.c = 3;
  EXPECT_EQ(p.inputShape(), (std::vector<int64_t>{1, 2, 2, 2, 3}));
  EXPECT_EQ(p.filterShape(), (std::vector<int64_t>{1, 2, 2, 2, 3}));
  EXPECT_EQ(p.inputIndex(0, 2, 1, 0, 1), ((1 * 2 + 1) * 2 + 0) * 3 + 2);
  p.kd = 4;
  EXPECT_FALSE(p.validate().ok()); // 4 taps do not fit 2 + 1 planes
}

TEST(ReferenceConvTest, StrideSkipsOutputs) {
  ConvProblem p = threeByThree(3);
  p.padTop = p.padLeft = p.padBottom = p.padRight = 1;
  p.strideH = p.strideW = 2;
  ASSERT_EQ(p.outH(), 2);
  std::vector<double> ones(9, 1.0);
  EXPECT_EQ(referenceConv2d(p, kOneToNine, ones, {}),
            (std::vector<double>{12, 16, 24, 28}));
}

TEST(ReferenceConvTest, DilationSpreadsTheTaps) {
  ConvProblem p = threeByThree(2);
  p.dilationH = p.dilationW = 2;
  ASSERT_EQ(p.outH(), 1);
  EXPECT_EQ(referenceConv2d(p, kOneToNine, {1, 1, 1, 1}, {}),
            (std::vector<double>{1 + 3 + 7 + 9}));
}

TEST(ReferenceConvTest, AsymmetricPaddingAndBias) {
  // 1x1 filter, one padded row on top only: the first output row is bias.
  ConvProblem p = threeByThree(1);
  p.padTop = 1;
  p.hasBias = true;
  ASSERT_EQ(p.outH(), 4);
  ASSERT_EQ(p.outW(), 3);
  EXPECT_EQ(referenceConv2d(p, kOneToNine, {2}, {0.5}),
            (std::vector<double>{0.5, 0.5, 0.5, 2.5, 4.5, 6.5, 8.5, 10.5, 12.5,
                                 14.5, 16.5, 18.5}));
}

TEST(ReferenceConvTest, GroupsSeeOnlyTheirChannels) {
  // C = F = G = 2: channel 0 is all 1, channel 1 all 2; filter 0 weighs 3,
  // filter 1 weighs 5; bias [1, -1].
  ConvProblem p;
  p.c = 2;
  p.f = 2;
  p.groups = 2;
  p.h = p.w = 2;
  p.kh = p.kw = 1;
  std::vector<double> x = {1, 1, 1, 1, 2, 2, 2, 2};
  EXPECT_EQ(referenceConv2d(p, x, {3, 5}, {1, -1}),
            (std::vector<double>{4, 4, 4, 4, 9, 9, 9, 9}));
}

ConvProblem randomProblem(Layout layout, FilterLayout filter) {
  ConvProblem p;
  p.layout = layout;
  p.filterLayout = filter;
  p.n = 2;
  p.c = 6;
  p.h = 7;
  p.w = 5;
  p.f = 4;
  p.kh = 3;
  p.kw = 2;
  p.strideH = 2;
  p.dilationW = 2;
  p.padTop = 1;
  p.padRight = 2;
  p.groups = 2;
  p.hasBias = true;
  return p;
}

TEST(ReferenceConvTest, LayoutsAgree) {
  ConvProblem nchw = randomProblem(Layout::NCHW, FilterLayout::FCHW);
  std::vector<double> x =
      randomTensor(size_t(nchw.inputElements()), DType::F32, 1);
  std::vector<double> w =
      randomTensor(size_t(nchw.filterElements()), DType::F32, 2);
  std::vector<double> b = randomTensor(size_t(nchw.f), DType::F32, 3);
  std::vector<double> expected = referenceConv2d(nchw, x, w, b);

  for (FilterLayout filter :
       {FilterLayout::FCHW, FilterLayout::HWCF, FilterLayout::FHWC}) {
    ConvProblem nhwc = randomProblem(Layout::NHWC, filter);
    std::vector<double> xNhwc(x.size());
    for (int64_t n = 0; n < nchw.n; ++n)
      for (int64_t c = 0; c < nchw.c; ++c)
        for (int64_t h = 0; h < nchw.h; ++h)
          for (int64_t ww = 0; ww < nchw.w; ++ww)
            xNhwc[nhwc.inputIndex(n, c, h, ww)] =
                x[nchw.inputIndex(n, c, h, ww)];
    std::vector<double> y =
        referenceConv2d(nhwc, xNhwc, convertFilterLayout(nchw, w, filter), b);
    for (int64_t n = 0; n < nchw.n; ++n)
      for (int64_t f = 0; f < nchw.f; ++f)
        for (int64_t h = 0; h < nchw.outH(); ++h)
          for (int64_t ww = 0; ww < nchw.outW(); ++ww)
            ASSERT_DOUBLE_EQ(y[nhwc.outputIndex(n, f, h, ww)],
                             expected[nchw.outputIndex(n, f, h, ww)])
                << filterLayoutName(filter);
  }
}

TEST(ReferenceConvTest, ThreadsDoNotChangeTheResult) {
  ConvProblem p = randomProblem(Layout::NHWC, FilterLayout::HWCF);
  std::vector<double> x =
      randomTensor(size_t(p.inputElements()), DType::F16, 4);
  std::vector<double> w =
      randomTensor(size_t(p.filterElements()), DType::F16, 5);
  EXPECT_EQ(referenceConv2d(p, x, w, {}, 1), referenceConv2d(p, x, w, {}, 3));
}

TEST(ReferenceConvTest, ProblemShapesAndFlops) {
  ConvProblem p = randomProblem(Layout::NHWC, FilterLayout::HWCF);
  EXPECT_EQ(p.outH(), 3); // floor((7 + 1 + 0 - 1*(3-1) - 1) / 2) + 1
  EXPECT_EQ(p.outW(), 5); // floor((5 + 0 + 2 - 2*(2-1) - 1) / 1) + 1
  EXPECT_EQ(p.inputShape(), (std::vector<int64_t>{2, 7, 5, 6}));
  EXPECT_EQ(p.filterShape(), (std::vector<int64_t>{3, 2, 3, 4}));
  EXPECT_EQ(p.outputShape(), (std::vector<int64_t>{2, 3, 5, 4}));
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 2 * 4 * 3 * 5 * 3 * 3 * 2);
  EXPECT_EQ(p.describe(), "n2 c6 h7 w5 f4 k3x2 s2x1 d1x2 p1,0,0,2 g2");
  EXPECT_TRUE(p.validate().ok());
  p.groups = 4;
  EXPECT_EQ(p.validate().message(), "groups (4) must divide c (6) and f (4)");
}

TEST(ReferenceConvTest, AbsurdProblemsAreRefusedBeforeAnyArithmetic) {
  // A bundle claiming N = 2^62 once "ran": the byte counts wrapped to 0.
  ConvProblem p = randomProblem(Layout::NHWC, FilterLayout::HWCF);
  p.n = int64_t(1) << 62;
  EXPECT_EQ(p.validate().message(),
            "n = 4611686018427387904 exceeds 2147483647");
  p = randomProblem(Layout::NHWC, FilterLayout::HWCF);
  p.strideW = INT64_MAX;
  EXPECT_EQ(p.validate().message(),
            "stride[1] = 9223372036854775807 exceeds the limit 1048576");
  // Each dimension in range, their product not.
  p = randomProblem(Layout::NHWC, FilterLayout::HWCF);
  p.n = p.h = p.w = 4096, p.c = p.groups;
  EXPECT_NE(p.validate().message().find("the input would have"),
            std::string::npos);
}

TEST(CompareTest, RelativeL2AndMaxAbs) {
  Comparison same = compareResults({1, 2, 3}, {1, 2, 3}, 1e-5);
  EXPECT_TRUE(same.pass);
  EXPECT_EQ(same.relL2Error, 0);
  Comparison off = compareResults({1, 2, 4}, {1, 2, 3}, 1e-5);
  EXPECT_FALSE(off.pass);
  EXPECT_DOUBLE_EQ(off.maxAbsDiff, 1);
  EXPECT_DOUBLE_EQ(off.relL2Error, 1 / std::sqrt(14.0));
  EXPECT_TRUE(compareResults({1, 2, 4}, {1, 2, 3}, 0.3).pass);
  EXPECT_EQ(off.checked, 3u);
  EXPECT_EQ(off.maxAbsReference, 3);
}

TEST(CompareTest, OneWrongElementFailsTheMaxAbsBound) {
  // 250000 ones with one element off by 2: L2 dilutes it to 0.004 (within
  // f16's 1e-2) but it is beyond 100 * 1e-2 * max(1, max|ref| = 1) = 1.
  std::vector<double> want(250000, 1.0), got = want;
  got[1234] = 3;
  Comparison c = compareResults(got, want, 1e-2);
  EXPECT_NEAR(c.relL2Error, 0.004, 1e-12);
  EXPECT_DOUBLE_EQ(c.maxAbsDiff, 2);
  EXPECT_EQ(c.maxAbsReference, 1);
  EXPECT_EQ(c.checked, 250000u);
  EXPECT_FALSE(c.pass);
  // The bound scales with the reference's magnitude (here max|ref| = 300).
  want[0] = got[0] = 300;
  EXPECT_TRUE(compareResults(got, want, 1e-2).pass);
}

TEST(CompareTest, NonFiniteAlwaysFails) {
  Comparison nan = compareResults({1, NAN, 3}, {1, 2, 3}, 1.0);
  EXPECT_FALSE(nan.pass);
  EXPECT_EQ(nan.nonFinite, 1u);
  EXPECT_TRUE(std::isinf(nan.relL2Error));
  EXPECT_FALSE(compareResults({1, 2}, {1, 2, 3}, 1.0).pass) << "size mismatch";
}

TEST(RandomTensorTest, SeededUniformAndRounded) {
  std::vector<double> a = randomTensor(1000, DType::BF16, 42);
  EXPECT_EQ(a, randomTensor(1000, DType::BF16, 42));
  EXPECT_NE(a, randomTensor(1000, DType::BF16, 43));
  double sum = 0;
  for (double v : a) {
    EXPECT_GE(v, -1.0);
    EXPECT_LE(v, 1.0);
    EXPECT_EQ(v, roundTo(DType::BF16, v));
    sum += v;
  }
  EXPECT_LT(std::fabs(sum / 1000), 0.1);
}

} // namespace
