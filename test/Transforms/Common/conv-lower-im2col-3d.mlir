// RUN: conv-opt %s --conv-lower-im2col | FileCheck %s
// RUN: conv-opt %s --conv-lower-implicit-gemm=emit-remarks -verify-diagnostics -o /dev/null
//
// 3-D convolutions: the 2-D table with a depth dim. The im2col and fold take
// three spatial dims; the GEMM is the same. (The GPU kernel takes the float
// ones too: conv-lower-implicit-gemm-3d.mlir; the quantized one here has
// zero points that are function arguments, which it leaves with a remark.) Numerics: test/Integration/CPU/conv-ranks.test.

// NDHWC/DHWCF with a depth pad absorbed, strides and dilations per dim.
// Od = (4 + 1 + 1 - 3) / 1 + 1 = 4, Oh = (7 - 2*(2-1) - 1) / 2 + 1 = 3,
// Ow = 5 - 3 + 1 = 3.
// CHECK-LABEL: func.func @ndhwc_dhwcf
// CHECK: %[[B:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1, 2, 3], [4]] : tensor<3x2x3x3x4xf32> into tensor<54x4xf32>
// CHECK: %[[A:.*]] = conv_lower.im2col %arg0 layout = nhwc kernel = [3, 2, 3] strides = [1, 2, 1] dilations = [1, 2, 1] padding = [1, 0, 0, 1, 0, 0] groups = 1 k_order = hwc : tensor<2x4x7x5x3xf32> -> tensor<72x54xf32>
// CHECK: %[[C:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<72x54xf32>, tensor<54x4xf32>)
// CHECK: conv_lower.fold %[[C]] layout = nhwc output_size = [4, 3, 3] : tensor<72x4xf32> -> tensor<2x4x3x3x4xf32>
// CHECK-NOT: linalg.conv
func.func @ndhwc_dhwcf(%x: tensor<2x4x7x5x3xf32>, %w: tensor<3x2x3x3x4xf32>) -> tensor<2x4x3x3x4xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 0, 0, 0] high[0, 1, 0, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index, %e: index):
    tensor.yield %z : f32
  } : tensor<2x4x7x5x3xf32> to tensor<2x6x7x5x3xf32>
  %e = tensor.empty() : tensor<2x4x3x3x4xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<2x4x3x3x4xf32>) -> tensor<2x4x3x3x4xf32>
  %y = linalg.conv_3d_ndhwc_dhwcf {strides = dense<[1, 2, 1]> : tensor<3xi64>, dilations = dense<[1, 2, 1]> : tensor<3xi64>}
     ins(%p, %w : tensor<2x6x7x5x3xf32>, tensor<3x2x3x3x4xf32>) outs(%i : tensor<2x4x3x3x4xf32>) -> tensor<2x4x3x3x4xf32>
  return %y : tensor<2x4x3x3x4xf32>
}

// NCDHW/FCDHW: the filter [F, C*KD*KH*KW] is the transposed B.
// CHECK-LABEL: func.func @ncdhw_fcdhw
// CHECK: tensor.collapse_shape %arg1 {{\[\[}}0], [1, 2, 3, 4]] : tensor<4x3x3x3x3xf16> into tensor<4x81xf16>
// CHECK: conv_lower.im2col %arg0 layout = nchw kernel = [3, 3, 3] {{.*}} k_order = chw : tensor<1x3x6x6x6xf16> -> tensor<64x81xf16>
// CHECK: linalg.matmul indexing_maps
// CHECK: conv_lower.fold %{{.*}} layout = nchw output_size = [4, 4, 4] : tensor<64x4xf32> -> tensor<1x4x4x4x4xf32>
func.func @ncdhw_fcdhw(%x: tensor<1x3x6x6x6xf16>, %w: tensor<4x3x3x3x3xf16>) -> tensor<1x4x4x4x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4x4xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x4x4x4x4xf32>) -> tensor<1x4x4x4x4xf32>
  %y = linalg.conv_3d_ncdhw_fcdhw {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
     ins(%x, %w : tensor<1x3x6x6x6xf16>, tensor<4x3x3x3x3xf16>) outs(%i : tensor<1x4x4x4x4xf32>) -> tensor<1x4x4x4x4xf32>
  return %y : tensor<1x4x4x4x4xf32>
}

// Depthwise, channels last and first, and with a multiplier.
// CHECK-LABEL: func.func @depthwise
// CHECK: conv_lower.im2col %arg0 layout = nhwc kernel = [2, 2, 2] {{.*}} groups = 3 k_order = hwc : tensor<1x4x4x4x3xf32> -> tensor<3x27x8xf32>
// CHECK: conv_lower.fold %{{.*}} layout = nhwc output_size = [3, 3, 3] : tensor<3x27x1xf32> -> tensor<1x3x3x3x3xf32>
// CHECK: conv_lower.im2col %arg2 layout = nchw kernel = [2, 2, 2] {{.*}} groups = 3 k_order = chw : tensor<1x3x4x4x4xf32> -> tensor<3x27x8xf32>
// CHECK: conv_lower.fold %{{.*}} layout = nchw output_size = [3, 3, 3] : tensor<3x27x1xf32> -> tensor<1x3x3x3x3xf32>
// CHECK: conv_lower.im2col %arg0 layout = nhwc kernel = [2, 2, 2] {{.*}} groups = 3 k_order = hwc : tensor<1x4x4x4x3xf32> -> tensor<3x27x8xf32>
// CHECK: conv_lower.fold %{{.*}} layout = nhwc output_size = [3, 3, 3] : tensor<3x27x2xf32> -> tensor<1x3x3x3x6xf32>
// CHECK: tensor.expand_shape %{{.*}} : tensor<1x3x3x3x6xf32> into tensor<1x3x3x3x3x2xf32>
// CHECK-NOT: = linalg.depthwise
func.func @depthwise(%x: tensor<1x4x4x4x3xf32>, %w: tensor<2x2x2x3xf32>, %xc: tensor<1x3x4x4x4xf32>, %wc: tensor<3x2x2x2xf32>, %wm: tensor<2x2x2x3x2xf32>)
    -> (tensor<1x3x3x3x3xf32>, tensor<1x3x3x3x3xf32>, tensor<1x3x3x3x3x2xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3x3x3x3xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<1x3x3x3x3xf32>) -> tensor<1x3x3x3x3xf32>
  %em = tensor.empty() : tensor<1x3x3x3x3x2xf32>
  %im = linalg.fill ins(%z : f32) outs(%em : tensor<1x3x3x3x3x2xf32>) -> tensor<1x3x3x3x3x2xf32>
  %a = linalg.depthwise_conv_3d_ndhwc_dhwc {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
     ins(%x, %w : tensor<1x4x4x4x3xf32>, tensor<2x2x2x3xf32>) outs(%i : tensor<1x3x3x3x3xf32>) -> tensor<1x3x3x3x3xf32>
  %b = linalg.depthwise_conv_3d_ncdhw_cdhw {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
     ins(%xc, %wc : tensor<1x3x4x4x4xf32>, tensor<3x2x2x2xf32>) outs(%i : tensor<1x3x3x3x3xf32>) -> tensor<1x3x3x3x3xf32>
  %c = linalg.depthwise_conv_3d_ndhwc_dhwcm {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
     ins(%x, %wm : tensor<1x4x4x4x3xf32>, tensor<2x2x2x3x2xf32>) outs(%im : tensor<1x3x3x3x3x2xf32>) -> tensor<1x3x3x3x3x2xf32>
  return %a, %b, %c : tensor<1x3x3x3x3xf32>, tensor<1x3x3x3x3xf32>, tensor<1x3x3x3x3x2xf32>
}

// Quantized 3-D: the zero-point expansion with K = Cg*KD*KH*KW.
// CHECK-LABEL: func.func @quantized
// CHECK: conv_lower.im2col {{.*}} : tensor<1x4x4x4x2xi8> -> tensor<27x16xi8>
// CHECK: linalg.matmul
// CHECK: arith.constant 16 : i32
// CHECK: conv_lower.fold
func.func @quantized(%x: tensor<1x4x4x4x2xi8>, %w: tensor<2x2x2x2x4xi8>, %zx: i32, %zw: i32) -> tensor<1x3x3x3x4xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x3x3x3x4xi32>
  %i = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x3x3x3x4xi32>) -> tensor<1x3x3x3x4xi32>
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the zero points are not constants}}
  %y = linalg.conv_3d_ndhwc_dhwcf_q {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>}
     ins(%x, %w, %zx, %zw : tensor<1x4x4x4x2xi8>, tensor<2x2x2x2x4xi8>, i32, i32) outs(%i : tensor<1x3x3x3x4xi32>) -> tensor<1x3x3x3x4xi32>
  return %y : tensor<1x3x3x3x4xi32>
}

// A conv-shaped generic over (n, od, oh, ow, f, kd, kh, kw, c) with a
// commuted body and an output smaller than the formula (a crop of H):
// recognised by what it computes.
#x = affine_map<(n, d, h, w, f, q, r, s, c) -> (n, d + q, h * 2 + r, w + s * 2, c)>
#w = affine_map<(n, d, h, w, f, q, r, s, c) -> (q, r, s, c, f)>
#y = affine_map<(n, d, h, w, f, q, r, s, c) -> (n, d, h, w, f)>
// CHECK-LABEL: func.func @generic
// CHECK: %[[CROP:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0, 0] [1, 4, 4, 5, 2]
// CHECK: conv_lower.im2col %[[CROP]] layout = nhwc kernel = [2, 2, 2] strides = [1, 2, 1] dilations = [1, 1, 2] {{.*}} : tensor<1x4x4x5x2xf32> -> tensor<18x16xf32>
// CHECK-NOT: linalg.generic
func.func @generic(%x: tensor<1x4x5x5x2xf32>, %w: tensor<2x2x2x2x4xf32>, %init: tensor<1x3x2x3x4xf32>) -> tensor<1x3x2x3x4xf32> {
  // expected-remark @+1 {{conv-lower-implicit-gemm: left untouched: the convolution's init must be a constant fill}}
  %y = linalg.generic {indexing_maps = [#x, #w, #y],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x4x5x5x2xf32>, tensor<2x2x2x2x4xf32>) outs(%init : tensor<1x3x2x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %b, %a : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x3x2x3x4xf32>
  return %y : tensor<1x3x2x3x4xf32>
}
