// One thread per output element of the NaiveConvProblem.h convolution: the
// simplest kernel that follows the bundle ABI (plain device pointers in the
// manifest's order: input, filter, bias, output).
#include "NaiveConvProblem.h"

extern "C" __global__ void naive_conv(const float *x, const float *w,
                                      const float *b, float *y) {
  const int cg = NAIVE_C / NAIVE_G, fg = NAIVE_F / NAIVE_G;
  long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (idx >= (long)NAIVE_N * NAIVE_F * NAIVE_HO * NAIVE_WO)
    return;
  int ow = idx % NAIVE_WO;
  int oh = (idx / NAIVE_WO) % NAIVE_HO;
  int f = (idx / (NAIVE_WO * NAIVE_HO)) % NAIVE_F;
  int n = idx / ((long)NAIVE_WO * NAIVE_HO * NAIVE_F);
  int g = f / fg;
  float acc = b[f];
  for (int c = 0; c < cg; ++c)
    for (int r = 0; r < NAIVE_KH; ++r)
      for (int s = 0; s < NAIVE_KW; ++s) {
        int ih = oh * NAIVE_SH - NAIVE_PAD + r * NAIVE_DH;
        int iw = ow * NAIVE_SW - NAIVE_PAD + s * NAIVE_DW;
        if (ih < 0 || ih >= NAIVE_H || iw < 0 || iw >= NAIVE_W)
          continue;
        acc += w[((f * cg + c) * NAIVE_KH + r) * NAIVE_KW + s] *
               x[((n * NAIVE_C + g * cg + c) * NAIVE_H + ih) * NAIVE_W + iw];
      }
  y[idx] = acc;
}
