// RUN: conv-opt %s --conv-lower-pack-rhs | FileCheck %s

// B read as [N, K] (an FCHW filter reshaped): transposed once into [K, N],
// then a default-map matmul.
// CHECK-LABEL: func.func @matmul_transposed_b
// CHECK: %[[E:.*]] = tensor.empty() : tensor<36x6xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg1 : tensor<6x36xf32>) outs(%[[E]] : tensor<36x6xf32>) permutation = [1, 0]
// CHECK: linalg.matmul ins(%arg0, %[[T]] : tensor<32x36xf32>, tensor<36x6xf32>) outs(%arg2 : tensor<32x6xf32>)
func.func @matmul_transposed_b(%a: tensor<32x36xf32>, %b: tensor<6x36xf32>, %c: tensor<32x6xf32>) -> tensor<32x6xf32> {
  %0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
         ins(%a, %b : tensor<32x36xf32>, tensor<6x36xf32>) outs(%c : tensor<32x6xf32>) -> tensor<32x6xf32>
  return %0 : tensor<32x6xf32>
}

// Grouped: [G, Fg, K] into [G, K, Fg]; mixed precision is kept.
// CHECK-LABEL: func.func @batch_matmul_transposed_b
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg1 : tensor<2x3x36xf16>) outs(%{{.*}} : tensor<2x36x3xf16>) permutation = [0, 2, 1]
// CHECK: linalg.batch_matmul ins(%arg0, %[[T]] : tensor<2x16x36xf16>, tensor<2x36x3xf16>) outs(%arg2 : tensor<2x16x3xf32>)
func.func @batch_matmul_transposed_b(%a: tensor<2x16x36xf16>, %b: tensor<2x3x36xf16>, %c: tensor<2x16x3xf32>) -> tensor<2x16x3xf32> {
  %0 = linalg.batch_matmul indexing_maps = [affine_map<(g, m, n, k) -> (g, m, k)>, affine_map<(g, m, n, k) -> (g, n, k)>, affine_map<(g, m, n, k) -> (g, m, n)>]
         ins(%a, %b : tensor<2x16x36xf16>, tensor<2x3x36xf16>) outs(%c : tensor<2x16x3xf32>) -> tensor<2x16x3xf32>
  return %0 : tensor<2x16x3xf32>
}

// Already [K, N]: unchanged.
// CHECK-LABEL: func.func @natural_b
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul ins(%arg0, %arg1
func.func @natural_b(%a: tensor<32x36xf32>, %b: tensor<36x6xf32>, %c: tensor<32x6xf32>) -> tensor<32x6xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<32x36xf32>, tensor<36x6xf32>) outs(%c : tensor<32x6xf32>) -> tensor<32x6xf32>
  return %0 : tensor<32x6xf32>
}

// A transposed A is not this pass's business.
// CHECK-LABEL: func.func @transposed_a
// CHECK-NOT: linalg.transpose
func.func @transposed_a(%a: tensor<36x32xf32>, %b: tensor<36x6xf32>, %c: tensor<32x6xf32>) -> tensor<32x6xf32> {
  %0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
         ins(%a, %b : tensor<36x32xf32>, tensor<36x6xf32>) outs(%c : tensor<32x6xf32>) -> tensor<32x6xf32>
  return %0 : tensor<32x6xf32>
}
