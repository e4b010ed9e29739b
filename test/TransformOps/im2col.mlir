// RUN: conv-opt %s --transform-interpreter --split-input-file -verify-diagnostics | FileCheck %s
//
// transform.conv_lower.im2col: the rewrite of --conv-lower-im2col on the
// payload ops of a handle, with handles to the im2col, the GEMM and the
// replacement, usable by the ops that follow.

// CHECK-LABEL: func.func @conv
// CHECK: %[[COL:.*]] = conv_lower.im2col %{{.*}} layout = nhwc kernel = [3, 3] {{.*}} padding = [1, 1, 1, 1] {{.*}} : tensor<1x8x8x4xf32> -> tensor<64x36xf32>
// CHECK: linalg.matmul {tiled} ins(%[[COL]], %{{.*}} : tensor<64x36xf32>, tensor<36x8xf32>)
// CHECK: conv_lower.fold {{.*}} {replacement}
// CHECK-NOT: = linalg.conv
func.func @conv(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x8x8x8xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z : f32
  } : tensor<1x8x8x4xf32> to tensor<1x10x10x4xf32>
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%p, %w : tensor<1x10x10x4xf32>, tensor<3x3x4x8xf32>) outs(%i : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_hwcf"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %col, %gemm, %y = transform.conv_lower.im2col %conv
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    // The handles point at what the rewrite built: mark each.
    transform.annotate %gemm "tiled" : !transform.any_op
    transform.annotate %y "replacement" : !transform.any_op
    %n = transform.num_associations %col : (!transform.any_op) -> !transform.param<i64>
    // expected-remark @below {{1}}
    transform.debug.emit_param_as_remark %n : !transform.param<i64>
    transform.yield
  }
}

// -----

// The GEMM handle feeds upstream's tiling: the rewrite composes.
// CHECK-LABEL: func.func @then_tile
// CHECK: conv_lower.im2col
// CHECK: scf.for
// CHECK:   linalg.matmul {{.*}} -> tensor<12x8xf32>
func.func @then_tile(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x8xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%i : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %y : tensor<1x6x6x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_hwcf"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %col, %gemm, %y = transform.conv_lower.im2col %conv
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %tiled, %loop = transform.structured.tile_using_for %gemm tile_sizes [12]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// A 1x1 NHWC convolution needs no im2col: the handle is empty, the GEMM is
// there. A quantized one gets its zero-point correction.
// CHECK-LABEL: func.func @pointwise_and_quantized
// CHECK-NOT: conv_lower.im2col
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK-NOT: = linalg.conv
func.func @pointwise_and_quantized(%x: tensor<1x4x4x8xi8>, %w: tensor<1x1x8x4xi8>, %zx: i32, %zw: i32) -> (tensor<1x4x4x4xi32>, tensor<1x4x4x4xi32>) {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x4x4x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x4x4x4xi32>) -> tensor<1x4x4x4xi32>
  %a = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w : tensor<1x4x4x8xi8>, tensor<1x1x8x4xi8>) outs(%i : tensor<1x4x4x4xi32>) -> tensor<1x4x4x4xi32>
  %b = linalg.conv_2d_nhwc_hwcf_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
     ins(%x, %w, %zx, %zw : tensor<1x4x4x8xi8>, tensor<1x1x8x4xi8>, i32, i32) outs(%i : tensor<1x4x4x4xi32>) -> tensor<1x4x4x4xi32>
  return %a, %b : tensor<1x4x4x4xi32>, tensor<1x4x4x4xi32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.conv_2d_nhwc_hwcf", "linalg.conv_2d_nhwc_hwcf_q"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %col, %gemm, %y = transform.conv_lower.im2col %conv
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %ncol = transform.num_associations %col : (!transform.any_op) -> !transform.param<i64>
    %ngemm = transform.num_associations %gemm : (!transform.any_op) -> !transform.param<i64>
    // expected-remark @below {{0}}
    transform.debug.emit_param_as_remark %ncol : !transform.param<i64>
    // expected-remark @below {{2}}
    transform.debug.emit_param_as_remark %ngemm : !transform.param<i64>
    transform.yield
  }
}

// -----

// What the rewrite does not take is a silenceable failure with its reason,
// and the payload is left as it was.
func.func @pooling(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3xf32>, %init: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  // expected-note @below {{left untouched: pooling has no filter to multiply with}}
  %y = linalg.pooling_nhwc_sum {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %conv = transform.structured.match ops{["linalg.pooling_nhwc_sum"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{transform.conv_lower.im2col: 1 convolution(s) left untouched}}
    %col, %gemm, %y = transform.conv_lower.im2col %conv
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}

// -----

// With failures suppressed, the convolutions the rewrite takes are rewritten
// and the others stay as they were.
// CHECK-LABEL: func.func @mixed
// CHECK: linalg.pooling_nhwc_sum
// CHECK: conv_lower.im2col
// CHECK-NOT: = linalg.conv
func.func @mixed(%x: tensor<1x10x10x8xf32>, %p: tensor<3x3xf32>, %w: tensor<3x3x8x4xf32>, %i: tensor<1x8x8x8xf32>, %j: tensor<1x8x8x4xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x4xf32>) {
  %a = linalg.pooling_nhwc_sum {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %p : tensor<1x10x10x8xf32>, tensor<3x3xf32>) outs(%i : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %b = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3x8x4xf32>) outs(%j : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  return %a, %b : tensor<1x8x8x8xf32>, tensor<1x8x8x4xf32>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match ops{["linalg.pooling_nhwc_sum", "linalg.conv_2d_nhwc_hwcf"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.sequence %ops : !transform.any_op failures(suppress) {
    ^bb0(%convs: !transform.any_op):
      %col, %gemm, %y = transform.conv_lower.im2col %convs
          : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    }
    transform.yield
  }
}

// -----

// Not a linalg op at all: the script is wrong.
func.func @not_linalg() {
  // expected-note @below {{payload op}}
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ret = transform.structured.match ops{["func.return"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @below {{expects linalg ops (convolutions), got 'func.return'}}
    %col, %gemm, %y = transform.conv_lower.im2col %ret
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
