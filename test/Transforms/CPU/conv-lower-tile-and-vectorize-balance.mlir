// RUN: conv-opt %s --conv-lower-tile-and-vectorize="tile-m=8 tile-n=16 tile-k=4 parallel-blocks=8 parallel-threads=2" --canonicalize | FileCheck %s
// RUN: conv-opt %s --conv-lower-tile-and-vectorize="tile-m=8 tile-n=16 tile-k=4 parallel-blocks=8" --canonicalize | FileCheck %s --check-prefix=COUNT

// parallel-threads: the threads' blocks are counted so that they split
// evenly among the threads where a count near parallel-blocks allows it.

// 112 rows in about 8 blocks: 7 blocks of 16 rows, which 2 threads share as
// 4 and 3 (one idle an eighth of the time: a 1x1 layer's 1568 rows at batch
// 8 ran in 8.4 ms so, 7.3 in 14 blocks). With the threads: 14 blocks of 8.
// CHECK-LABEL: func.func @odd_count
// CHECK: scf.forall (%{{.*}}) = (0) to (112) step (8)
// CHECK:   vector.contract {{.*}} : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
// COUNT-LABEL: func.func @odd_count
// COUNT: scf.forall (%{{.*}}) = (0) to (112) step (16)
func.func @odd_count(%a: tensor<112x36xf32>, %b: tensor<36x48xf32>, %c: tensor<112x48xf32>) -> tensor<112x48xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<112x36xf32>, tensor<36x48xf32>) outs(%c : tensor<112x48xf32>) -> tensor<112x48xf32>
  return %0 : tensor<112x48xf32>
}

// The batch dimension counts too: 2 x 7 blocks of 16 rows are 14, even,
// and stay so.
// CHECK-LABEL: func.func @batched
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2, 112) step (1, 16)
// COUNT-LABEL: func.func @batched
// COUNT: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (2, 112) step (1, 16)
func.func @batched(%a: tensor<2x112x36xf32>, %b: tensor<2x36x48xf32>, %c: tensor<2x112x48xf32>) -> tensor<2x112x48xf32> {
  %0 = linalg.batch_matmul ins(%a, %b : tensor<2x112x36xf32>, tensor<2x36x48xf32>) outs(%c : tensor<2x112x48xf32>) -> tensor<2x112x48xf32>
  return %0 : tensor<2x112x48xf32>
}

// Where no count within 4x of parallel-blocks divides evenly (56 rows: 7
// blocks of 8 or one of 56), the blocks stay as they were.
// CHECK-LABEL: func.func @no_even_count
// CHECK: scf.forall (%{{.*}}) = (0) to (56) step (8)
func.func @no_even_count(%a: tensor<56x36xf32>, %b: tensor<36x48xf32>, %c: tensor<56x48xf32>) -> tensor<56x48xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<56x36xf32>, tensor<36x48xf32>) outs(%c : tensor<56x48xf32>) -> tensor<56x48xf32>
  return %0 : tensor<56x48xf32>
}
