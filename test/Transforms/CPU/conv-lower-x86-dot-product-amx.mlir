// RUN: conv-opt %s --conv-lower-x86-dot-product=leave-amx-tiles | FileCheck %s
// RUN: conv-opt %s --conv-lower-x86-dot-product="leave-amx-tiles signed-i8" | FileCheck %s --check-prefix=SIGNED

// leave-amx-tiles: a bf16 tile of whole AMX tiles (M, R and N multiples of
// 16) stays a contraction of the vectors as read, for conv-lower-amx-tiles;
// a partial one (8 rows) becomes VDPBF16PS as before.
// CHECK-LABEL: func.func @whole_and_partial
// CHECK: %[[WHOLE:.*]] = vector.contract {{.*}} : vector<32x16x2xbf16>, vector<16x32x2xbf16> into vector<32x32xf32>
// CHECK-NOT: vector.contract
// CHECK: x86vector.avx512.dot
// CHECK-NOT: vector.contract
#a = affine_map<(m, n, r, p) -> (m, r, p)>
#b = affine_map<(m, n, r, p) -> (r, n, p)>
#c = affine_map<(m, n, r, p) -> (m, n)>
func.func @whole_and_partial(%a: vector<32x16x2xbf16>, %b: vector<16x32x2xbf16>, %c: vector<32x32xf32>,
                             %x: vector<8x16x2xbf16>, %z: vector<8x32xf32>) -> (vector<32x32xf32>, vector<8x32xf32>) {
  %0 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>}
      %a, %b, %c : vector<32x16x2xbf16>, vector<16x32x2xbf16> into vector<32x32xf32>
  %1 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>}
      %x, %b, %z : vector<8x16x2xbf16>, vector<16x32x2xbf16> into vector<8x32xf32>
  return %0, %1 : vector<32x32xf32>, vector<8x32xf32>
}

// signed-i8 (conv-lower-pack-vnni's form for AMX: both operands
// sign-extended): a tile of whole AMX tiles stays a contraction of the i8
// vectors as read (the extensions folded into it: its promotion is
// signed); a partial one (8 rows) runs on VPDPBUSD with A's bytes flipped
// (a + 128) and, per B vector, one more dot of 0x80 bytes whose sum (128 x
// B's sum over the tile's K) is subtracted from each row at the end.
// Without signed-i8 neither is this pass's: both stay the contractions of
// the sign-extended operands.
// CHECK-LABEL: func.func @i8_whole_and_partial
// CHECK-NOT: conv_lower.avx512.dot.u8s8
// CHECK-COUNT-2: vector.contract {{.*}} : vector<{{.*}}x16x4xi32>, vector<16x32x4xi32>
// SIGNED-LABEL: func.func @i8_whole_and_partial
// SIGNED: vector.contract {{.*}} : vector<32x16x4xi8>, vector<16x32x4xi8> into vector<32x32xi32>
// SIGNED-NOT: vector.contract
// SIGNED-DAG: %[[SIGN:.*]] = arith.constant dense<-128> : vector<64xi8>
// SIGNED-DAG: %[[ZERO:.*]] = arith.constant dense<0> : vector<16xi32>
// SIGNED: %[[SHIFT:.*]] = conv_lower.avx512.dot.u8s8 %[[ZERO]], %[[SIGN]], %{{.*}} : vector<64xi8> -> vector<16xi32>
// SIGNED: %[[FLIP:.*]] = arith.xori %{{.*}}, %[[SIGN]] : vector<64xi8>
// SIGNED: conv_lower.avx512.dot.u8s8 %{{.*}}, %[[FLIP]], %{{.*}} : vector<64xi8> -> vector<16xi32>
// SIGNED: arith.subi %{{.*}}, %{{.*}} : vector<16xi32>
// SIGNED-NOT: vector.contract
func.func @i8_whole_and_partial(%a: vector<32x16x4xi8>, %b: vector<16x32x4xi8>, %c: vector<32x32xi32>,
                                %x: vector<8x16x4xi8>, %z: vector<8x32xi32>) -> (vector<32x32xi32>, vector<8x32xi32>) {
  %aw = arith.extsi %a : vector<32x16x4xi8> to vector<32x16x4xi32>
  %bw = arith.extsi %b : vector<16x32x4xi8> to vector<16x32x4xi32>
  %0 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>}
      %aw, %bw, %c : vector<32x16x4xi32>, vector<16x32x4xi32> into vector<32x32xi32>
  %xw = arith.extsi %x : vector<8x16x4xi8> to vector<8x16x4xi32>
  %1 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>}
      %xw, %bw, %z : vector<8x16x4xi32>, vector<16x32x4xi32> into vector<8x32xi32>
  return %0, %1 : vector<32x32xi32>, vector<8x32xi32>
}

// A sign flip under a sign extension is the data's own (only pack-vnni's
// zero-extended form carries the dots' flip): with signed-i8 it stays,
// and the dots flip the flipped bytes again.
// SIGNED-LABEL: func.func @i8_signed_of_flipped
// SIGNED: %[[DATA:.*]] = arith.xori %{{.*}}, %{{.*}} : vector<8x16x4xi8>
// SIGNED: %[[A:.*]] = vector.shape_cast %[[DATA]]
// SIGNED: vector.extract %[[A]]
// SIGNED: arith.xori %{{.*}}, %{{.*}} : vector<64xi8>
// SIGNED: conv_lower.avx512.dot.u8s8
func.func @i8_signed_of_flipped(%x: vector<8x16x4xi8>, %b: vector<16x32x4xi8>, %z: vector<8x32xi32>) -> vector<8x32xi32> {
  %sign = arith.constant dense<-128> : vector<8x16x4xi8>
  %f = arith.xori %x, %sign : vector<8x16x4xi8>
  %fw = arith.extsi %f : vector<8x16x4xi8> to vector<8x16x4xi32>
  %bw = arith.extsi %b : vector<16x32x4xi8> to vector<16x32x4xi32>
  %0 = vector.contract {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"], kind = #vector.kind<add>}
      %fw, %bw, %z : vector<8x16x4xi32>, vector<16x32x4xi32> into vector<8x32xi32>
  return %0 : vector<8x32xi32>
}
