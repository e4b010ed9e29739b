// RUN: conv-opt %s --conv-lower-copies-to-linalg | FileCheck %s

// A copy of a group's channels (8 of an NHWC image's 32: grouped-direct's
// per-task pad) into a strided subview of its padded buffer: the innermost
// run is contiguous on both sides, its rows lie apart in the source. Loops
// over the pixels, each row one vector load and store, instead of the
// runner utilities' generic memrefCopy (or LLVM's gathers across rows).
// CHECK-LABEL: func.func @group_into_subview
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.copy
// CHECK: %[[SRC:.*]] = memref.subview %arg0
// CHECK: %[[SUB:.*]] = memref.subview %arg1
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %[[N:.*]] = %[[C0]] to %[[C1]] step %[[C1]]
// CHECK:   scf.for %[[H:.*]] = %[[C0]] to %[[C4]] step %[[C1]]
// CHECK:     scf.for %[[W:.*]] = %[[C0]] to %[[C4]] step %[[C1]]
// CHECK:       %[[ROW:.*]] = vector.load %[[SRC]][%[[N]], %[[H]], %[[W]], %[[C0]]] : memref<1x4x4x8xf32, strided<[512, 128, 32, 1], offset: 8>>, vector<8xf32>
// CHECK:       vector.store %[[ROW]], %[[SUB]][%[[N]], %[[H]], %[[W]], %[[C0]]] : memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>, vector<8xf32>
func.func @group_into_subview(%image: memref<1x4x4x32xf32>, %dst: memref<1x6x6x8xf32>) {
  %src = memref.subview %image[0, 0, 0, 8] [1, 4, 4, 8] [1, 1, 1, 1]
      : memref<1x4x4x32xf32> to memref<1x4x4x8xf32, strided<[512, 128, 32, 1], offset: 8>>
  %sub = memref.subview %dst[0, 1, 1, 0] [1, 4, 4, 8] [1, 1, 1, 1]
      : memref<1x6x6x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  memref.copy %src, %sub : memref<1x4x4x8xf32, strided<[512, 128, 32, 1], offset: 8>> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  return
}

// A whole image into a padded buffer: each image row's pixels follow each
// other on both sides (one run of W x C elements), which LLVM's loop over
// the linalg.copy takes.
// CHECK-LABEL: func.func @into_subview
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%arg0 : memref<1x4x4x8xf32>) outs(%{{.*}} : memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>)
func.func @into_subview(%src: memref<1x4x4x8xf32>, %dst: memref<1x6x6x8xf32>) {
  %sub = memref.subview %dst[0, 1, 1, 0] [1, 4, 4, 8] [1, 1, 1, 1]
      : memref<1x6x6x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  memref.copy %src, %sub : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  return
}

// A slice of a wider image on the source side, and a dynamic batch: the
// outer bounds are read from the source.
// CHECK-LABEL: func.func @group_slice_dynamic
// CHECK: memref.subview
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x5x5x4xf32, strided
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK: vector.load %{{.*}} : memref<?x5x5x4xf32, strided<[800, 160, 32, 1], offset: ?>>, vector<4xf32>
// CHECK: vector.store %{{.*}} : memref<?x5x5x4xf32>, vector<4xf32>
func.func @group_slice_dynamic(%src: memref<?x5x5x32xf32>, %dst: memref<?x5x5x4xf32>, %g: index) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %src, %c0 : memref<?x5x5x32xf32>
  %slice = memref.subview %src[0, 0, 0, %g] [%n, 5, 5, 4] [1, 1, 1, 1]
      : memref<?x5x5x32xf32> to memref<?x5x5x4xf32, strided<[800, 160, 32, 1], offset: ?>>
  memref.copy %slice, %dst : memref<?x5x5x4xf32, strided<[800, 160, 32, 1], offset: ?>> to memref<?x5x5x4xf32>
  return
}

// What stays a linalg.copy (LLVM's loop): a run longer than 256 elements,
// an innermost dimension that is not contiguous, a dynamic run.
// CHECK-LABEL: func.func @long_run
// CHECK: linalg.copy
// CHECK-LABEL: func.func @strided_innermost
// CHECK: linalg.copy
// CHECK-LABEL: func.func @dynamic_run
// CHECK: linalg.copy
func.func @long_run(%src: memref<2x512xf32>, %dst: memref<4x512xf32>) {
  %t = memref.subview %dst[0, 0] [2, 512] [2, 1] : memref<4x512xf32> to memref<2x512xf32, strided<[1024, 1]>>
  memref.copy %src, %t : memref<2x512xf32> to memref<2x512xf32, strided<[1024, 1]>>
  return
}
func.func @strided_innermost(%src: memref<4x4xf32>, %dst: memref<4x8xf32>) {
  %sub = memref.subview %dst[0, 0] [4, 4] [1, 2] : memref<4x8xf32> to memref<4x4xf32, strided<[8, 2]>>
  memref.copy %src, %sub : memref<4x4xf32> to memref<4x4xf32, strided<[8, 2]>>
  return
}
func.func @dynamic_run(%src: memref<4x?xf32>, %dst: memref<4x?xf32, strided<[64, 1]>>) {
  memref.copy %src, %dst : memref<4x?xf32> to memref<4x?xf32, strided<[64, 1]>>
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
