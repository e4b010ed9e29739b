// A naive direct convolution, one thread per output element: the floor that
// every real kernel must beat, and a known-good kernel with which bench/gpu
// proves the runtime, the bundle format and the cuDNN comparison on a real
// device before ConvLower's own kernels are judged. NOT ConvLower output.
//
// The problem is fixed at compile time (-D...); the bundle ABI passes plain
// device pointers in the manifest's order: input, filter, bias, output.
// NCHW f32 input and output, FCHW filter.

#ifndef N_
#error "compile with -DN_=... -DC_=... (see make_reference_bundles.py)"
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
