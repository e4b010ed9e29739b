// RUN: conv-opt %s --conv-lower-x86-dot-product --split-input-file | FileCheck %s
// The same tiles through LLVM on every AVX512-BF16 CPU the JIT targets.
// RUN: conv-opt %s --split-input-file --conv-lower-x86-dot-product \
// RUN:   --convert-vector-to-llvm="enable-x86vector" --convert-to-llvm \
// RUN:   --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// A register tile of 8 rows by 32 columns over 4 pairs of K (what
// conv-lower-tile-and-vectorize makes of a GEMM in pairs): per pair and row,
// A's pair broadcast to the 16 lanes of a zmm, two dots against B's two runs
// of 16 column pairs: 4 x 8 x 2 = 64 VDPBF16PS.
// CHECK-LABEL: func.func @tile_8x32
// CHECK: %[[ROWS:.*]] = vector.shape_cast %{{.*}} : vector<4x32x2xbf16> to vector<4x64xbf16>
// CHECK: %[[B0:.*]] = vector.extract %[[ROWS]][0] : vector<64xbf16> from vector<4x64xbf16>
// CHECK: %[[COL0:.*]] = vector.extract_strided_slice %[[B0]] {offsets = [0], sizes = [32], strides = [1]}
// CHECK: %[[COL1:.*]] = vector.extract_strided_slice %[[B0]] {offsets = [32], sizes = [32], strides = [1]}
// CHECK: %[[PAIR:.*]] = vector.extract %{{.*}}[0, 0] : vector<2xbf16> from vector<8x4x2xbf16>
// CHECK: %[[WORD:.*]] = vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// CHECK: %[[SPLAT:.*]] = vector.broadcast %{{.*}} : i32 to vector<16xi32>
// CHECK: %[[ROW:.*]] = vector.bitcast %[[SPLAT]] : vector<16xi32> to vector<32xbf16>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[ROW]], %[[COL0]] : vector<32xbf16> -> vector<16xf32>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[ROW]], %[[COL1]] : vector<32xbf16> -> vector<16xf32>
// CHECK-COUNT-62: x86vector.avx512.dot
// CHECK-NOT: x86vector.avx512.dot
// CHECK-NOT: vector.contract
// LLVM-LABEL: llvm.func @tile_8x32
// LLVM-COUNT-64: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @tile_8x32(%a: vector<8x4x2xbf16>, %b: vector<4x32x2xbf16>, %c: vector<8x32xf32>) -> vector<8x32xf32> {
  %0 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>}
      %a, %b, %c : vector<8x4x2xbf16>, vector<4x32x2xbf16> into vector<8x32xf32>
  return %0 : vector<8x32xf32>
}

// -----

// As linalg's vectorizer writes a generic tile (widened, broadcast
// operands), one pair, 8 columns: the 256-bit form.
// CHECK-LABEL: func.func @widened_8_columns
// CHECK-COUNT-2: x86vector.avx512.dot %{{.*}} : vector<16xbf16> -> vector<8xf32>
// CHECK-NOT: vector.contract
// LLVM-LABEL: llvm.func @widened_8_columns
// LLVM-COUNT-2: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.256"
#id = affine_map<(m, n, p) -> (m, n, p)>
#out = affine_map<(m, n, p) -> (m, n)>
func.func @widened_8_columns(%a: vector<2x2xbf16>, %b: vector<8x2xbf16>, %c: vector<2x8xf32>) -> vector<2x8xf32> {
  %ab = vector.broadcast %a : vector<2x2xbf16> to vector<8x2x2xbf16>
  %at = vector.transpose %ab, [1, 0, 2] : vector<8x2x2xbf16> to vector<2x8x2xbf16>
  %bb = vector.broadcast %b : vector<8x2xbf16> to vector<2x8x2xbf16>
  %aw = arith.extf %at : vector<2x8x2xbf16> to vector<2x8x2xf32>
  %bw = arith.extf %bb : vector<2x8x2xbf16> to vector<2x8x2xf32>
  %0 = vector.contract {indexing_maps = [#id, #id, #out], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
      %aw, %bw, %c : vector<2x8x2xf32>, vector<2x8x2xf32> into vector<2x8xf32>
  return %0 : vector<2x8xf32>
}

// -----

// Three columns make no whole dot: the contraction stays, on f32 operands
// (the standard lowering's form), its broadcasts folded into its maps.
// CHECK-LABEL: func.func @three_columns
// CHECK-NOT: x86vector
// CHECK: vector.contract
// CHECK-SAME: vector<2x2xf32>, vector<3x2xf32> into vector<2x3xf32>
#id = affine_map<(m, n, p) -> (m, n, p)>
#out = affine_map<(m, n, p) -> (m, n)>
func.func @three_columns(%a: vector<2x2xbf16>, %b: vector<3x2xbf16>, %c: vector<2x3xf32>) -> vector<2x3xf32> {
  %ab = vector.broadcast %a : vector<2x2xbf16> to vector<3x2x2xbf16>
  %at = vector.transpose %ab, [1, 0, 2] : vector<3x2x2xbf16> to vector<2x3x2xbf16>
  %bb = vector.broadcast %b : vector<3x2xbf16> to vector<2x3x2xbf16>
  %aw = arith.extf %at : vector<2x3x2xbf16> to vector<2x3x2xf32>
  %bw = arith.extf %bb : vector<2x3x2xbf16> to vector<2x3x2xf32>
  %0 = vector.contract {indexing_maps = [#id, #id, #out], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
      %aw, %bw, %c : vector<2x3x2xf32>, vector<2x3x2xf32> into vector<2x3xf32>
  return %0 : vector<2x3xf32>
}

// -----

// i8 in K quads (conv-lower-pack-vnni's form: A's bytes zero-extended, B's
// sign-extended) as linalg's vectorizer writes it, 8 rows by 32 columns
// over one quad: per row, A's quad broadcast to the 16 lanes of a zmm, two
// VPDPBUSD against B's two runs of 16 column quads.
// CHECK-LABEL: func.func @i8_tile_8x32
// CHECK: %[[QUAD:.*]] = vector.extract %{{.*}}[0, 0] : vector<4xi8> from vector<8x1x4xi8>
// CHECK: vector.bitcast %[[QUAD]] : vector<4xi8> to vector<1xi32>
// CHECK: %[[SPLAT:.*]] = vector.broadcast %{{.*}} : i32 to vector<16xi32>
// CHECK: %[[ROW:.*]] = vector.bitcast %[[SPLAT]] : vector<16xi32> to vector<64xi8>
// CHECK: conv_lower.avx512.dot.u8s8 %{{.*}}, %[[ROW]], %{{.*}} : vector<64xi8> -> vector<16xi32>
// CHECK-COUNT-15: conv_lower.avx512.dot.u8s8
// CHECK-NOT: conv_lower.avx512.dot.u8s8
// CHECK-NOT: vector.contract
// LLVM-LABEL: llvm.func @i8_tile_8x32
// LLVM-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
#id = affine_map<(m, n, q) -> (m, n, q)>
#out = affine_map<(m, n, q) -> (m, n)>
func.func @i8_tile_8x32(%a: vector<8x4xi8>, %b: vector<32x4xi8>, %c: vector<8x32xi32>) -> vector<8x32xi32> {
  %ab = vector.broadcast %a : vector<8x4xi8> to vector<32x8x4xi8>
  %at = vector.transpose %ab, [1, 0, 2] : vector<32x8x4xi8> to vector<8x32x4xi8>
  %bb = vector.broadcast %b : vector<32x4xi8> to vector<8x32x4xi8>
  %aw = arith.extui %at : vector<8x32x4xi8> to vector<8x32x4xi32>
  %bw = arith.extsi %bb : vector<8x32x4xi8> to vector<8x32x4xi32>
  %0 = vector.contract {indexing_maps = [#id, #id, #out], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
      %aw, %bw, %c : vector<8x32x4xi32>, vector<8x32x4xi32> into vector<8x32xi32>
  return %0 : vector<8x32xi32>
}

// -----

// 8 columns: the 256-bit form (AVX512VL).
// CHECK-LABEL: func.func @i8_8_columns
// CHECK-COUNT-2: conv_lower.avx512.dot.u8s8 %{{.*}} : vector<32xi8> -> vector<8xi32>
// LLVM-LABEL: llvm.func @i8_8_columns
// LLVM-COUNT-2: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"
#id = affine_map<(m, n, q) -> (m, n, q)>
#out = affine_map<(m, n, q) -> (m, n)>
func.func @i8_8_columns(%a: vector<2x4xi8>, %b: vector<8x4xi8>, %c: vector<2x8xi32>) -> vector<2x8xi32> {
  %ab = vector.broadcast %a : vector<2x4xi8> to vector<8x2x4xi8>
  %at = vector.transpose %ab, [1, 0, 2] : vector<8x2x4xi8> to vector<2x8x4xi8>
  %bb = vector.broadcast %b : vector<8x4xi8> to vector<2x8x4xi8>
  %aw = arith.extui %at : vector<2x8x4xi8> to vector<2x8x4xi32>
  %bw = arith.extsi %bb : vector<2x8x4xi8> to vector<2x8x4xi32>
  %0 = vector.contract {indexing_maps = [#id, #id, #out], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
      %aw, %bw, %c : vector<2x8x4xi32>, vector<2x8x4xi32> into vector<2x8xi32>
  return %0 : vector<2x8xi32>
}

// -----

// Both sides sign-extended (no pack-vnni: no unsigned bytes for VPDPBUSD)
// is left to the standard lowering as it is.
// CHECK-LABEL: func.func @i8_signed_untouched
// CHECK-NOT: conv_lower.avx512.dot.u8s8
// CHECK: arith.extsi
// CHECK: vector.contract
#id = affine_map<(m, n, q) -> (m, n, q)>
#out = affine_map<(m, n, q) -> (m, n)>
func.func @i8_signed_untouched(%a: vector<2x8x4xi8>, %b: vector<2x8x4xi8>, %c: vector<2x8xi32>) -> vector<2x8xi32> {
  %aw = arith.extsi %a : vector<2x8x4xi8> to vector<2x8x4xi32>
  %bw = arith.extsi %b : vector<2x8x4xi8> to vector<2x8x4xi32>
  %0 = vector.contract {indexing_maps = [#id, #id, #out], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
      %aw, %bw, %c : vector<2x8x4xi32>, vector<2x8x4xi32> into vector<2x8xi32>
  return %0 : vector<2x8xi32>
}

// -----

// A's bytes flipped on the way (conv-lower-pack-vnni's body, x ^ 0x80): the
// flip is applied once to each broadcast group, before its dots, not to
// every element of the tile.
// CHECK-LABEL: func.func @i8_flipped_a
// CHECK: %[[SPLAT:.*]] = vector.bitcast %{{.*}} : vector<16xi32> to vector<64xi8>
// CHECK: %[[ROW:.*]] = arith.xori %[[SPLAT]], %{{.*}} : vector<64xi8>
// CHECK: conv_lower.avx512.dot.u8s8 %{{.*}}, %[[ROW]], %{{.*}} : vector<64xi8> -> vector<16xi32>
// CHECK-COUNT-3: conv_lower.avx512.dot.u8s8
// CHECK-NOT: vector.contract
// LLVM-LABEL: llvm.func @i8_flipped_a
// LLVM-COUNT-2: llvm.xor {{.*}} : vector<64xi8>
#id = affine_map<(m, n, q) -> (m, n, q)>
#out = affine_map<(m, n, q) -> (m, n)>
func.func @i8_flipped_a(%a: vector<2x4xi8>, %b: vector<32x4xi8>, %c: vector<2x32xi32>) -> vector<2x32xi32> {
  %sign = arith.constant dense<-128> : vector<2x32x4xi8>
  %ab = vector.broadcast %a : vector<2x4xi8> to vector<32x2x4xi8>
  %at = vector.transpose %ab, [1, 0, 2] : vector<32x2x4xi8> to vector<2x32x4xi8>
  %af = arith.xori %at, %sign : vector<2x32x4xi8>
  %bb = vector.broadcast %b : vector<32x4xi8> to vector<2x32x4xi8>
  %aw = arith.extui %af : vector<2x32x4xi8> to vector<2x32x4xi32>
  %bw = arith.extsi %bb : vector<2x32x4xi8> to vector<2x32x4xi32>
  %0 = vector.contract {indexing_maps = [#id, #id, #out], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}
      %aw, %bw, %c : vector<2x32x4xi32>, vector<2x32x4xi32> into vector<2x32xi32>
  return %0 : vector<2x32xi32>
}
