// RUN: conv-opt %s --conv-lower-tile-and-vectorize="tile-m=8 tile-n=16 tile-k=4" --canonicalize | FileCheck %s
// RUN: not conv-opt %s --conv-lower-tile-and-vectorize="tile-m=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: conv-opt %s --conv-lower-tile-and-vectorize="tile-m=8 tile-n=16 tile-k=4" --canonicalize | FileCheck %s --check-prefix=KC
// RUN: conv-opt %s --conv-lower-tile-and-vectorize="tile-m=8 tile-n=16 tile-k=4 cache-block-bytes=0" --canonicalize | FileCheck %s --check-prefix=NOKC
// RUN: conv-opt %s --conv-lower-tile-and-vectorize="tile-m=6 tile-n=16 tile-k=8" --canonicalize | FileCheck %s --check-prefix=AVX2

// BAD: conv-lower-tile-and-vectorize: tile sizes must be positive

// A 64x48x36 GEMM: tiles of 8x16x4 divide it exactly, each tile is one
// vector.contract; no linalg.matmul survives. The accumulator tile is read
// before the K loop, carried through it as a vector (registers) and written
// after it, not read and written on every K step.
// CHECK-LABEL: func.func @matmul
// CHECK-COUNT-2: scf.for
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<8x16xf32>, vector<8x16xf32>
// CHECK: %[[K:.*]] = scf.for {{.*}} iter_args(%[[A:.*]] = %[[ACC]]) -> (vector<8x16xf32>)
// CHECK:   %[[C:.*]] = vector.contract {{.*}} %[[A]] : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
// CHECK:   scf.yield %[[C]] : vector<8x16xf32>
// CHECK: vector.transfer_write %[[K]]
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: tensor<64x36xf32>, %b: tensor<36x48xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x36xf32>, tensor<36x48xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}

// Sizes that the requested tiles do not divide shrink to a divisor
// (M = 36: 6, K = 27: 3, N = 2: 2) so that every tile stays static.
// CHECK-LABEL: func.func @transposed_b_odd_sizes
// CHECK: vector.contract {{.*}} : vector<6x3xf32>, vector<2x3xf32> into vector<6x2xf32>
// CHECK-NOT: linalg.matmul
func.func @transposed_b_odd_sizes(%a: tensor<36x27xf32>, %b: tensor<2x27xf32>, %c: tensor<36x2xf32>) -> tensor<36x2xf32> {
  %0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
         ins(%a, %b : tensor<36x27xf32>, tensor<2x27xf32>) outs(%c : tensor<36x2xf32>) -> tensor<36x2xf32>
  return %0 : tensor<36x2xf32>
}

// Grouped contraction as linalg.generic with mixed precision: the group loop
// is tiled by 1, the extension stays inside the vectorized tile.
// CHECK-LABEL: func.func @grouped_generic_f16
// CHECK: arith.extf {{.*}} : vector<{{.*}}xf16> to vector<{{.*}}xf32>
// CHECK: vector.contract
// CHECK-NOT: linalg.generic
func.func @grouped_generic_f16(%a: tensor<2x16x36xf16>, %b: tensor<3x2x36xf16>, %c: tensor<2x16x3xf32>) -> tensor<2x16x3xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(g, m, f, k) -> (g, m, k)>, affine_map<(g, m, f, k) -> (f, g, k)>, affine_map<(g, m, f, k) -> (g, m, f)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
       ins(%a, %b : tensor<2x16x36xf16>, tensor<3x2x36xf16>) outs(%c : tensor<2x16x3xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %m = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x16x3xf32>
  return %0 : tensor<2x16x3xf32>
}

// Non-contractions are left alone.
// CHECK-LABEL: func.func @not_a_contraction
// CHECK: linalg.transpose
func.func @not_a_contraction(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%b : tensor<8x4xf32>) permutation = [1, 0]
  return %0 : tensor<8x4xf32>
}

// A dynamic M (a dynamic batch): full 8-row tiles are peeled from the partial
// last one; the full tiles vectorize, the remainder stays a scalar matmul.
// CHECK-LABEL: func.func @dynamic_m
// CHECK: scf.for
// CHECK: vector.contract {{.*}} : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
// CHECK: scf.for
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<4x16xf32>)
func.func @dynamic_m(%a: tensor<?x36xf32>, %b: tensor<36x48xf32>, %c: tensor<?x48xf32>) -> tensor<?x48xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<?x36xf32>, tensor<36x48xf32>) outs(%c : tensor<?x48xf32>) -> tensor<?x48xf32>
  return %0 : tensor<?x48xf32>
}

// The pointwise NCHW contraction Y[n, f, p] += W[f, c] * X[n, c, p]: the
// batch loop is tiled by 1 and dropped (rank-reducing slices, so the tile
// still updates the result in place) and the tile, now a plain matmul, is
// specialized so that it vectorizes straight into one vector.contract.
// (49 pixels: no multiple of 16 divides them, so three whole 16-wide
// tiles and a peeled static 1-wide remainder, vectorized too: a 7-wide tile
// would be less than half a register.)
// CHECK-LABEL: func.func @pointwise_generic
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16
// CHECK: tensor.extract_slice %{{.*}} : tensor<1x4x16xf32> to tensor<4x16xf32>
// CHECK: vector.contract {{.*}} : vector<8x4xf32>, vector<4x16xf32> into vector<8x16xf32>
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, %{{.*}}, 48] [1, 4, 1]
// CHECK: vector.contract {{.*}} : vector<8x4xf32>, vector<8x4xf32> into vector<8xf32>
// CHECK-NOT: vector.multi_reduction
// CHECK-NOT: linalg.generic
func.func @pointwise_generic(%w: tensor<32x16xf32>, %x: tensor<2x16x49xf32>, %y: tensor<2x32x49xf32>) -> tensor<2x32x49xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(n, f, p, c) -> (f, c)>, affine_map<(n, f, p, c) -> (n, c, p)>, affine_map<(n, f, p, c) -> (n, f, p)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
       ins(%w, %x : tensor<32x16xf32>, tensor<2x16x49xf32>) outs(%y : tensor<2x32x49xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x32x49xf32>
  return %0 : tensor<2x32x49xf32>
}

// Found by conv-fuzz: accumulators the contraction lowering cannot reach by
// widening (f32 x f32 -> f16 narrows, i8 x i8 -> f32 changes kind) used to
// become vector.contracts that lowered to invalid arith.extf ops; they are
// vectorized with the body's own casts first (the contraction is then on
// the accumulator's type; test/Pipelines lowers this file to LLVM).
// CHECK-LABEL: func.func @narrowing_accumulator
// CHECK:         arith.truncf %{{.*}} : vector<8x16x4xf32> to vector<8x16x4xf16>
// CHECK:         vector.contract {{.*}} : vector<8x16x4xf16>, vector<8x16x4xf16> into vector<8x16xf16>
func.func @narrowing_accumulator(%a: tensor<8x16xf32>, %b: tensor<16x16xf32>, %c: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x16xf32>) outs(%c : tensor<8x16xf16>) -> tensor<8x16xf16>
  return %r : tensor<8x16xf16>
}

// CHECK-LABEL: func.func @int_to_float_accumulator
// CHECK:         arith.sitofp %{{.*}} : vector<8x16x4xi8> to vector<8x16x4xf32>
// CHECK:         vector.contract {{.*}} : vector<8x16x4xf32>, vector<8x16x4xf32> into vector<8x16xf32>
func.func @int_to_float_accumulator(%a: tensor<8x16xi8>, %b: tensor<16x16xi8>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x16xi8>, tensor<16x16xi8>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// K blocked for the cache: B is [1024, 160] f32 (640 KiB), past the default
// cache-block-bytes (512 KiB), so K is split into blocks of 512 (the largest
// divisor of 1024 whose [kc, 160] slice fits: 320 KiB); the register tiles
// run inside each block, their accumulators read and written once per block.
// With cache-block-bytes=0 (NOKC) K is one loop.
// KC-LABEL: func.func @k_blocked
// KC: scf.for %{{.*}} = %c0 to %c1024 step %c512 iter_args
// KC: scf.for %{{.*}} = %c0 to %c160 step %c16
// KC: vector.transfer_read {{.*}} : tensor<8x16xf32>, vector<8x16xf32>
// KC: scf.for %{{.*}} = %c0 to %c512 step %c4
// NOKC-LABEL: func.func @k_blocked
// NOKC-NOT: step %c512
// NOKC: scf.for %{{.*}} = %c0 to %c1024 step %c4
func.func @k_blocked(%a: tensor<8x1024xf32>, %b: tensor<1024x160xf32>, %c: tensor<8x160xf32>) -> tensor<8x160xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x1024xf32>, tensor<1024x160xf32>) outs(%c : tensor<8x160xf32>) -> tensor<8x160xf32>
  return %0 : tensor<8x160xf32>
}

// K blocked with a linalg.fill as the accumulator: the first K block is
// peeled off, its register tiles start from zero splats (no read of the
// filled output), and the fill goes; the other blocks read and write the
// accumulators as above. A fill of the whole output before the blocks was a
// pass over it (r50's N8 1024 -> 512 1x1: 8.5 -> 8.4 ms with the block fill
// gone too).
// KC-LABEL: func.func @k_blocked_from_fill
// KC: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x16xf32>
// KC-NOT: linalg.fill
// KC: scf.for %{{.*}} = %c0 to %c160 step %c16
// KC-NOT: vector.transfer_read {{.*}} : tensor<8x16xf32>, vector<8x16xf32>
// KC:   scf.for %{{.*}} = %c0 to %c512 step %c4 iter_args(%{{.*}} = %[[ZERO]]) -> (vector<8x16xf32>)
// (The second and last block, a loop of one iteration, is inlined.)
// KC: scf.for %{{.*}} = %c0 to %c160 step %c16
// KC:   %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<8x16xf32>, vector<8x16xf32>
// KC:   scf.for %{{.*}} = %c0 to %c512 step %c4 iter_args(%{{.*}} = %[[ACC]]) -> (vector<8x16xf32>)
// KC-NOT: linalg.fill
// NOKC-LABEL: func.func @k_blocked_from_fill
// NOKC: scf.for %{{.*}} = %c0 to %c1024 step %c4 iter_args(%{{.*}} = %cst{{.*}}) -> (vector<8x16xf32>)
func.func @k_blocked_from_fill(%a: tensor<8x1024xf32>, %b: tensor<1024x160xf32>) -> tensor<8x160xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x160xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<8x160xf32>) -> tensor<8x160xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<8x1024xf32>, tensor<1024x160xf32>) outs(%c : tensor<8x160xf32>) -> tensor<8x160xf32>
  return %0 : tensor<8x160xf32>
}

// AVX2's 6-row tile against a 7x7 image's 49 rows: no divisor near 6 (the
// largest is 1), so 8 tiles of 6 rows and a peeled static tile of one, not
// 49 one-row tiles (the remainder's unit row dropped: a vector-matrix tile).
// AVX2-LABEL: func.func @rows_peeled
// AVX2: scf.for {{.*}} to %c48 step %c6
// AVX2: vector.contract {{.*}} : vector<6x8xf32>, vector<8x16xf32> into vector<6x16xf32>
// AVX2: scf.for {{.*}} to %c32 step %c16
// AVX2: vector.contract {{.*}} : vector<8xf32>, vector<8x16xf32> into vector<16xf32>
// AVX2-NOT: linalg.matmul
func.func @rows_peeled(%a: tensor<49x64xf32>, %b: tensor<64x32xf32>, %c: tensor<49x32xf32>) -> tensor<49x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<49x64xf32>, tensor<64x32xf32>) outs(%c : tensor<49x32xf32>) -> tensor<49x32xf32>
  return %0 : tensor<49x32xf32>
}

// A channels-first pointwise GEMM: B is the image [C, pixels], its rows 640
// floats apart (more than 512): N is tiled by the 16-lane vector tile
// first, each [64, 16] column panel of B copied contiguous, and the row tiles
// run inside that N loop on the copy. B rows 512 floats apart or fewer (a
// packed W^T) are read in place.
// CHECK-LABEL: func.func @pointwise_channels_first
// CHECK: scf.for %{{.*}} = %c0 to %c640 step %c16
// CHECK:   %[[PANEL:.*]] = tensor.extract_slice %{{.*}}[0, %{{.*}}] [64, 16] [1, 1] : tensor<64x640xf32> to tensor<64x16xf32>
// CHECK:   %[[PACKED:.*]] = linalg.copy ins(%[[PANEL]] : tensor<64x16xf32>)
// CHECK:   scf.for
// CHECK:     tensor.extract_slice %[[PACKED]]
// CHECK:     vector.contract
// CHECK-LABEL: func.func @pointwise_near_rows
// CHECK-NOT: linalg.copy
// CHECK: return
func.func @pointwise_channels_first(%w: tensor<24x64xf32>, %x: tensor<64x640xf32>) -> tensor<24x640xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x640xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<24x640xf32>) -> tensor<24x640xf32>
  %y = linalg.matmul ins(%w, %x : tensor<24x64xf32>, tensor<64x640xf32>) outs(%init : tensor<24x640xf32>) -> tensor<24x640xf32>
  return %y : tensor<24x640xf32>
}
func.func @pointwise_near_rows(%w: tensor<24x64xf32>, %x: tensor<64x512xf32>) -> tensor<24x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<24x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<24x512xf32>) -> tensor<24x512xf32>
  %y = linalg.matmul ins(%w, %x : tensor<24x64xf32>, tensor<64x512xf32>) outs(%init : tensor<24x512xf32>) -> tensor<24x512xf32>
  return %y : tensor<24x512xf32>
}

// A vector-matrix product on packed column panels (a batch-1 linear layer:
// one row, B as [panels, K, 16]). Its tile keeps the unit row when the unit
// loops are dropped, so it is a [1, k] x [k, n] matmul: a broadcast and
// outer-product FMAs a K step. With the row dropped too, the (n, k)
// contraction read B transposed and summed across lanes (a 1280 -> 1024
// layer: 0.25 ms against 0.03).
// CHECK-LABEL: func.func @vector_matrix_panels
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK:   scf.for %{{.*}} = %c0 to %c64 step %c4
// CHECK:     vector.contract {{.*}} : vector<4xf32>, vector<4x16xf32> into vector<16xf32>
// CHECK-NOT: vector<16x4xf32>
// CHECK: return
func.func @vector_matrix_panels(%a: tensor<1x64xf32>, %b: tensor<4x64x16xf32>, %c: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3)>, affine_map<(d0, d1, d2, d3) -> (d1, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<1x64xf32>, tensor<4x64x16xf32>) outs(%c : tensor<1x4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %z, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}
