// A TMA kernel's parameter list for the fake libcuda's tests
// (FakeCubinTest): a CUtensorMap by value (const __grid_constant__) between
// a pointer and a scalar. It is never run for its result. With CUDA 13's
// cuda.h (CUtensorMap is alignas(128)) ptxas puts the map at offset 128 and
// the int at 256; the runtime passes the map as a pointer to its 128 bytes
// wherever the kernel's layout puts it.
#include <cuda.h>

extern "C" __global__ void tma_probe(float *out,
                                     const __grid_constant__ CUtensorMap map,
                                     int count) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && count > 0)
    out[0] = reinterpret_cast<const float *>(&map)[0];
}
