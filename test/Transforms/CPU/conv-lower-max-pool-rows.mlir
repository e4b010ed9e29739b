// RUN: conv-opt %s --conv-lower-max-pool-rows="tile-columns=8" --canonicalize | FileCheck %s
// RUN: conv-opt %s --conv-lower-max-pool-rows --canonicalize | FileCheck %s --check-prefix=NARROW
// RUN: not conv-opt %s --conv-lower-max-pool-rows="tile-columns=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: conv-lower-max-pool-rows: the tile sizes must be positive
// Every function here through the whole CPU pipeline.
// RUN: conv-opt %s --conv-lower-to-llvm -o /dev/null

// ResNet's pooling (3x3, stride 2, padding 1 by -inf): one scf.forall over
// (image, output row), the row filled with -inf inside it; the first output
// row (its window's top tap in the padding) takes the two rows below, the
// others all three; in each row the first column takes two columns, the rest
// three, each a register tile of columns x 16 channels and one window row,
// vectorized into maxima of channel vectors. No padded copy of the image.
// CHECK-LABEL: func.func @stem_pool
// CHECK-NOT: tensor.pad
// CHECK: scf.forall (%[[N:.*]], %[[OH:.*]]) in (2, 8)
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x1x8x32xf32>)
// CHECK:   arith.cmpi ult, %[[OH]], %c1
// CHECK:   scf.if
// First row, first column: window rows 0-1, columns 0-1.
// CHECK:     tensor.extract_slice %{{.*}}[%[[N]], %{{.*}}, 0, 0] [1, 2, 2, 32]
// CHECK:     vector.transfer_read {{.*}} : tensor<1x2x16xf32>, vector<1x2x16xf32>
// CHECK-COUNT-2: arith.maximumf {{.*}} : vector<1x1x16xf32>
// First row, the other seven columns: window columns 1-15.
// CHECK:     tensor.extract_slice %{{.*}}[%[[N]], %{{.*}}, 1, 0] [1, 2, 15, 32]
// CHECK:   else
// CHECK:     tensor.extract_slice %{{.*}}[%[[N]], %{{.*}}, 0, 0] [1, 3, 2, 32]
// CHECK:     tensor.extract_slice %{{.*}}[%[[N]], %{{.*}}, 1, 0] [1, 3, 15, 32]
// CHECK-COUNT-21: arith.maximumf {{.*}} : vector<1x1x16xf32>
// CHECK: tensor.parallel_insert_slice
// CHECK-NOT: linalg.pooling_nhwc_max
// By default, tiles of two output columns (each reading five): the interior
// of seven columns in tiles of one.
// NARROW-LABEL: func.func @stem_pool
// NARROW: vector.transfer_read {{.*}} : tensor<1x3x16xf32>, vector<1x3x16xf32>
// NARROW-NOT: vector<1x15x16xf32>
func.func @stem_pool(%x: tensor<2x16x16x32xf32>) -> tensor<2x8x8x32xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %ninf : f32
  } : tensor<2x16x16x32xf32> to tensor<2x18x18x32xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<2x8x8x32xf32>
  %i = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x8x8x32xf32>) -> tensor<2x8x8x32xf32>
  %y = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%p, %w : tensor<2x18x18x32xf32>, tensor<3x3xf32>) outs(%i : tensor<2x8x8x32xf32>) -> tensor<2x8x8x32xf32>
  return %y : tensor<2x8x8x32xf32>
}

// No padding: one piece per row, no scf.if; three columns x two taps a
// window row.
// CHECK-LABEL: func.func @unpadded
// CHECK: scf.forall (%{{.*}}) in (3)
// CHECK-NOT: scf.if
// CHECK: vector.transfer_read {{.*}} : tensor<1x8x16xf32>, vector<1x8x16xf32>
// CHECK-COUNT-6: arith.maximumf {{.*}} : vector<1x1x16xf32>
// CHECK-NOT: linalg.pooling_nhwc_max
func.func @unpadded(%x: tensor<1x8x8x16xf32>) -> tensor<1x3x3x16xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %w = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<1x3x3x16xf32>
  %i = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x3x3x16xf32>) -> tensor<1x3x3x16xf32>
  %y = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>}
    ins(%x, %w : tensor<1x8x8x16xf32>, tensor<2x2xf32>) outs(%i : tensor<1x3x3x16xf32>) -> tensor<1x3x3x16xf32>
  return %y : tensor<1x3x3x16xf32>
}

// A zero padding is not max pooling's (a window of negative pixels would see
// the 0): left to the generic lowering, and so are channels-first poolings.
// CHECK-LABEL: func.func @zero_padded
// CHECK: tensor.pad
// CHECK: linalg.pooling_nhwc_max
// CHECK-NOT: scf.forall
func.func @zero_padded(%x: tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x16xf32> to tensor<1x10x10x16xf32>
  %w = tensor.empty() : tensor<3x3xf32>
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %i = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %y = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : tensor<1x10x10x16xf32>, tensor<3x3xf32>) outs(%i : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %y : tensor<1x8x8x16xf32>
}

// CHECK-LABEL: func.func @nchw
// CHECK: linalg.pooling_nchw_max
// CHECK-NOT: scf.forall
func.func @nchw(%x: tensor<1x16x8x8xf32>) -> tensor<1x16x4x4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %w = tensor.empty() : tensor<2x2xf32>
  %e = tensor.empty() : tensor<1x16x4x4xf32>
  %i = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : tensor<1x16x8x8xf32>, tensor<2x2xf32>) outs(%i : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %y : tensor<1x16x4x4xf32>
}
