// A naive direct convolution, one thread per output element: the simplest
// kernel that follows the bundle ABI (plain device pointers in the manifest's
// order: input, filter, bias, output; NCHW f32 input and output, FCHW
// filter). The real-device test compiles it for NaiveConvProblem.h's problem;
// bench/gpu compiles it with -DN_=... for its problems, as a floor and a
// known-good kernel. NOT ConvLower output.

#ifndef N_
#include "NaiveConvProblem.h"
#define N_ NAIVE_N
#define C_ NAIVE_C
#define H_ NAIVE_H
#define W_ NAIVE_W
#define F_ NAIVE_F
#define KH_ NAIVE_KH
#define KW_ NAIVE_KW
#define SH_ NAIVE_SH
#define SW_ NAIVE_SW
#define DH_ NAIVE_DH
#define DW_ NAIVE_DW
#define PT_ NAIVE_PAD
#define PL_ NAIVE_PAD
#define PB_ NAIVE_PAD
#define PR_ NAIVE_PAD
#define G_ NAIVE_G
#endif

#define HO_ ((H_ + PT_ + PB_ - DH_ * (KH_ - 1) - 1) / SH_ + 1)
#define WO_ ((W_ + PL_ + PR_ - DW_ * (KW_ - 1) - 1) / SW_ + 1)

extern "C" __global__ void naive_conv(const float *x, const float *w,
                                      const float *b, float *y) {
  const int cg = C_ / G_, fg = F_ / G_;
  long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (idx >= (long)N_ * F_ * HO_ * WO_)
    return;
  int ow = idx % WO_;
  int oh = (idx / WO_) % HO_;
  int f = (idx / ((long)WO_ * HO_)) % F_;
  long n = idx / ((long)WO_ * HO_ * F_);
  int g = f / fg;
  float acc = b[f];
  for (int c = 0; c < cg; ++c)
    for (int r = 0; r < KH_; ++r) {
      int ih = oh * SH_ - PT_ + r * DH_;
      if (ih < 0 || ih >= H_)
        continue;
      for (int s = 0; s < KW_; ++s) {
        int iw = ow * SW_ - PL_ + s * DW_;
        if (iw < 0 || iw >= W_)
          continue;
        acc += w[((f * cg + c) * KH_ + r) * KW_ + s] *
               x[((n * C_ + g * cg + c) * H_ + ih) * W_ + iw];
      }
    }
  y[idx] = acc;
}
