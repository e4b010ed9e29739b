// RUN: conv-opt %s --conv-lower-implicit-gemm=im2col=explicit --canonicalize --cse | FileCheck %s
// RUN: not conv-opt %s --conv-lower-implicit-gemm=im2col=both 2>&1 | FileCheck %s --check-prefix=BAD
//
// Explicit mode: an im2col kernel (one thread per element) stores X_col [M, G, K]
// in device memory; the GEMM kernel's A operand reads it in 16-byte chunks.
// X_col here: M = 2*6*6 = 72 rows, K = 16*3*3 = 144: 10368 elements.

// CHECK-LABEL: func.func @conv
// CHECK: %[[XCOL:.*]] = gpu.alloc () : memref<10368xf16>
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_im2col_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%{{.*}} : memref<2048xf16>, %[[XCOL]] : memref<10368xf16>)
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 {{.*}} args(%[[XCOL]] : memref<10368xf16>, %{{.*}} : memref<4608xf16>, %{{.*}} : memref<2304xf32>)
// CHECK: gpu.dealloc async {{.*}} %[[XCOL]]
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<10368xf16>
// CHECK-SAME: a_vectorized = true
// CHECK: gpu.func @conv2d_im2col_0(%{{.*}}: memref<2048xf16>, %{{.*}}: memref<10368xf16>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: scf.if
// CHECK:   memref.load
// CHECK:   memref.store {{.*}} : memref<10368xf16>
// BAD: for the --im2col option: unknown value 'both' (expected implicit or explicit)
func.func @conv(%x: tensor<2x8x8x16xf16>, %w: tensor<32x3x3x16xf16>) -> tensor<2x6x6x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x6x6x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x6x6x32xf32>) -> tensor<2x6x6x32xf32>
  %r = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x8x8x16xf16>, tensor<32x3x3x16xf16>) outs(%f : tensor<2x6x6x32xf32>) -> tensor<2x6x6x32xf32>
  return %r : tensor<2x6x6x32xf32>
}
