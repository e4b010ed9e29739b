// A kernel for the fake libcuda's tests (FakeCubinTest): it is never run
// for its result; what matters is its parameter list as ptxas lays it out
// in the cubin's .nv.info (offsets 0, 8, 16, 20, 40, 48; sizes 8, 8, 4, 16,
// 8, 1: the struct is 4-aligned, the double 8-aligned).
struct Extent {
  int n, c, h, w;
};

extern "C" __global__ void record_probe(float *out, const float *in, int count,
                                        Extent extent, double scale,
                                        char tag) {
  extern __shared__ float staged[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  staged[threadIdx.x] = i < count ? in[i] : 0.0f;
  __syncthreads();
  if (i < count)
    out[i] = staged[threadIdx.x] * float(scale) + extent.w + tag;
}
