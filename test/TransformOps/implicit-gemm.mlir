// RUN: conv-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s
//
// transform.conv_lower.implicit_gemm: the rewrite of
// --conv-lower-implicit-gemm on the payload ops of a handle, with handles to
// the kernel, its launch and the replacement.

// CHECK-LABEL: func.func @conv
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 {{.*}} {launched}
// CHECK: gpu.module @conv_lower_kernels
// CHECK: gpu.func @conv2d_implicit_gemm_0({{.*}} attributes {{{.*}}conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 32, 32], warps = [1, 2], stages = 2, a_vectorized = true, b_vectorized = true, store_vector = 4>{{.*}}picked
// CHECK-NOT: = linalg.conv
func.func @conv(%x: tensor<1x8x8x16xf16>, %w: tensor<32x3x3x16xf16>) -> tensor<1x6x6x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x32xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w : tensor<1x8x8x16xf16>, tensor<32x3x3x16xf16>) outs(%i : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  return %y : tensor<1x6x6x32xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_fhwc"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv
        {block_m = 64, block_n = 32, warps_m = 1, warps_n = 2, stages = 2}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %kernel "picked" : !transform.any_op
    transform.annotate %launch "launched" : !transform.any_op
    transform.yield
  }
}

// -----

// The CPU twin: the kernel handle is the grid's outermost loop; no launch.
// CHECK-LABEL: func.func @twin
// CHECK: scf.for {{.*}} {
// CHECK: } {twin_grid}
// CHECK-NOT: gpu.launch_func
func.func @twin(%x: tensor<1x8x8x16xf16>, %w: tensor<32x3x3x16xf16>) -> tensor<1x6x6x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x32xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w : tensor<1x8x8x16xf16>, tensor<32x3x3x16xf16>) outs(%i : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  return %y : tensor<1x6x6x32xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_fhwc"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv {backend = "cpu-twin"}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %kernel "twin_grid" : !transform.any_op
    %n = transform.num_associations %launch : (!transform.any_op) -> !transform.param<i64>
    // expected-remark @below {{0}}
    transform.debug.emit_param_as_remark %n : !transform.param<i64>
    transform.yield
  }
}

// -----

// A convolution the kernel does not take: a silenceable failure with the
// reason (the payload is left as it was: im2col.mlir checks that).
func.func @quantized(%x: tensor<1x8x8x4xi8>, %w: tensor<3x3x4x8xi8>, %zx: i32, %zw: i32, %init: tensor<1x6x6x8xi32>) -> tensor<1x6x6x8xi32> {
  // expected-note @below {{left untouched: the zero points are not constants}}
  %y = linalg.conv_2d_nhwc_hwcf_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w, %zx, %zw : tensor<1x8x8x4xi8>, tensor<3x3x4x8xi8>, i32, i32) outs(%init : tensor<1x6x6x8xi32>) -> tensor<1x6x6x8xi32>
  return %y : tensor<1x6x6x8xi32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_hwcf_q"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{transform.conv_lower.implicit_gemm: 1 convolution(s) left untouched}}
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// Tiles that cannot be built are the script's error: a definite failure.
func.func @bad_tiles(%x: tensor<1x8x8x16xf16>, %w: tensor<32x3x3x16xf16>) -> tensor<1x6x6x32xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x32xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  // expected-note @below {{for this convolution}}
  %y = linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w : tensor<1x8x8x16xf16>, tensor<32x3x3x16xf16>) outs(%i : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  return %y : tensor<1x6x6x32xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_fhwc"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{block-m (48) must be a multiple of 16 x warps-m (32)}}
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv {block_m = 48}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_fhwc"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{unknown backend 'tpu' (expected cuda or cpu-twin)}}
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv {backend = "tpu"}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_fhwc"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{unknown chip 'sm_70'}}
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv {chip = "sm_70"}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_fhwc"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{stages must be >= 0 (0: the heuristic's)}}
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv {stages = -1}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
