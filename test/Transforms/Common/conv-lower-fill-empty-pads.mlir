// RUN: conv-opt %s --conv-lower-fill-empty-pads --canonicalize | FileCheck %s
// The pipeline that failed on such a pad before the pass ran in it:
// RUN: conv-opt %s --conv-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// A pad of an image with no channels: all padding value.
// CHECK-LABEL: func.func @empty_channels
// CHECK-NOT:     tensor.pad
// CHECK:         %[[E:.+]] = tensor.empty() : tensor<1x7x5x0xf32>
// CHECK:         %[[F:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E]] : tensor<1x7x5x0xf32>)
// CHECK:         return %[[F]]
// LLVM-LABEL:  llvm.func @empty_channels
func.func @empty_channels(%x: tensor<1x5x3x0xf32>) -> tensor<1x7x5x0xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 2, 0] high[0, 1, 0, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x5x3x0xf32> to tensor<1x7x5x0xf32>
  return %p : tensor<1x7x5x0xf32>
}

// An empty spatial dim padded into a non-empty one, with a dynamic batch:
// the result is the padding value, sized from the source's batch.
// CHECK-LABEL: func.func @empty_width_dynamic_batch
// CHECK-SAME:    (%[[X:.+]]: tensor<?x4x0x2xf16>)
// CHECK-NOT:     tensor.pad
// CHECK:         %[[N:.+]] = tensor.dim %[[X]], %c0
// CHECK:         %[[E:.+]] = tensor.empty(%[[N]]) : tensor<?x4x3x2xf16>
// CHECK:         linalg.fill ins(%{{.+}} : f16) outs(%[[E]]
// LLVM-LABEL:  llvm.func @empty_width_dynamic_batch
func.func @empty_width_dynamic_batch(%x: tensor<?x4x0x2xf16>) -> tensor<?x4x3x2xf16> {
  %one = arith.constant 1.0 : f16
  %p = tensor.pad %x low[0, 0, 1, 0] high[0, 0, 2, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %one : f16
  } : tensor<?x4x0x2xf16> to tensor<?x4x3x2xf16>
  return %p : tensor<?x4x3x2xf16>
}

// Not empty: left alone.
// CHECK-LABEL: func.func @not_empty
// CHECK:         tensor.pad
func.func @not_empty(%x: tensor<1x2x2x1xf32>) -> tensor<1x4x4x1xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x2x1xf32> to tensor<1x4x4x1xf32>
  return %p : tensor<1x4x4x1xf32>
}
