// RUN: conv-opt %s --conv-lower-decompose --cse | FileCheck %s

// im2col: a zero pad, then a copy whose input map is the convolution's access
// ((g, n, oh, ow, c, kh, kw) -> X[n, g*Cg + c, oh*sh + kh*dh, ow*sw + kw*dw]),
// collapsed to [M, K].
// CHECK-DAG: #[[$NCHW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d0 * 4 + d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-DAG: #[[$ID7:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
// CHECK-DAG: #[[$NHWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d2 + d5, d3 + d6, d0 * 4 + d4)>
// CHECK-DAG: #[[$HWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d5, d6, d4)>
// 3-D (@im2col_3d) and 1-D (@im2col_1d):
// CHECK-DAG: #[[$NDHWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d1, d2 * 2 + d6, d3 + d7, d4 + d8, d0 * 4 + d5)>
// CHECK-DAG: #[[$DHWC:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7, d8) -> (d0, d1, d2, d3, d4, d6, d7, d8, d5)>
// CHECK-DAG: #[[$NCW:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d0 * 2 + d3, d2 * 2 + d4)>

// CHECK-LABEL: func.func @im2col_nchw
// CHECK: %[[P:.*]] = tensor.pad %arg0 low[0, 0, 1, 0] high[0, 0, 0, 1]
// CHECK: %[[E:.*]] = tensor.empty() : tensor<1x2x4x4x4x3x3xf32>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[$NCHW]], #[[$ID7]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[P]] : tensor<2x4x9x9xf32>) outs(%[[E]] : tensor<1x2x4x4x4x3x3xf32>)
// CHECK: tensor.collapse_shape %[[G]] {{\[\[}}0, 1, 2, 3], [4, 5, 6]] : tensor<1x2x4x4x4x3x3xf32> into tensor<32x36xf32>
// CHECK-NOT: conv_lower
func.func @im2col_nchw(%x: tensor<2x4x8x8xf32>) -> tensor<32x36xf32> {
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [2, 2] dilations = [1, 1] padding = [1, 0, 0, 1] groups = 1 k_order = chw : tensor<2x4x8x8xf32> -> tensor<32x36xf32>
  return %0 : tensor<32x36xf32>
}

// HWC K order, two groups, dynamic batch, no padding (no pad op).
// CHECK-LABEL: func.func @im2col_nhwc_grouped_dynamic
// CHECK-NOT: tensor.pad
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[N]]) : tensor<2x?x4x4x3x3x4xf16>
// CHECK: linalg.generic {indexing_maps = [#[[$NHWC]], #[[$HWC]]]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3], [4, 5, 6]] : tensor<2x?x4x4x3x3x4xf16> into tensor<2x?x36xf16>
func.func @im2col_nhwc_grouped_dynamic(%x: tensor<?x6x6x8xf16>) -> tensor<2x?x36xf16> {
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 2 k_order = hwc : tensor<?x6x6x8xf16> -> tensor<2x?x36xf16>
  return %0 : tensor<2x?x36xf16>
}

// fold: [G, M, Fg] -> [G, N, Ho, Wo, Fg] -> transpose -> collapse.
// CHECK-LABEL: func.func @fold_nchw
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1, 2, 3], [4]] output_shape [1, 2, 4, 4, 6] : tensor<32x6xf32> into tensor<1x2x4x4x6xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<1x2x4x4x6xf32>) outs(%{{.*}} : tensor<2x1x6x4x4xf32>) permutation = [1, 0, 4, 2, 3]
// CHECK: tensor.collapse_shape %[[T]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x1x6x4x4xf32> into tensor<2x6x4x4xf32>
func.func @fold_nchw(%y: tensor<32x6xf32>) -> tensor<2x6x4x4xf32> {
  %0 = conv_lower.fold %y layout = nchw output_size = [4, 4] : tensor<32x6xf32> -> tensor<2x6x4x4xf32>
  return %0 : tensor<2x6x4x4xf32>
}

// CHECK-LABEL: func.func @fold_nhwc_grouped_dynamic
// CHECK: %[[M:.*]] = tensor.dim %arg0, %c1 : tensor<2x?x3xi32>
// CHECK: %[[N:.*]] = arith.divsi %[[M]], %c16 : index
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2, 3], [4]] output_shape [2, %[[N]], 4, 4, 3]
// CHECK: linalg.transpose {{.*}} permutation = [1, 2, 3, 0, 4]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] : tensor<?x4x4x2x3xi32> into tensor<?x4x4x6xi32>
func.func @fold_nhwc_grouped_dynamic(%y: tensor<2x?x3xi32>) -> tensor<?x4x4x6xi32> {
  %0 = conv_lower.fold %y layout = nhwc output_size = [4, 4] : tensor<2x?x3xi32> -> tensor<?x4x4x6xi32>
  return %0 : tensor<?x4x4x6xi32>
}

// 3-D: loops (g, n, od, oh, ow, c, kd, kh, kw); the depth is strided, the
// padding is low then high per spatial dim.
// CHECK-LABEL: func.func @im2col_3d
// CHECK: tensor.pad %arg0 low[0, 1, 0, 0, 0] high[0, 1, 0, 0, 0]
// CHECK: linalg.generic {indexing_maps = [#[[$NDHWC]], #[[$DHWC]]]
// CHECK-SAME: outs(%{{.*}} : tensor<1x2x3x4x4x3x3x3x4xf32>)
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2, 3, 4], [5, 6, 7, 8]] : tensor<1x2x3x4x4x3x3x3x4xf32> into tensor<96x108xf32>
func.func @im2col_3d(%x: tensor<2x6x6x6x4xf32>) -> tensor<96x108xf32> {
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3, 3] strides = [2, 1, 1]
         dilations = [1, 1, 1] padding = [1, 0, 0, 1, 0, 0] groups = 1 k_order = hwc
       : tensor<2x6x6x6x4xf32> -> tensor<96x108xf32>
  return %0 : tensor<96x108xf32>
}

// CHECK-LABEL: func.func @fold_3d_nchw
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2, 3, 4], [5]] output_shape [2, 1, 3, 4, 4, 3] : tensor<2x48x3xf32> into tensor<2x1x3x4x4x3xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : {{.*}}) outs(%{{.*}} : tensor<1x2x3x3x4x4xf32>) permutation = [1, 0, 5, 2, 3, 4]
// CHECK: tensor.collapse_shape %[[T]] {{\[\[}}0], [1, 2], [3], [4], [5]] : tensor<1x2x3x3x4x4xf32> into tensor<1x6x3x4x4xf32>
func.func @fold_3d_nchw(%y: tensor<2x48x3xf32>) -> tensor<1x6x3x4x4xf32> {
  %0 = conv_lower.fold %y layout = nchw output_size = [3, 4, 4] : tensor<2x48x3xf32> -> tensor<1x6x3x4x4xf32>
  return %0 : tensor<1x6x3x4x4xf32>
}

// 1-D: loops (g, n, ow, c, kw).
// CHECK-LABEL: func.func @im2col_1d
// CHECK: tensor.pad %arg0 low[0, 0, 1] high[0, 0, 0]
// CHECK: linalg.generic {indexing_maps = [#[[$NCW]], #{{.*}}]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3, 4]] : tensor<2x1x4x2x3xf32> into tensor<2x4x6xf32>
func.func @im2col_1d(%x: tensor<1x4x9xf32>) -> tensor<2x4x6xf32> {
  %0 = conv_lower.im2col %x layout = nchw kernel = [3] strides = [2] dilations = [1]
         padding = [1, 0] groups = 2 k_order = chw : tensor<1x4x9xf32> -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}
