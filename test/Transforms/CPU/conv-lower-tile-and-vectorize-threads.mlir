// RUN: conv-opt %s --conv-lower-tile-and-vectorize="tile-m=8 tile-n=16 tile-k=4 parallel-blocks=4" --canonicalize | FileCheck %s

// parallel-blocks: an scf.forall of whole blocks around the register tiles,
// the units of work that threads share.

// More rows (64) than columns (48): blocks of 16 rows, a multiple of tile-m.
// CHECK-LABEL: func.func @rows
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (16)
// CHECK:   vector.contract {{.*}} : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
func.func @rows(%a: tensor<64x36xf32>, %b: tensor<36x48xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x36xf32>, tensor<36x48xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}

// The pointwise NCHW contraction Y[n, f, p] += W[f, c] * X[n, c, p] with 16
// filters and 256 pixels: the pixels are split (per image, blocks of 64, a
// whole vector tile), so that each block reads its slice of X once instead
// of every block of filters reading all of it.
// CHECK-LABEL: func.func @pixels
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2, 256) step (1, 64)
// CHECK:   vector.contract {{.*}} : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
func.func @pixels(%w: tensor<16x8xf32>, %x: tensor<2x8x256xf32>, %y: tensor<2x16x256xf32>) -> tensor<2x16x256xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(n, f, p, c) -> (f, c)>, affine_map<(n, f, p, c) -> (n, c, p)>, affine_map<(n, f, p, c) -> (n, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
       ins(%w, %x : tensor<16x8xf32>, tensor<2x8x256xf32>) outs(%y : tensor<2x16x256xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x16x256xf32>
  return %0 : tensor<2x16x256xf32>
}

// An accumulator that is a linalg.fill is fused into the blocks and then
// into each register tile, whose accumulators start as a splat of the
// fill's value in registers: no pass over the output zeroes it first (one
// over each whole block was 3.2 MB a block, past the L2, on r50's 128 -> 256
// 1x1 layer at batch 8: 11.4-12.7 -> 10.0-11.0 ms), and no tile reads zeros back.
// CHECK-LABEL: func.func @fill_fused
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x16xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%[[ROW:.*]]) = (0) to (64) step (16) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK:   %[[PART:.*]] = tensor.extract_slice %[[OUT]][%[[ROW]], 0] [16, 48]
// CHECK:   scf.for {{.*}} iter_args(%{{.*}} = %[[PART]])
// CHECK:     scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<8x16xf32>)
// CHECK:       vector.contract {{.*}} : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
// CHECK-NOT: linalg.fill
func.func @fill_fused(%a: tensor<64x36xf32>, %b: tensor<36x48xf32>) -> tensor<64x48xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x48xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x48xf32>) -> tensor<64x48xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x36xf32>, tensor<36x48xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}

// conv-lower-pack-filter-panels' contraction over (m, panel, column, k) with
// 8 rows and 16 panels of 16 filters: the threads' blocks are whole panels
// (4 of them per block), each tiled into 8x16 register tiles that read one
// contiguous [4, 16] slice of the panel per K step.
// CHECK-LABEL: func.func @filter_panels
// CHECK: scf.forall (%{{.*}}) = (0) to (16) step (4)
// CHECK:   vector.contract {{.*}} : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
func.func @filter_panels(%a: tensor<8x36xf32>, %b: tensor<16x36x16xf32>, %c: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(m, p, n, k) -> (m, k)>, affine_map<(m, p, n, k) -> (p, k, n)>, affine_map<(m, p, n, k) -> (m, p, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
       ins(%a, %b : tensor<8x36xf32>, tensor<16x36x16xf32>) outs(%c : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x16x16xf32>
  return %0 : tensor<8x16x16xf32>
}

// A batch-1 linear layer: a vector-matrix product (no M dimension once the
// unit row is folded away) whose columns are the threads' work, 1000 of
// them (no multiple of the 16-wide vector tile divides 1000: the widest
// blocks of half vectors that make at least 4, 200 columns, each tiled 16
// wide with a peeled 8-wide remainder). It ran on one thread before.
// CHECK-LABEL: func.func @vecmat_columns
// CHECK: scf.forall (%{{.*}}) = (0) to (1000) step (200)
// CHECK:   vector.contract {{.*}} into vector<16xf32>
// CHECK:   vector.contract {{.*}} into vector<8xf32>
func.func @vecmat_columns(%a: tensor<64xf32>, %b: tensor<64x1000xf32>, %c: tensor<1000xf32>) -> tensor<1000xf32> {
  %0 = linalg.vecmat ins(%a, %b : tensor<64xf32>, tensor<64x1000xf32>) outs(%c : tensor<1000xf32>) -> tensor<1000xf32>
  return %0 : tensor<1000xf32>
}

// The accumulator a reshape of a fill (conv-lower-pack-filter-panels'
// [M, N / w, w] view of the zeroed output): the fill is moved after the
// reshape and fused into the threads' blocks (MobileNetV2's 16 -> 96 1x1 at
// 112x112, batch 8: 4.67 -> 3.36 ms against one serial fill of the whole
// output), then into the register tiles, which start from zero splats.
// CHECK-LABEL: func.func @fill_through_reshape
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x16xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%[[ROW:.*]]) = (0) to (64) step (16) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK:   %[[PART:.*]] = tensor.extract_slice %[[OUT]][%[[ROW]], 0, 0] [16, 2, 16]
// CHECK:   scf.for {{.*}} iter_args(%{{.*}} = %[[PART]])
// CHECK:     scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]) -> (vector<8x16xf32>)
// CHECK-NOT: linalg.fill
func.func @fill_through_reshape(%a: tensor<64x36xf32>, %b: tensor<2x36x16xf32>) -> tensor<64x2x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = tensor.expand_shape %c [[0], [1, 2]] output_shape [64, 2, 16] : tensor<64x32xf32> into tensor<64x2x16xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(m, p, n, k) -> (m, k)>, affine_map<(m, p, n, k) -> (p, k, n)>, affine_map<(m, p, n, k) -> (m, p, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
       ins(%a, %b : tensor<64x36xf32>, tensor<2x36x16xf32>) outs(%r : tensor<64x2x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<64x2x16xf32>
  return %0 : tensor<64x2x16xf32>
}
