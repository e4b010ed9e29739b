// RUN: conv-opt %s --conv-lower-lift-to-2d --canonicalize | FileCheck %s
// RUN: conv-opt %s --conv-lower-lift-to-2d --conv-lower-im2col | FileCheck %s --check-prefix=IM2COL
//
// 1-D and batchless convolutions become the 2-D named forms with unit dims;
// a zero pad and a fill init are rebuilt after the reshapes, so that the 2-D
// rewrites absorb the pad and the GPU kernel sees a constant-fill init.
// test/Integration/CPU/conv-ranks.test checks the numbers on every route.

// CHECK-LABEL: func.func @conv1d_nwc
// CHECK-SAME:    (%[[X:.+]]: tensor<?x10x4xf32>, %[[W:.+]]: tensor<3x4x8xf32>)
// CHECK:         %[[XE:.+]] = tensor.expand_shape %[[X]] {{\[\[}}0], [1, 2], [3]] output_shape [%{{.+}}, 1, 10, 4]
// CHECK:         %[[XP:.+]] = tensor.pad %[[XE]] low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK:         %[[WE:.+]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2], [3]] output_shape [1, 3, 4, 8]
// CHECK:         %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<?x1x4x8xf32>)
// CHECK:         %[[Y:.+]] = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<[1, 3]> : tensor<2xi64>} ins(%[[XP]], %[[WE]] : {{.*}}) outs(%[[F]] : tensor<?x1x4x8xf32>)
// CHECK:         tensor.collapse_shape %[[Y]] {{\[\[}}0], [1, 2], [3]] : tensor<?x1x4x8xf32> into tensor<?x4x8xf32>
// The pad is absorbed by the im2col rewrite after the lift:
// IM2COL-LABEL:  func.func @conv1d_nwc
// IM2COL-NOT:      tensor.pad
// IM2COL:          conv_lower.im2col %{{.+}} layout = nhwc kernel = [1, 3] strides = [1, 3] dilations = [1, 1] padding = [0, 1, 0, 1]
// IM2COL-NOT:      linalg.conv
// IM2COL-LABEL:  func.func @conv1d_ncw
func.func @conv1d_nwc(%x: tensor<?x10x4xf32>, %w: tensor<3x4x8xf32>) -> tensor<?x4x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x10x4xf32>
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 0] high[0, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index):
    tensor.yield %z : f32
  } : tensor<?x10x4xf32> to tensor<?x12x4xf32>
  %e = tensor.empty(%n) : tensor<?x4x8xf32>
  %init = linalg.fill ins(%z : f32) outs(%e : tensor<?x4x8xf32>) -> tensor<?x4x8xf32>
  %y = linalg.conv_1d_nwc_wcf {strides = dense<3> : tensor<1xi64>, dilations = dense<1> : tensor<1xi64>} ins(%p, %w : tensor<?x12x4xf32>, tensor<3x4x8xf32>) outs(%init : tensor<?x4x8xf32>) -> tensor<?x4x8xf32>
  return %y : tensor<?x4x8xf32>
}

// CHECK-LABEL: func.func @conv1d_ncw
// CHECK:         linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.+}}, %{{.+}} : tensor<1x5x1x9xf16>, tensor<3x5x1x2xf16>) outs(%{{.+}} : tensor<1x3x1x7xf32>)
func.func @conv1d_ncw(%x: tensor<1x5x9xf16>, %w: tensor<3x5x2xf16>, %init: tensor<1x3x7xf32>) -> tensor<1x3x7xf32> {
  %y = linalg.conv_1d_ncw_fcw {strides = dense<1> : tensor<1xi64>, dilations = dense<2> : tensor<1xi64>} ins(%x, %w : tensor<1x5x9xf16>, tensor<3x5x2xf16>) outs(%init : tensor<1x3x7xf32>) -> tensor<1x3x7xf32>
  return %y : tensor<1x3x7xf32>
}

// CHECK-LABEL: func.func @depthwise1d
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%{{.+}}, %{{.+}} : tensor<2x1x8x4xf32>, tensor<1x3x4xf32>) outs(%{{.+}} : tensor<2x1x6x4xf32>)
// CHECK:         linalg.depthwise_conv_2d_nchw_chw {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x3x1x10xf32>, tensor<3x1x2xf32>) outs(%{{.+}} : tensor<1x3x1x3xf32>)
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwcm {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x1x7x2xf32>, tensor<1x3x2x3xf32>) outs(%{{.+}} : tensor<1x1x3x2x3xf32>)
func.func @depthwise1d(%x: tensor<2x8x4xf32>, %w: tensor<3x4xf32>, %i: tensor<2x6x4xf32>,
                       %x2: tensor<1x3x10xf32>, %w2: tensor<3x2xf32>, %i2: tensor<1x3x3xf32>,
                       %x3: tensor<1x7x2xf32>, %w3: tensor<3x2x3xf32>, %i3: tensor<1x3x2x3xf32>)
    -> (tensor<2x6x4xf32>, tensor<1x3x3xf32>, tensor<1x3x2x3xf32>) {
  %a = linalg.depthwise_conv_1d_nwc_wc {strides = dense<1> : tensor<1xi64>, dilations = dense<1> : tensor<1xi64>} ins(%x, %w : tensor<2x8x4xf32>, tensor<3x4xf32>) outs(%i : tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %b = linalg.depthwise_conv_1d_ncw_cw {strides = dense<3> : tensor<1xi64>, dilations = dense<1> : tensor<1xi64>} ins(%x2, %w2 : tensor<1x3x10xf32>, tensor<3x2xf32>) outs(%i2 : tensor<1x3x3xf32>) -> tensor<1x3x3xf32>
  %c = linalg.depthwise_conv_1d_nwc_wcm {strides = dense<1> : tensor<1xi64>, dilations = dense<2> : tensor<1xi64>} ins(%x3, %w3 : tensor<1x7x2xf32>, tensor<3x2x3xf32>) outs(%i3 : tensor<1x3x2x3xf32>) -> tensor<1x3x2x3xf32>
  return %a, %b, %c : tensor<2x6x4xf32>, tensor<1x3x3xf32>, tensor<1x3x2x3xf32>
}

// No batch, no channels.
// CHECK-LABEL: func.func @batchless
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x1x12x1xf32>, tensor<1x4x1x1xf32>) outs(%{{.+}} : tensor<1x1x9x1xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.+}}, %{{.+}} : tensor<1x6x7x1xi8>, tensor<3x2x1x1xi8>) outs(%{{.+}} : tensor<1x4x6x1xi32>)
// CHECK:         linalg.conv_3d_ndhwc_dhwcf {dilations = dense<1> : tensor<3xi64>, strides = dense<1> : tensor<3xi64>} ins(%{{.+}}, %{{.+}} : tensor<1x5x6x7x1xf32>, tensor<2x3x2x1x1xf32>) outs(%{{.+}} : tensor<1x4x4x6x1xf32>)
// IM2COL-LABEL:  func.func @batchless
// IM2COL-NOT:      = linalg.conv
func.func @batchless(%x: tensor<12xf32>, %w: tensor<4xf32>, %i: tensor<9xf32>,
                     %x2: tensor<6x7xi8>, %w2: tensor<3x2xi8>, %i2: tensor<4x6xi32>,
                     %x3: tensor<5x6x7xf32>, %w3: tensor<2x3x2xf32>, %i3: tensor<4x4x6xf32>) -> (tensor<9xf32>, tensor<4x6xi32>, tensor<4x4x6xf32>) {
  %a = linalg.conv_1d ins(%x, %w : tensor<12xf32>, tensor<4xf32>) outs(%i : tensor<9xf32>) -> tensor<9xf32>
  %b = linalg.conv_2d ins(%x2, %w2 : tensor<6x7xi8>, tensor<3x2xi8>) outs(%i2 : tensor<4x6xi32>) -> tensor<4x6xi32>
  %c = linalg.conv_3d ins(%x3, %w3 : tensor<5x6x7xf32>, tensor<2x3x2xf32>) outs(%i3 : tensor<4x4x6xf32>) -> tensor<4x4x6xf32>
  return %a, %b, %c : tensor<9xf32>, tensor<4x6xi32>, tensor<4x4x6xf32>
}

// IREE's batchless channels-last generics ((h, w, c) images, as IREE writes
// a convolution once it has dropped a unit batch): the NHWC named forms with
// N = 1, strides and dilations from the maps, the pad rebuilt after the
// reshape. The im2col rewrite (and conv-lower-implicit-gemm, which lifts
// first: test/Transforms/GPU/conv-lower-implicit-gemm-batchless.mlir) then
// take them.
// CHECK-LABEL: func.func @batchless_generics
// CHECK:         %[[XE:.+]] = tensor.expand_shape %{{.+}} {{\[\[}}0, 1], [2], [3]] output_shape [1, 9, 9, 16]
// CHECK:         %[[XP:.+]] = tensor.pad %[[XE]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         linalg.conv_2d_nhwc_hwcf {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[1, 2]> : tensor<2xi64>} ins(%[[XP]], %{{.+}} : tensor<1x11x11x16xbf16>, tensor<3x3x16x8xbf16>) outs(%{{.+}} : tensor<1x7x5x8xf32>)
// CHECK:         tensor.collapse_shape %{{.+}} {{\[\[}}0, 1], [2], [3]] : tensor<1x7x5x8xf32> into tensor<7x5x8xf32>
// CHECK:         linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.+}}, %{{.+}} : tensor<1x6x6x4xf32>, tensor<2x3x3x4xf32>) outs(%{{.+}} : tensor<1x4x4x2xf32>)
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%{{.+}}, %{{.+}} : tensor<1x8x8x32xf32>, tensor<3x3x32xf32>) outs(%{{.+}} : tensor<1x6x6x32xf32>)
// CHECK-NOT:     linalg.generic
// IM2COL-LABEL:  func.func @batchless_generics
// IM2COL-NOT:      tensor.pad
// IM2COL:          conv_lower.im2col %{{.+}} layout = nhwc kernel = [3, 3] strides = [1, 2] dilations = [2, 1] padding = [1, 1, 1, 1]
// IM2COL-NOT:      linalg.generic {{.*}}"reduction", "reduction", "reduction"
func.func @batchless_generics(%x: tensor<9x9x16xbf16>, %w: tensor<3x3x16x8xbf16>,
                              %x2: tensor<6x6x4xf32>, %w2: tensor<2x3x3x4xf32>, %i2: tensor<4x4x2xf32>,
                              %x3: tensor<8x8x32xf32>, %w3: tensor<3x3x32xf32>, %i3: tensor<6x6x32xf32>)
    -> (tensor<7x5x8xf32>, tensor<4x4x2xf32>, tensor<6x6x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : bf16
  %p = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zh : bf16
  } : tensor<9x9x16xbf16> to tensor<11x11x16xbf16>
  %empty = tensor.empty() : tensor<7x5x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<7x5x8xf32>) -> tensor<7x5x8xf32>
  %a = linalg.generic {indexing_maps = [
        affine_map<(oh, ow, f, kh, kw, c) -> (oh + kh * 2, ow * 2 + kw, c)>,
        affine_map<(oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>,
        affine_map<(oh, ow, f, kh, kw, c) -> (oh, ow, f)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%p, %w : tensor<11x11x16xbf16>, tensor<3x3x16x8xbf16>) outs(%init : tensor<7x5x8xf32>) {
  ^bb0(%u: bf16, %v: bf16, %acc: f32):
    %eu = arith.extf %u : bf16 to f32
    %ev = arith.extf %v : bf16 to f32
    %m = arith.mulf %eu, %ev : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x5x8xf32>
  %b = linalg.generic {indexing_maps = [
        affine_map<(kh, kw, c, oh, ow, f) -> (oh + kh, ow + kw, c)>,
        affine_map<(kh, kw, c, oh, ow, f) -> (f, kh, kw, c)>,
        affine_map<(kh, kw, c, oh, ow, f) -> (oh, ow, f)>],
      iterator_types = ["reduction", "reduction", "reduction", "parallel", "parallel", "parallel"]}
      ins(%x2, %w2 : tensor<6x6x4xf32>, tensor<2x3x3x4xf32>) outs(%i2 : tensor<4x4x2xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %v, %u : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x4x2xf32>
  %c = linalg.generic {indexing_maps = [
        affine_map<(oh, ow, c, kh, kw) -> (oh + kh, ow + kw, c)>,
        affine_map<(oh, ow, c, kh, kw) -> (kh, kw, c)>,
        affine_map<(oh, ow, c, kh, kw) -> (oh, ow, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x3, %w3 : tensor<8x8x32xf32>, tensor<3x3x32xf32>) outs(%i3 : tensor<6x6x32xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<6x6x32xf32>
  return %a, %b, %c : tensor<7x5x8xf32>, tensor<4x4x2xf32>, tensor<6x6x32xf32>
}

// Not lifted: 3-D and 2-D forms (the rewrites take them as they are),
// buffers.
// CHECK-LABEL: func.func @left_alone
// IM2COL-LABEL:  func.func @left_alone
// CHECK:         linalg.conv_3d_ndhwc_dhwcf
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} : tensor<1x5x5x2xf32>
// CHECK:         linalg.conv_1d_nwc_wcf {{.*}} memref
func.func @left_alone(%x: tensor<1x4x4x4x2xf32>, %w: tensor<2x2x2x2x3xf32>, %i: tensor<1x3x3x3x3xf32>,
                      %x2: tensor<1x5x5x2xf32>, %w2: tensor<2x2x2x3xf32>, %i2: tensor<1x4x4x3xf32>,
                      %bx: memref<1x5x2xf32>, %bw: memref<2x2x3xf32>, %bi: memref<1x4x3xf32>)
    -> (tensor<1x3x3x3x3xf32>, tensor<1x4x4x3xf32>) {
  %a = linalg.conv_3d_ndhwc_dhwcf {strides = dense<1> : tensor<3xi64>, dilations = dense<1> : tensor<3xi64>} ins(%x, %w : tensor<1x4x4x4x2xf32>, tensor<2x2x2x2x3xf32>) outs(%i : tensor<1x3x3x3x3xf32>) -> tensor<1x3x3x3x3xf32>
  %b = linalg.conv_2d_nhwc_hwcf {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>} ins(%x2, %w2 : tensor<1x5x5x2xf32>, tensor<2x2x2x3xf32>) outs(%i2 : tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  linalg.conv_1d_nwc_wcf {strides = dense<1> : tensor<1xi64>, dilations = dense<1> : tensor<1xi64>} ins(%bx, %bw : memref<1x5x2xf32>, memref<2x2x3xf32>) outs(%bi : memref<1x4x3xf32>)
  return %a, %b : tensor<1x3x3x3x3xf32>, tensor<1x4x4x3xf32>
}
