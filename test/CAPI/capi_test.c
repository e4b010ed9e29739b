/*===- capi_test.c - ConvLower's C API, used from C -------------------===*\
 *
 * Each case describes a convolution with ConvLowerConvDesc, compiles it,
 * runs it on fresh random data and compares the output with a float64
 * direct convolution written here (independent of the library's reference),
 * at the dtype's tolerance: f32 1e-5, f16/bf16 1e-2 relative to the largest
 * reference value; i8 exactly. Then the cache (a second identical layer is a
 * hit, a different one a miss), four threads compiling and running one new
 * problem at once (one compilation), the report, and bad input: each error
 * a status with a message naming the fault, never an abort.
 *
 * Prints "FAIL: ..." per failed assertion and exits 1 if there was one.
\*===----------------------------------------------------------------------===*/

#include "ConvLower-c/ConvLower.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      printf("FAIL (%s:%d): ", __FILE__, __LINE__);                            \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

/* xorshift64*, seeded per tensor: uniform in [-1, 1). */
static _Thread_local uint64_t rngState;
static double uniform(void) {
  rngState ^= rngState >> 12;
  rngState ^= rngState << 25;
  rngState ^= rngState >> 27;
  return (double)((rngState * 2685821657736338717ull) >> 11) / 9007199254740992.0 *
             2.0 - 1.0;
}

/* Round-to-nearest-even f32 -> f16 / bf16 bits, and back. */
static uint16_t toF16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff,
           man = x & 0x7fffff;
  int e = (int)exp - 127 + 15;
  if (e <= 0) { /* the test's values stay normal or flush to signed zero */
    return (uint16_t)sign;
  }
  uint32_t h = (uint32_t)(e << 10) | (man >> 13);
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return (uint16_t)(sign | h);
}
static double fromF16(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  double m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
static uint16_t toBF16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t rest = x & 0xffff, hi = x >> 16;
  if (rest > 0x8000 || (rest == 0x8000 && (hi & 1)))
    ++hi;
  return (uint16_t)hi;
}
static double fromBF16(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* The tensors of one case: values as doubles (exactly the stored ones) and
 * the stored bytes. */
typedef struct {
  int64_t count;
  double *values;
  void *bytes;
} Tensor;

static Tensor makeTensor(int64_t count, ConvLowerDType dtype, uint64_t seed) {
  Tensor t;
  t.count = count;
  t.values = malloc(sizeof(double) * (size_t)count);
  size_t width = dtype == ConvLowerDTypeI8 ? 1
                 : (dtype == ConvLowerDTypeF16 || dtype == ConvLowerDTypeBF16)
                     ? 2
                     : 4;
  t.bytes = malloc(width * (size_t)count);
  rngState = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < count; ++i) {
    double u = uniform();
    if (dtype == ConvLowerDTypeI8) {
      int8_t v = (int8_t)floor(u * 100);
      ((int8_t *)t.bytes)[i] = v;
      t.values[i] = v;
    } else if (dtype == ConvLowerDTypeF16) {
      uint16_t h = toF16((float)u);
      ((uint16_t *)t.bytes)[i] = h;
      t.values[i] = fromF16(h);
    } else if (dtype == ConvLowerDTypeBF16) {
      uint16_t b = toBF16((float)u);
      ((uint16_t *)t.bytes)[i] = b;
      t.values[i] = fromBF16(b);
    } else {
      float f = (float)u;
      ((float *)t.bytes)[i] = f;
      t.values[i] = f;
    }
  }
  return t;
}

/* A residual operand: the output's type (float; int32 for i8), 4 bytes an
 * element; bf16 words with `bf16`. */
static Tensor makeResidual(int64_t count, ConvLowerDType dtype, bool bf16,
                           uint64_t seed) {
  Tensor t =
      makeTensor(count, bf16 ? ConvLowerDTypeBF16 : ConvLowerDTypeF32, seed);
  if (dtype == ConvLowerDTypeI8)
    for (int64_t i = 0; i < count; ++i) {
      int32_t v = (int32_t)floor(t.values[i] * 1000);
      ((int32_t *)t.bytes)[i] = v;
      t.values[i] = v;
    }
  return t;
}

static void freeTensor(Tensor *t) {
  free(t->values);
  free(t->bytes);
}

/* The description's dimensions as 3-D (D, H, W), innermost last. */
typedef struct {
  int64_t in[3], k[3], s[3], d[3], pb[3], out[3];
} Dims;

static Dims dimsOf(const ConvLowerConvDesc *desc) {
  Dims g;
  int r = desc->spatialRank;
  for (int i = 0; i < 3; ++i) {
    int j = i - (3 - r); /* description index of 3-D dimension i */
    g.in[i] = j >= 0 ? desc->inputSize[j] : 1;
    g.k[i] = j >= 0 ? desc->kernelSize[j] : 1;
    g.s[i] = j >= 0 ? desc->stride[j] : 1;
    g.d[i] = j >= 0 ? desc->dilation[j] : 1;
    g.pb[i] = j >= 0 ? desc->padBefore[j] : 0;
    int64_t pa = j >= 0 ? desc->padAfter[j] : 0;
    g.out[i] = (g.in[i] + g.pb[i] + pa - g.d[i] * (g.k[i] - 1) - 1) / g.s[i] + 1;
  }
  return g;
}

/* Linear index of (n, c, z, y, x) in an image of `ch` channels. */
static int64_t imageIndex(int nhwc, const int64_t *sp, int64_t ch, int64_t n,
                          int64_t c, int64_t z, int64_t y, int64_t x) {
  int64_t pixel = (z * sp[1] + y) * sp[2] + x;
  int64_t pixels = sp[0] * sp[1] * sp[2];
  return nhwc ? (n * pixels + pixel) * ch + c : (n * ch + c) * pixels + pixel;
}

/* The convolution of docs/design.md ("Convolution semantics") in float64:
   FCHW filters for NCHW, FHWC for NHWC (with desc.pooling, the maximum of
   each channel's window, the padding -inf); then the epilogue: + b, + r
   (NULL without a residual), ReLU, clamp. */
static double *reference(const ConvLowerConvDesc *desc, const Tensor *x,
                         const Tensor *w, const Tensor *b, const Tensor *r) {
  Dims g = dimsOf(desc);
  int nhwc = desc->layout == ConvLowerLayoutNHWC;
  int64_t N = desc->batch, C = desc->inChannels, F = desc->outChannels,
          G = desc->groups, Cg = C / G, Fg = F / G;
  int64_t outCount = N * F * g.out[0] * g.out[1] * g.out[2];
  double *y = calloc((size_t)outCount, sizeof(double));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t oz = 0; oz < g.out[0]; ++oz)
        for (int64_t oy = 0; oy < g.out[1]; ++oy)
          for (int64_t ox = 0; ox < g.out[2]; ++ox) {
            int pooling = desc->pooling == ConvLowerPoolingMax;
            double acc = pooling ? -INFINITY : 0;
            int64_t group = f / Fg;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kz = 0; kz < g.k[0]; ++kz)
                for (int64_t ky = 0; ky < g.k[1]; ++ky)
                  for (int64_t kx = 0; kx < g.k[2]; ++kx) {
                    int64_t iz = oz * g.s[0] - g.pb[0] + kz * g.d[0];
                    int64_t iy = oy * g.s[1] - g.pb[1] + ky * g.d[1];
                    int64_t ix = ox * g.s[2] - g.pb[2] + kx * g.d[2];
                    double xv = desc->inputZeroPoint; /* padding reads zx */
                    int inside = iz >= 0 && iz < g.in[0] && iy >= 0 &&
                                 iy < g.in[1] && ix >= 0 && ix < g.in[2];
                    if (inside)
                      xv = x->values[imageIndex(nhwc, g.in, C, n,
                                                group * Cg + c, iz, iy, ix)];
                    if (pooling) {
                      if (inside)
                        acc = fmax(acc, xv);
                      continue;
                    }
                    int64_t taps = g.k[0] * g.k[1] * g.k[2];
                    int64_t tap = (kz * g.k[1] + ky) * g.k[2] + kx;
                    int64_t wi = nhwc ? (f * taps + tap) * Cg + c
                                      : (f * Cg + c) * taps + tap;
                    acc += (xv - desc->inputZeroPoint) *
                           (w->values[wi] - desc->filterZeroPoint);
                  }
            int64_t at = imageIndex(nhwc, g.out, F, n, f, oz, oy, ox);
            if (b)
              acc += b->values[f];
            if (r)
              acc += r->values[at];
            if (desc->relu && acc < 0)
              acc = 0;
            if (desc->clamp)
              acc = fmin(fmax(acc, desc->clampMin), desc->clampMax);
            y[at] = acc;
          }
  return y;
}

/* Whether `y` matches the float64 reference of (x, w, b) within the
 * dtype's tolerance; prints a line for `name`. */
static int matches(const char *name, ConvLowerConv conv,
                   const ConvLowerConvDesc *desc, const Tensor *x,
                   const Tensor *w, const Tensor *b, const Tensor *r,
                   const void *y, int64_t yn) {
  double *want = reference(desc, x, w, b, r);
  double maxRef = 0, maxDiff = 0;
  for (int64_t i = 0; i < yn; ++i) {
    double got = desc->dtype == ConvLowerDTypeI8
                     ? (double)((const int32_t *)y)[i]
                 : desc->bf16Output ? fromBF16(((const uint16_t *)y)[i])
                                    : (double)((const float *)y)[i];
    double d = fabs(got - want[i]);
    if (!(d <= maxDiff)) /* NaN counts */
      maxDiff = isnan(d) ? INFINITY : d;
    if (fabs(want[i]) > maxRef)
      maxRef = fabs(want[i]);
  }
  /* A bf16 output: the f32 result rounded, within 2^-9 of each value. */
  double tolerance = desc->dtype == ConvLowerDTypeI8       ? 0
                     : desc->bf16Output                    ? 1e-2
                     : (desc->dtype == ConvLowerDTypeF32)  ? 1e-5
                     : (desc->dtype == ConvLowerDTypeTF32) ? 1e-3
                                                           : 1e-2;
  int ok = maxRef > 0 && maxDiff <= tolerance * maxRef;
  EXPECT(ok, "%s: max |diff| %.3g, max |reference| %.3g, tolerance %.1g", name,
         maxDiff, maxRef, tolerance);
  printf("%-28s target %d  %lld outputs  max |diff| / max |ref| = %.3g\n",
         name, (int)convlowerConvGetTarget(conv), (long long)yn,
         maxRef > 0 ? maxDiff / maxRef : 0.0);
  free(want);
  return ok;
}

/* An output buffer of NaNs: an unwritten output fails the check. */
static void *nanOutput(int64_t yn) {
  void *y = malloc(4 * (size_t)yn);
  memset(y, 0xff, 4 * (size_t)yn);
  return y;
}

/* Compiles, runs on fresh data and checks one description; returns whether
 * it passed. */
static int checkCase(const char *name, ConvLowerConvDesc desc, uint64_t seed) {
  ConvLowerConv conv;
  ConvLowerStatus status = convlowerConvCreate(&desc, &conv, NULL);
  EXPECT(status == ConvLowerStatusOk, "%s: create failed: %s", name,
         convlowerGetLastErrorMessage());
  if (status != ConvLowerStatusOk)
    return 0;
  int64_t xn, wn, bn, yn;
  convlowerConvGetSizes(conv, &xn, &wn, &bn, &yn);
  Tensor x = makeTensor(xn, desc.dtype, seed * 3 + 1);
  Tensor w = makeTensor(wn ? wn : 1, desc.dtype, seed * 3 + 2);
  Tensor b = makeTensor(bn ? bn : 1, desc.dtype, seed * 3 + 3);
  Tensor r = makeResidual(desc.residual ? yn : 1, desc.dtype,
                          desc.bf16Output || desc.bf16Residual, seed * 7 + 5);
  void *y = nanOutput(yn);
  const void *bp = bn ? b.bytes : NULL;
  const void *wp = wn ? w.bytes : NULL; /* a pooling reads no filter */
  status = desc.residual
               ? convlowerConvRunResidual(conv, x.bytes, wp, bp, r.bytes, y)
               : convlowerConvRun(conv, x.bytes, wp, bp, y);
  EXPECT(status == ConvLowerStatusOk, "%s: run failed: %s", name,
         convlowerGetLastErrorMessage());
  int ok = status == ConvLowerStatusOk &&
           matches(name, conv, &desc, &x, &w, bn ? &b : NULL,
                   desc.residual ? &r : NULL, y, yn);
  free(y);
  freeTensor(&x);
  freeTensor(&w);
  freeTensor(&b);
  freeTensor(&r);
  convlowerConvDestroy(conv);
  return ok;
}

static ConvLowerConvDesc conv2d(int64_t n, int64_t c, int64_t h, int64_t w,
                                int64_t f, int64_t k) {
  ConvLowerConvDesc d;
  convlowerConvDescInit(&d);
  d.batch = n, d.inChannels = c, d.outChannels = f;
  d.inputSize[0] = h, d.inputSize[1] = w;
  d.kernelSize[0] = d.kernelSize[1] = k;
  d.target = ConvLowerTargetCpu;
  return d;
}

static void numerics(void) {
  ConvLowerConvDesc d = conv2d(2, 8, 9, 11, 16, 3);
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true, d.relu = true;
  checkCase("f32 nchw bias relu", d, 1);

  d = conv2d(1, 12, 10, 10, 24, 3);
  d.layout = ConvLowerLayoutNHWC, d.groups = 3, d.stride[0] = d.stride[1] = 2;
  d.padBefore[0] = 1, d.padAfter[1] = 2; /* asymmetric */
  d.dtype = ConvLowerDTypeF16;
  checkCase("f16 nhwc grouped strided", d, 2);

  d = conv2d(1, 16, 12, 12, 16, 3);
  d.groups = 16, d.dilation[0] = d.dilation[1] = 2;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 2;
  checkCase("f32 depthwise dilated", d, 3);

  d = conv2d(2, 8, 7, 7, 8, 1);
  d.dtype = ConvLowerDTypeBF16, d.bias = true;
  checkCase("bf16 pointwise bias", d, 4);

  d = conv2d(2, 16, 6, 6, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeI8;
  d.inputZeroPoint = 5, d.filterZeroPoint = -3;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  checkCase("i8 nhwc zero points", d, 5);

  ConvLowerConvDesc d1;
  convlowerConvDescInit(&d1);
  d1.spatialRank = 1, d1.batch = 2, d1.inChannels = 6, d1.outChannels = 10;
  d1.inputSize[0] = 33, d1.kernelSize[0] = 5, d1.stride[0] = 2;
  d1.padBefore[0] = d1.padAfter[0] = 2, d1.bias = true;
  d1.target = ConvLowerTargetCpu;
  checkCase("f32 conv1d", d1, 6);

  ConvLowerConvDesc d3;
  convlowerConvDescInit(&d3);
  d3.spatialRank = 3, d3.batch = 1, d3.inChannels = 4, d3.outChannels = 8;
  d3.inputSize[0] = 5, d3.inputSize[1] = 6, d3.inputSize[2] = 7;
  for (int i = 0; i < 3; ++i)
    d3.kernelSize[i] = 3, d3.padBefore[i] = d3.padAfter[i] = 1;
  d3.target = ConvLowerTargetCpu;
  checkCase("f32 conv3d", d3, 7);

  d = conv2d(1, 16, 8, 8, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeF16;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true, d.relu = true, d.target = ConvLowerTargetCpuTwin;
  checkCase("f16 cpu-twin bias relu", d, 8);

  // The sm_90a family's twin (TMA + wgmma), with its fused bias and ReLU.
  d = conv2d(2, 64, 7, 9, 72, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeBF16;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true, d.relu = true, d.target = ConvLowerTargetCpuTwin;
  d.chip = "sm_90a";
  checkCase("bf16 cpu-twin sm_90a bias relu", d, 9);
  d.chip = NULL;

  /* The epilogue: a residual (ResNet's identity) and a clamp (ReLU6's
   * form; the sums here are within about +-3, so both bounds bite), on the
   * GEMM's routes, the depthwise one, int8 and the twin. */
  d = conv2d(2, 16, 8, 8, 32, 1);
  d.layout = ConvLowerLayoutNHWC;
  d.bias = true, d.residual = true, d.clamp = true;
  d.clampMin = -0.5, d.clampMax = 0.75;
  checkCase("f32 nhwc 1x1 residual clamp", d, 10);
  d = conv2d(1, 32, 14, 14, 32, 3);
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.residual = true, d.relu = true;
  checkCase("f32 nchw 3x3 residual relu", d, 11);
  d.layout = ConvLowerLayoutNHWC, d.groups = 32, d.bias = true;
  d.relu = false, d.clamp = true, d.clampMin = 0, d.clampMax = 0.25;
  checkCase("f32 depthwise residual relu6", d, 12);
  d = conv2d(2, 16, 6, 6, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeI8;
  d.inputZeroPoint = 5, d.filterZeroPoint = -3;
  d.residual = true, d.relu = true;
  checkCase("i8 nhwc residual relu", d, 13);
  d = conv2d(1, 16, 8, 8, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeF16;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true, d.residual = true, d.clamp = true, d.clampMin = -1;
  d.clampMax = 1, d.target = ConvLowerTargetCpuTwin;
  checkCase("f16 cpu-twin residual clamp", d, 14);
  /* The kernels' own epilogue on the twin, each store path: the 49-pixel
   * NCHW planes store scalars (the residual read beside each), sm_90a's
   * staged vectors, the direct depthwise kernel, i8's int32 residual. */
  d = conv2d(1, 32, 7, 7, 64, 3);
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.dtype = ConvLowerDTypeTF32, d.residual = true, d.relu = true;
  d.target = ConvLowerTargetCpuTwin;
  checkCase("tf32 cpu-twin nchw residual", d, 15);
  d = conv2d(2, 64, 7, 9, 72, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeBF16;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true, d.residual = true, d.clamp = true, d.clampMin = -0.5;
  d.clampMax = 2, d.target = ConvLowerTargetCpuTwin, d.chip = "sm_90a";
  checkCase("bf16 cpu-twin sm_90a residual", d, 16);
  d.chip = NULL;
  d = conv2d(2, 32, 10, 10, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeF16, d.groups = 32;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true, d.residual = true, d.clamp = true, d.clampMin = 0;
  d.clampMax = 0.5, d.target = ConvLowerTargetCpuTwin;
  checkCase("f16 cpu-twin depthwise resid", d, 17);
  d = conv2d(2, 16, 6, 6, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeI8;
  d.inputZeroPoint = 5, d.filterZeroPoint = -3;
  d.residual = true, d.target = ConvLowerTargetCpuTwin;
  checkCase("i8 cpu-twin residual", d, 18);

  /* bf16 activations between layers: the output rounded to bf16 (and the
   * residual then bf16 words), or a bf16 residual into an f32 output, on
   * the GEMM, Winograd and depthwise routes. */
  d = conv2d(1, 32, 12, 12, 48, 1);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeBF16;
  d.bias = true, d.relu = true, d.bf16Output = true,
  d.target = ConvLowerTargetCpu;
  checkCase("bf16 1x1 bf16 output relu", d, 19);
  d = conv2d(1, 16, 16, 16, 16, 3);
  d.layout = ConvLowerLayoutNHWC, d.target = ConvLowerTargetCpu;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.residual = true, d.bf16Output = true, d.constantWeights = true;
  checkCase("f32 3x3 bf16 output residual", d, 20);
  d = conv2d(2, 32, 10, 10, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.groups = 32, d.target = ConvLowerTargetCpu;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true, d.residual = true, d.bf16Residual = true;
  checkCase("f32 depthwise bf16 residual", d, 21);
}

/* Whether an f32 handle without a bias runs on zeroed buffers of its sizes. */
static bool runsOnZeros(ConvLowerConv conv) {
  int64_t xn, wn, yn;
  convlowerConvGetSizes(conv, &xn, &wn, NULL, &yn);
  float *x = calloc((size_t)xn, 4), *w = calloc((size_t)wn, 4),
        *y = calloc((size_t)yn, 4);
  bool ok = convlowerConvRun(conv, x, w, NULL, y) == ConvLowerStatusOk;
  free(x), free(w), free(y);
  return ok;
}

static void cache(void) {
  ConvLowerConvDesc d = conv2d(1, 4, 6, 6, 4, 3);
  size_t before = convlowerCacheSize();
  ConvLowerConv a, b, c;
  bool hitA = true, hitB = false, hitC = true;
  EXPECT(convlowerConvCreate(&d, &a, &hitA) == ConvLowerStatusOk, "cache: %s",
         convlowerGetLastErrorMessage());
  EXPECT(convlowerConvCreate(&d, &b, &hitB) == ConvLowerStatusOk, "cache: %s",
         convlowerGetLastErrorMessage());
  d.stride[0] = 2; /* another problem */
  EXPECT(convlowerConvCreate(&d, &c, &hitC) == ConvLowerStatusOk, "cache: %s",
         convlowerGetLastErrorMessage());
  EXPECT(!hitA && hitB && !hitC, "cache hits: first %d, same %d, other %d",
         hitA, hitB, hitC);
  EXPECT(convlowerCacheSize() == before + 2, "cache size %zu, want %zu",
         convlowerCacheSize(), before + 2);
  convlowerConvDestroy(a);
  convlowerConvDestroy(b);
  /* The handle outlives a cleared cache. */
  convlowerCacheClear();
  EXPECT(convlowerCacheSize() == 0, "cache not cleared");
  EXPECT(runsOnZeros(c), "run after clear: %s", convlowerGetLastErrorMessage());
  convlowerConvDestroy(c);
}

/* The cache's bound: past its capacity the least recently created problem
 * is dropped (a handle to it still runs); 64 by default. */
static void cacheCapacity(void) {
  EXPECT(convlowerCacheCapacity() == 64, "default capacity %zu",
         convlowerCacheCapacity());
  convlowerCacheClear();
  convlowerCacheSetCapacity(2);
  ConvLowerConvDesc d = conv2d(1, 4, 6, 6, 4, 3);
  ConvLowerConv a, b, c, again;
  bool hit = true;
  EXPECT(convlowerConvCreate(&d, &a, &hit) == ConvLowerStatusOk && !hit,
         "capacity: %s", convlowerGetLastErrorMessage());
  d.stride[0] = 2;
  EXPECT(convlowerConvCreate(&d, &b, &hit) == ConvLowerStatusOk && !hit,
         "capacity: %s", convlowerGetLastErrorMessage());
  d.stride[0] = 1; /* the first problem again: now the most recent */
  EXPECT(convlowerConvCreate(&d, &again, &hit) == ConvLowerStatusOk && hit,
         "capacity: the first problem missed (%d)", hit);
  d.stride[1] = 2; /* a third: the stride-2 one, least recent, goes */
  EXPECT(convlowerConvCreate(&d, &c, &hit) == ConvLowerStatusOk && !hit,
         "capacity: %s", convlowerGetLastErrorMessage());
  EXPECT(convlowerCacheSize() == 2, "capacity 2 keeps %zu",
         convlowerCacheSize());
  EXPECT(runsOnZeros(b), "a dropped problem's handle: %s",
         convlowerGetLastErrorMessage());
  ConvLowerConv b2;
  d.stride[1] = 1, d.stride[0] = 2;
  EXPECT(convlowerConvCreate(&d, &b2, &hit) == ConvLowerStatusOk && !hit,
         "the dropped problem was still cached (hit %d)", hit);
  EXPECT(convlowerCacheSize() == 2, "capacity 2 keeps %zu",
         convlowerCacheSize());
  /* Lowering the bound drops at once; 0 means 1. */
  convlowerCacheSetCapacity(0);
  EXPECT(convlowerCacheCapacity() == 1 && convlowerCacheSize() == 1,
         "capacity %zu, size %zu after setting 0", convlowerCacheCapacity(),
         convlowerCacheSize());
  convlowerConvDestroy(a), convlowerConvDestroy(b), convlowerConvDestroy(c);
  convlowerConvDestroy(again), convlowerConvDestroy(b2);
  convlowerCacheSetCapacity(64);
  convlowerCacheClear();
}

/* Four threads compile and run one new problem at once. */
static void *threadMain(void *arg) {
  ConvLowerConvDesc d = conv2d(2, 8, 12, 12, 16, 3);
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.threads = 1;
  char name[32];
  snprintf(name, sizeof name, "thread %d", *(int *)arg);
  *(int *)arg = checkCase(name, d, 100 + (uint64_t)*(int *)arg);
  return NULL;
}

static void threads(void) {
  size_t before = convlowerCacheSize();
  pthread_t t[4];
  int result[4];
  for (int i = 0; i < 4; ++i) {
    result[i] = i;
    pthread_create(&t[i], NULL, threadMain, &result[i]);
  }
  for (int i = 0; i < 4; ++i) {
    pthread_join(t[i], NULL);
    EXPECT(result[i] == 1, "thread %d failed", i);
  }
  EXPECT(convlowerCacheSize() == before + 1,
         "four threads on one problem: %zu compilations, want 1",
         convlowerCacheSize() - before);
}

static void collect(ConvLowerStringRef s, void *userData) {
  char **out = userData;
  *out = malloc(s.length + 1);
  memcpy(*out, s.data, s.length);
  (*out)[s.length] = 0;
}

static void report(void) {
  ConvLowerConvDesc d = conv2d(1, 8, 8, 8, 8, 3);
  ConvLowerConv conv;
  EXPECT(convlowerConvCreate(&d, &conv, NULL) == ConvLowerStatusOk, "%s",
         convlowerGetLastErrorMessage());
  int64_t xn, wn, yn;
  convlowerConvGetSizes(conv, &xn, &wn, NULL, &yn);
  float *x = calloc((size_t)xn, 4), *w = calloc((size_t)wn, 4),
        *y = calloc((size_t)yn, 4);
  convlowerConvRun(conv, x, w, NULL, y);
  convlowerConvRun(conv, x, w, NULL, y);
  char *json = NULL;
  EXPECT(convlowerConvPrintReport(conv, collect, &json) == ConvLowerStatusOk,
         "report failed");
  EXPECT(json && strstr(json, "\"target\": \"cpu\""), "report target: %s", json);
  EXPECT(json && strstr(json, "\"im2col\": \"panels\""), "report im2col: %s",
         json);
  EXPECT(json && strstr(json, "\"repeat\": 2"), "report runs: %s", json);
  EXPECT(json && strstr(json, "\"pipeline\": \"conv-lower-to-llvm\""),
         "report pipeline: %s", json);
  free(json);
  free(x), free(w), free(y);
  convlowerConvDestroy(conv);
}

/* The packed bytes in a handle's report (-1: null, not packed). */
static long long packedBytes(ConvLowerConv conv) {
  char *json = NULL;
  convlowerConvPrintReport(conv, collect, &json);
  const char *key = "\"packed_bytes\": ";
  const char *at = json ? strstr(json, key) : NULL;
  EXPECT(at, "no packed_bytes in the report: %s", json);
  long long bytes = -2;
  if (at && strncmp(at + strlen(key), "null", 4) == 0)
    bytes = -1;
  else if (at)
    bytes = atoll(at + strlen(key));
  EXPECT((bytes == -1) == (strstr(json, "\"pack_ms\": null") != NULL),
         "packed_bytes and pack_ms disagree: %s", json);
  free(json);
  return bytes;
}

/* Constant weights: two handles of one description share the code, each
 * packs its own filter (one at its first run, one ahead through
 * convlowerConvPackWeights) and matches the reference of that filter; a
 * later run given another filter still reads the packed one where
 * something was packed; packing again takes the new filter. */
static void constantWeightsCase(const char *name, ConvLowerConvDesc d,
                                uint64_t seed, int expectPacked) {
  d.constantWeights = true;
  ConvLowerConv a, b;
  bool hitA = true, hitB = false;
  EXPECT(convlowerConvCreate(&d, &a, &hitA) == ConvLowerStatusOk &&
             convlowerConvCreate(&d, &b, &hitB) == ConvLowerStatusOk,
         "%s: create failed: %s", name, convlowerGetLastErrorMessage());
  EXPECT(hitB, "%s: the second handle compiled again", name);
  int64_t xn, wn, bn, yn;
  convlowerConvGetSizes(a, &xn, &wn, &bn, &yn);
  Tensor x = makeTensor(xn, d.dtype, seed * 5 + 1);
  Tensor w1 = makeTensor(wn, d.dtype, seed * 5 + 2);
  Tensor w2 = makeTensor(wn, d.dtype, seed * 5 + 3);
  Tensor bias = makeTensor(bn ? bn : 1, d.dtype, seed * 5 + 4);
  const void *bp = bn ? bias.bytes : NULL;
  const Tensor *bt = bn ? &bias : NULL;
  char line[96];

  EXPECT(packedBytes(a) == -1, "%s: packed before any run", name);
  void *y = nanOutput(yn);
  EXPECT(convlowerConvRun(a, x.bytes, w1.bytes, bp, y) == ConvLowerStatusOk,
         "%s: %s", name, convlowerGetLastErrorMessage());
  snprintf(line, sizeof line, "%s: packed at run", name);
  matches(line, a, &d, &x, &w1, bt, NULL, y, yn);
  long long bytes = packedBytes(a);
  EXPECT(expectPacked ? bytes > 0 : bytes >= 0, "%s: packed_bytes %lld", name,
         bytes);

  EXPECT(convlowerConvPackWeights(b, w2.bytes) == ConvLowerStatusOk, "%s: %s",
         name, convlowerGetLastErrorMessage());
  free(y), y = nanOutput(yn);
  EXPECT(convlowerConvRun(b, x.bytes, w2.bytes, bp, y) == ConvLowerStatusOk,
         "%s: %s", name, convlowerGetLastErrorMessage());
  snprintf(line, sizeof line, "%s: packed ahead", name);
  matches(line, b, &d, &x, &w2, bt, NULL, y, yn);

  if (bytes > 0) {
    /* a reads its packed w1, not the w2 it is given. */
    free(y), y = nanOutput(yn);
    convlowerConvRun(a, x.bytes, w2.bytes, bp, y);
    snprintf(line, sizeof line, "%s: packed reused", name);
    matches(line, a, &d, &x, &w1, bt, NULL, y, yn);
  }
  EXPECT(convlowerConvPackWeights(a, w2.bytes) == ConvLowerStatusOk, "%s: %s",
         name, convlowerGetLastErrorMessage());
  free(y), y = nanOutput(yn);
  convlowerConvRun(a, x.bytes, w2.bytes, bp, y);
  snprintf(line, sizeof line, "%s: packed again", name);
  matches(line, a, &d, &x, &w2, bt, NULL, y, yn);
  printf("%-28s packed %lld bytes\n", name, bytes);
  free(y);
  freeTensor(&x), freeTensor(&w1), freeTensor(&w2), freeTensor(&bias);
  convlowerConvDestroy(a);
  convlowerConvDestroy(b);
}

static void constantWeights(void) {
  /* NCHW, 14x14 output pixels (no whole 16-lane vectors): the rows-first
   * GEMM on W^T packed once. */
  ConvLowerConvDesc d = conv2d(1, 32, 14, 14, 48, 3);
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.bias = true;
  constantWeightsCase("constant nchw 14x14 bias", d, 21, 1);
  /* NHWC: the GEMM's W^T. */
  d = conv2d(2, 24, 9, 11, 40, 3);
  d.layout = ConvLowerLayoutNHWC, d.stride[0] = 2;
  constantWeightsCase("constant nhwc strided", d, 22, 1);
  /* Winograd's U (64 4x4 tiles of 3x3, stride 1). */
  d = conv2d(1, 16, 32, 32, 16, 3);
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  constantWeightsCase("constant winograd", d, 23, 1);
  /* NCHW with whole vectors (8x8 = 64 pixels): W read in place, nothing
   * packed, still right. */
  d = conv2d(2, 8, 8, 8, 16, 1);
  constantWeightsCase("constant nchw in place", d, 24, 0);
  /* Grouped (few filters a group), f16; i8 with zero points. */
  d = conv2d(1, 32, 10, 10, 32, 3);
  d.groups = 8, d.dtype = ConvLowerDTypeF16;
  constantWeightsCase("constant f16 grouped", d, 25, 0);
  d = conv2d(1, 16, 6, 6, 32, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeI8;
  d.inputZeroPoint = 5, d.filterZeroPoint = -3;
  constantWeightsCase("constant i8 nhwc", d, 26, 0);

  /* Packing a handle compiled without constant weights is refused. */
  d = conv2d(1, 4, 8, 8, 4, 3);
  ConvLowerConv conv;
  float w[4 * 4 * 9] = {0};
  convlowerConvCreate(&d, &conv, NULL);
  EXPECT(convlowerConvPackWeights(conv, w) == ConvLowerStatusBadInput &&
             strstr(convlowerGetLastErrorMessage(), "constant weights"),
         "pack without constant weights: '%s'",
         convlowerGetLastErrorMessage());
  printf("pack without constant weights -> %s\n",
         convlowerGetLastErrorMessage());
  EXPECT(convlowerConvPackWeights(conv, NULL) == ConvLowerStatusBadInput,
         "a NULL filter packed");
  convlowerConvDestroy(conv);
}

/* The twin's report names the kernel it emulates, of the chip asked for:
 * chip "sm_90a" the TMA + wgmma family, the default (sm_80) mma.sync. */
static void twinReport(const char *chip, const char *family) {
  ConvLowerConvDesc d = conv2d(2, 64, 7, 9, 72, 3);
  d.layout = ConvLowerLayoutNHWC, d.dtype = ConvLowerDTypeBF16;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  d.target = ConvLowerTargetCpuTwin;
  d.chip = chip;
  ConvLowerConv conv;
  EXPECT(convlowerConvCreate(&d, &conv, NULL) == ConvLowerStatusOk, "%s",
         convlowerGetLastErrorMessage());
  char *json = NULL;
  EXPECT(convlowerConvPrintReport(conv, collect, &json) == ConvLowerStatusOk,
         "report failed");
  char want[64];
  snprintf(want, sizeof want, "\"chip\": \"%s\"", chip ? chip : "sm_80");
  EXPECT(json && strstr(json, want), "twin report chip: %s", json);
  snprintf(want, sizeof want, "\"kernel_family\": \"%s\"", family);
  EXPECT(json && strstr(json, want), "twin report family: %s", json);
  EXPECT(json && strstr(json, "\"kernel\": \"#conv_lower.tiles<family = "),
         "twin report tiles: %s", json);
  printf("twin report: chip %s, %s\n", chip ? chip : "default", family);
  free(json);
  convlowerConvDestroy(conv);
}

/* A failing create must give the status, a message with `needle`, and a
 * NULL handle. */
static void expectCreateError(const char *name, ConvLowerConvDesc d,
                              ConvLowerStatus want, const char *needle) {
  ConvLowerConv conv = {(void *)1};
  ConvLowerStatus status = convlowerConvCreate(&d, &conv, NULL);
  const char *message = convlowerGetLastErrorMessage();
  EXPECT(status == want && strstr(message, needle) && convlowerConvIsNull(conv),
         "%s: status %d (want %d), message '%s' (want '%s')", name, status,
         want, message, needle);
  printf("%-28s -> %s\n", name, message);
}

static void badInput(void) {
  ConvLowerConvDesc d = conv2d(1, 6, 8, 8, 8, 3);
  d.groups = 4;
  expectCreateError("groups", d, ConvLowerStatusBadInput, "divisible");
  d = conv2d(1, 4, 2, 2, 4, 5);
  expectCreateError("kernel larger than image", d, ConvLowerStatusBadInput,
                    "does not fit");
  d = conv2d(0, 4, 8, 8, 4, 3);
  expectCreateError("zero batch", d, ConvLowerStatusBadInput, "positive");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.spatialRank = 4;
  expectCreateError("rank 4", d, ConvLowerStatusBadInput, "spatialRank");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.dtype = (ConvLowerDType)42;
  expectCreateError("dtype 42", d, ConvLowerStatusBadInput, "ConvLowerDType");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.inputZeroPoint = 3;
  expectCreateError("zero point on f32", d, ConvLowerStatusBadInput, "i8");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.target = ConvLowerTargetCuda, d.chip = "sm_70";
  expectCreateError("unknown chip", d, ConvLowerStatusBadInput, "sm_80");
  d.chip = NULL;
  /* CONVRT_LIBCUDA points nowhere (the lit test sets it): no device. */
  expectCreateError("cuda without a device", d, ConvLowerStatusBadInput,
                    "no usable CUDA device");
  ConvLowerConv conv;
  EXPECT(convlowerConvCreate(NULL, &conv, NULL) == ConvLowerStatusBadInput,
         "NULL description accepted");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.dtype = ConvLowerDTypeI8, d.clamp = true, d.clampMax = 6;
  expectCreateError("clamp on i8", d, ConvLowerStatusBadInput, "float outputs");
  d.dtype = ConvLowerDTypeF32, d.clampMin = 1, d.clampMax = 0;
  expectCreateError("clamp 1, 0", d, ConvLowerStatusBadInput, "min <= max");
  d.clampMin = NAN;
  expectCreateError("clamp NaN", d, ConvLowerStatusBadInput, "NaN");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.dtype = ConvLowerDTypeI8, d.bf16Output = true;
  expectCreateError("bf16 output on i8", d, ConvLowerStatusBadInput, "int32");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.bf16Residual = true;
  expectCreateError("bf16 residual, no residual", d, ConvLowerStatusBadInput,
                    "needs a residual");
  d.residual = true, d.target = ConvLowerTargetCpuTwin;
  expectCreateError("bf16 residual on the twin", d, ConvLowerStatusBadInput,
                    "not the twin");
  d = conv2d(1, 4, 8, 8, 4, 3);
  d.residual = true;
  EXPECT(convlowerConvCreate(&d, &conv, NULL) == ConvLowerStatusOk, "%s",
         convlowerGetLastErrorMessage());
  {
    float buffer[1024] = {0};
    EXPECT(convlowerConvRun(conv, buffer, buffer, NULL, buffer) ==
                   ConvLowerStatusBadInput &&
               strstr(convlowerGetLastErrorMessage(), "convlowerConvRunResidual"),
           "a residual description run without one: '%s'",
           convlowerGetLastErrorMessage());
    EXPECT(convlowerConvRunResidual(conv, buffer, buffer, NULL, NULL,
                                    buffer) == ConvLowerStatusBadInput &&
               strstr(convlowerGetLastErrorMessage(), "residual"),
           "a NULL residual: '%s'", convlowerGetLastErrorMessage());
    printf("%-28s -> %s\n", "NULL residual", convlowerGetLastErrorMessage());
    convlowerConvDestroy(conv);
    d.residual = false;
    EXPECT(convlowerConvCreate(&d, &conv, NULL) == ConvLowerStatusOk, "%s",
           convlowerGetLastErrorMessage());
    EXPECT(convlowerConvRunResidual(conv, buffer, buffer, NULL, buffer,
                                    buffer + 512) == ConvLowerStatusBadInput &&
               strstr(convlowerGetLastErrorMessage(), "no residual"),
           "a residual passed to a description without one: '%s'",
           convlowerGetLastErrorMessage());
    convlowerConvDestroy(conv);
  }

  d = conv2d(1, 4, 8, 8, 4, 3);
  d.bias = true;
  EXPECT(convlowerConvCreate(&d, &conv, NULL) == ConvLowerStatusOk, "%s",
         convlowerGetLastErrorMessage());
  float buffer[1024] = {0};
  EXPECT(convlowerConvRun(conv, buffer, buffer, NULL, buffer) ==
                 ConvLowerStatusBadInput &&
             strstr(convlowerGetLastErrorMessage(), "bias"),
         "a missing bias: '%s'", convlowerGetLastErrorMessage());
  EXPECT(convlowerConvRun((ConvLowerConv){NULL}, buffer, buffer, NULL,
                          buffer) == ConvLowerStatusBadInput,
         "a NULL handle ran");
  convlowerConvDestroy(conv);
  convlowerConvDestroy((ConvLowerConv){NULL});

  int64_t sizes[3];
  d = conv2d(1, 4, 9, 9, 4, 3);
  d.stride[0] = 2;
  EXPECT(convlowerConvDescOutputSize(&d, sizes) == ConvLowerStatusOk &&
             sizes[0] == 4 && sizes[1] == 7,
         "output size %lld x %lld, want 4 x 7", (long long)sizes[0],
         (long long)sizes[1]);
}

/* Frees a steps test's `count` layers (handles, filters, biases), its two
 * buffers after the input (buffers[1], buffers[2]) and its input `x`. */
static void freeSequence(ConvLowerConv *convs, Tensor *w, Tensor *b, int count,
                         void **buffers, Tensor *x) {
  for (int i = 0; i < count; ++i) {
    freeTensor(&w[i]);
    freeTensor(&b[i]);
    convlowerConvDestroy(convs[i]);
  }
  free(buffers[1]);
  free(buffers[2]);
  freeTensor(x);
}

/* convlowerRunSteps: a MobileNetV2-like block (1x1 expansion + ReLU6,
 * depthwise 3x3 + ReLU6, 1x1 projection + the block's input) in one call
 * over three buffers, the projection's output reusing the expansion's
 * buffer: bit for bit what the three handles compute one call at a time
 * into buffers of their own, and the last layer within f32's tolerance of
 * the float64 reference on the input it read; each step timed. Then the
 * table's bad input: nothing runs. */
static void steps(void) {
  ConvLowerConvDesc descs[3];
  descs[0] = conv2d(2, 8, 10, 10, 24, 1);
  descs[0].bias = true, descs[0].clamp = true;
  descs[0].clampMin = 0, descs[0].clampMax = 6;
  descs[1] = conv2d(2, 24, 10, 10, 24, 3);
  descs[1].groups = 24, descs[1].bias = true, descs[1].clamp = true;
  descs[1].clampMin = 0, descs[1].clampMax = 6;
  descs[1].padBefore[0] = descs[1].padBefore[1] = 1;
  descs[1].padAfter[0] = descs[1].padAfter[1] = 1;
  descs[2] = conv2d(2, 24, 10, 10, 8, 1);
  descs[2].bias = true, descs[2].residual = true;
  ConvLowerConv convs[3];
  Tensor w[3], b[3];
  int64_t elements[3];
  for (int i = 0; i < 3; ++i) {
    descs[i].layout = ConvLowerLayoutNHWC;
    if (convlowerConvCreate(&descs[i], &convs[i], NULL) != ConvLowerStatusOk) {
      EXPECT(0, "steps: create %d: %s", i, convlowerGetLastErrorMessage());
      return;
    }
    int64_t xn, wn, bn;
    convlowerConvGetSizes(convs[i], &xn, &wn, &bn, &elements[i]);
    w[i] = makeTensor(wn, ConvLowerDTypeF32, 40 + i);
    b[i] = makeTensor(bn, ConvLowerDTypeF32, 50 + i);
  }
  Tensor x = makeTensor(elements[2], ConvLowerDTypeF32, 60);
  /* One call at a time, each into its own buffer. */
  void *alone[3] = {nanOutput(elements[0]), nanOutput(elements[1]),
                    nanOutput(elements[2])};
  ConvLowerStatus status =
      convlowerConvRun(convs[0], x.bytes, w[0].bytes, b[0].bytes, alone[0]);
  if (status == ConvLowerStatusOk)
    status = convlowerConvRun(convs[1], alone[0], w[1].bytes, b[1].bytes,
                              alone[1]);
  if (status == ConvLowerStatusOk)
    status = convlowerConvRunResidual(convs[2], alone[1], w[2].bytes,
                                      b[2].bytes, x.bytes, alone[2]);
  EXPECT(status == ConvLowerStatusOk, "steps: one at a time: %s",
         convlowerGetLastErrorMessage());
  /* The sequence: buffer 0 the input, 1 the expansion and then the
   * projection, 2 the depthwise output. */
  void *buffers[3] = {x.bytes, nanOutput(elements[0]), nanOutput(elements[1])};
  ConvLowerStep table[3] = {
      {convs[0], w[0].bytes, b[0].bytes, 0, -1, 1},
      {convs[1], w[1].bytes, b[1].bytes, 1, -1, 2},
      {convs[2], w[2].bytes, b[2].bytes, 2, 0, 1},
  };
  double stepMs[3] = {-1, -1, -1};
  status = convlowerRunSteps(table, 3, buffers, 3, stepMs);
  EXPECT(status == ConvLowerStatusOk, "steps: %s",
         convlowerGetLastErrorMessage());
  EXPECT(stepMs[0] > 0 && stepMs[1] > 0 && stepMs[2] > 0,
         "steps: times %g %g %g ms", stepMs[0], stepMs[1], stepMs[2]);
  int same = status == ConvLowerStatusOk &&
             memcmp(buffers[1], alone[2], 4 * (size_t)elements[2]) == 0 &&
             memcmp(buffers[2], alone[1], 4 * (size_t)elements[1]) == 0;
  EXPECT(same, "steps: the sequence differs from the calls one at a time");
  Tensor depthwise = {elements[1], malloc(sizeof(double) * elements[1]),
                      buffers[2]};
  for (int64_t i = 0; i < elements[1]; ++i)
    depthwise.values[i] = ((float *)buffers[2])[i];
  if (same)
    matches("steps: projection + input", convs[2], &descs[2], &depthwise,
            &w[2], &b[2], &x, buffers[1], elements[2]);
  printf("steps: 3 layers, 3 buffers, same as one at a time: %s\n",
         same ? "yes" : "no");
  free(depthwise.values);

  /* Bad tables run nothing: the output buffer keeps its NaNs. */
  memset(buffers[1], 0xff, 4 * (size_t)elements[0]);
  struct {
    const char *name;
    ConvLowerStep step;
  } bad[] = {
      {"index outside", {convs[0], w[0].bytes, b[0].bytes, 0, -1, 3}},
      {"output is input", {convs[1], w[1].bytes, b[1].bytes, 2, -1, 2}},
      {"residual not described", {convs[0], w[0].bytes, b[0].bytes, 0, 2, 1}},
      {"residual missing", {convs[2], w[2].bytes, b[2].bytes, 2, -1, 1}},
      {"NULL handle", {{NULL}, w[0].bytes, b[0].bytes, 0, -1, 1}},
      {"slice outside", {convs[0], w[0].bytes, b[0].bytes, 0, -1, 1, 30, 10}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    ConvLowerStep two[2] = {table[0], bad[i].step};
    status = convlowerRunSteps(two, 2, buffers, 3, NULL);
    EXPECT(status == ConvLowerStatusBadInput, "steps: %s ran", bad[i].name);
    printf("steps %s -> %s\n", bad[i].name, convlowerGetLastErrorMessage());
  }
  void *nullBuffer[3] = {x.bytes, NULL, buffers[2]};
  status = convlowerRunSteps(table, 1, nullBuffer, 3, NULL);
  printf("steps NULL buffer -> %s\n", convlowerGetLastErrorMessage());
  EXPECT(status == ConvLowerStatusBadInput, "steps: a NULL buffer ran");
  uint32_t word;
  memcpy(&word, buffers[1], 4);
  EXPECT(word == 0xffffffffu, "steps: a bad table ran its first step");
  EXPECT(convlowerRunSteps(NULL, 0, NULL, 0, NULL) == ConvLowerStatusOk,
         "steps: an empty sequence");

  for (int i = 0; i < 3; ++i)
    free(alone[i]);
  freeSequence(convs, w, b, 3, buffers, &x);
}

/* Whether channels [offset, offset + f) of `whole` (`channels` channels)
 * are `alone` (f channels) bit for bit: `images` images of `pixels` pixels,
 * channels last or first. */
static int sliceIs(int nhwc, int64_t images, int64_t pixels, int64_t channels,
                   int64_t offset, int64_t f, const float *whole,
                   const float *alone) {
  int64_t runs = nhwc ? images * pixels : images, run = nhwc ? f : f * pixels;
  int64_t stride = nhwc ? channels : channels * pixels;
  int64_t start = nhwc ? offset : offset * pixels;
  for (int64_t r = 0; r < runs; ++r)
    if (memcmp(whole + r * stride + start, alone + r * run, 4 * (size_t)run))
      return 0;
  return 1;
}

/* convlowerRunSteps writing channel slices: an Inception-like block (a 1x1
 * convolution + ReLU, a 3x3 one, a 3x3 max pooling of the block's input)
 * writing channels 0-4, 5-10 and 11-18 of one buffer, then a 1x1
 * convolution reading the 19 channels: each slice bit for bit what its
 * handle writes alone, the last layer within f32's tolerance of the float64
 * reference on the concatenation. Channels last, and channels first with
 * one image (the slice written in place) and two (through the scratch).
 * A step writing one slice leaves the other channels as they were. */
static void concatSteps(int nhwc, int64_t images) {
  const int64_t c = 8, hw = 7, pixels = 49, total = 19;
  ConvLowerConvDesc descs[4];
  descs[0] = conv2d(images, c, hw, hw, 5, 1);
  descs[0].bias = true, descs[0].relu = true;
  descs[1] = conv2d(images, c, hw, hw, 6, 3);
  descs[1].padBefore[0] = descs[1].padBefore[1] = 1;
  descs[1].padAfter[0] = descs[1].padAfter[1] = 1;
  descs[2] = conv2d(images, c, hw, hw, c, 3);
  descs[2].pooling = ConvLowerPoolingMax, descs[2].groups = c;
  descs[2].padBefore[0] = descs[2].padBefore[1] = 1;
  descs[2].padAfter[0] = descs[2].padAfter[1] = 1;
  descs[3] = conv2d(images, total, hw, hw, 4, 1);
  descs[3].bias = true;
  const int64_t offsets[3] = {0, 5, 11};
  ConvLowerConv convs[4];
  Tensor w[4], b[4];
  int64_t elements[4];
  for (int i = 0; i < 4; ++i) {
    descs[i].layout = nhwc ? ConvLowerLayoutNHWC : ConvLowerLayoutNCHW;
    if (convlowerConvCreate(&descs[i], &convs[i], NULL) != ConvLowerStatusOk) {
      EXPECT(0, "concat: create %d: %s", i, convlowerGetLastErrorMessage());
      for (int j = 0; j < i; ++j)
        convlowerConvDestroy(convs[j]);
      return;
    }
    int64_t xn, wn, bn;
    convlowerConvGetSizes(convs[i], &xn, &wn, &bn, &elements[i]);
    w[i] = makeTensor(wn ? wn : 1, ConvLowerDTypeF32, 70 + i);
    b[i] = makeTensor(bn ? bn : 1, ConvLowerDTypeF32, 80 + i);
  }
  Tensor x = makeTensor(images * c * pixels, ConvLowerDTypeF32, 90);
  void *buffers[3] = {x.bytes, nanOutput(images * total * pixels),
                      nanOutput(elements[3])};
  ConvLowerStep table[4];
  for (int i = 0; i < 3; ++i) {
    ConvLowerStep step = {convs[i],
                          descs[i].pooling ? NULL : w[i].bytes,
                          descs[i].bias ? b[i].bytes : NULL,
                          0,
                          -1,
                          1,
                          (int32_t)total,
                          (int32_t)offsets[i]};
    table[i] = step;
  }
  ConvLowerStep last = {convs[3], w[3].bytes, b[3].bytes, 1, -1, 2, 0, 0};
  table[3] = last;
  ConvLowerStatus status = convlowerRunSteps(table, 4, buffers, 3, NULL);
  EXPECT(status == ConvLowerStatusOk, "concat: %s",
         convlowerGetLastErrorMessage());
  int same = status == ConvLowerStatusOk;
  for (int i = 0; i < 3 && same; ++i) {
    void *alone = nanOutput(elements[i]);
    same = convlowerConvRun(convs[i], x.bytes, table[i].filter, table[i].bias,
                            alone) == ConvLowerStatusOk &&
           sliceIs(nhwc, images, pixels, total, offsets[i],
                   descs[i].outChannels, buffers[1], alone);
    free(alone);
  }
  char name[64];
  snprintf(name, sizeof name, "concat %s N%lld", nhwc ? "nhwc" : "nchw",
           (long long)images);
  EXPECT(same, "%s: a slice differs from its handle's output", name);
  if (same) {
    Tensor cat = {images * total * pixels,
                  malloc(sizeof(double) * images * total * pixels), buffers[1]};
    for (int64_t i = 0; i < cat.count; ++i)
      cat.values[i] = ((float *)buffers[1])[i];
    matches(name, convs[3], &descs[3], &cat, &w[3], &b[3], NULL, buffers[2],
            elements[3]);
    free(cat.values);
  }
  /* One slice written: the rest keeps its NaNs. */
  memset(buffers[1], 0xff, 4 * (size_t)(images * total * pixels));
  status = convlowerRunSteps(&table[1], 1, buffers, 3, NULL);
  int64_t written = 0, left = 0;
  for (int64_t i = 0; i < images * total * pixels; ++i)
    isnan(((float *)buffers[1])[i]) ? ++left : ++written;
  EXPECT(status == ConvLowerStatusOk && written == images * 6 * pixels &&
             left == images * (total - 6) * pixels,
         "%s: one slice wrote %lld values, left %lld", name, (long long)written,
         (long long)left);
  printf("%s: 3 slices + a reader, same as alone: %s; one slice wrote %lld "
         "of %lld\n",
         name, same ? "yes" : "no", (long long)written,
         (long long)(images * total * pixels));
  freeSequence(convs, w, b, 4, buffers, &x);
}

/* desc.pooling: torch's max_pool2d on the CPU, checked against the float64
 * maximum (a NULL filter; the sizes report none); the epilogue after it;
 * what it refuses. */
static void maxPooling(void) {
  ConvLowerConvDesc d = conv2d(2, 32, 12, 14, 32, 3);
  d.pooling = ConvLowerPoolingMax, d.groups = 32,
  d.layout = ConvLowerLayoutNHWC;
  d.stride[0] = d.stride[1] = 2;
  d.padBefore[0] = d.padBefore[1] = d.padAfter[0] = d.padAfter[1] = 1;
  checkCase("max pool nhwc 3x3/2", d, 31);
  ConvLowerConv conv;
  if (convlowerConvCreate(&d, &conv, NULL) == ConvLowerStatusOk) {
    int64_t xn, wn, bn, yn;
    convlowerConvGetSizes(conv, &xn, &wn, &bn, &yn);
    EXPECT(wn == 0 && bn == 0 && xn == 2 * 32 * 12 * 14 && yn == 2 * 32 * 6 * 7,
           "max pool sizes %lld %lld %lld %lld", (long long)xn, (long long)wn,
           (long long)bn, (long long)yn);
    convlowerConvDestroy(conv);
  }
  d.residual = true, d.relu = true, d.constantWeights = true;
  checkCase("max pool + residual relu", d, 32);
  d = conv2d(1, 8, 9, 9, 8, 2);
  d.pooling = ConvLowerPoolingMax, d.groups = 8, d.dilation[1] = 2;
  d.stride[0] = d.stride[1] = 2;
  checkCase("max pool nchw dilated", d, 33);

  d = conv2d(1, 8, 9, 9, 8, 3);
  d.pooling = ConvLowerPoolingMax, d.groups = 8, d.bias = true;
  expectCreateError("max pool with a bias", d, ConvLowerStatusBadInput,
                    "max pooling has no bias");
  d.bias = false, d.outChannels = 16;
  expectCreateError("max pool c != f", d, ConvLowerStatusBadInput,
                    "must be equal");
  d.outChannels = 8, d.padBefore[0] = 2;
  expectCreateError("max pool padding", d, ConvLowerStatusBadInput,
                    "at most half the window");
  d.padBefore[0] = 0, d.target = ConvLowerTargetCuda;
  expectCreateError("max pool on cuda", d, ConvLowerStatusBadInput,
                    "max pooling runs on the CPU route");
  d.target = ConvLowerTargetCpu, d.pooling = (ConvLowerPooling)7;
  expectCreateError("pooling 7", d, ConvLowerStatusBadInput,
                    "not a ConvLowerPooling");
}

int main(void) {
  EXPECT(convlowerGetApiVersion() == CONVLOWER_API_VERSION, "API version");
  numerics();
  maxPooling();
  cache();
  cacheCapacity();
  threads();
  report();
  constantWeights();
  twinReport("sm_90a", "sm90a_tma_wgmma");
  twinReport(NULL, "mma_sync");
  badInput();
  steps();
  concatSteps(1, 2);
  concatSteps(0, 1);
  concatSteps(0, 2);
  uint32_t units = convlowerGetCpuUnits();
  EXPECT((units &
          ~(uint32_t)(ConvLowerCpuUnitAVX512BF16 | ConvLowerCpuUnitAVX512VNNI |
                      ConvLowerCpuUnitAMX)) == 0 &&
             units == convlowerGetCpuUnits(),
         "CPU units %u", units);
  const char *omp = convlowerGetOpenMPRuntimePath();
  EXPECT(omp && (!*omp || strstr(omp, "libomp")), "OpenMP runtime path '%s'",
         omp ? omp : "(null)");
  printf("OpenMP runtime: %s\n", omp && *omp ? omp : "(none in this build)");
  char *devices = NULL;
  convlowerPrintDevices(collect, &devices);
  EXPECT(devices && strstr(devices, "\"devices\""), "devices: %s", devices);
  free(devices);
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  printf("all C API checks passed\n");
  return 0;
}
