// RUN: conv-opt %s --conv-lower-nchw-to-nhwc --canonicalize --split-input-file | FileCheck %s

// A padded, strided NCHW convolution: the image transposed to channels last
// and padded there (where the im2col rewrite absorbs the pad again), the
// filter to FHWC, a fresh zero fill (not a transposed one: the GEMM starts
// from a recognized fill), the NHWC convolution, its output transposed back.
// CHECK-LABEL: func.func @padded_strided
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x9x9xf32>, %[[W:.*]]: tensor<16x8x3x3xf32>)
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[X]] : tensor<2x8x9x9xf32>) outs(%{{.*}} : tensor<2x9x9x8xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[XP:.*]] = tensor.pad %[[XT]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: %[[WT:.*]] = linalg.transpose ins(%[[W]] : tensor<16x8x3x3xf32>) outs(%{{.*}} : tensor<16x3x3x8xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x5x5x16xf32>)
// CHECK: %[[Y:.*]] = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[XP]], %[[WT]] : {{.*}}) outs(%[[ACC]] : tensor<2x5x5x16xf32>)
// CHECK: %[[YT:.*]] = linalg.transpose ins(%[[Y]] : tensor<2x5x5x16xf32>) outs(%{{.*}} : tensor<2x16x5x5xf32>) permutation = [0, 3, 1, 2]
// CHECK: return %[[YT]]
func.func @padded_strided(%x: tensor<2x8x9x9xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<2x16x5x5xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x8x9x9xf32> to tensor<2x8x11x11xf32>
  %e = tensor.empty() : tensor<2x16x5x5xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x16x5x5xf32>) -> tensor<2x16x5x5xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
       ins(%padded, %w : tensor<2x8x11x11xf32>, tensor<16x8x3x3xf32>) outs(%init : tensor<2x16x5x5xf32>) -> tensor<2x16x5x5xf32>
  return %y : tensor<2x16x5x5xf32>
}

// -----

// Grouped and quantized (ConvModule's form: the image padded with its zero
// point, then split into groups): NHWGC with GFHWC filters and the zero
// points; the unpadded image is transposed and padded with the zero point
// there. The init (not a fill) is transposed, not remade.
// CHECK-LABEL: func.func @grouped_quantized
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<1x8x6x6xi8>, %{{.*}}, %[[INIT:[a-z0-9]+]]: tensor<1x4x2x6x6xi32>
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[X]] : tensor<1x8x6x6xi8>) {{.*}} permutation = [0, 2, 3, 1]
// CHECK: %[[XP:.*]] = tensor.pad %[[XT]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:   tensor.yield %c3_i8
// CHECK: %[[XG:.*]] = tensor.expand_shape %[[XP]] {{\[}}[0], [1], [2], [3, 4]] {{.*}} into tensor<1x8x8x4x2xi8>
// CHECK: %[[WT:.*]] = linalg.transpose ins(%{{.*}} : tensor<4x2x2x3x3xi8>) {{.*}} permutation = [0, 1, 3, 4, 2]
// CHECK: %[[ACC:.*]] = linalg.transpose ins(%[[INIT]] : tensor<1x4x2x6x6xi32>) {{.*}} permutation = [0, 3, 4, 1, 2]
// CHECK: %[[Y:.*]] = linalg.conv_2d_nhwgc_gfhwc_q {{.*}} ins(%[[XG]], %[[WT]], %{{.*}}, %{{.*}} : tensor<1x8x8x4x2xi8>, tensor<4x2x3x3x2xi8>, i32, i32) outs(%[[ACC]] : tensor<1x6x6x4x2xi32>)
// CHECK: linalg.transpose ins(%[[Y]] : tensor<1x6x6x4x2xi32>) {{.*}} permutation = [0, 3, 4, 1, 2]
func.func @grouped_quantized(%x: tensor<1x8x6x6xi8>, %w: tensor<8x2x3x3xi8>, %init: tensor<1x4x2x6x6xi32>) -> tensor<1x4x2x6x6xi32> {
  %zx = arith.constant 3 : i32
  %zw = arith.constant 0 : i32
  %pad = arith.constant 3 : i8
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %pad : i8
  } : tensor<1x8x6x6xi8> to tensor<1x8x8x8xi8>
  %xg = tensor.expand_shape %padded [[0], [1, 2], [3], [4]] output_shape [1, 4, 2, 8, 8] : tensor<1x8x8x8xi8> into tensor<1x4x2x8x8xi8>
  %wg = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [4, 2, 2, 3, 3] : tensor<8x2x3x3xi8> into tensor<4x2x2x3x3xi8>
  %y = linalg.conv_2d_ngchw_gfchw_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xg, %wg, %zx, %zw : tensor<1x4x2x8x8xi8>, tensor<4x2x2x3x3xi8>, i32, i32) outs(%init : tensor<1x4x2x6x6xi32>) -> tensor<1x4x2x6x6xi32>
  return %y : tensor<1x4x2x6x6xi32>
}

// -----

// Left alone: a 1x1 kernel (strided or not: its GEMM reads the planes as
// they are), a dynamic batch, and a channels-last convolution.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: linalg.transpose
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: linalg.conv_2d_nchw_fchw
// CHECK: linalg.conv_2d_nhwc_fhwc
// CHECK-NOT: linalg.transpose
func.func @left_alone(%x: tensor<1x8x8x8xf32>, %w: tensor<4x8x1x1xf32>, %i: tensor<1x4x4x4xf32>,
                      %xd: tensor<?x8x8x8xf32>, %w3: tensor<4x8x3x3xf32>, %id: tensor<?x4x6x6xf32>,
                      %xn: tensor<1x8x8x8xf32>, %wn: tensor<4x3x3x8xf32>, %in: tensor<1x6x6x4xf32>)
    -> (tensor<1x4x4x4xf32>, tensor<?x4x6x6xf32>, tensor<1x6x6x4xf32>) {
  %a = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
       ins(%x, %w : tensor<1x8x8x8xf32>, tensor<4x8x1x1xf32>) outs(%i : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %b = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xd, %w3 : tensor<?x8x8x8xf32>, tensor<4x8x3x3xf32>) outs(%id : tensor<?x4x6x6xf32>) -> tensor<?x4x6x6xf32>
  %c = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xn, %wn : tensor<1x8x8x8xf32>, tensor<4x3x3x8xf32>) outs(%in : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  return %a, %b, %c : tensor<1x4x4x4xf32>, tensor<?x4x6x6xf32>, tensor<1x6x6x4xf32>
}

// -----

// A conv-shaped linalg.generic stays as it is (its body may widen its
// operands in ways the named NHWC op would not: here unsigned).
// CHECK-LABEL: func.func @generic_left_alone
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic
// CHECK: arith.extui
func.func @generic_left_alone(%x: tensor<1x4x6x6xi8>, %w: tensor<8x4x3x3xi8>, %init: tensor<1x8x4x4xi32>) -> tensor<1x8x4x4xi32> {
  %y = linalg.generic {
      indexing_maps = [affine_map<(n, f, h, w, c, r, s) -> (n, c, h + r, w + s)>,
                       affine_map<(n, f, h, w, c, r, s) -> (f, c, r, s)>,
                       affine_map<(n, f, h, w, c, r, s) -> (n, f, h, w)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x4x6x6xi8>, tensor<8x4x3x3xi8>) outs(%init : tensor<1x8x4x4xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %ae = arith.extui %a : i8 to i32
    %be = arith.extsi %b : i8 to i32
    %m = arith.muli %ae, %be : i32
    %s = arith.addi %acc, %m : i32
    linalg.yield %s : i32
  } -> tensor<1x8x4x4xi32>
  return %y : tensor<1x8x4x4xi32>
}
