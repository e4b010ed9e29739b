// The CPU pipeline reads a GEMM's filter as [F / tile-n, K, tile-n] column panels
// (conv-lower-pack-filter-panels, after the im2col panels); filter-panels=false
// leaves pack-rhs's W^T [K, F]. Numerics: test/Tools/conv-run/constant-weights.test.
// RUN: conv-opt %s --conv-lower-to-llvm="tile-n=16" --mlir-print-ir-after=conv-lower-pack-filter-panels 2>&1 >/dev/null | FileCheck %s
// RUN: conv-opt %s --conv-lower-to-llvm="tile-n=16 filter-panels=false" --mlir-print-ir-before=conv-lower-tile-and-vectorize 2>&1 >/dev/null | FileCheck %s --check-prefix=OFF

// CHECK: IR Dump After ConvLowerPackFilterPanels
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 16, 72] : tensor<32x72xf32> into tensor<2x16x72xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x16x72xf32>) outs(%{{.*}} : tensor<2x72x16xf32>) permutation = [0, 2, 1]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<16x72xf32>, tensor<2x72x16xf32>) outs(%{{.*}} : tensor<16x2x16xf32>)
// CHECK-NOT: linalg.matmul
// OFF: linalg.transpose ins(%{{.*}} : tensor<32x72xf32>) outs(%{{.*}} : tensor<72x32xf32>) permutation = [1, 0]
// OFF: linalg.matmul
func.func @conv(%x: tensor<1x10x10x8xf32>, %w: tensor<32x3x3x8xf32>) -> tensor<1x8x8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x8x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x10x10x8xf32>, tensor<32x3x3x8xf32>) outs(%init : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  return %y : tensor<1x8x8x32xf32>
}
