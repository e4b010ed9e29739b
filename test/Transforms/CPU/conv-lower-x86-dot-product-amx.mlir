// RUN: conv-opt %s --conv-lower-x86-dot-product=leave-amx-tiles | FileCheck %s

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
