// RUN: conv-opt %s -canonicalize -split-input-file | FileCheck %s

// A 1x1, stride-1, unpadded, single-group NHWC im2col only flattens.
// CHECK-LABEL: func.func @im2col_pointwise_nhwc
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] : tensor<2x7x7x16xf32> into tensor<98x16xf32>
// CHECK-NEXT: return %[[C]]
func.func @im2col_pointwise_nhwc(%x: tensor<2x7x7x16xf32>) -> tensor<98x16xf32> {
  %0 = conv_lower.im2col %x layout = nhwc kernel = [1, 1] strides = [1, 1] dilations = [3, 3] padding = [0, 0, 0, 0] groups = 1 k_order = hwc : tensor<2x7x7x16xf32> -> tensor<98x16xf32>
  return %0 : tensor<98x16xf32>
}

// -----

// Dynamic batch: still a reshape.
// CHECK-LABEL: func.func @im2col_pointwise_nhwc_dynamic
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] : tensor<?x7x7x16xf32> into tensor<?x16xf32>
func.func @im2col_pointwise_nhwc_dynamic(%x: tensor<?x7x7x16xf32>) -> tensor<?x16xf32> {
  %0 = conv_lower.im2col %x layout = nhwc kernel = [1, 1] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = hwc : tensor<?x7x7x16xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// NCHW, padding, stride or groups: a real gather, kept.
// CHECK-LABEL: func.func @im2col_kept
// CHECK-COUNT-4: conv_lower.im2col
func.func @im2col_kept(%x: tensor<2x16x7x7xf32>, %y: tensor<2x7x7x16xf32>) -> (tensor<98x16xf32>, tensor<162x16xf32>, tensor<32x16xf32>, tensor<2x98x8xf32>) {
  %0 = conv_lower.im2col %x layout = nchw kernel = [1, 1] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<2x16x7x7xf32> -> tensor<98x16xf32>
  %1 = conv_lower.im2col %y layout = nhwc kernel = [1, 1] strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = hwc : tensor<2x7x7x16xf32> -> tensor<162x16xf32>
  %2 = conv_lower.im2col %y layout = nhwc kernel = [1, 1] strides = [2, 2] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = hwc : tensor<2x7x7x16xf32> -> tensor<32x16xf32>
  %3 = conv_lower.im2col %y layout = nhwc kernel = [1, 1] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 2 k_order = hwc : tensor<2x7x7x16xf32> -> tensor<2x98x8xf32>
  return %0, %1, %2, %3 : tensor<98x16xf32>, tensor<162x16xf32>, tensor<32x16xf32>, tensor<2x98x8xf32>
}

// -----

// A single-group NHWC fold only unflattens, with a dynamic batch too.
// CHECK-LABEL: func.func @fold_nhwc
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] output_shape [2, 4, 4, 8] : tensor<32x8xf32> into tensor<2x4x4x8xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] output_shape [%{{.*}}, 4, 4, 8] : tensor<?x8xf32> into tensor<?x4x4x8xf32>
// CHECK-NOT: conv_lower.fold
func.func @fold_nhwc(%y: tensor<32x8xf32>, %z: tensor<?x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<?x4x4x8xf32>) {
  %0 = conv_lower.fold %y layout = nhwc output_size = [4, 4] : tensor<32x8xf32> -> tensor<2x4x4x8xf32>
  %1 = conv_lower.fold %z layout = nhwc output_size = [4, 4] : tensor<?x8xf32> -> tensor<?x4x4x8xf32>
  return %0, %1 : tensor<2x4x4x8xf32>, tensor<?x4x4x8xf32>
}

// -----

// NCHW folds transpose: kept.
// CHECK-LABEL: func.func @fold_nchw_kept
// CHECK: conv_lower.fold
func.func @fold_nchw_kept(%y: tensor<32x8xf32>) -> tensor<2x8x4x4xf32> {
  %0 = conv_lower.fold %y layout = nchw output_size = [4, 4] : tensor<32x8xf32> -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}
