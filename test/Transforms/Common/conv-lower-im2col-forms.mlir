// RUN: conv-opt %s --conv-lower-im2col --canonicalize --cse | FileCheck %s

// Maps of the emitted contractions: (m, n, k) for matmul, (g, m, f, k) for the
// grouped forms.
// CHECK-DAG: #[[$MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$NK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$GMK:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$GMF:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[$GFK:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$FGK:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d0, d3)>
// CHECK-DAG: #[[$GK:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK-DAG: #[[$KG:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d0)>
// CHECK-DAG: #[[$KGF:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d0, d2)>


// The zero pad is absorbed (top 1, right 1); FCHW filters reshape to [F, K]
// and meet X_col through a transposed-B matmul.
// CHECK-LABEL: func.func @nchw_fchw_padded
// CHECK-NOT: tensor.pad
// CHECK-DAG: %[[B:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] : tensor<6x4x3x3xf32> into tensor<6x36xf32>
// CHECK-DAG: %[[A:.*]] = conv_lower.im2col %{{.*}} layout = nchw kernel = [3, 3] strides = [2, 2] dilations = [1, 1] padding = [1, 0, 0, 1] groups = 1 k_order = chw : tensor<2x4x8x8xf32> -> tensor<32x36xf32>
// CHECK: %[[C:.*]] = linalg.matmul indexing_maps = [#[[$MK]], #[[$NK]], #[[$MN]]] ins(%[[A]], %[[B]] : {{.*}}) outs(%{{.*}} : tensor<32x6xf32>)
// CHECK: %[[Y:.*]] = conv_lower.fold %[[C]] layout = nchw output_size = [4, 4] : tensor<32x6xf32> -> tensor<2x6x4x4xf32>
// CHECK-NOT: linalg.add
// CHECK: return %[[Y]]
func.func @nchw_fchw_padded(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x4x4xf32> {
  %c0 = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 0] high[0, 0, 0, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : f32
  } : tensor<2x4x8x8xf32> to tensor<2x4x9x9xf32>
  %e = tensor.empty() : tensor<2x6x4x4xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32>
  %y = linalg.conv_2d_nchw_fchw {strides = dense<2> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%p, %w : tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) outs(%f : tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32>
  return %y : tensor<2x6x4x4xf32>
}


// HWCF is already [K, F]: a plain matmul. The arbitrary init is added back.
// CHECK-LABEL: func.func @nhwc_hwcf
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] : tensor<3x3x4x16xf32> into tensor<36x16xf32>
// CHECK-DAG: conv_lower.im2col %{{.*}} layout = nhwc kernel = [3, 3] strides = [1, 1] dilations = [2, 2] padding = [0, 0, 0, 0] groups = 1 k_order = hwc : tensor<1x10x10x4xf32> -> tensor<36x36xf32>
// CHECK: linalg.matmul ins(
// CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2], [3]] output_shape [1, 6, 6, 16]
// CHECK: linalg.add ins(%[[E]], %{{.*}} : tensor<1x6x6x16xf32>, tensor<1x6x6x16xf32>)
func.func @nhwc_hwcf(%x: tensor<1x10x10x4xf32>, %w: tensor<3x3x4x16xf32>, %init: tensor<1x6x6x16xf32>) -> tensor<1x6x6x16xf32> {
  %y = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x10x10x4xf32>, tensor<3x3x4x16xf32>) outs(%init : tensor<1x6x6x16xf32>) -> tensor<1x6x6x16xf32>
  return %y : tensor<1x6x6x16xf32>
}


// Mixed precision: f16 operands, f32 accumulation in the matmul.
// CHECK-LABEL: func.func @nhwc_fhwc
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2, 3]] : tensor<16x3x3x4xf16> into tensor<16x36xf16>
// CHECK-DAG: conv_lower.im2col {{.*}} k_order = hwc : tensor<1x8x8x4xf16> -> tensor<36x36xf16>
// CHECK: linalg.matmul indexing_maps = [#[[$MK]], #[[$NK]], #[[$MN]]] ins({{.*}} : tensor<36x36xf16>, tensor<16x36xf16>) outs({{.*}} : tensor<36x16xf32>)
func.func @nhwc_fhwc(%x: tensor<1x8x8x4xf16>, %w: tensor<16x3x3x4xf16>) -> tensor<1x6x6x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x16xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x6x6x16xf32>) -> tensor<1x6x6x16xf32>
  %y = linalg.conv_2d_nhwc_fhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x4xf16>, tensor<16x3x3x4xf16>) outs(%f : tensor<1x6x6x16xf32>) -> tensor<1x6x6x16xf32>
  return %y : tensor<1x6x6x16xf32>
}


// FGCHW filters keep G in the middle: [Fg, G, K] read by a linalg.generic.
// CHECK-LABEL: func.func @ngchw_fgchw
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3, 4]] : tensor<3x2x4x3x3xf32> into tensor<3x2x36xf32>
// CHECK-DAG: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x4x6x6xf32> into tensor<1x8x6x6xf32>
// CHECK: conv_lower.im2col %[[X]] {{.*}} groups = 2 k_order = chw : tensor<1x8x6x6xf32> -> tensor<2x16x36xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$GMK]], #[[$FGK]], #[[$GMF]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: conv_lower.fold %{{.*}} layout = nchw output_size = [4, 4] : tensor<2x16x3xf32> -> tensor<1x6x4x4xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 3, 4, 4]
func.func @ngchw_fgchw(%x: tensor<1x2x4x6x6xf32>, %w: tensor<3x2x4x3x3xf32>, %init: tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32> {
  %y = linalg.conv_2d_ngchw_fgchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x2x4x6x6xf32>, tensor<3x2x4x3x3xf32>) outs(%init : tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  return %y : tensor<1x2x3x4x4xf32>
}


// GFCHW filters are [G, Fg, K]: a batch_matmul over groups.
// CHECK-LABEL: func.func @ngchw_gfchw
// CHECK: conv_lower.im2col {{.*}} groups = 2 k_order = chw : tensor<1x8x6x6xf32> -> tensor<2x16x36xf32>
// CHECK: linalg.batch_matmul indexing_maps = [#[[$GMK]], #[[$GFK]], #[[$GMF]]] ins({{.*}} : tensor<2x16x36xf32>, tensor<2x3x36xf32>)
func.func @ngchw_gfchw(%x: tensor<1x2x4x6x6xf32>, %w: tensor<2x3x4x3x3xf32>, %init: tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32> {
  %y = linalg.conv_2d_ngchw_gfchw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x2x4x6x6xf32>, tensor<2x3x4x3x3xf32>) outs(%init : tensor<1x2x3x4x4xf32>) -> tensor<1x2x3x4x4xf32>
  return %y : tensor<1x2x3x4x4xf32>
}


// i8 x i8 -> i32, grouped NHWGC.
// CHECK-LABEL: func.func @nhwgc_gfhwc
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] : tensor<1x6x6x2x4xi8> into tensor<1x6x6x8xi8>
// CHECK: conv_lower.im2col {{.*}} layout = nhwc {{.*}} groups = 2 k_order = hwc : tensor<1x6x6x8xi8> -> tensor<2x16x36xi8>
// CHECK: linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<2x16x3xi32>)
// CHECK: conv_lower.fold {{.*}} layout = nhwc output_size = [4, 4] : tensor<2x16x3xi32> -> tensor<1x4x4x6xi32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 2, 3]
func.func @nhwgc_gfhwc(%x: tensor<1x6x6x2x4xi8>, %w: tensor<2x3x3x3x4xi8>, %init: tensor<1x4x4x2x3xi32>) -> tensor<1x4x4x2x3xi32> {
  %y = linalg.conv_2d_nhwgc_gfhwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x6x6x2x4xi8>, tensor<2x3x3x3x4xi8>) outs(%init : tensor<1x4x4x2x3xi32>) -> tensor<1x4x4x2x3xi32>
  return %y : tensor<1x4x4x2x3xi32>
}


// Depthwise: G = C, Cg = 1, Fg = 1; B is [G, K] with no F dimension.
// CHECK-LABEL: func.func @depthwise_nchw_chw
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2]] : tensor<8x3x3xf32> into tensor<8x9xf32>
// CHECK-DAG: conv_lower.im2col {{.*}} groups = 8 k_order = chw : tensor<1x8x6x6xf32> -> tensor<8x16x9xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$GMK]], #[[$GK]], #[[$GMF]]]
// CHECK: conv_lower.fold %{{.*}} layout = nchw output_size = [4, 4] : tensor<8x16x1xf32> -> tensor<1x8x4x4xf32>
func.func @depthwise_nchw_chw(%x: tensor<1x8x6x6xf32>, %w: tensor<8x3x3xf32>, %init: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %y = linalg.depthwise_conv_2d_nchw_chw {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x6x6xf32>, tensor<8x3x3xf32>) outs(%init : tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %y : tensor<1x8x4x4xf32>
}


// Dynamic batch: M = N * Ho * Wo is computed at run time; bf16 -> f32.
// CHECK-LABEL: func.func @depthwise_nhwc_hwc_dynamic
// CHECK-DAG: %[[N:.*]] = tensor.dim %arg0, %c0 : tensor<?x6x6x8xbf16>
// CHECK-DAG: %[[M:.*]] = arith.muli %[[N]], %c16 : index
// CHECK-DAG: conv_lower.im2col {{.*}} groups = 8 k_order = hwc : tensor<?x6x6x8xbf16> -> tensor<8x?x9xbf16>
// CHECK-DAG: tensor.empty(%[[M]]) : tensor<8x?x1xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$GMK]], #[[$KG]], #[[$GMF]]]
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: conv_lower.fold {{.*}} : tensor<8x?x1xf32> -> tensor<?x4x4x8xf32>
func.func @depthwise_nhwc_hwc_dynamic(%x: tensor<?x6x6x8xbf16>, %w: tensor<3x3x8xbf16>, %init: tensor<?x4x4x8xf32>) -> tensor<?x4x4x8xf32> {
  %y = linalg.depthwise_conv_2d_nhwc_hwc {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<?x6x6x8xbf16>, tensor<3x3x8xbf16>) outs(%init : tensor<?x4x4x8xf32>) -> tensor<?x4x4x8xf32>
  return %y : tensor<?x4x4x8xf32>
}


// Depthwise with a channel multiplier: B is [K, G, Fg].
// CHECK-LABEL: func.func @depthwise_nhwc_hwcm
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<3x3x8x2xf32> into tensor<9x8x2xf32>
// CHECK: linalg.generic {indexing_maps = [#[[$GMK]], #[[$KGF]], #[[$GMF]]]
// CHECK: conv_lower.fold {{.*}} layout = nhwc output_size = [4, 4] : tensor<8x16x2xf32> -> tensor<1x4x4x16xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 8, 2]
func.func @depthwise_nhwc_hwcm(%x: tensor<1x6x6x8xf32>, %w: tensor<3x3x8x2xf32>, %init: tensor<1x4x4x8x2xf32>) -> tensor<1x4x4x8x2xf32> {
  %y = linalg.depthwise_conv_2d_nhwc_hwcm {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x6x6x8xf32>, tensor<3x3x8x2xf32>) outs(%init : tensor<1x4x4x8x2xf32>) -> tensor<1x4x4x8x2xf32>
  return %y : tensor<1x4x4x8x2xf32>
}


// Frontends (conv-run, torch-mlir) pad the rank-4 image and then split its
// channels into groups: the pad is absorbed through that expand_shape, and the
// im2col reads the unpadded image.
// CHECK-LABEL: func.func @grouped_pad_before_expand
// CHECK-NOT: tensor.pad
// CHECK-NOT: tensor.expand_shape %arg0
// CHECK: conv_lower.im2col %arg0 layout = nhwc kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [1, 2, 0, 1] groups = 2 k_order = hwc : tensor<1x6x6x8xf16> -> tensor<2x35x36xf16>
func.func @grouped_pad_before_expand(%x: tensor<1x6x6x8xf16>, %w: tensor<2x4x3x3x4xf16>) -> tensor<1x5x7x2x4xf32> {
  %c0 = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 1, 2, 0] high[0, 0, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : f16
  } : tensor<1x6x6x8xf16> to tensor<1x7x9x8xf16>
  %e = tensor.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [1, 7, 9, 2, 4] : tensor<1x7x9x8xf16> into tensor<1x7x9x2x4xf16>
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<1x5x7x2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<1x5x7x2x4xf32>) -> tensor<1x5x7x2x4xf32>
  %r = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%e, %w : tensor<1x7x9x2x4xf16>, tensor<2x4x3x3x4xf16>) outs(%f : tensor<1x5x7x2x4xf32>) -> tensor<1x5x7x2x4xf32>
  return %r : tensor<1x5x7x2x4xf32>
}
