// RUN: conv-opt %s --conv-lower-implicit-gemm | FileCheck %s
// RUN: conv-opt %s --conv-lower-implicit-gemm=target=cpu-twin | FileCheck %s --check-prefix=TWIN
//
// 3-D convolutions on the implicit-GEMM kernel: M = N*Od*Ho*Wo rows,
// K = Cg*KD*KH*KW, the depth gathered like the rows and columns (its padding
// a predicate of the A loads). Numerics on the twin:
// test/Integration/CPU/conv-ranks.test; PTX and ptxas:
// test/Pipelines/implicit-gemm-3d.test.

// NDHWC f16, the H and W pad absorbed: M = 2*4*10*10 = 800 rows in 7 blocks
// of 128, channels in 16-byte chunks (cp.async for A).
// CHECK-LABEL: func.func @ndhwc_f16
// CHECK-NOT: tensor.pad
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in
// CHECK-SAME: args(%{{.*}} : memref<19200xf16>, %{{.*}} : memref<13824xf16>, %{{.*}} : memref<25600xf32>)
// CHECK-NOT: linalg.conv
// TWIN-LABEL: func.func @ndhwc_f16
// TWIN-NOT: linalg.conv
// TWIN: scf.for
func.func @ndhwc_f16(%x: tensor<2x6x10x10x16xf16>, %w: tensor<3x3x3x16x32xf16>) -> tensor<2x4x10x10x32xf32> {
  %z = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index, %e: index):
    tensor.yield %zh : f16
  } : tensor<2x6x10x10x16xf16> to tensor<2x6x12x12x16xf16>
  %e = tensor.empty() : tensor<2x4x10x10x32xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<2x4x10x10x32xf32>) -> tensor<2x4x10x10x32xf32>
  %y = linalg.conv_3d_ndhwc_dhwcf {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
     ins(%p, %w : tensor<2x6x12x12x16xf16>, tensor<3x3x3x16x32xf16>) outs(%i : tensor<2x4x10x10x32xf32>) -> tensor<2x4x10x10x32xf32>
  return %y : tensor<2x4x10x10x32xf32>
}

// NCDHW f32 (tf32 math), a depth stride: Od = (6 - 3) / 2 + 1 = 2.
// CHECK-LABEL: func.func @ncdhw_tf32
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_1
// CHECK-SAME: args(%{{.*}} : memref<864xf32>, %{{.*}} : memref<648xf32>, %{{.*}} : memref<192xf32>)
// CHECK-NOT: linalg.conv
func.func @ncdhw_tf32(%x: tensor<1x4x6x6x6xf32>, %w: tensor<6x4x3x3x3xf32>) -> tensor<1x6x2x4x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x2x4x4xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x6x2x4x4xf32>) -> tensor<1x6x2x4x4xf32>
  %y = linalg.conv_3d_ncdhw_fcdhw {strides = dense<[2, 1, 1]> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
     ins(%x, %w : tensor<1x4x6x6x6xf32>, tensor<6x4x3x3x3xf32>) outs(%i : tensor<1x6x2x4x4xf32>) -> tensor<1x6x2x4x4xf32>
  return %y : tensor<1x6x2x4x4xf32>
}

// The kernels, after both functions.
// CHECK: gpu.module @conv_lower_kernels
// CHECK: gpu.func @conv2d_implicit_gemm_0
// CHECK-SAME: conv_lower.grid = array<i64: 7, 1, 1>
// CHECK-SAME: a_vectorized = true
// CHECK: nvgpu.device_async_copy %arg0
// CHECK: nvgpu.ldmatrix
// CHECK: nvvm.mma.sync
// CHECK: gpu.func @conv2d_implicit_gemm_1
