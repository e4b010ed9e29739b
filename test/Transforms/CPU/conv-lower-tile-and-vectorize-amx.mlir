// RUN: conv-opt %s --conv-lower-pack-vnni=signed-i8 --conv-lower-tile-and-vectorize="amx-tiles" \
// RUN:   --canonicalize | FileCheck %s
// The sign-flipped i8 form (VPDPBUSD's) is no AMX operand: its GEMMs keep
// the pass's register tile.
// RUN: conv-opt %s --conv-lower-pack-vnni --conv-lower-tile-and-vectorize="amx-tiles" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=FLIPPED

// amx-tiles: a GEMM in bf16 pairs takes 32 x 32 register tiles over 16
// pairs of K (2 x 2 AMX accumulator tiles, one 64-byte tile row of pairs),
// the sizes taken as they are, partial tiles peeled.
// CHECK-LABEL: func.func @gemm_64
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C16:.*]] iter_args(%{{.*}}) -> (vector<32x32xf32>)
// CHECK: vector.contract {{.*}} : vector<32x32x16x2xf32>, vector<32x32x16x2xf32> into vector<32x32xf32>
func.func @gemm_64(%a: tensor<64x128xbf16>, %b: tensor<128x64xbf16>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xbf16>, tensor<128x64xbf16>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// 40 rows are no whole number of 32-row tiles with whole 16-row tiles
// over: the rows go by 16 (two whole tiles and a peeled 8-row remainder,
// left to AVX512-BF16's dots), and K's 40 pairs by 16 (two chunks and a
// peeled 8-pair one).
// CHECK-LABEL: func.func @gemm_40
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}}) -> (vector<16x32xf32>)
// CHECK: vector.contract {{.*}} : vector<16x32x16x2xf32>, vector<16x32x16x2xf32> into vector<16x32xf32>
// CHECK: vector.contract {{.*}} : vector<16x32x8x2xf32>, vector<16x32x8x2xf32> into vector<16x32xf32>
// CHECK: -> (tensor<8x32xf32>)
func.func @gemm_40(%a: tensor<40x80xbf16>, %b: tensor<80x64xbf16>) -> tensor<40x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<40x64xf32>) -> tensor<40x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<40x80xbf16>, tensor<80x64xbf16>) outs(%c : tensor<40x64xf32>) -> tensor<40x64xf32>
  return %r : tensor<40x64xf32>
}

// An f32 GEMM keeps the pass's register tile (tile-m 8 by tile-n 32).
// CHECK-LABEL: func.func @gemm_f32
// CHECK: vector.contract {{.*}} into vector<8x32xf32>
func.func @gemm_f32(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}

// i8 quads (pack-vnni's signed-i8 form): the same 32 x 32 register tiles
// over one 64-byte tile row of K, 16 quads (64 values); the 80 quads of K
// in 5 whole chunks.
// CHECK-LABEL: func.func @gemm_i8
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}}) -> (vector<32x32xi32>)
// CHECK: vector.contract {{.*}} : vector<32x32x16x4xi32>, vector<32x32x16x4xi32> into vector<32x32xi32>
// CHECK-NOT: vector.contract
// FLIPPED-LABEL: func.func @gemm_i8
// FLIPPED: vector.contract {{.*}} into vector<8x32xi32>
func.func @gemm_i8(%a: tensor<64x320xi8>, %b: tensor<320x64xi8>) -> tensor<64x64xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<64x64xi32>
  %c = linalg.fill ins(%zero : i32) outs(%e : tensor<64x64xi32>) -> tensor<64x64xi32>
  %r = linalg.matmul ins(%a, %b : tensor<64x320xi8>, tensor<320x64xi8>) outs(%c : tensor<64x64xi32>) -> tensor<64x64xi32>
  return %r : tensor<64x64xi32>
}
