// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm=emit-remarks -verify-diagnostics | FileCheck %s
// RUN: not conv-opt %s --split-input-file --conv-lower-implicit-gemm=require-all 2>&1 | FileCheck %s --check-prefix=REQUIRE
//
// What the kernel cannot take stays exactly as it was (a remark says why); with
// require-all it is an error instead.

// CHECK-LABEL: func.func @dynamic_batch
// CHECK: linalg.conv_2d_nhwc_fhwc
// CHECK-NOT: gpu.launch_func
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: the kernel needs static shapes
func.func @dynamic_batch(%x: tensor<?x8x8x16xf16>, %w: tensor<32x3x3x16xf16>, %n: index) -> tensor<?x6x6x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x6x6x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x6x6x32xf32>) -> tensor<?x6x6x32xf32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the kernel needs static shapes (dynamic batch is not supported yet)}}
  %r = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<?x8x8x16xf16>, tensor<32x3x3x16xf16>) outs(%f : tensor<?x6x6x32xf32>) -> tensor<?x6x6x32xf32>
  return %r : tensor<?x6x6x32xf32>
}

// -----

// CHECK-LABEL: func.func @init_not_a_fill
// CHECK: linalg.conv_2d_nchw_fchw
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: the convolution's init must be a constant fill
func.func @init_not_a_fill(%x: tensor<1x4x6x6xf32>, %w: tensor<8x4x3x3xf32>, %init: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the convolution's init must be a constant fill}}
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @int8_to_int16
// CHECK: linalg.conv_2d_nchw_fchw
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: i8 data needs an i32 output
func.func @int8_to_int16(%x: tensor<1x4x6x6xi8>, %w: tensor<8x4x3x3xi8>) -> tensor<1x8x4x4xi16> {
  %z = arith.constant 0 : i16
  %e = tensor.empty() : tensor<1x8x4x4xi16>
  %f = linalg.fill ins(%z : i16) outs(%e : tensor<1x8x4x4xi16>) -> tensor<1x8x4x4xi16>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: i8 data needs an i32 output (the s8 MMA accumulates in s32)}}
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x4x6x6xi8>, tensor<8x4x3x3xi8>) outs(%f : tensor<1x8x4x4xi16>) -> tensor<1x8x4x4xi16>
  return %r : tensor<1x8x4x4xi16>
}

// -----

// The epilogue folds the zero points in as constants.
// CHECK-LABEL: func.func @quantized_runtime_zero_points
// CHECK: linalg.conv_2d_nhwc_hwcf_q
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: the zero points are not constants
func.func @quantized_runtime_zero_points(%x: tensor<1x6x6x16xi8>, %w: tensor<3x3x16x8xi8>, %zx: i32, %zw: i32) -> tensor<1x4x4x8xi32> {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x4x8xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xi32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the zero points are not constants (the kernel folds them into its epilogue; --conv-lower-im2col takes any)}}
  %r = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w, %zx, %zw : tensor<1x6x6x16xi8>, tensor<3x3x16x8xi8>, i32, i32) outs(%f : tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xi32>
  return %r : tensor<1x4x4x8xi32>
}

// -----

// CHECK-LABEL: func.func @f64
// CHECK: linalg.conv_2d_nchw_fchw
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: tensor cores take f16, bf16, f32 (as tf32) or i8 data
func.func @f64(%x: tensor<1x4x6x6xf64>, %w: tensor<8x4x3x3xf64>) -> tensor<1x8x4x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: tensor cores take f16, bf16, f32 (as tf32) or i8 data}}
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x4x6x6xf64>, tensor<8x4x3x3xf64>) outs(%f : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %r : tensor<1x8x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @pooling
// CHECK: linalg.pooling_nhwc_sum
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: pooling has no filter to multiply with
func.func @pooling(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3xf32>, %init: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: pooling has no filter to multiply with}}
  %y = linalg.pooling_nhwc_sum {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @too_many_groups
// CHECK: linalg.depthwise_conv_2d_nchw_chw
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: more than 65535 groups (one grid slice each)
func.func @too_many_groups(%x: tensor<1x70000x4x4xf32>, %w: tensor<70000x3x3xf32>) -> tensor<1x70000x2x2xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x70000x2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x70000x2x2xf32>) -> tensor<1x70000x2x2xf32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: more than 65535 groups (one grid slice each)}}
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x70000x4x4xf32>, tensor<70000x3x3xf32>) outs(%f : tensor<1x70000x2x2xf32>) -> tensor<1x70000x2x2xf32>
  return %r : tensor<1x70000x2x2xf32>
}

// -----

// Found by conv-fuzz (shared analysis): an empty output is not a kernel.
// CHECK-LABEL: func.func @empty_output
// CHECK: linalg.conv_2d_nhwc_fhwc
// REQUIRE: error: conv-lower-implicit-gemm: unsupported convolution: a dimension of size 0 (an empty tensor): nothing to rewrite
func.func @empty_output(%x: tensor<2x8x0x16xf16>, %w: tensor<16x1x1x16xf16>, %init: tensor<2x8x0x16xf32>) -> tensor<2x8x0x16xf32> {
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: a dimension of size 0 (an empty tensor): nothing to rewrite}}
  %y = linalg.conv_2d_nhwc_fhwc ins(%x, %w : tensor<2x8x0x16xf16>, tensor<16x1x1x16xf16>) outs(%init : tensor<2x8x0x16xf32>) -> tensor<2x8x0x16xf32>
  return %y : tensor<2x8x0x16xf32>
}
