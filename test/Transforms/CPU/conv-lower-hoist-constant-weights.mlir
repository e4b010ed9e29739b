// RUN: conv-opt %s --split-input-file --conv-lower-hoist-constant-weights --verify-diagnostics | FileCheck %s

// pack-rhs's transposed filter depends on the constant argument alone: it
// moves into @gemm_pack, which writes it into a new trailing argument; @gemm
// reads that argument and no longer transposes. The fill (constant, but not
// computed from the weights) stays.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: %[[W:.*]]: memref<16x8xf32> {conv_lower.constant}, %[[OUT:.*]]: memref<4x16xf32>, %[[P:.*]]: memref<8x16xf32>)
// CHECK-SAME: conv_lower.packed = [memref<8x16xf32>]
// CHECK: %[[WT:.*]] = bufferization.to_tensor %[[P]] restrict
// CHECK-NOT: linalg.transpose
// CHECK: linalg.fill
// CHECK: linalg.matmul ins(%{{.*}}, %[[WT]] :
// CHECK-LABEL: func.func @gemm_pack(
// CHECK-SAME: %{{.*}}: memref<16x8xf32>, %{{.*}}: memref<4x16xf32>, %[[PP:.*]]: memref<8x16xf32>)
// CHECK-SAME: conv_lower.packed = [memref<8x16xf32>], llvm.emit_c_interface
// CHECK: %[[T:.*]] = linalg.transpose
// CHECK: bufferization.materialize_in_destination %[[T]] in restrict writable %[[PP]]
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @gemm(%x: memref<4x8xf32>, %w: memref<16x8xf32> {conv_lower.constant}, %out: memref<4x16xf32>) attributes {llvm.emit_c_interface} {
  %xt = bufferization.to_tensor %x restrict : memref<4x8xf32> to tensor<4x8xf32>
  %wt = bufferization.to_tensor %w restrict : memref<16x8xf32> to tensor<16x8xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %wT = linalg.transpose ins(%wt : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  %c0 = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x16xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%o : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.matmul ins(%xt, %wT : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x16xf32>, memref<4x16xf32>) -> ()
  return
}

// -----

// A filter only reshaped costs nothing per call: nothing is hoisted, and
// the (empty) pack function still exists for callers.
// CHECK-LABEL: func.func @view_only(
// CHECK-SAME: %{{.*}}: memref<4x2x8xf32> {conv_lower.constant}, %{{.*}}: memref<4x8xf32>)
// CHECK-SAME: conv_lower.packed = []
// CHECK: tensor.collapse_shape
// CHECK-LABEL: func.func @view_only_pack(
// CHECK-NEXT: return
func.func @view_only(%x: memref<4x8xf32>, %w: memref<4x2x8xf32> {conv_lower.constant}, %out: memref<4x8xf32>) {
  %xt = bufferization.to_tensor %x restrict : memref<4x8xf32> to tensor<4x8xf32>
  %wt = bufferization.to_tensor %w restrict : memref<4x2x8xf32> to tensor<4x2x8xf32>
  %w2 = tensor.collapse_shape %wt [[0, 1], [2]] : tensor<4x2x8xf32> into tensor<8x8xf32>
  %r = linalg.matmul ins(%xt, %w2 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%xt : tensor<4x8xf32>) -> tensor<4x8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

// Unmarked functions are left alone: no pack function.
// CHECK-LABEL: func.func @unmarked(
// CHECK: linalg.transpose
// CHECK-NOT: func.func @unmarked_pack
func.func @unmarked(%w: tensor<16x8xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %wT = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  return %wT : tensor<8x16xf32>
}

// -----

// expected-error @+1 {{argument 0 is marked conv_lower.constant but is not a memref}}
func.func @tensor_argument(%w: tensor<16x8xf32> {conv_lower.constant}) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %wT = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  return %wT : tensor<8x16xf32>
}

// -----

// expected-error @+1 {{'func.func' op 'conv_lower.constant' must be a unit attribute}}
func.func @not_unit(%w: memref<16x8xf32> {conv_lower.constant = 1 : i32}) {
  return
}
