// RUN: conv-opt %s --conv-lower-im2col=emit-remarks -verify-diagnostics | FileCheck %s
// RUN: conv-opt %s --conv-lower-im2col | FileCheck %s
//
// What the rewrite cannot handle stays exactly as it was; with emit-remarks
// each such op gets one remark saying why.

// CHECK-LABEL: func.func @pooling
// CHECK: linalg.pooling_nhwc_sum
func.func @pooling(%x: tensor<1x10x10x8xf32>, %w: tensor<3x3xf32>, %init: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: pooling has no filter to multiply with}}
  %y = linalg.pooling_nhwc_sum {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x10x10x8xf32>, tensor<3x3xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

// 1-D convolutions are the lift's (conv-lower-lift-to-2d.mlir).
// CHECK-LABEL: func.func @conv1d
// CHECK: linalg.conv_1d_nwc_wcf
func.func @conv1d(%x: tensor<1x10x4xf32>, %w: tensor<3x4x8xf32>, %init: tensor<1x8x8xf32>) -> tensor<1x8x8xf32> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: a 1-D convolution: --conv-lower-lift-to-2d (the first pass of both pipelines) writes it as a 2-D form}}
  %y = linalg.conv_1d_nwc_wcf {strides = dense<1> : tensor<1xi64>, dilations = dense<1> : tensor<1xi64>} ins(%x, %w : tensor<1x10x4xf32>, tensor<3x4x8xf32>) outs(%init : tensor<1x8x8xf32>) -> tensor<1x8x8xf32>
  return %y : tensor<1x8x8xf32>
}

// A non-zero pad value cannot become im2col padding: the pad stays and the
// convolution is rewritten on the padded tensor.
// CHECK-LABEL: func.func @nonzero_pad
// CHECK: tensor.pad
// CHECK: conv_lower.im2col %{{.*}} padding = [0, 0, 0, 0]
func.func @nonzero_pad(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %init: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %one = arith.constant 1.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %one : f32
  } : tensor<1x4x8x8xf32> to tensor<1x4x10x10xf32>
  %y = linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x4x10x10xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

// A quantized convolution accumulating in floats: the zero-point expansion is
// exact in integers only.
// CHECK-LABEL: func.func @quantized_float_accumulator
// CHECK: linalg.conv_2d_nhwc_hwcf_q
func.func @quantized_float_accumulator(%x: tensor<1x8x8x4xi8>, %w: tensor<3x3x4x8xi8>, %zx: i32, %zw: i32, %init: tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: a quantized convolution with a float accumulator (the zero-point expansion is exact in integers only)}}
  %y = linalg.conv_2d_nhwc_hwcf_q {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w, %zx, %zw : tensor<1x8x8x4xi8>, tensor<3x3x4x8xi8>, i32, i32) outs(%init : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %y : tensor<1x6x6x8xf32>
}

// Batchless 3-D convolutions are the lift's.
// CHECK-LABEL: func.func @batchless_3d
// CHECK: linalg.conv_3d
func.func @batchless_3d(%x: tensor<6x6x6xf32>, %w: tensor<3x3x3xf32>, %init: tensor<4x4x4xf32>) -> tensor<4x4x4xf32> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: not one of the supported convolution forms (linalg.conv_3d)}}
  %y = linalg.conv_3d ins(%x, %w : tensor<6x6x6xf32>, tensor<3x3x3xf32>) outs(%init : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  return %y : tensor<4x4x4xf32>
}

// CHECK-LABEL: func.func @dynamic_spatial
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @dynamic_spatial(%x: tensor<1x?x?x4xf32>, %w: tensor<3x3x4x8xf32>, %init: tensor<1x?x?x8xf32>) -> tensor<1x?x?x8xf32> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: only the batch dimension may be dynamic}}
  %y = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x?x?x4xf32>, tensor<3x3x4x8xf32>) outs(%init : tensor<1x?x?x8xf32>) -> tensor<1x?x?x8xf32>
  return %y : tensor<1x?x?x8xf32>
}

// CHECK-LABEL: func.func @on_buffers
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @on_buffers(%x: memref<1x8x8x4xf32>, %w: memref<3x3x4x8xf32>, %y: memref<1x6x6x8xf32>) {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: the convolution works on buffers; only tensors are rewritten}}
  linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : memref<1x8x8x4xf32>, memref<3x3x4x8xf32>) outs(%y : memref<1x6x6x8xf32>)
  return
}

// CHECK-LABEL: func.func @complex
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @complex(%x: tensor<1x8x8x4xcomplex<f32>>, %w: tensor<3x3x4x8xcomplex<f32>>, %y: tensor<1x6x6x8xcomplex<f32>>) -> tensor<1x6x6x8xcomplex<f32>> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: element types must be integers or floats (complex and other types are left alone)}}
  %0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xcomplex<f32>>, tensor<3x3x4x8xcomplex<f32>>) outs(%y : tensor<1x6x6x8xcomplex<f32>>) -> tensor<1x6x6x8xcomplex<f32>>
  return %0 : tensor<1x6x6x8xcomplex<f32>>
}

// Found by conv-fuzz: an empty output (a width of 0) made the rewrite emit an
// im2col with negative padding; a zero-size dimension leaves nothing to do.
// CHECK-LABEL: func.func @empty_output
// CHECK: linalg.conv_2d_nhwc_hwcf
func.func @empty_output(%x: tensor<2x4x0x4xf16>, %w: tensor<1x1x4x4xf16>, %init: tensor<2x4x0x4xf16>) -> tensor<2x4x0x4xf16> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: a dimension of size 0 (an empty tensor): nothing to rewrite}}
  %y = linalg.conv_2d_nhwc_hwcf {strides = dense<[1, 3]> : tensor<2xi64>, dilations = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<2x4x0x4xf16>, tensor<1x1x4x4xf16>) outs(%init : tensor<2x4x0x4xf16>) -> tensor<2x4x0x4xf16>
  return %y : tensor<2x4x0x4xf16>
}

// No channels: the output is its init.
// CHECK-LABEL: func.func @no_channels
// CHECK: linalg.conv_2d_nchw_fchw
func.func @no_channels(%x: tensor<1x0x5x5xf32>, %w: tensor<3x0x3x3xf32>, %init: tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: a dimension of size 0 (an empty tensor): nothing to rewrite}}
  %y = linalg.conv_2d_nchw_fchw ins(%x, %w : tensor<1x0x5x5xf32>, tensor<3x0x3x3xf32>) outs(%init : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %y : tensor<1x3x3x3xf32>
}

// Found by conv-fuzz: a static input batch with a dynamic output batch gave
// an im2col whose M was dynamic while its source's batch was not.
// CHECK-LABEL: func.func @batch_static_in_dynamic_out
// CHECK: linalg.depthwise_conv_2d_nhwc_hwc
func.func @batch_static_in_dynamic_out(%x: tensor<2x6x5x6xf16>, %w: tensor<2x2x6xf16>, %init: tensor<?x2x4x6xf16>) -> tensor<?x2x4x6xf16> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: the batch is static in one of input and output and dynamic in the other}}
  %y = linalg.depthwise_conv_2d_nhwc_hwc {strides = dense<[3, 1]> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x6x5x6xf16>, tensor<2x2x6xf16>) outs(%init : tensor<?x2x4x6xf16>) -> tensor<?x2x4x6xf16>
  return %y : tensor<?x2x4x6xf16>
}

// Found by conv-fuzz: a zero pad of an empty image (no columns) was absorbed
// and the rewrite sliced the empty image; the padded tensor (all zeros) is
// the im2col's input instead.
// CHECK-LABEL: func.func @pad_of_empty_image
// CHECK: tensor.pad
// CHECK: conv_lower.im2col %{{.*}} padding = [0, 0, 0, 0]
func.func @pad_of_empty_image(%x: tensor<1x3x6x0xbf16>, %w: tensor<1x3x1x2xbf16>, %init: tensor<1x1x2x1xf32>) -> tensor<1x1x2x1xf32> {
  %zero = arith.constant 0.0 : bf16
  %p = tensor.pad %x low[0, 0, 1, 0] high[0, 0, 0, 2] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : bf16
  } : tensor<1x3x6x0xbf16> to tensor<1x3x7x2xbf16>
  %y = linalg.conv_2d_nchw_fchw {strides = dense<[2, 1]> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<1x3x7x2xbf16>, tensor<1x3x1x2xbf16>) outs(%init : tensor<1x1x2x1xf32>) -> tensor<1x1x2x1xf32>
  return %y : tensor<1x1x2x1xf32>
}
