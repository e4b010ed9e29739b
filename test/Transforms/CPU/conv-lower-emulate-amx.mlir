// RUN: conv-opt %s --conv-lower-emulate-amx --cse | FileCheck %s

// Each tile becomes the vector of its shape: the zeroed accumulator a zero
// vector the loop carries; a tile load one vector.load of `cols` elements
// per row, rows `stride` elements apart from the element the indices
// address (here A [2, k, 0]: offset 2 * 16 + k * 2); TDPBF16PS the
// contraction of the widened pairs (A [2, 4] as [2, 2, 2], B [2, 8] as
// [2, 4, 2]) over (k, pair); the store one vector.store per row, rows the
// memref's row stride apart (no explicit stride).
// CHECK-DAG: #[[$MA:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$MB:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d1, d3)>
// CHECK-DAG: #[[$MC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// CHECK-LABEL: func.func @tiles
// CHECK-SAME: (%[[A:.*]]: memref<4x8x2xbf16>, %[[B:.*]]: memref<8x4x2xbf16>, %[[C:.*]]: memref<2x8xf32>
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<2x4xf32>
// CHECK: %[[R:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (vector<2x4xf32>) {
// CHECK:   %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:3, %[[STRIDES:.*]]:3 = memref.extract_strided_metadata %[[A]]
// CHECK:   %[[M:.*]] = arith.muli %[[C2]], %[[STRIDES]]#0
// CHECK:   %[[M1:.*]] = arith.addi %[[OFF]], %[[M]]
// CHECK:   %[[KOFF:.*]] = arith.muli %[[K]], %[[STRIDES]]#1
// CHECK:   %[[ROW0:.*]] = arith.addi %[[M1]], %[[KOFF]]
// CHECK:   %[[ROW0P:.*]] = arith.addi %[[ROW0]], %{{.*}}
// CHECK:   %[[FLAT:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<bf16> to memref<?xbf16>
// CHECK:   %[[A0:.*]] = vector.load %[[FLAT]][%[[ROW0P]]] : memref<?xbf16>, vector<4xbf16>
// CHECK:   %[[T0:.*]] = vector.insert %[[A0]], %{{.*}} [0] : vector<4xbf16> into vector<2x4xbf16>
// CHECK:   %[[STEP:.*]] = arith.muli %[[C16]], %{{.*}}
// CHECK:   %[[ROW1:.*]] = arith.addi %[[ROW0P]], %[[STEP]]
// CHECK:   %[[A1:.*]] = vector.load %[[FLAT]][%[[ROW1]]] : memref<?xbf16>, vector<4xbf16>
// CHECK:   %[[TA:.*]] = vector.insert %[[A1]], %[[T0]] [1] : vector<4xbf16> into vector<2x4xbf16>
// CHECK:   %[[TB:.*]] = vector.insert %{{.*}} [1] : vector<8xbf16> into vector<2x8xbf16>
// CHECK:   %[[AP:.*]] = vector.shape_cast %[[TA]] : vector<2x4xbf16> to vector<2x2x2xbf16>
// CHECK:   %[[AW:.*]] = arith.extf %[[AP]] : vector<2x2x2xbf16> to vector<2x2x2xf32>
// CHECK:   %[[BP:.*]] = vector.shape_cast %[[TB]] : vector<2x8xbf16> to vector<2x4x2xbf16>
// CHECK:   %[[BW:.*]] = arith.extf %[[BP]] : vector<2x4x2xbf16> to vector<2x4x2xf32>
// CHECK:   %[[D:.*]] = vector.contract {indexing_maps = [#[[$MA]], #[[$MB]], #[[$MC]]], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %[[AW]], %[[BW]], %[[ACC]] : vector<2x2x2xf32>, vector<2x4x2xf32> into vector<2x4xf32>
// CHECK:   scf.yield %[[D]] : vector<2x4xf32>
// CHECK: %[[CB:.*]], %[[COFF:.*]], %{{.*}}:2, %[[CS:.*]]:2 = memref.extract_strided_metadata %[[C]]
// CHECK: %[[R0:.*]] = vector.extract %[[R]][0] : vector<4xf32> from vector<2x4xf32>
// CHECK: vector.store %[[R0]], %{{.*}}[%[[START:.*]]] : memref<?xf32>, vector<4xf32>
// CHECK: %[[R1:.*]] = vector.extract %[[R]][1] : vector<4xf32> from vector<2x4xf32>
// CHECK: %[[CSTEP:.*]] = arith.muli %[[CS]]#0, %{{.*}}
// CHECK: %[[START1:.*]] = arith.addi %[[START]], %[[CSTEP]]
// CHECK: vector.store %[[R1]], %{{.*}}[%[[START1]]] : memref<?xf32>, vector<4xf32>
// CHECK-NOT: amx.
func.func @tiles(%A: memref<4x8x2xbf16>, %B: memref<8x4x2xbf16>, %C: memref<2x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %z = amx.tile_zero : !amx.tile<2x4xf32>
  %r = scf.for %k = %c0 to %n step %c2 iter_args(%acc = %z) -> (!amx.tile<2x4xf32>) {
    %a = amx.tile_load %A[%c2, %k, %c0], %c16 : memref<4x8x2xbf16> into !amx.tile<2x4xbf16>
    %b = amx.tile_load %B[%k, %c0, %c0], %c8 : memref<8x4x2xbf16> into !amx.tile<2x8xbf16>
    %d = amx.tile_mulf %a, %b, %acc : !amx.tile<2x4xbf16>, !amx.tile<2x8xbf16>, !amx.tile<2x4xf32>
    scf.yield %d : !amx.tile<2x4xf32>
  }
  amx.tile_store %C[%c0, %c2], %r : memref<2x8xf32>, !amx.tile<2x4xf32>
  return
}

// TDPBSSD (tile_muli, both signed): A [2, 8] and B [2, 16] i8 as quads
// [2, 2, 4] and [2, 4, 4], each sign-extended to i32, contracted over
// (k, byte). A `zext` operand (TDPBUSD's unsigned A) is zero-extended.
// CHECK-LABEL: func.func @tiles_i8
// CHECK: %[[AQ:.*]] = vector.shape_cast %{{.*}} : vector<2x8xi8> to vector<2x2x4xi8>
// CHECK: %[[AW:.*]] = arith.extsi %[[AQ]] : vector<2x2x4xi8> to vector<2x2x4xi32>
// CHECK: %[[BQ:.*]] = vector.shape_cast %{{.*}} : vector<2x16xi8> to vector<2x4x4xi8>
// CHECK: %[[BW:.*]] = arith.extsi %[[BQ]] : vector<2x4x4xi8> to vector<2x4x4xi32>
// CHECK: %[[D:.*]] = vector.contract {indexing_maps = [#[[$MA]], #[[$MB]], #[[$MC]]], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %[[AW]], %[[BW]], %{{.*}} : vector<2x2x4xi32>, vector<2x4x4xi32> into vector<2x4xi32>
// CHECK: %[[UW:.*]] = arith.extui %[[AQ]] : vector<2x2x4xi8> to vector<2x2x4xi32>
// CHECK: vector.contract {{.*}} %[[UW]], %[[BW]], %[[D]]
// CHECK-NOT: amx.
func.func @tiles_i8(%A: memref<2x8xi8>, %B: memref<2x16xi8>, %C: memref<2x4xi32>) {
  %c0 = arith.constant 0 : index
  %z = amx.tile_zero : !amx.tile<2x4xi32>
  %a = amx.tile_load %A[%c0, %c0] : memref<2x8xi8> into !amx.tile<2x8xi8>
  %b = amx.tile_load %B[%c0, %c0] : memref<2x16xi8> into !amx.tile<2x16xi8>
  %d = amx.tile_muli %a, %b, %z : !amx.tile<2x8xi8>, !amx.tile<2x16xi8>, !amx.tile<2x4xi32>
  %e = amx.tile_muli %a zext, %b, %d : !amx.tile<2x8xi8>, !amx.tile<2x16xi8>, !amx.tile<2x4xi32>
  amx.tile_store %C[%c0, %c0], %e : memref<2x4xi32>, !amx.tile<2x4xi32>
  return
}
