// RUN: conv-opt %s --conv-lower-amx-tiles --canonicalize --cse --split-input-file | FileCheck %s

// A register tile of 28 rows by 32 columns over 64 pairs of K, its K loop
// carrying the accumulator (conv-lower-tile-and-vectorize's form, on
// buffers): 2 x 2 accumulator tiles (16 and 12 rows by 16 columns) loaded
// from C once before the loop and stored once after it; per K step A's two
// row blocks and B's two column blocks loaded straight from their buffers
// (A's rows 64 pairs = 128 elements apart, B's 32 columns = 64) and four
// TDPBF16PS.
// CHECK-LABEL: func.func @k_loop
// CHECK-SAME: (%[[A:.*]]: memref<28x64x2xbf16>, %[[B:.*]]: memref<64x32x2xbf16>, %[[C:.*]]: memref<28x32xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-NOT: vector.transfer_read
// CHECK: %[[C00:.*]] = amx.tile_load %[[C]][%[[C0]], %[[C0]]], %[[C32]] : memref<28x32xf32> into !amx.tile<16x16xf32>
// CHECK: %[[C01:.*]] = amx.tile_load %[[C]][%[[C0]], %[[C16]]], %[[C32]] : memref<28x32xf32> into !amx.tile<16x16xf32>
// CHECK: %[[C10:.*]] = amx.tile_load %[[C]][%[[C16]], %[[C0]]], %[[C32]] : memref<28x32xf32> into !amx.tile<12x16xf32>
// CHECK: %[[C11:.*]] = amx.tile_load %[[C]][%[[C16]], %[[C16]]], %[[C32]] : memref<28x32xf32> into !amx.tile<12x16xf32>
// CHECK: %[[R:.*]]:4 = scf.for %[[K:.*]] = %[[C0]] to %[[C64]] step %[[C16]] iter_args(%[[T00:.*]] = %[[C00]], %[[T01:.*]] = %[[C01]], %[[T10:.*]] = %[[C10]], %[[T11:.*]] = %[[C11]])
// CHECK:   %[[A0:.*]] = amx.tile_load %[[A]][%[[C0]], %[[K]], %[[C0]]], %[[C128]] : memref<28x64x2xbf16> into !amx.tile<16x32xbf16>
// CHECK:   %[[A1:.*]] = amx.tile_load %[[A]][%[[C16]], %[[K]], %[[C0]]], %[[C128]] : memref<28x64x2xbf16> into !amx.tile<12x32xbf16>
// CHECK:   %[[B0:.*]] = amx.tile_load %[[B]][%[[K]], %[[C0]], %[[C0]]], %[[C64]] : memref<64x32x2xbf16> into !amx.tile<16x32xbf16>
// CHECK:   %[[B1:.*]] = amx.tile_load %[[B]][%[[K]], %[[C16]], %[[C0]]], %[[C64]] : memref<64x32x2xbf16> into !amx.tile<16x32xbf16>
// CHECK:   %[[P00:.*]] = amx.tile_mulf %[[A0]], %[[B0]], %[[T00]] : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
// CHECK:   %[[P01:.*]] = amx.tile_mulf %[[A0]], %[[B1]], %[[T01]]
// CHECK:   %[[P10:.*]] = amx.tile_mulf %[[A1]], %[[B0]], %[[T10]] : !amx.tile<12x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<12x16xf32>
// CHECK:   %[[P11:.*]] = amx.tile_mulf %[[A1]], %[[B1]], %[[T11]]
// CHECK:   scf.yield %[[P00]], %[[P01]], %[[P10]], %[[P11]]
// CHECK: amx.tile_store %[[C]][%[[C0]], %[[C0]]], %[[R]]#0, %[[C32]]
// CHECK: amx.tile_store %[[C]][%[[C0]], %[[C16]]], %[[R]]#1, %[[C32]]
// CHECK: amx.tile_store %[[C]][%[[C16]], %[[C0]]], %[[R]]#2, %[[C32]]
// CHECK: amx.tile_store %[[C]][%[[C16]], %[[C16]]], %[[R]]#3, %[[C32]]
// CHECK-NOT: vector.contract
// CHECK-NOT: vector.transfer_write
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @k_loop(%A: memref<28x64x2xbf16>, %B: memref<64x32x2xbf16>, %C: memref<28x32xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %pb = ub.poison : bf16
  %pf = ub.poison : f32
  %init = vector.transfer_read %C[%c0, %c0], %pf {in_bounds = [true, true]} : memref<28x32xf32>, vector<28x32xf32>
  %r = scf.for %k = %c0 to %c64 step %c16 iter_args(%acc = %init) -> (vector<28x32xf32>) {
    %a = vector.transfer_read %A[%c0, %k, %c0], %pb {in_bounds = [true, true, true]} : memref<28x64x2xbf16>, vector<28x16x2xbf16>
    %b = vector.transfer_read %B[%k, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<64x32x2xbf16>, vector<16x32x2xbf16>
    %d = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %a, %b, %acc : vector<28x16x2xbf16>, vector<16x32x2xbf16> into vector<28x32xf32>
    scf.yield %d : vector<28x32xf32>
  }
  vector.transfer_write %r, %C[%c0, %c0] {in_bounds = [true, true]} : vector<28x32xf32>, memref<28x32xf32>
  return
}

// -----

// A zero accumulator is a zeroed tile. The result goes through an
// epilogue (a ReLU) before its write: the tiles are stored into the window
// that write overwrites, and the epilogue reads them back from there (no
// stack buffer).
// CHECK-LABEL: func.func @zero_init_epilogue
// CHECK-SAME: %[[C:[^:]*]]: memref<16x16xf32>)
// CHECK-NOT: memref.alloca
// CHECK: %[[Z:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: %[[R:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[Z]]) -> (!amx.tile<16x16xf32>)
// CHECK:   amx.tile_mulf
// CHECK: amx.tile_store %[[C]][%[[C0:.*]], %[[C0]]], %[[R]], %{{.*}} : memref<16x16xf32>, !amx.tile<16x16xf32>
// CHECK: %[[V:.*]] = vector.transfer_read %[[C]][%[[C0]], %[[C0]]]
// CHECK: %[[RELU:.*]] = arith.maximumf %[[V]]
// CHECK: vector.transfer_write %[[RELU]], %[[C]][%[[C0]], %[[C0]]]
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @zero_init_epilogue(%A: memref<16x32x2xbf16>, %B: memref<32x16x2xbf16>, %C: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pb = ub.poison : bf16
  %zero = arith.constant dense<0.0> : vector<16x16xf32>
  %r = scf.for %k = %c0 to %c32 step %c16 iter_args(%acc = %zero) -> (vector<16x16xf32>) {
    %a = vector.transfer_read %A[%c0, %k, %c0], %pb {in_bounds = [true, true, true]} : memref<16x32x2xbf16>, vector<16x16x2xbf16>
    %b = vector.transfer_read %B[%k, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<32x16x2xbf16>, vector<16x16x2xbf16>
    %d = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %a, %b, %acc : vector<16x16x2xbf16>, vector<16x16x2xbf16> into vector<16x16xf32>
    scf.yield %d : vector<16x16xf32>
  }
  %relu = arith.maximumf %r, %zero : vector<16x16xf32>
  vector.transfer_write %relu, %C[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
  return
}

// -----

// No loop; 24 pairs of K (chunks of 16 and 8) by 20 columns (16 and 4): A
// is a value, not a read, so it goes through a stack buffer [8, 48]; the
// second K chunk's tiles are the narrower ones (8 pairs: 16 elements of A,
// 8 rows of B).
// CHECK-LABEL: func.func @alone
// CHECK-SAME: (%[[A:.*]]: vector<8x24x2xbf16>, %[[B:.*]]: memref<24x20x2xbf16>, %[[C:.*]]: memref<8x20xf32>)
// CHECK-NOT: amx.
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C20:.*]] = arith.constant 20 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C40:.*]] = arith.constant 40 : index
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : index
// CHECK: %[[BUF:.*]] = memref.alloca() : memref<8x48xbf16>
// CHECK: %[[ACC0:.*]] = amx.tile_load %[[C]][%[[C0]], %[[C0]]], %[[C20]] : memref<8x20xf32> into !amx.tile<8x16xf32>
// CHECK: %[[ACC1:.*]] = amx.tile_load %[[C]][%[[C0]], %[[C16]]], %[[C20]] : memref<8x20xf32> into !amx.tile<8x4xf32>
// CHECK: %[[FLAT:.*]] = vector.shape_cast %[[A]] : vector<8x24x2xbf16> to vector<8x48xbf16>
// CHECK: vector.transfer_write %[[FLAT]], %[[BUF]]
// CHECK: %[[A0:.*]] = amx.tile_load %[[BUF]][%[[C0]], %[[C0]]], %[[C48]] : memref<8x48xbf16> into !amx.tile<8x32xbf16>
// CHECK: %[[B00:.*]] = amx.tile_load %[[B]][%[[C0]], %[[C0]], %[[C0]]], %[[C40]] : memref<24x20x2xbf16> into !amx.tile<16x32xbf16>
// CHECK: %[[B01:.*]] = amx.tile_load %[[B]][%[[C0]], %[[C16]], %[[C0]]], %[[C40]] : memref<24x20x2xbf16> into !amx.tile<16x8xbf16>
// CHECK: %[[P0:.*]] = amx.tile_mulf %[[A0]], %[[B00]], %[[ACC0]]
// CHECK: %[[P1:.*]] = amx.tile_mulf %[[A0]], %[[B01]], %[[ACC1]]
// CHECK: %[[A1:.*]] = amx.tile_load %[[BUF]][%[[C0]], %[[C32]]], %[[C48]] : memref<8x48xbf16> into !amx.tile<8x16xbf16>
// CHECK: %[[B10:.*]] = amx.tile_load %[[B]][%[[C16]], %[[C0]], %[[C0]]], %[[C40]] : memref<24x20x2xbf16> into !amx.tile<8x32xbf16>
// CHECK: %[[B11:.*]] = amx.tile_load %[[B]][%[[C16]], %[[C16]], %[[C0]]], %[[C40]] : memref<24x20x2xbf16> into !amx.tile<8x8xbf16>
// CHECK: %[[Q0:.*]] = amx.tile_mulf %[[A1]], %[[B10]], %[[P0]] : !amx.tile<8x16xbf16>, !amx.tile<8x32xbf16>, !amx.tile<8x16xf32>
// CHECK: %[[Q1:.*]] = amx.tile_mulf %[[A1]], %[[B11]], %[[P1]] : !amx.tile<8x16xbf16>, !amx.tile<8x8xbf16>, !amx.tile<8x4xf32>
// CHECK: amx.tile_store %[[C]][%[[C0]], %[[C0]]], %[[Q0]], %[[C20]]
// CHECK: amx.tile_store %[[C]][%[[C0]], %[[C16]]], %[[Q1]], %[[C20]]
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @alone(%a: vector<8x24x2xbf16>, %B: memref<24x20x2xbf16>, %C: memref<8x20xf32>) {
  %c0 = arith.constant 0 : index
  %pb = ub.poison : bf16
  %pf = ub.poison : f32
  %acc = vector.transfer_read %C[%c0, %c0], %pf {in_bounds = [true, true]} : memref<8x20xf32>, vector<8x20xf32>
  %b = vector.transfer_read %B[%c0, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<24x20x2xbf16>, vector<24x20x2xbf16>
  %d = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %a, %b, %acc : vector<8x24x2xbf16>, vector<24x20x2xbf16> into vector<8x20xf32>
  vector.transfer_write %d, %C[%c0, %c0] {in_bounds = [true, true]} : vector<8x20xf32>, memref<8x20xf32>
  return
}

// -----

// A's buffer is written after A was read: the tile must see the values
// read, so A goes through a stack buffer; B, unwritten, is loaded in place.
// The buffers are allocated at the function's entry, once per call; the
// result, returned, goes through one too.
// CHECK-LABEL: func.func @written_between
// CHECK-SAME: (%[[A:.*]]: memref<16x16x2xbf16>, %[[B:.*]]: memref<16x16x2xbf16>
// CHECK: %[[BUF:.*]] = memref.alloca() : memref<16x32xbf16>
// CHECK: %[[OUT:.*]] = memref.alloca() : memref<16x16xf32>
// CHECK: %[[READ:.*]] = vector.transfer_read %[[A]]
// CHECK: memref.store
// CHECK: %[[FLAT:.*]] = vector.shape_cast %[[READ]]
// CHECK: vector.transfer_write %[[FLAT]], %[[BUF]]
// CHECK: %[[A0:.*]] = amx.tile_load %[[BUF]]
// CHECK: %[[B0:.*]] = amx.tile_load %[[B]]
// CHECK: %[[P:.*]] = amx.tile_mulf %[[A0]], %[[B0]]
// CHECK: amx.tile_store %[[OUT]][{{.*}}], %[[P]]
// CHECK: %[[V:.*]] = vector.transfer_read %[[OUT]]
// CHECK: return %[[V]]
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @written_between(%A: memref<16x16x2xbf16>, %B: memref<16x16x2xbf16>, %x: bf16) -> vector<16x16xf32> {
  %c0 = arith.constant 0 : index
  %pb = ub.poison : bf16
  %zero = arith.constant dense<0.0> : vector<16x16xf32>
  %a = vector.transfer_read %A[%c0, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<16x16x2xbf16>, vector<16x16x2xbf16>
  memref.store %x, %A[%c0, %c0, %c0] : memref<16x16x2xbf16>
  %b = vector.transfer_read %B[%c0, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<16x16x2xbf16>, vector<16x16x2xbf16>
  %d = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %a, %b, %zero : vector<16x16x2xbf16>, vector<16x16x2xbf16> into vector<16x16xf32>
  return %d : vector<16x16xf32>
}

// -----

// Not a bf16 pair tile: an f32 contraction, and bf16 without its pairs
// innermost, are left alone.
// CHECK-LABEL: func.func @not_pairs
// CHECK-NOT: amx.
// CHECK-COUNT-2: vector.contract
// CHECK-NOT: amx.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @not_pairs(%a: vector<16x8xf32>, %b: vector<8x16xf32>, %c: vector<16x16xf32>,
                     %x: vector<16x8xbf16>, %y: vector<8x16xbf16>) -> (vector<16x16xf32>, vector<16x16xf32>) {
  %0 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : vector<16x8xf32>, vector<8x16xf32> into vector<16x16xf32>
  %1 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %x, %y, %c : vector<16x8xbf16>, vector<8x16xbf16> into vector<16x16xf32>
  return %0, %1 : vector<16x16xf32>, vector<16x16xf32>
}

// -----

// Inside a parallel loop a stack buffer would be shared by its iterations
// (and in a loop, allocated again each one): a tile that needs one runs on
// VDPBF16PS, as the tiles' edges do (16 pairs x 16 rows: 256 dots), not
// the standard lowering (widened, it unrolled into thousands of scalar
// reductions and took llc a minute). The tile whose values are all in
// memory takes AMX there too (its B read again after the first tile's
// write: a read before a write is not trusted past it).
// CHECK-LABEL: func.func @in_parallel_loop
// CHECK: scf.forall
// CHECK-NOT: memref.alloca
// CHECK-NOT: vector.contract
// CHECK-COUNT-256: x86vector.avx512.dot
// CHECK-NOT: x86vector.avx512.dot
// CHECK: amx.tile_mulf
// CHECK-NOT: vector.contract
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @in_parallel_loop(%a: vector<16x16x2xbf16>, %A: memref<4x16x16x2xbf16>, %B: memref<16x16x2xbf16>, %C: memref<4x16x16xf32>, %D: memref<4x16x16xf32>) {
  %c0 = arith.constant 0 : index
  %pb = ub.poison : bf16
  %zero = arith.constant dense<0.0> : vector<16x16xf32>
  scf.forall (%i) in (4) {
    %b = vector.transfer_read %B[%c0, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<16x16x2xbf16>, vector<16x16x2xbf16>
    %d = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %a, %b, %zero : vector<16x16x2xbf16>, vector<16x16x2xbf16> into vector<16x16xf32>
    vector.transfer_write %d, %C[%i, %c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<4x16x16xf32>
    %ai = vector.transfer_read %A[%i, %c0, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<4x16x16x2xbf16>, vector<16x16x2xbf16>
    %b2 = vector.transfer_read %B[%c0, %c0, %c0], %pb {in_bounds = [true, true, true]} : memref<16x16x2xbf16>, vector<16x16x2xbf16>
    %e = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %ai, %b2, %zero : vector<16x16x2xbf16>, vector<16x16x2xbf16> into vector<16x16xf32>
    vector.transfer_write %e, %D[%i, %c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<4x16x16xf32>
  }
  return
}

// -----

// i8 quads (conv-lower-pack-vnni's signed-i8 form: the contraction's
// promotion sign-extends both) into i32: the same grid with 16 quads (64
// bytes) a tile row, TDPBSSD (tile_muli, both operands signed) on a zeroed
// i32 accumulator, A's rows 32 quads = 128 bytes apart and B's 32 columns
// 128 bytes; the result stored straight into C's window.
// CHECK-LABEL: func.func @i8_quads
// CHECK-SAME: (%[[A:.*]]: memref<32x32x4xi8>, %[[B:.*]]: memref<32x32x4xi8>, %[[C:.*]]: memref<32x32xi32>)
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xi32>
// CHECK: scf.for
// CHECK:   %[[A0:.*]] = amx.tile_load %[[A]][{{.*}}], %[[C128]] : memref<32x32x4xi8> into !amx.tile<16x64xi8>
// CHECK:   amx.tile_load %[[A]]
// CHECK:   %[[B0:.*]] = amx.tile_load %[[B]][{{.*}}], %[[C128]] : memref<32x32x4xi8> into !amx.tile<16x64xi8>
// CHECK:   amx.tile_load %[[B]]
// CHECK:   amx.tile_muli %[[A0]], %[[B0]], %{{.*}} : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
// CHECK-NOT: zext
// CHECK-COUNT-3: amx.tile_muli
// CHECK-COUNT-4: amx.tile_store %[[C]]
// CHECK-NOT: vector.contract
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @i8_quads(%A: memref<32x32x4xi8>, %B: memref<32x32x4xi8>, %C: memref<32x32xi32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pi = ub.poison : i8
  %zero = arith.constant dense<0> : vector<32x32xi32>
  %r = scf.for %k = %c0 to %c32 step %c16 iter_args(%acc = %zero) -> (vector<32x32xi32>) {
    %a = vector.transfer_read %A[%c0, %k, %c0], %pi {in_bounds = [true, true, true]} : memref<32x32x4xi8>, vector<32x16x4xi8>
    %b = vector.transfer_read %B[%k, %c0, %c0], %pi {in_bounds = [true, true, true]} : memref<32x32x4xi8>, vector<16x32x4xi8>
    %d = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %a, %b, %acc : vector<32x16x4xi8>, vector<16x32x4xi8> into vector<32x32xi32>
    scf.yield %d : vector<32x32xi32>
  }
  vector.transfer_write %r, %C[%c0, %c0] {in_bounds = [true, true]} : vector<32x32xi32>, memref<32x32xi32>
  return
}

// -----

// Where an i8 tile cannot be placed (a value to stage inside a parallel
// loop) it runs on VPDPBUSD with A signed (flipped, less 128 x B's sums).
// CHECK-LABEL: func.func @i8_in_parallel_loop
// CHECK: scf.forall
// CHECK-NOT: vector.contract
// CHECK: arith.xori
// CHECK: conv_lower.avx512.dot.u8s8
// CHECK: arith.subi
// CHECK-NOT: amx.
// CHECK-NOT: vector.contract
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @i8_in_parallel_loop(%a: vector<16x16x4xi8>, %B: memref<16x16x4xi8>, %C: memref<4x16x16xi32>) {
  %c0 = arith.constant 0 : index
  %pi = ub.poison : i8
  %zero = arith.constant dense<0> : vector<16x16xi32>
  scf.forall (%i) in (4) {
    %b = vector.transfer_read %B[%c0, %c0, %c0], %pi {in_bounds = [true, true, true]} : memref<16x16x4xi8>, vector<16x16x4xi8>
    %d = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>} %a, %b, %zero : vector<16x16x4xi8>, vector<16x16x4xi8> into vector<16x16xi32>
    vector.transfer_write %d, %C[%i, %c0, %c0] {in_bounds = [true, true]} : vector<16x16xi32>, memref<4x16x16xi32>
  }
  return
}
