// RUN: conv-opt %s --pass-pipeline='builtin.module(func.func(conv-lower-result-in-destination))' | FileCheck %s

// The result buffer (an allocation the blocks fill, expanded to the output's
// shape) copied whole into the output argument before the return: the
// allocation becomes the argument collapsed back, and the copy goes.
// CHECK-LABEL: func.func @expanded
// CHECK-SAME: (%[[IN:.*]]: memref<64x16xf32>, %[[OUT:.*]]: memref<1x8x8x16xf32>)
// CHECK-NOT: memref.alloc
// CHECK: %[[BUF:.*]] = memref.collapse_shape %[[OUT]] {{\[}}[0, 1, 2], [3]] : memref<1x8x8x16xf32> into memref<64x16xf32>
// CHECK: memref.copy %[[IN]], %[[BUF]]
// CHECK-NOT: memref.copy
// CHECK: return
func.func @expanded(%in: memref<64x16xf32>, %out: memref<1x8x8x16xf32>) {
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<64x16xf32>
  memref.copy %in, %alloc : memref<64x16xf32> to memref<64x16xf32>
  %e = memref.expand_shape %alloc [[0, 1, 2], [3]] output_shape [1, 8, 8, 16] : memref<64x16xf32> into memref<1x8x8x16xf32>
  memref.copy %e, %out : memref<1x8x8x16xf32> to memref<1x8x8x16xf32>
  return
}

// Through a collapse: the argument is expanded back.
// CHECK-LABEL: func.func @collapsed
// CHECK: %[[BUF:.*]] = memref.expand_shape %arg1 {{\[}}[0, 1]] output_shape [4, 8] : memref<32xf32> into memref<4x8xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[BUF]] : memref<4x8xf32>)
// CHECK-NOT: memref.copy
func.func @collapsed(%x: f32, %out: memref<32xf32>) {
  %alloc = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%x : f32) outs(%alloc : memref<4x8xf32>)
  %c = memref.collapse_shape %alloc [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  memref.copy %c, %out : memref<32xf32> to memref<32xf32>
  return
}

// The output is read before the copy: left alone.
// CHECK-LABEL: func.func @output_read
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %arg1
func.func @output_read(%x: f32, %out: memref<32xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %out[%c0] : memref<32xf32>
  %alloc = memref.alloc() : memref<32xf32>
  linalg.fill ins(%x : f32) outs(%alloc : memref<32xf32>)
  memref.copy %alloc, %out : memref<32xf32> to memref<32xf32>
  return %v : f32
}

// The copied buffer is an argument, not an allocation: left alone.
// CHECK-LABEL: func.func @from_argument
// CHECK: memref.copy %arg0, %arg1
func.func @from_argument(%in: memref<32xf32>, %out: memref<32xf32>) {
  memref.copy %in, %out : memref<32xf32> to memref<32xf32>
  return
}

// Not the last thing before the return (the buffer is read after it): left
// alone.
// CHECK-LABEL: func.func @copy_not_last
// CHECK: memref.alloc
// CHECK: memref.copy %{{.*}}, %arg1
func.func @copy_not_last(%x: f32, %out: memref<32xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %alloc = memref.alloc() : memref<32xf32>
  linalg.fill ins(%x : f32) outs(%alloc : memref<32xf32>)
  memref.copy %alloc, %out : memref<32xf32> to memref<32xf32>
  %v = memref.load %alloc[%c0] : memref<32xf32>
  return %v : f32
}

// A strided destination (a subview) is no argument of identity layout: left
// alone.
// CHECK-LABEL: func.func @into_subview
// CHECK: memref.alloc
// CHECK: memref.copy
func.func @into_subview(%x: f32, %out: memref<8x8xf32, strided<[16, 1]>>) {
  %alloc = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%x : f32) outs(%alloc : memref<8x8xf32>)
  memref.copy %alloc, %out : memref<8x8xf32> to memref<8x8xf32, strided<[16, 1]>>
  return
}
