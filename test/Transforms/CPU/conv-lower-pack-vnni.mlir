// RUN: conv-opt %s --conv-lower-pack-vnni --split-input-file | FileCheck %s
// Each element type only where asked (the pipeline asks per host feature).
// RUN: conv-opt %s --conv-lower-pack-vnni="i8=false" --split-input-file | FileCheck %s --check-prefix=NO-I8
// RUN: conv-opt %s --conv-lower-pack-vnni="bf16=false" --split-input-file | FileCheck %s --check-prefix=NO-BF16
// AMX's TDPBSSD reads both operands signed: i8 keeps its signed product.
// RUN: conv-opt %s --conv-lower-pack-vnni="signed-i8" --split-input-file | FileCheck %s --check-prefix=SIGNED

// The im2col panels' GEMM: A = X_col [M, K] (K innermost: only split; a
// block's slice of it is a slice of the split whole), B = the filter panels
// [P, K, nr] (split, then the pair moved innermost: one transpose where B is
// defined, outside the row blocks).
// CHECK-DAG: #[[$A:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d4)>
// CHECK-DAG: #[[$B:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d2, d4)>
// CHECK-DAG: #[[$C:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @panels
// CHECK-SAME: (%[[A:.*]]: tensor<16x64xbf16>, %[[B:.*]]: tensor<2x64x32xbf16>
// CHECK: %[[BS:.*]] = tensor.expand_shape %[[B]] {{\[}}[0], [1, 2], [3]] output_shape [2, 32, 2, 32]
// CHECK: %[[BP:.*]] = linalg.transpose ins(%[[BS]] : tensor<2x32x2x32xbf16>) outs(%{{.*}} : tensor<2x32x32x2xbf16>) permutation = [0, 1, 3, 2]
// CHECK: %[[AW:.*]] = tensor.expand_shape %[[A]] {{\[}}[0], [1, 2]] output_shape [16, 32, 2] : tensor<16x64xbf16> into tensor<16x32x2xbf16>
// CHECK: scf.forall
// CHECK: %[[AS:.*]] = tensor.extract_slice %[[AW]][%{{.*}}, 0, 0] [8, 32, 2] [1, 1, 1] : tensor<16x32x2xbf16> to tensor<8x32x2xbf16>
// CHECK: linalg.generic
// CHECK-SAME: indexing_maps = [#[[$A]], #[[$B]], #[[$C]]]
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME: ins(%[[AS]], %[[BP]] : tensor<8x32x2xbf16>, tensor<2x32x32x2xbf16>)
#a = affine_map<(m, p, n, k) -> (m, k)>
#b = affine_map<(m, p, n, k) -> (p, k, n)>
#c = affine_map<(m, p, n, k) -> (m, p, n)>
func.func @panels(%x: tensor<16x64xbf16>, %w: tensor<2x64x32xbf16>, %out: tensor<16x2x32xf32>) -> tensor<16x2x32xf32> {
  %r = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<16x2x32xf32>) {
    %row = affine.apply affine_map<(d0) -> (d0 * 8)>(%i)
    %xs = tensor.extract_slice %x[%row, 0] [8, 64] [1, 1] : tensor<16x64xbf16> to tensor<8x64xbf16>
    %os = tensor.extract_slice %o[%row, 0, 0] [8, 2, 32] [1, 1, 1] : tensor<16x2x32xf32> to tensor<8x2x32xf32>
    %g = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%xs, %w : tensor<8x64xbf16>, tensor<2x64x32xbf16>) outs(%os : tensor<8x2x32xf32>) {
    ^bb0(%in: bf16, %f: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %f : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    } -> tensor<8x2x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[%row, 0, 0] [8, 2, 32] [1, 1, 1] : tensor<8x2x32xf32> into tensor<16x2x32xf32>
    }
  }
  return %r : tensor<16x2x32xf32>
}

// -----

// The panels' blocks slice the filter panels per block of filters inside
// the forall: the whole panels are laid out in pairs once, outside it, and
// each block slices that (no repack per block and call).
// CHECK-LABEL: func.func @sliced_panels
// CHECK: %[[BS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3]] output_shape [4, 32, 2, 32]
// CHECK: %[[BP:.*]] = linalg.transpose ins(%[[BS]] : tensor<4x32x2x32xbf16>) outs(%{{.*}} : tensor<4x32x32x2xbf16>) permutation = [0, 1, 3, 2]
// CHECK: scf.forall (%[[I:.*]]) in (2)
// CHECK-NOT: linalg.transpose
// CHECK: tensor.extract_slice %[[BP]][%{{.*}}, 0, 0, 0] [2, 32, 32, 2] [1, 1, 1, 1] : tensor<4x32x32x2xbf16> to tensor<2x32x32x2xbf16>
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic
#sa = affine_map<(m, p, n, k) -> (m, k)>
#sb = affine_map<(m, p, n, k) -> (p, k, n)>
#sc = affine_map<(m, p, n, k) -> (m, p, n)>
func.func @sliced_panels(%x: tensor<8x64xbf16>, %w: tensor<4x64x32xbf16>, %out: tensor<8x4x32xf32>) -> tensor<8x4x32xf32> {
  %r = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<8x4x32xf32>) {
    %p = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %ws = tensor.extract_slice %w[%p, 0, 0] [2, 64, 32] [1, 1, 1] : tensor<4x64x32xbf16> to tensor<2x64x32xbf16>
    %os = tensor.extract_slice %o[0, %p, 0] [8, 2, 32] [1, 1, 1] : tensor<8x4x32xf32> to tensor<8x2x32xf32>
    %g = linalg.generic {indexing_maps = [#sa, #sb, #sc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%x, %ws : tensor<8x64xbf16>, tensor<2x64x32xbf16>) outs(%os : tensor<8x2x32xf32>) {
    ^bb0(%in: bf16, %f: bf16, %acc: f32):
      %0 = arith.extf %in : bf16 to f32
      %1 = arith.extf %f : bf16 to f32
      %2 = arith.mulf %0, %1 : f32
      %3 = arith.addf %acc, %2 : f32
      linalg.yield %3 : f32
    } -> tensor<8x2x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[0, %p, 0] [8, 2, 32] [1, 1, 1] : tensor<8x2x32xf32> into tensor<8x4x32xf32>
    }
  }
  return %r : tensor<8x4x32xf32>
}

// -----

// A named matmul becomes a generic; B [K, N] gets the pairs innermost,
// [K / 2, N, 2].
// CHECK-LABEL: func.func @matmul
// NO-BF16-LABEL: func.func @matmul
// NO-BF16-NOT: tensor.expand_shape
// NO-BF16: linalg.matmul
// CHECK: %[[BS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [8, 2, 16] : tensor<16x16xbf16> into tensor<8x2x16xbf16>
// CHECK: linalg.transpose ins(%[[BS]] : tensor<8x2x16xbf16>) outs(%{{.*}} : tensor<8x16x2xbf16>) permutation = [0, 2, 1]
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<4x8x2xbf16>, tensor<8x16x2xbf16>)
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: tensor<4x16xbf16>, %b: tensor<16x16xbf16>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x16xbf16>, tensor<16x16xbf16>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// B read as [N, K] (the filter as it lies): [K / 2, N, 2], one transpose.
// CHECK-LABEL: func.func @b_transposed
// CHECK: %[[BS:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [16, 4, 2] : tensor<16x8xbf16> into tensor<16x4x2xbf16>
// CHECK: linalg.transpose ins(%[[BS]] : tensor<16x4x2xbf16>) outs(%{{.*}} : tensor<4x16x2xbf16>) permutation = [1, 0, 2]
#am = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#cm = affine_map<(m, n, k) -> (m, n)>
func.func @b_transposed(%a: tensor<4x8xbf16>, %b: tensor<16x8xbf16>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.generic {indexing_maps = [#am, #bt, #cm], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xbf16>, tensor<16x8xbf16>) outs(%c : tensor<4x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %y : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  } -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// An odd K (the 7x7 RGB stem's 147): one zero more in both inputs, then
// the pairs as for an even one.
// CHECK-LABEL: func.func @odd_k
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : bf16
// CHECK-DAG: %[[B:.*]] = tensor.pad %{{.*}} low[0, 0] high[1, 0]
// CHECK: tensor.expand_shape %[[B]] {{\[}}[0, 1], [2]] output_shape [74, 2, 16] : tensor<148x16xbf16> into tensor<74x2x16xbf16>
// CHECK: %[[A:.*]] = tensor.pad %{{.*}} low[0, 0] high[0, 1]
// CHECK: tensor.expand_shape %[[A]] {{\[}}[0], [1, 2]] output_shape [4, 74, 2] : tensor<4x148xbf16> into tensor<4x74x2xbf16>
// CHECK: linalg.generic
// CHECK-SAME: tensor<4x74x2xbf16>, tensor<74x16x2xbf16>
func.func @odd_k(%a: tensor<4x147xbf16>, %b: tensor<147x16xbf16>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x147xbf16>, tensor<147x16xbf16>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Left as they are: columns that come in no whole dots (N = 6), f32
// operands, and K = 1 (nothing to pair).
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: linalg.transpose
// CHECK-COUNT-3: linalg.matmul
func.func @untouched(%a1: tensor<4x1xbf16>, %b1: tensor<1x16xbf16>, %c: tensor<4x16xf32>,
                     %a6: tensor<4x8xbf16>, %b6: tensor<8x6xbf16>, %c6: tensor<4x6xf32>,
                     %af: tensor<4x8xf32>, %bf: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x6xf32>, tensor<4x16xf32>) {
  %0 = linalg.matmul ins(%a1, %b1 : tensor<4x1xbf16>, tensor<1x16xbf16>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = linalg.matmul ins(%a6, %b6 : tensor<4x8xbf16>, tensor<8x6xbf16>) outs(%c6 : tensor<4x6xf32>) -> tensor<4x6xf32>
  %2 = linalg.matmul ins(%af, %bf : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0, %1, %2 : tensor<4x16xf32>, tensor<4x6xf32>, tensor<4x16xf32>
}

// -----

// i8 into i32 (linalg's signed product): K in quads, padded to a whole one
// (10 -> 12). VPDPBUSD reads A's bytes unsigned: the body flips their sign
// bits (adds 128; the register tile flips each broadcast group) and reads
// them zero-extended, and the accumulator starts 128 * sum_k B lower, B's
// column sums made where B is defined.
// CHECK-DAG: #[[$ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$COLS:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @i8_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<4x10xi8>, %[[B:.*]]: tensor<10x16xi8>, %[[C:.*]]: tensor<4x16xi32>)
// CHECK: %[[BP:.*]] = tensor.pad %[[B]] low[0, 0] high[2, 0]
// CHECK: %[[BS:.*]] = tensor.expand_shape %[[BP]] {{\[}}[0, 1], [2]] output_shape [3, 4, 16] : tensor<12x16xi8> into tensor<3x4x16xi8>
// CHECK: %[[BT:.*]] = linalg.transpose ins(%[[BS]] : tensor<3x4x16xi8>) outs(%{{.*}} : tensor<3x16x4xi8>) permutation = [0, 2, 1]
// CHECK: %[[SUMS:.*]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$COLS]]], iterator_types = ["reduction", "parallel"]} ins(%[[B]] : tensor<10x16xi8>)
// CHECK: arith.extsi
// CHECK: arith.shli %{{.*}}, %{{.*}} : i32
// CHECK: %[[AP:.*]] = tensor.pad %[[A]] low[0, 0] high[0, 2]
// CHECK: %[[AS:.*]] = tensor.expand_shape %[[AP]] {{\[}}[0], [1, 2]] output_shape [4, 3, 4] : tensor<4x12xi8> into tensor<4x3x4xi8>
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[SUMS]] : tensor<16xi32>) outs(%[[C]] : tensor<4x16xi32>)
// CHECK: arith.subi
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[AS]], %[[BT]] : tensor<4x3x4xi8>, tensor<3x16x4xi8>) outs(%[[INIT]] : tensor<4x16xi32>)
// CHECK: ^bb0(%[[X:.*]]: i8, %[[W:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK: %[[SIGN:.*]] = arith.constant -128 : i8
// CHECK: %[[FLIPPED:.*]] = arith.xori %[[X]], %[[SIGN]] : i8
// CHECK: arith.extui %[[FLIPPED]] : i8 to i32
// CHECK: arith.extsi %[[W]] : i8 to i32
// signed-i8: the same quads, the body linalg's signed product with A
// first, and neither the flip nor the column sums (C as it was).
// SIGNED-LABEL: func.func @i8_matmul
// SIGNED-SAME: (%[[A:.*]]: tensor<4x10xi8>, %[[B:.*]]: tensor<10x16xi8>, %[[C:.*]]: tensor<4x16xi32>)
// SIGNED-NOT: arith.subi
// SIGNED: %[[BT:.*]] = linalg.transpose {{.*}} outs(%{{.*}} : tensor<3x16x4xi8>)
// SIGNED: %[[AS:.*]] = tensor.expand_shape %{{.*}} output_shape [4, 3, 4] : tensor<4x12xi8> into tensor<4x3x4xi8>
// SIGNED: linalg.generic
// SIGNED-SAME: ins(%[[AS]], %[[BT]] : tensor<4x3x4xi8>, tensor<3x16x4xi8>) outs(%[[C]] : tensor<4x16xi32>)
// SIGNED: ^bb0(%[[X:.*]]: i8, %[[W:.*]]: i8, %[[ACC:.*]]: i32):
// SIGNED-NEXT: %[[XW:.*]] = arith.extsi %[[X]] : i8 to i32
// SIGNED-NEXT: %[[WW:.*]] = arith.extsi %[[W]] : i8 to i32
// SIGNED-NEXT: %[[P:.*]] = arith.muli %[[XW]], %[[WW]] : i32
// SIGNED-NEXT: arith.addi %[[ACC]], %[[P]] : i32
// SIGNED-NOT: arith.xori
// NO-I8-LABEL: func.func @i8_matmul
// NO-I8-NOT: arith.xori
// NO-I8: linalg.matmul
func.func @i8_matmul(%a: tensor<4x10xi8>, %b: tensor<10x16xi8>, %c: tensor<4x16xi32>) -> tensor<4x16xi32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x10xi8>, tensor<10x16xi8>) outs(%c : tensor<4x16xi32>) -> tensor<4x16xi32>
  return %0 : tensor<4x16xi32>
}

// -----

// The panels' per-block slices of the filter: its column sums are made once
// for the whole filter, outside the row blocks, and sliced per block like
// the quads.
// CHECK-LABEL: func.func @i8_sliced_panels
// CHECK: %[[BT:.*]] = linalg.transpose ins(%{{.*}} : tensor<4x16x4x32xi8>) outs(%{{.*}} : tensor<4x16x32x4xi8>) permutation = [0, 1, 3, 2]
// CHECK: %[[SUMS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x64x32xi8>) outs(%{{.*}} : tensor<4x32xi32>)
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[BT]][%{{.*}}, 0, 0, 0] [2, 16, 32, 4] [1, 1, 1, 1] : tensor<4x16x32x4xi8> to tensor<2x16x32x4xi8>
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %[[SUMS]][%{{.*}}, 0] [2, 32] [1, 1] : tensor<4x32xi32> to tensor<2x32xi32>
// CHECK: linalg.generic {{.*}} ins(%[[BLOCK]] : tensor<2x32xi32>)
// CHECK: arith.subi
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic
#ia = affine_map<(m, p, n, k) -> (m, k)>
#ib = affine_map<(m, p, n, k) -> (p, k, n)>
#ic = affine_map<(m, p, n, k) -> (m, p, n)>
func.func @i8_sliced_panels(%x: tensor<8x64xi8>, %w: tensor<4x64x32xi8>, %out: tensor<8x4x32xi32>) -> tensor<8x4x32xi32> {
  %r = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<8x4x32xi32>) {
    %p = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    %ws = tensor.extract_slice %w[%p, 0, 0] [2, 64, 32] [1, 1, 1] : tensor<4x64x32xi8> to tensor<2x64x32xi8>
    %os = tensor.extract_slice %o[0, %p, 0] [8, 2, 32] [1, 1, 1] : tensor<8x4x32xi32> to tensor<8x2x32xi32>
    %g = linalg.generic {indexing_maps = [#ia, #ib, #ic], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%x, %ws : tensor<8x64xi8>, tensor<2x64x32xi8>) outs(%os : tensor<8x2x32xi32>) {
    ^bb0(%in: i8, %f: i8, %acc: i32):
      %0 = arith.extsi %in : i8 to i32
      %1 = arith.extsi %f : i8 to i32
      %2 = arith.muli %0, %1 : i32
      %3 = arith.addi %acc, %2 : i32
      linalg.yield %3 : i32
    } -> tensor<8x2x32xi32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[0, %p, 0] [8, 2, 32] [1, 1, 1] : tensor<8x2x32xi32> into tensor<8x4x32xi32>
    }
  }
  return %r : tensor<8x4x32xi32>
}

// -----

// Left as they are: an unsigned i8 product (its bytes have no sign to
// flip), and i8 into i16 (no dot instruction).
// CHECK-LABEL: func.func @i8_untouched
// CHECK-NOT: arith.xori
// CHECK-COUNT-2: linalg.matmul
func.func @i8_untouched(%a: tensor<4x8xi8>, %b: tensor<8x16xi8>, %c: tensor<4x16xi32>, %c16: tensor<4x16xi16>) -> (tensor<4x16xi32>, tensor<4x16xi16>) {
  %0 = linalg.matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%a, %b : tensor<4x8xi8>, tensor<8x16xi8>) outs(%c : tensor<4x16xi32>) -> tensor<4x16xi32>
  %1 = linalg.matmul ins(%a, %b : tensor<4x8xi8>, tensor<8x16xi8>) outs(%c16 : tensor<4x16xi16>) -> tensor<4x16xi16>
  return %0, %1 : tensor<4x16xi32>, tensor<4x16xi16>
}

// -----

// A dynamic M (a dynamic batch's rows; conv-fuzz): A is only reshaped, its
// rows dynamic.
// CHECK-LABEL: func.func @i8_dynamic_rows
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x2x4xi8>, tensor<2x16x4xi8>)
// CHECK: arith.xori
func.func @i8_dynamic_rows(%a: tensor<?x8xi8>, %b: tensor<8x16xi8>, %c: tensor<?x16xi32>) -> tensor<?x16xi32> {
  %0 = linalg.matmul ins(%a, %b : tensor<?x8xi8>, tensor<8x16xi8>) outs(%c : tensor<?x16xi32>) -> tensor<?x16xi32>
  return %0 : tensor<?x16xi32>
}
