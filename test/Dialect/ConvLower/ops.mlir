// RUN: conv-opt %s | FileCheck %s
// Round trip through the custom form, and through the generic form.
// RUN: conv-opt %s | conv-opt | FileCheck %s
// RUN: conv-opt %s --mlir-print-op-generic | conv-opt | FileCheck %s

// CHECK-LABEL: func.func @im2col_nchw
// CHECK: conv_lower.im2col %{{.*}} layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<256x72xf32>
func.func @im2col_nchw(%x: tensor<1x8x16x16xf32>) -> tensor<256x72xf32> {
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1]
         dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = chw
       : tensor<1x8x16x16xf32> -> tensor<256x72xf32>
  return %0 : tensor<256x72xf32>
}

// Grouped, strided, dilated, asymmetric padding, HWC K order:
// Ho = (9 + 0 + 2 - 2*(3-1) - 1) / 2 + 1 = 4, Wo = (9 + 1 + 0 - 4 - 1) / 2 + 1 = 3.
// CHECK-LABEL: func.func @im2col_nhwc_grouped
// CHECK: conv_lower.im2col %{{.*}} layout = nhwc kernel = [3, 3] strides = [2, 2] dilations = [2, 2] padding = [0, 1, 2, 0] groups = 4 k_order = hwc : tensor<2x9x9x8xf16> -> tensor<4x24x18xf16>
func.func @im2col_nhwc_grouped(%x: tensor<2x9x9x8xf16>) -> tensor<4x24x18xf16> {
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3] strides = [2, 2]
         dilations = [2, 2] padding = [0, 1, 2, 0] groups = 4 k_order = hwc
       : tensor<2x9x9x8xf16> -> tensor<4x24x18xf16>
  return %0 : tensor<4x24x18xf16>
}

// A dynamic batch makes M dynamic.
// CHECK-LABEL: func.func @im2col_dynamic_batch
// CHECK: conv_lower.im2col {{.*}} : tensor<?x3x8x8xbf16> -> tensor<?x27xbf16>
func.func @im2col_dynamic_batch(%x: tensor<?x3x8x8xbf16>) -> tensor<?x27xbf16> {
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1]
         dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = chw
       : tensor<?x3x8x8xbf16> -> tensor<?x27xbf16>
  return %0 : tensor<?x27xbf16>
}

// CHECK-LABEL: func.func @fold_nchw
// CHECK: conv_lower.fold %{{.*}} layout = nchw output_size = [16, 16] : tensor<256x32xf32> -> tensor<1x32x16x16xf32>
func.func @fold_nchw(%y: tensor<256x32xf32>) -> tensor<1x32x16x16xf32> {
  %0 = conv_lower.fold %y layout = nchw output_size = [16, 16]
       : tensor<256x32xf32> -> tensor<1x32x16x16xf32>
  return %0 : tensor<1x32x16x16xf32>
}

// CHECK-LABEL: func.func @fold_nhwc_grouped_dynamic
// CHECK: conv_lower.fold %{{.*}} layout = nhwc output_size = [4, 3] : tensor<4x?x6xi32> -> tensor<?x4x3x24xi32>
func.func @fold_nhwc_grouped_dynamic(%y: tensor<4x?x6xi32>) -> tensor<?x4x3x24xi32> {
  %0 = conv_lower.fold %y layout = nhwc output_size = [4, 3]
       : tensor<4x?x6xi32> -> tensor<?x4x3x24xi32>
  return %0 : tensor<?x4x3x24xi32>
}

// 3-D (NDHWC, strided in depth, padded low/high per dim) and 1-D (NCW):
// Od = (6 + 1 + 1 - 3) / 2 + 1 = 3, Oh = Ow = 6 - 3 + 1 = 4.
// CHECK-LABEL: func.func @im2col_3d
// CHECK: conv_lower.im2col %{{.*}} layout = nhwc kernel = [3, 3, 3] strides = [2, 1, 1] dilations = [1, 1, 1] padding = [1, 0, 0, 1, 0, 0] groups = 1 k_order = hwc : tensor<2x6x6x6x4xf32> -> tensor<96x108xf32>
// CHECK: conv_lower.fold %{{.*}} layout = nhwc output_size = [3, 4, 4] : tensor<96x8xf32> -> tensor<2x3x4x4x8xf32>
func.func @im2col_3d(%x: tensor<2x6x6x6x4xf32>, %y: tensor<96x8xf32>) -> (tensor<96x108xf32>, tensor<2x3x4x4x8xf32>) {
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3, 3] strides = [2, 1, 1]
         dilations = [1, 1, 1] padding = [1, 0, 0, 1, 0, 0] groups = 1 k_order = hwc
       : tensor<2x6x6x6x4xf32> -> tensor<96x108xf32>
  %1 = conv_lower.fold %y layout = nhwc output_size = [3, 4, 4]
       : tensor<96x8xf32> -> tensor<2x3x4x4x8xf32>
  return %0, %1 : tensor<96x108xf32>, tensor<2x3x4x4x8xf32>
}

// CHECK-LABEL: func.func @im2col_1d
// CHECK: conv_lower.im2col %{{.*}} layout = nchw kernel = [3] strides = [2] dilations = [1] padding = [1, 0] groups = 2 k_order = chw : tensor<1x4x9xf32> -> tensor<2x4x6xf32>
// CHECK: conv_lower.fold %{{.*}} layout = nchw output_size = [4] : tensor<2x4x3xf32> -> tensor<1x6x4xf32>
func.func @im2col_1d(%x: tensor<1x4x9xf32>, %y: tensor<2x4x3xf32>) -> (tensor<2x4x6xf32>, tensor<1x6x4xf32>) {
  %0 = conv_lower.im2col %x layout = nchw kernel = [3] strides = [2] dilations = [1]
         padding = [1, 0] groups = 2 k_order = chw : tensor<1x4x9xf32> -> tensor<2x4x6xf32>
  %1 = conv_lower.fold %y layout = nchw output_size = [4] : tensor<2x4x3xf32> -> tensor<1x6x4xf32>
  return %0, %1 : tensor<2x4x6xf32>, tensor<1x6x4xf32>
}

// AVX512-VNNI's VPDPBUSD, in its three widths.
// CHECK-LABEL: func.func @dot_u8s8
// CHECK: conv_lower.avx512.dot.u8s8 %{{.*}}, %{{.*}}, %{{.*}} : vector<64xi8> -> vector<16xi32>
// CHECK: conv_lower.avx512.dot.u8s8 %{{.*}}, %{{.*}}, %{{.*}} : vector<32xi8> -> vector<8xi32>
// CHECK: conv_lower.avx512.dot.u8s8 %{{.*}}, %{{.*}}, %{{.*}} : vector<16xi8> -> vector<4xi32>
func.func @dot_u8s8(%c16: vector<16xi32>, %a64: vector<64xi8>, %c8: vector<8xi32>, %a32: vector<32xi8>, %c4: vector<4xi32>, %a16: vector<16xi8>) -> (vector<16xi32>, vector<8xi32>, vector<4xi32>) {
  %0 = conv_lower.avx512.dot.u8s8 %c16, %a64, %a64 : vector<64xi8> -> vector<16xi32>
  %1 = conv_lower.avx512.dot.u8s8 %c8, %a32, %a32 : vector<32xi8> -> vector<8xi32>
  %2 = conv_lower.avx512.dot.u8s8 %c4, %a16, %a16 : vector<16xi8> -> vector<4xi32>
  return %0, %1, %2 : vector<16xi32>, vector<8xi32>, vector<4xi32>
}
