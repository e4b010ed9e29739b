// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="min-blocks=4 tile-n=16" \
// RUN:   --canonicalize | FileCheck %s
// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="min-blocks=4 tile-n=16 channels-first-min-rows=16" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=LOW

// Channels first, the W-first block GEMM's vector dimension is one image's
// output pixels. A 7x7 image has 49 (below channels-first-min-rows, 64 by
// default): in a batch of 8 (392 pixels, at least 4 x 64) the blocks take
// the rows-first GEMM instead, X_panel [49, K] x W^T [K, F] with the
// filters as vectors, and the fold's transpose into NCHW stays after the
// block loop.
// CHECK-LABEL: func.func @small_images_batched
// CHECK: %[[WT:.*]] = linalg.transpose ins(%{{.*}} : tensor<16x36xf32>)
// CHECK: %[[Y:.*]] = scf.forall (%[[N:.*]]) in (8) shared_outs(%{{.*}}) -> (tensor<392x16xf32>)
// CHECK:   linalg.matmul ins(%{{.*}}, %[[WT]] : tensor<49x36xf32>, tensor<36x16xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[Y]]
// CHECK: linalg.transpose ins(%[[E]] : tensor<1x8x7x7x16xf32>) {{.*}} permutation = [1, 0, 4, 2, 3]
// With the threshold at 16 pixels, 49 are enough: W first, no transpose.
// LOW-LABEL: func.func @small_images_batched
// LOW-NOT: linalg.transpose
// LOW: scf.forall
// LOW:   linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x36xf32>, tensor<36x49xf32>)
// LOW-NOT: linalg.transpose
func.func @small_images_batched(%x: tensor<8x4x9x9xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<8x16x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16x7x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16x7x7xf32>) -> tensor<8x16x7x7xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<8x4x9x9xf32>, tensor<16x4x3x3xf32>) outs(%init : tensor<8x16x7x7xf32>) -> tensor<8x16x7x7xf32>
  return %y : tensor<8x16x7x7xf32>
}

// One such image (49 pixels, under 4 x 64): pack-rhs's per-call transpose
// of W would cost more than the short vectors do; W first.
// CHECK-LABEL: func.func @small_image_alone
// CHECK-NOT: linalg.transpose
// CHECK: scf.forall
// CHECK:   linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<{{[0-9]+}}x36xf32>, tensor<36x49xf32>)
// CHECK-NOT: linalg.transpose
func.func @small_image_alone(%x: tensor<1x4x9x9xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<1x16x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x7x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x4x9x9xf32>, tensor<16x4x3x3xf32>) outs(%init : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  return %y : tensor<1x16x7x7xf32>
}
