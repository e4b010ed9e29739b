// RUN: conv-opt %s --conv-lower-prefetch-epilogue-operands --canonicalize | FileCheck %s

// A register tile (8 rows x 32 filters) whose epilogue adds a bias row and a
// residual of the output's shape. Before each tile's K loop the residual's
// lines one row tile on (8 rows x two 64-byte lines) are prefetched, the
// last row tile's clamped to its own (row 56); the bias, a broadcast row,
// is not.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: %[[RES:[a-z0-9]+]]: memref<64x64xf32>, %{{.*}}: memref<64x64xf32>)
// CHECK-DAG: %[[C7:.*]] = arith.constant 7 : index
// CHECK-DAG: %[[C56:.*]] = arith.constant 56 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %[[C8]] {
// CHECK:   scf.for %[[PANEL:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:     %[[NEXT:.*]] = arith.addi %[[ROW]], %[[C8]] : index
// CHECK:     %[[AT:.*]] = arith.minsi %[[NEXT]], %[[C56]] : index
// CHECK:     %[[AHEAD:.*]] = memref.subview %[[RES]][%[[AT]], %[[PANEL]]] [8, 32] [1, 1]
// CHECK:     memref.prefetch %[[AHEAD]][%[[C0]], %[[C0]]], read, locality<3>, data
// CHECK:     memref.prefetch %[[AHEAD]][%[[C0]], %[[C16]]], read, locality<3>, data
// CHECK-COUNT-13: memref.prefetch %[[AHEAD]]
// CHECK:     memref.prefetch %[[AHEAD]][%[[C7]], %[[C16]]], read, locality<3>, data
// CHECK-NOT: memref.prefetch
// CHECK:     scf.for {{.*}} -> (vector<8x32xf32>)
func.func @residual(%a: memref<64x16xf32>, %b: memref<16x64xf32>, %bias: memref<64xf32>,
                    %res: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : vector<8x32xf32>
  %pad = arith.constant 0.0 : f32
  scf.for %row = %c0 to %c64 step %c8 {
    scf.for %panel = %c0 to %c64 step %c32 {
      %acc = scf.for %k = %c0 to %c16 step %c8 iter_args(%sum = %zero) -> (vector<8x32xf32>) {
        %at = memref.subview %a[%row, %k] [8, 8] [1, 1] : memref<64x16xf32> to memref<8x8xf32, strided<[16, 1], offset: ?>>
        %bt = memref.subview %b[%k, %panel] [8, 32] [1, 1] : memref<16x64xf32> to memref<8x32xf32, strided<[64, 1], offset: ?>>
        %va = vector.transfer_read %at[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x8xf32, strided<[16, 1], offset: ?>>, vector<8x8xf32>
        %vb = vector.transfer_read %bt[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[64, 1], offset: ?>>, vector<8x32xf32>
        %r = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>],
                              iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %va, %vb, %sum
             : vector<8x8xf32>, vector<8x32xf32> into vector<8x32xf32>
        scf.yield %r : vector<8x32xf32>
      }
      %bs = memref.subview %bias[%panel] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1], offset: ?>>
      %vbias = vector.transfer_read %bs[%c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0) -> (0, d0)>} : memref<32xf32, strided<[1], offset: ?>>, vector<8x32xf32>
      %rs = memref.subview %res[%row, %panel] [8, 32] [1, 1] : memref<64x64xf32> to memref<8x32xf32, strided<[64, 1], offset: ?>>
      %vres = vector.transfer_read %rs[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[64, 1], offset: ?>>, vector<8x32xf32>
      %s0 = arith.addf %acc, %vbias : vector<8x32xf32>
      %s1 = arith.addf %s0, %vres : vector<8x32xf32>
      %os = memref.subview %out[%row, %panel] [8, 32] [1, 1] : memref<64x64xf32> to memref<8x32xf32, strided<[64, 1], offset: ?>>
      vector.transfer_write %s1, %os[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, strided<[64, 1], offset: ?>>
    }
  }
  return
}

// A read after the K loop that no epilogue op combines with the
// accumulators (copied elsewhere) is not the tile's operand: no prefetch.
// CHECK-LABEL: func.func @unrelated_read
// CHECK-NOT: memref.prefetch
func.func @unrelated_read(%b: memref<16x64xf32>, %src: memref<64x64xf32>, %dst: memref<64x64xf32>, %out: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : vector<8x32xf32>
  %pad = arith.constant 0.0 : f32
  scf.for %row = %c0 to %c64 step %c8 {
    %acc = scf.for %k = %c0 to %c16 step %c8 iter_args(%sum = %zero) -> (vector<8x32xf32>) {
      %bt = memref.subview %b[%k, 0] [8, 32] [1, 1] : memref<16x64xf32> to memref<8x32xf32, strided<[64, 1], offset: ?>>
      %vb = vector.transfer_read %bt[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[64, 1], offset: ?>>, vector<8x32xf32>
      %r = arith.addf %sum, %vb : vector<8x32xf32>
      scf.yield %r : vector<8x32xf32>
    }
    %ss = memref.subview %src[%row, 0] [8, 32] [1, 1] : memref<64x64xf32> to memref<8x32xf32, strided<[64, 1], offset: ?>>
    %v = vector.transfer_read %ss[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32, strided<[64, 1], offset: ?>>, vector<8x32xf32>
    %ds = memref.subview %dst[%row, 0] [8, 32] [1, 1] : memref<64x64xf32> to memref<8x32xf32, strided<[64, 1], offset: ?>>
    vector.transfer_write %v, %ds[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, strided<[64, 1], offset: ?>>
    %os = memref.subview %out[%row, 0] [8, 32] [1, 1] : memref<64x32xf32> to memref<8x32xf32, strided<[32, 1], offset: ?>>
    vector.transfer_write %acc, %os[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, strided<[32, 1], offset: ?>>
  }
  return
}
