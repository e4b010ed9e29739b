// RUN: conv-opt %s --conv-lower-copies-to-linalg | FileCheck %s

// A copy into a strided subview (a bufferized pad) becomes linalg.copy,
// which lowers to loops instead of the runner utilities' generic memrefCopy.
// CHECK-LABEL: func.func @into_subview
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%arg0 : memref<1x4x4x8xf32>) outs(%{{.*}} : memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>)
func.func @into_subview(%src: memref<1x4x4x8xf32>, %dst: memref<1x6x6x8xf32>) {
  %sub = memref.subview %dst[0, 1, 1, 0] [1, 4, 4, 8] [1, 1, 1, 1]
      : memref<1x6x6x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  memref.copy %src, %sub : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  return
}

// Contiguous on both sides: it stays a memref.copy (a memcpy).
// CHECK-LABEL: func.func @contiguous
// CHECK: memref.copy %arg0, %arg1
// CHECK-NOT: linalg.copy
func.func @contiguous(%src: memref<4x8xf32>, %dst: memref<4x8xf32>) {
  memref.copy %src, %dst : memref<4x8xf32> to memref<4x8xf32>
  return
}
