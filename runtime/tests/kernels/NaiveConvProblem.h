//===- NaiveConvProblem.h - The problem of the real-device test kernel ----===//
//
// Shared by kernels/naive_conv.cu (compiled by nvcc) and DeviceTest.cpp, so
// the bundle's manifest and the kernel agree: NCHW f32 input, FCHW filter,
// bias, 2 groups, padding 1, stride 1, dilation 2.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_TESTS_NAIVECONVPROBLEM_H
#define CONVRT_TESTS_NAIVECONVPROBLEM_H

#define NAIVE_N 2
#define NAIVE_C 8
#define NAIVE_H 12
#define NAIVE_W 10
#define NAIVE_F 6
#define NAIVE_KH 3
#define NAIVE_KW 3
#define NAIVE_SH 1
#define NAIVE_SW 1
#define NAIVE_DH 2
#define NAIVE_DW 2
#define NAIVE_PAD 1
#define NAIVE_G 2
#define NAIVE_HO                                                               \
  ((NAIVE_H + 2 * NAIVE_PAD - NAIVE_DH * (NAIVE_KH - 1) - 1) / NAIVE_SH + 1)
#define NAIVE_WO                                                               \
  ((NAIVE_W + 2 * NAIVE_PAD - NAIVE_DW * (NAIVE_KW - 1) - 1) / NAIVE_SW + 1)
#define NAIVE_BLOCK 128

#endif // CONVRT_TESTS_NAIVECONVPROBLEM_H
