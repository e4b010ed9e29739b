// RUN: conv-opt %s --conv-lower-im2col --canonicalize --cse | FileCheck %s

#mapx = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh * 2 + kh * 2, ow * 2 + kw * 2)>
#mapw = affine_map<(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#mapy = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>

// A convolution written as a linalg.generic (torch-mlir's form) is
// recognized, strides and dilations included.
// CHECK-LABEL: func.func @generic_nchw_fchw
// CHECK-NOT: linalg.generic
// CHECK: conv_lower.im2col %{{.*}} layout = nchw kernel = [3, 3] strides = [2, 2] dilations = [2, 2] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x3x11x11xf32> -> tensor<16x27xf32>
// CHECK: linalg.matmul
// CHECK: conv_lower.fold
func.func @generic_nchw_fchw(%x: tensor<1x3x11x11xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %y = linalg.generic {indexing_maps = [#mapx, #mapw, #mapy], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x3x11x11xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// 1x1, stride 1, NCHW: no im2col, no fold; Y[n] = W . X[n] on [N, C, H*W],
// the filter first so that every operand is read row-major (M = F, N = pixels).
// CHECK-LABEL: func.func @pointwise_nchw
// CHECK-NOT: conv_lower
// CHECK-DAG: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : tensor<?x16x7x7xf32> into tensor<?x16x49xf32>
// CHECK-DAG: %[[W:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0], [1, 2, 3]] : tensor<32x16x1x1xf32> into tensor<32x16xf32>
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$FC:.*]], #[[$NCP:.*]], #[[$NFP:.*]]], {{.*}} ins(%[[W]], %[[X]] : {{.*}}) outs(%{{.*}} : tensor<?x32x49xf32>)
// CHECK: tensor.expand_shape %[[Y]] {{\[\[}}0], [1], [2, 3]]
// CHECK-NOT: conv_lower
func.func @pointwise_nchw(%x: tensor<?x16x7x7xf32>, %w: tensor<32x16x1x1xf32>, %init: tensor<?x32x7x7xf32>) -> tensor<?x32x7x7xf32> {
  %y = linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x16x7x7xf32>, tensor<32x16x1x1xf32>) outs(%init : tensor<?x32x7x7xf32>) -> tensor<?x32x7x7xf32>
  return %y : tensor<?x32x7x7xf32>
}

// The same on a static image of fewer than 64 pixels (r50's 7x7 stage): too
// few GEMM columns for the filters-first form, so the image is transposed into
// rows (the NHWC pointwise GEMM, W read as [F, K]) and the result back.
// CHECK-LABEL: func.func @pointwise_nchw_small_image
// CHECK-NOT: conv_lower
// CHECK: %[[X:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : tensor<2x16x7x7xf32> into tensor<2x16x49xf32>
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[X]] : tensor<2x16x49xf32>) outs(%{{.*}} : tensor<2x49x16xf32>) permutation = [0, 2, 1]
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[XT]] {{\[\[}}0, 1], [2]] : tensor<2x49x16xf32> into tensor<98x16xf32>
// CHECK: %[[Y:.*]] = linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[ROWS]], %{{.*}} : tensor<98x16xf32>, tensor<32x16xf32>) outs(%{{.*}} : tensor<98x32xf32>)
// CHECK: %[[YI:.*]] = tensor.expand_shape %[[Y]] {{\[\[}}0, 1], [2]] output_shape [2, 49, 32]
// CHECK: %[[YT:.*]] = linalg.transpose ins(%[[YI]] : tensor<2x49x32xf32>) outs(%{{.*}} : tensor<2x32x49xf32>) permutation = [0, 2, 1]
// CHECK: tensor.expand_shape %[[YT]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 32, 7, 7]
func.func @pointwise_nchw_small_image(%x: tensor<2x16x7x7xf32>, %w: tensor<32x16x1x1xf32>, %init: tensor<2x32x7x7xf32>) -> tensor<2x32x7x7xf32> {
  %y = linalg.conv_2d_nchw_fchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x16x7x7xf32>, tensor<32x16x1x1xf32>) outs(%init : tensor<2x32x7x7xf32>) -> tensor<2x32x7x7xf32>
  return %y : tensor<2x32x7x7xf32>
}

// 1x1, stride 1, NHWC: the image is already X_col; only reshapes remain.
// CHECK-LABEL: func.func @pointwise_nhwc
// CHECK-NOT: conv_lower
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2], [3]] : tensor<2x7x7x16xf32> into tensor<98x16xf32>
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape
// CHECK-NOT: conv_lower
func.func @pointwise_nhwc(%x: tensor<2x7x7x16xf32>, %w: tensor<1x1x16x32xf32>, %init: tensor<2x7x7x32xf32>) -> tensor<2x7x7x32xf32> {
  %y = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x7x7x16xf32>, tensor<1x1x16x32xf32>) outs(%init : tensor<2x7x7x32xf32>) -> tensor<2x7x7x32xf32>
  return %y : tensor<2x7x7x32xf32>
}

// Linalg allows an output smaller than the formula gives (9x9, 3x3, stride 2
// gives 4x4; this one keeps 3x3): the unread rows and columns are cropped so
// that the im2col states the exact formula.
// CHECK-LABEL: func.func @output_smaller_than_formula
// CHECK: %[[S:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 4, 7, 7] [1, 1, 1, 1]
// CHECK: conv_lower.im2col %[[S]] {{.*}} : tensor<1x4x7x7xf32> -> tensor<9x36xf32>
func.func @output_smaller_than_formula(%x: tensor<1x4x9x9xf32>, %w: tensor<8x4x3x3xf32>, %init: tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32> {
  %y = linalg.conv_2d_nchw_fchw {strides = dense<2> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x4x9x9xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32>
  return %y : tensor<1x8x3x3xf32>
}

// Mixed element types (i8 image, f16 filter, f32 result): the matmul keeps
// linalg's signed-cast semantics of the convolution.
// CHECK-LABEL: func.func @mixed_types
// CHECK: conv_lower.im2col {{.*}} : tensor<1x8x8x4xi8> -> tensor<36x36xi8>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<36x36xi8>, tensor<36x8xf16>) outs(%{{.*}} : tensor<36x8xf32>)
func.func @mixed_types(%x: tensor<1x8x8x4xi8>, %w: tensor<3x3x4x8xf16>, %y: tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32> {
  %0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xi8>, tensor<3x3x4x8xf16>) outs(%y : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %0 : tensor<1x6x6x8xf32>
}
