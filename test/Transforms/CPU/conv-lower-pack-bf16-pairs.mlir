// RUN: conv-opt %s --conv-lower-pack-bf16-pairs --split-input-file | FileCheck %s

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
