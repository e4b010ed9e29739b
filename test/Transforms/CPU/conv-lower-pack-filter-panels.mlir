// RUN: conv-opt %s --conv-lower-pack-filter-panels --split-input-file | FileCheck %s
// RUN: conv-opt %s --conv-lower-pack-filter-panels="panel-width=8" --split-input-file | FileCheck %s --check-prefix=NR8

// pack-rhs's W^T [K, F] read whole: W [F, K] becomes Wp [F / 16, K, 16]
// (one transpose of its [F / 16, 16, K] view, replacing W^T's), and the GEMM
// a contraction over (m, panel, column, k) into C viewed as [M, F / 16, 16].
// CHECK-DAG: #[[$MA:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK-DAG: #[[$MB:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3, d2)>
// CHECK-DAG: #[[$MC:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @whole_filter
// CHECK-SAME: (%[[A:.*]]: tensor<49x72xf32>, %[[W:.*]]: tensor<64x72xf32>, %[[C:.*]]: tensor<49x64xf32>)
// CHECK-NOT: permutation = [1, 0]
// CHECK: %[[V:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] output_shape [4, 16, 72] : tensor<64x72xf32> into tensor<4x16x72xf32>
// CHECK: %[[WP:.*]] = linalg.transpose ins(%[[V]] : tensor<4x16x72xf32>) outs(%{{.*}} : tensor<4x72x16xf32>) permutation = [0, 2, 1]
// CHECK: %[[CP:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0], [1, 2]] output_shape [49, 4, 16] : tensor<49x64xf32> into tensor<49x4x16xf32>
// CHECK: %[[G:.*]] = linalg.generic
// CHECK-SAME: indexing_maps = [#[[$MA]], #[[$MB]], #[[$MC]]]
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[A]], %[[WP]] : tensor<49x72xf32>, tensor<4x72x16xf32>) outs(%[[CP]] : tensor<49x4x16xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0], [1, 2]] : tensor<49x4x16xf32> into tensor<49x64xf32>
// CHECK: return %[[R]]
// NR8-LABEL: func.func @whole_filter
// NR8: linalg.transpose ins(%{{.*}} : tensor<8x8x72xf32>) outs(%{{.*}} : tensor<8x72x8xf32>) permutation = [0, 2, 1]
func.func @whole_filter(%a: tensor<49x72xf32>, %w: tensor<64x72xf32>, %c: tensor<49x64xf32>) -> tensor<49x64xf32> {
  %e = tensor.empty() : tensor<72x64xf32>
  %wt = linalg.transpose ins(%w : tensor<64x72xf32>) outs(%e : tensor<72x64xf32>) permutation = [1, 0]
  %0 = linalg.matmul ins(%a, %wt : tensor<49x72xf32>, tensor<72x64xf32>) outs(%c : tensor<49x64xf32>) -> tensor<49x64xf32>
  return %0 : tensor<49x64xf32>
}

// -----

// A block of filters per thread (conv-lower-im2col-panels' slices of W^T at
// a multiple of 32): the same slice of the panels, at offset / 16.
// CHECK: #[[$HALF:.*]] = affine_map<(d0) -> (d0 * 2)>
// CHECK-LABEL: func.func @filter_blocks
// CHECK: %[[WP:.*]] = linalg.transpose {{.*}} permutation = [0, 2, 1]
// CHECK: scf.forall (%[[I:.*]]) in (4)
// CHECK: %[[OFF:.*]] = affine.apply #[[$HALF]](%[[I]])
// CHECK: tensor.extract_slice %[[WP]][%[[OFF]], 0, 0] [2, 72, 16] [1, 1, 1] : tensor<8x72x16xf32> to tensor<2x72x16xf32>
// CHECK: linalg.generic
// CHECK-NOT: linalg.matmul
func.func @filter_blocks(%a: tensor<49x72xf32>, %w: tensor<128x72xf32>, %c: tensor<49x128xf32>) -> tensor<49x128xf32> {
  %e = tensor.empty() : tensor<72x128xf32>
  %wt = linalg.transpose ins(%w : tensor<128x72xf32>) outs(%e : tensor<72x128xf32>) permutation = [1, 0]
  %r = scf.forall (%i) in (4) shared_outs(%out = %c) -> (tensor<49x128xf32>) {
    %off = affine.apply affine_map<(d0) -> (d0 * 32)>(%i)
    %b = tensor.extract_slice %wt[0, %off] [72, 32] [1, 1] : tensor<72x128xf32> to tensor<72x32xf32>
    %ct = tensor.extract_slice %out[0, %off] [49, 32] [1, 1] : tensor<49x128xf32> to tensor<49x32xf32>
    %m = linalg.matmul ins(%a, %b : tensor<49x72xf32>, tensor<72x32xf32>) outs(%ct : tensor<49x32xf32>) -> tensor<49x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %out[0, %off] [49, 32] [1, 1] : tensor<49x32xf32> into tensor<49x128xf32>
    }
  }
  return %r : tensor<49x128xf32>
}

// -----

// Left alone: F = 24 is not whole panels of 16; B an argument (no W^T);
// a block of 8 filters (half a panel).
// CHECK-LABEL: func.func @not_panels
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// NR8-LABEL: func.func @not_panels
// NR8: linalg.generic
// NR8: linalg.matmul
// NR8: linalg.generic
func.func @not_panels(%a: tensor<49x72xf32>, %w: tensor<24x72xf32>, %b: tensor<72x24xf32>, %c: tensor<49x24xf32>, %c8: tensor<49x8xf32>) -> (tensor<49x24xf32>, tensor<49x24xf32>, tensor<49x8xf32>) {
  %e = tensor.empty() : tensor<72x24xf32>
  %wt = linalg.transpose ins(%w : tensor<24x72xf32>) outs(%e : tensor<72x24xf32>) permutation = [1, 0]
  %0 = linalg.matmul ins(%a, %wt : tensor<49x72xf32>, tensor<72x24xf32>) outs(%c : tensor<49x24xf32>) -> tensor<49x24xf32>
  %1 = linalg.matmul ins(%a, %b : tensor<49x72xf32>, tensor<72x24xf32>) outs(%c : tensor<49x24xf32>) -> tensor<49x24xf32>
  %s = tensor.extract_slice %wt[0, 8] [72, 8] [1, 1] : tensor<72x24xf32> to tensor<72x8xf32>
  %2 = linalg.matmul ins(%a, %s : tensor<49x72xf32>, tensor<72x8xf32>) outs(%c8 : tensor<49x8xf32>) -> tensor<49x8xf32>
  return %0, %1, %2 : tensor<49x24xf32>, tensor<49x24xf32>, tensor<49x8xf32>
}

// -----

// A batch-1 linear layer with 200 outputs (no multiple of 16): its panels
// are padded with 8 zero filters to 13 whole ones, the contraction computes
// [1, 208] into the zero-padded init and the result is its [1, 200] slice.
// A GEMM of more rows (49), or one whose zero filters would pass an eighth of
// the real ones (24 padded to 32), is left alone.
// CHECK-LABEL: func.func @padded_panels
// CHECK: %[[W:.*]] = tensor.pad %{{.*}} low[0, 0] high[8, 0]
// CHECK: tensor<200x64xf32> to tensor<208x64xf32>
// CHECK: %[[STRIPS:.*]] = tensor.expand_shape %[[W]] {{\[}}[0, 1], [2]] output_shape [13, 16, 64]
// CHECK: %[[WP:.*]] = linalg.transpose ins(%[[STRIPS]] : tensor<13x16x64xf32>) {{.*}} permutation = [0, 2, 1]
// CHECK: %[[C:.*]] = tensor.pad %{{.*}} low[0, 0] high[0, 8]
// CHECK: tensor<1x200xf32> to tensor<1x208xf32>
// CHECK: %[[CP:.*]] = tensor.expand_shape %[[C]] {{\[}}[0], [1, 2]] output_shape [1, 13, 16]
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[WP]] : tensor<1x64xf32>, tensor<13x64x16xf32>) outs(%[[CP]] : tensor<1x13x16xf32>)
// CHECK: %[[ALL:.*]] = tensor.collapse_shape %[[R]] {{\[}}[0], [1, 2]] : tensor<1x13x16xf32> into tensor<1x208xf32>
// CHECK: tensor.extract_slice %[[ALL]][0, 0] [1, 200] [1, 1] : tensor<1x208xf32> to tensor<1x200xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<49x64xf32>, tensor<64x200xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<1x64xf32>, tensor<64x24xf32>)
func.func @padded_panels(%a: tensor<1x64xf32>, %w: tensor<200x64xf32>, %c: tensor<1x200xf32>,
                         %a49: tensor<49x64xf32>, %c49: tensor<49x200xf32>,
                         %w24: tensor<24x64xf32>, %c24: tensor<1x24xf32>)
    -> (tensor<1x200xf32>, tensor<49x200xf32>, tensor<1x24xf32>) {
  %e = tensor.empty() : tensor<64x200xf32>
  %wt = linalg.transpose ins(%w : tensor<200x64xf32>) outs(%e : tensor<64x200xf32>) permutation = [1, 0]
  %0 = linalg.matmul ins(%a, %wt : tensor<1x64xf32>, tensor<64x200xf32>) outs(%c : tensor<1x200xf32>) -> tensor<1x200xf32>
  %e2 = tensor.empty() : tensor<64x200xf32>
  %wt2 = linalg.transpose ins(%w : tensor<200x64xf32>) outs(%e2 : tensor<64x200xf32>) permutation = [1, 0]
  %1 = linalg.matmul ins(%a49, %wt2 : tensor<49x64xf32>, tensor<64x200xf32>) outs(%c49 : tensor<49x200xf32>) -> tensor<49x200xf32>
  %e3 = tensor.empty() : tensor<64x24xf32>
  %wt3 = linalg.transpose ins(%w24 : tensor<24x64xf32>) outs(%e3 : tensor<64x24xf32>) permutation = [1, 0]
  %2 = linalg.matmul ins(%a, %wt3 : tensor<1x64xf32>, tensor<64x24xf32>) outs(%c24 : tensor<1x24xf32>) -> tensor<1x24xf32>
  return %0, %1, %2 : tensor<1x200xf32>, tensor<49x200xf32>, tensor<1x24xf32>
}
