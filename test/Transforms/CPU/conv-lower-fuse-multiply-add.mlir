// RUN: conv-opt %s --conv-lower-fuse-multiply-add | FileCheck %s

// A register tile's update, the product used once: one vector.fma, whichever
// side of the addition the product is on.
// CHECK-LABEL: func.func @tile_update
// CHECK-SAME: (%[[A:.*]]: vector<6x16xf32>, %[[B:.*]]: vector<6x16xf32>, %[[C:.*]]: vector<6x16xf32>)
// CHECK-NOT: arith.mulf
// CHECK: %[[F:.*]] = vector.fma %[[A]], %[[B]], %[[C]] : vector<6x16xf32>
// CHECK: vector.fma %[[A]], %[[B]], %[[F]] : vector<6x16xf32>
// CHECK-NOT: arith.addf
func.func @tile_update(%a: vector<6x16xf32>, %b: vector<6x16xf32>, %c: vector<6x16xf32>) -> vector<6x16xf32> {
  %m = arith.mulf %a, %b : vector<6x16xf32>
  %s = arith.addf %c, %m : vector<6x16xf32>
  %m2 = arith.mulf %a, %b : vector<6x16xf32>
  %s2 = arith.addf %m2, %s : vector<6x16xf32>
  return %s2 : vector<6x16xf32>
}

// Left alone: a product that is also used elsewhere (fusing would compute
// it twice), scalars, and 16-bit vectors (no FMA instruction for bf16; f16
// needs AVX512-FP16).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.fma
// CHECK: return
func.func @left_alone(%a: vector<8xf32>, %b: vector<8xf32>, %x: f32, %y: f32,
                      %h: vector<8xbf16>, %g: vector<8xf16>)
    -> (vector<8xf32>, vector<8xf32>, f32, vector<8xbf16>, vector<8xf16>) {
  %m = arith.mulf %a, %b : vector<8xf32>
  %s = arith.addf %m, %a : vector<8xf32>
  %p = arith.mulf %x, %y : f32
  %q = arith.addf %p, %x : f32
  %hm = arith.mulf %h, %h : vector<8xbf16>
  %hs = arith.addf %hm, %h : vector<8xbf16>
  %gm = arith.mulf %g, %g : vector<8xf16>
  %gs = arith.addf %gm, %g : vector<8xf16>
  return %m, %s, %q, %hs, %gs : vector<8xf32>, vector<8xf32>, f32, vector<8xbf16>, vector<8xf16>
}
