// RUN: conv-opt %s --conv-lower-im2col | FileCheck %s
// RUN: conv-opt %s --conv-lower-implicit-gemm=emit-remarks -verify-diagnostics -o /dev/null
//
// Quantized convolutions (linalg's _q ops) keep one plain integer GEMM on the
// im2col rows and correct it by the zero-point expansion
//   sum (x - zx)(w - zw) = sum x w - zw * sum x - zx * sum w + K * zx * zw
// with the window sums reduced from A and the filter sums from B. The
// numerics are in test/Integration/CPU/conv-quantized.test.

// CHECK-LABEL: func.func @nchw
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xi8>, %[[W:.*]]: tensor<4x3x3x3xi8>, %[[ZX:.*]]: i32, %[[ZW:.*]]: i32)
// CHECK: %[[B:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0], [1, 2, 3]] : tensor<4x3x3x3xi8> into tensor<4x27xi8>
// CHECK: %[[A:.*]] = conv_lower.im2col %[[X]] layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = chw : tensor<1x3x8x8xi8> -> tensor<64x27xi8>
// CHECK: %[[C:.*]] = linalg.matmul {{.*}} ins(%[[A]], %[[B]] : tensor<64x27xi8>, tensor<4x27xi8>)
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[A]] : tensor<64x27xi8>) outs({{.*}} : tensor<64xi32>)
// CHECK: arith.extsi
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[B]] : tensor<4x27xi8>) outs({{.*}} : tensor<4xi32>)
// CHECK: %[[K:.*]] = arith.constant 27 : i32
// CHECK: %[[KZX:.*]] = arith.muli %[[K]], %[[ZX]]
// CHECK: %[[KZZ:.*]] = arith.muli %[[KZX]], %[[ZW]]
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%[[C]], %[[ROWS]], %[[COLS]] : tensor<64x4xi32>, tensor<64xi32>, tensor<4xi32>)
// CHECK: ^bb0(%[[CV:.*]]: i32, %[[RV:.*]]: i32, %[[SV:.*]]: i32, %{{.*}}: i32):
// CHECK:   %[[T0:.*]] = arith.muli %[[ZW]], %[[RV]]
// CHECK:   %[[T1:.*]] = arith.subi %[[CV]], %[[T0]]
// CHECK:   %[[T2:.*]] = arith.muli %[[ZX]], %[[SV]]
// CHECK:   %[[T3:.*]] = arith.subi %[[T1]], %[[T2]]
// CHECK:   %[[T4:.*]] = arith.addi %[[T3]], %[[KZZ]]
// CHECK:   linalg.yield %[[T4]]
// CHECK: conv_lower.fold %[[Q]] layout = nchw output_size = [8, 8]
// CHECK-NOT: linalg.conv
func.func @nchw(%x: tensor<1x3x8x8xi8>, %w: tensor<4x3x3x3xi8>, %zx: i32, %zw: i32) -> tensor<1x4x8x8xi32> {
  %c0 = arith.constant 0 : i32
  %z = arith.constant 0 : i8
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z : i8
  } : tensor<1x3x8x8xi8> to tensor<1x3x10x10xi8>
  %e = tensor.empty() : tensor<1x4x8x8xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the zero points are not constants (the kernel folds them into its epilogue; --conv-lower-im2col takes any)}}
  %y = linalg.conv_2d_nchw_fchw_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%p, %w, %zx, %zw : tensor<1x3x10x10xi8>, tensor<4x3x3x3xi8>, i32, i32) outs(%i : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  return %y : tensor<1x4x8x8xi32>
}

// Depthwise: per-channel sums, [G, M] of the rows and [G, 1] of the filter.
// CHECK-LABEL: func.func @depthwise
// CHECK: %[[A:.*]] = conv_lower.im2col {{.*}} groups = 4 k_order = hwc : tensor<2x6x6x4xi8> -> tensor<4x32x9xi8>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[A]], %{{.*}} : tensor<4x32x9xi8>, tensor<9x4xi8>)
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<4x32x9xi8>) outs({{.*}} : tensor<4x32xi32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<9x4xi8>) outs({{.*}} : tensor<4x1xi32>)
// CHECK: arith.constant 9 : i32
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<4x32x1xi32>, tensor<4x32xi32>, tensor<4x1xi32>)
// CHECK: conv_lower.fold {{.*}} layout = nhwc output_size = [4, 4] : tensor<4x32x1xi32> -> tensor<2x4x4x4xi32>
// CHECK-NOT: linalg.depthwise
func.func @depthwise(%x: tensor<2x6x6x4xi8>, %w: tensor<3x3x4xi8>, %zx: i32, %zw: i32) -> tensor<2x4x4x4xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x4x4x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x4x4x4xi32>) -> tensor<2x4x4x4xi32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the zero points are not constants}}
  %y = linalg.depthwise_conv_2d_nhwc_hwc_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w, %zx, %zw : tensor<2x6x6x4xi8>, tensor<3x3x4xi8>, i32, i32) outs(%i : tensor<2x4x4x4xi32>) -> tensor<2x4x4x4xi32>
  return %y : tensor<2x4x4x4xi32>
}

// Dynamic batch: the window sums are as long as the rows.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: %[[A:.*]] = conv_lower.im2col {{.*}} : tensor<?x6x6x4xi8> -> tensor<?x36xi8>
// CHECK: %[[D:.*]] = tensor.dim %[[A]], %{{.*}} : tensor<?x36xi8>
// CHECK: tensor.empty(%[[D]]) : tensor<?xi32>
// CHECK: arith.constant 36 : i32
func.func @dynamic_batch(%x: tensor<?x6x6x4xi8>, %w: tensor<3x3x4x8xi8>, %zx: i32, %zw: i32, %n: index) -> tensor<?x4x4x8xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty(%n) : tensor<?x4x4x8xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<?x4x4x8xi32>) -> tensor<?x4x4x8xi32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the kernel needs static shapes}}
  %y = linalg.conv_2d_nhwc_hwcf_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w, %zx, %zw : tensor<?x6x6x4xi8>, tensor<3x3x4x8xi8>, i32, i32) outs(%i : tensor<?x4x4x8xi32>) -> tensor<?x4x4x8xi32>
  return %y : tensor<?x4x4x8xi32>
}

// Symmetric weights (zw a constant 0, the usual int8 quantization): no window
// sums over A's rows (a pass over the im2col rows on every call), only
// - zx * colsum(B). Both zero points 0: the GEMM is the result as it is.
// CHECK-LABEL: func.func @symmetric_weights
// CHECK: %[[C:.*]] = linalg.matmul
// CHECK-NOT: ins(%{{.*}} : tensor<64x27xi8>) outs({{.*}} : tensor<64xi32>)
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x27xi8>) outs({{.*}} : tensor<4xi32>)
// CHECK: linalg.generic {{.*}} ins(%[[C]], %[[COLS]] : tensor<64x4xi32>, tensor<4xi32>)
// CHECK: arith.muli
// CHECK: arith.subi
// CHECK-NEXT: linalg.yield
// CHECK-LABEL: func.func @zero_zero_points
// CHECK: %[[C2:.*]] = linalg.matmul
// CHECK-NOT: linalg.generic
// CHECK: conv_lower.fold %[[C2]]
func.func @symmetric_weights(%x: tensor<1x3x10x10xi8>, %w: tensor<4x3x3x3xi8>, %zx: i32) -> tensor<1x4x8x8xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x8x8xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the zero points are not constants (the kernel folds them into its epilogue; --conv-lower-im2col takes any)}}
  %y = linalg.conv_2d_nchw_fchw_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w, %zx, %c0 : tensor<1x3x10x10xi8>, tensor<4x3x3x3xi8>, i32, i32) outs(%i : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  return %y : tensor<1x4x8x8xi32>
}

func.func @zero_zero_points(%x: tensor<1x3x10x10xi8>, %w: tensor<4x3x3x3xi8>) -> tensor<1x4x8x8xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x8x8xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  %y = linalg.conv_2d_nchw_fchw_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w, %c0, %c0 : tensor<1x3x10x10xi8>, tensor<4x3x3x3xi8>, i32, i32) outs(%i : tensor<1x4x8x8xi32>) -> tensor<1x4x8x8xi32>
  return %y : tensor<1x4x8x8xi32>
}
