// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="panel-bytes=2048 min-blocks=4 tile-n=16" \
// RUN:   --canonicalize | FileCheck %s
// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="panel-bytes=2048 min-blocks=4 tile-n=16 filter-packed-once" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=PACKED
// RUN: not conv-opt %s --conv-lower-im2col-panels="min-blocks=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// BAD: conv-lower-im2col-panels: panel-bytes, min-blocks and the tiles must be positive

// The CPU's implicit GEMM: the GEMM after conv-lower-decompose, which reads
// X_col (the im2col copy collapsed to [M, K]), becomes an scf.forall over
// blocks of whole output rows, each with its own panel of X_col. The panels
// here are at most 2 KiB: 12 rows x 36 x 4 bytes.

// CHECK-DAG: #[[$ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d0 * 36 + d1 * 12)>
// CHECK-DAG: #[[$H:map[0-9]*]] = affine_map<(d0) -> (d0 * 2)>
// The NCHW copy's input map in its loop order (g, c, kh, kw, n, oh, ow).
// CHECK-DAG: #[[$IN:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0 * 4 + d1, d2 + d5, d3 + d6)>

// Channels last: the GEMM splits into 2 images x 3 blocks of 2 output rows
// (12 GEMM rows of 36); each block copies only its 4 image rows into a
// 2x6 x 3x3x4 panel, refills its 12 rows of the output and multiplies the
// panel by the packed W^T. No whole X_col is left.
// CHECK-LABEL: func.func @nhwc
// CHECK-NOT: tensor<1x2x6x6x3x3x4xf32>
// CHECK: %[[WT:.*]] = linalg.transpose
// CHECK: scf.forall (%[[N:.*]], %[[B:.*]]) in (2, 3) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<72x16xf32>)
// CHECK:   %[[ROW:.*]] = affine.apply #[[$ROW]](%[[N]], %[[B]])
// CHECK:   %[[H:.*]] = affine.apply #[[$H]](%[[B]])
// CHECK:   %[[IMG:.*]] = tensor.extract_slice %arg0[%[[N]], %[[H]], 0, 0] [1, 4, 8, 4]
// CHECK:   %[[COPY:.*]] = linalg.generic {{.*}} ins(%[[IMG]] : tensor<1x4x8x4xf32>) outs(%{{.*}} : tensor<1x1x2x6x3x3x4xf32>)
// CHECK:   %[[PANEL:.*]] = tensor.collapse_shape %[[COPY]] {{.*}} into tensor<12x36xf32>
// CHECK:   %[[C:.*]] = tensor.extract_slice %[[OUT]][%[[ROW]], 0] [12, 16]
// CHECK:   %[[FILL:.*]] = linalg.fill {{.*}} outs(%[[C]] : tensor<12x16xf32>)
// CHECK:   %[[MM:.*]] = linalg.matmul ins(%[[PANEL]], %[[WT]] : tensor<12x36xf32>, tensor<36x16xf32>) outs(%[[FILL]]
// CHECK:   tensor.parallel_insert_slice %[[MM]] into %[[OUT]][%[[ROW]], 0] [12, 16]
// CHECK-NOT: linalg.matmul
func.func @nhwc(%x: tensor<2x8x8x4xf32>, %w: tensor<16x3x3x4xf32>) -> tensor<2x6x6x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x6x6x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6x6x16xf32>) -> tensor<2x6x6x16xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<2x8x8x4xf32>, tensor<16x3x3x4xf32>) outs(%init : tensor<2x6x6x16xf32>) -> tensor<2x6x6x16xf32>
  return %y : tensor<2x6x6x16xf32>
}

// A padded image: each block pads its own rows of the image (a slice of
// up to 3 rows, padded to 3 x 10: the first and last blocks take a padding
// row) in the block loop, where the whole padded image would be written
// first, by one thread.
// CHECK-LABEL: func.func @nhwc_padded
// CHECK-NOT: tensor<2x10x10x4xf32>
// CHECK: scf.forall (%[[N:.*]], %[[B:.*]]) in (2, 8)
// CHECK:   %[[IMG:.*]] = tensor.extract_slice %arg0[%[[N]], %{{.*}}, 0, 0] [1, %{{.*}}, 8, 4]
// CHECK:   %[[PAD:.*]] = tensor.pad %[[IMG]] low[0, %{{.*}}, 1, 0] high[0, %{{.*}}, 1, 0]
// CHECK:   } : tensor<1x?x8x4xf32> to tensor<1x3x10x4xf32>
// CHECK:   linalg.generic {{.*}} ins(%[[PAD]] : tensor<1x3x10x4xf32>)
// CHECK:   linalg.matmul
// CHECK-NOT: tensor.pad
func.func @nhwc_padded(%x: tensor<2x8x8x4xf32>, %w: tensor<16x3x3x4xf32>) -> tensor<2x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x8x8x4xf32> to tensor<2x10x10x4xf32>
  %e = tensor.empty() : tensor<2x8x8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%p, %w : tensor<2x10x10x4xf32>, tensor<16x3x3x4xf32>) outs(%init : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  return %y : tensor<2x8x8x16xf32>
}

// Padding as deep as a block's slice (3 rows of padding, 3-row windows):
// the first block would read padding alone, so the image is padded whole,
// before the blocks.
// CHECK-LABEL: func.func @nhwc_padded_deep
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 3, 1, 0] high[0, 3, 1, 0]
// CHECK: scf.forall
// CHECK:   tensor.extract_slice %[[PAD]]
// CHECK-NOT: tensor.pad
func.func @nhwc_padded_deep(%x: tensor<2x8x8x4xf32>, %w: tensor<16x3x3x4xf32>) -> tensor<2x12x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 3, 1, 0] high[0, 3, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x8x8x4xf32> to tensor<2x14x10x4xf32>
  %e = tensor.empty() : tensor<2x12x8x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x12x8x16xf32>) -> tensor<2x12x8x16xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%p, %w : tensor<2x14x10x4xf32>, tensor<16x3x3x4xf32>) outs(%init : tensor<2x12x8x16xf32>) -> tensor<2x12x8x16xf32>
  return %y : tensor<2x12x8x16xf32>
}

// Channels first: W [16, 36] times the panel written [K, rows] = [36, 16]
// (its copy's loops (g, c, kh, kw, n, oh, ow): the innermost runs along
// the output row), straight into the block's [16, 2 x 8] of the NCHW
// output: no fold transpose, no transpose of W. The blocks are two output
// rows, 16 pixels (one whole f32 vector of GEMM columns), though their
// panel (2304 bytes) is over the 2 KiB budget: 4 blocks are still enough.
// CHECK-LABEL: func.func @nchw
// CHECK-NOT: linalg.transpose
// CHECK: %[[W:.*]] = tensor.collapse_shape %arg1 {{.*}} into tensor<16x36xf32>
// CHECK: scf.forall (%[[B:.*]]) in (4) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<1x1x16x8x8xf32>)
// CHECK:   %[[ROW:.*]] = affine.apply #[[$H]](%[[B]])
// CHECK:   %[[COPY:.*]] = linalg.generic {indexing_maps = [#[[$IN]], #{{.*}}], {{.*}} outs(%{{.*}} : tensor<1x4x3x3x1x2x8xf32>)
// CHECK:   %[[PANEL:.*]] = tensor.collapse_shape %[[COPY]] {{.*}} into tensor<36x16xf32>
// CHECK:   %[[Y:.*]] = tensor.extract_slice %[[OUT]][0, 0, 0, %[[ROW]], 0] [1, 1, 16, 2, 8]
// CHECK:   %[[C:.*]] = tensor.collapse_shape %[[Y]] {{.*}} into tensor<16x16xf32>
// CHECK:   %[[FILL:.*]] = linalg.fill {{.*}} outs(%[[C]]
// CHECK:   %[[MM:.*]] = linalg.matmul ins(%[[W]], %[[PANEL]] : tensor<16x36xf32>, tensor<36x16xf32>) outs(%[[FILL]]
// CHECK:   %[[E:.*]] = tensor.expand_shape %[[MM]]
// CHECK:   tensor.parallel_insert_slice %[[E]] into %[[OUT]][0, 0, 0, %[[ROW]], 0] [1, 1, 16, 2, 8]
// CHECK-NOT: linalg.transpose
func.func @nchw(%x: tensor<1x4x10x10xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<1x16x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x4x10x10xf32>, tensor<16x4x3x3xf32>) outs(%init : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}

// Grouped, channels first, 16 filters a group (whole 8-row tiles on M):
// one batch_matmul per block over the groups, W first.
// CHECK-LABEL: func.func @grouped
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}}) -> (tensor<1x2x16x4x4xf32>)
// CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x3x3x1x1x4xf32>)
// CHECK:   tensor.collapse_shape {{.*}} into tensor<2x36x4xf32>
// CHECK:   linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<2x16x36xf32>, tensor<2x36x4xf32>)
// CHECK-NOT: linalg.transpose
func.func @grouped(%x: tensor<1x2x4x6x6xf32>, %w: tensor<2x16x4x3x3xf32>) -> tensor<1x2x16x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x16x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x16x4x4xf32>) -> tensor<1x2x16x4x4xf32>
  %y = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x2x4x6x6xf32>, tensor<2x16x4x3x3xf32>) outs(%init : tensor<1x2x16x4x4xf32>) -> tensor<1x2x16x4x4xf32>
  return %y : tensor<1x2x16x4x4xf32>
}

// Grouped with 8 filters a group, fewer than two 8-row tiles: rows first,
// the filters a whole vector on N (pack-rhs's W^T), the fold's transpose
// after the blocks.
// CHECK-LABEL: func.func @grouped_few_filters
// CHECK: %[[WT:.*]] = linalg.transpose {{.*}} permutation = [0, 2, 1]
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%{{.*}}) -> (tensor<2x16x8xf32>)
// CHECK:   linalg.batch_matmul ins(%{{.*}}, %[[WT]] : tensor<2x4x36xf32>, tensor<2x36x8xf32>)
// CHECK: linalg.transpose {{.*}} permutation = [1, 0, 4, 2, 3]
func.func @grouped_few_filters(%x: tensor<1x2x4x6x6xf32>, %w: tensor<2x8x4x3x3xf32>) -> tensor<1x2x8x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x8x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x8x4x4xf32>) -> tensor<1x2x8x4x4xf32>
  %y = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x2x4x6x6xf32>, tensor<2x8x4x3x3xf32>) outs(%init : tensor<1x2x8x4x4xf32>) -> tensor<1x2x8x4x4xf32>
  return %y : tensor<1x2x8x4x4xf32>
}

// Grouped, channels last (the image's channels are [G, Fg]): each block's
// batch_matmul computes into a [G, rows, Fg] block of its own, transposed
// into its rows of the image, [rows, G, Fg] of [N * Ho * Wo, G * Fg]; the
// blocks' result is the NHWC output, with no [G, M, Fg] result and no
// transpose of it after them.
// CHECK-LABEL: func.func @grouped_channels_last
// CHECK: %[[F:.*]] = scf.forall (%{{.*}}, %{{.*}}) in (2, 4) shared_outs(%[[O:.*]] = %{{.*}}) -> (tensor<32x16xf32>)
// CHECK:   %[[AT:.*]] = affine.apply
// CHECK:   %[[OWN:.*]] = linalg.fill {{.*}} -> tensor<2x4x8xf32>
// CHECK:   %[[G:.*]] = linalg.batch_matmul {{.*}} outs(%[[OWN]] : tensor<2x4x8xf32>)
// CHECK:   %[[ROWS:.*]] = tensor.extract_slice %[[O]][%[[AT]], 0] [4, 16] [1, 1]
// CHECK:   %[[VIEW:.*]] = tensor.expand_shape %[[ROWS]] {{\[}}[0], [1, 2]] output_shape [4, 2, 8]
// CHECK:   %[[T:.*]] = linalg.transpose ins(%[[G]] : tensor<2x4x8xf32>) outs(%[[VIEW]] : tensor<4x2x8xf32>) permutation = [1, 0, 2]
// CHECK:   %[[B:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0], [1, 2]] : tensor<4x2x8xf32> into tensor<4x16xf32>
// CHECK:   tensor.parallel_insert_slice %[[B]] into %[[O]][%[[AT]], 0] [4, 16] [1, 1]
// CHECK: %[[Y:.*]] = tensor.expand_shape %[[F]] {{\[}}[0, 1, 2], [3]] output_shape [2, 4, 4, 16]
// CHECK-NOT: linalg.transpose
// CHECK: return %[[Y]]
func.func @grouped_channels_last(%x: tensor<2x6x6x8xf32>, %w: tensor<16x3x3x4xf32>) -> tensor<2x4x4x16xf32> {
  %xg = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [2, 6, 6, 2, 4] : tensor<2x6x6x8xf32> into tensor<2x6x6x2x4xf32>
  %wg = tensor.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [2, 8, 3, 3, 4] : tensor<16x3x3x4xf32> into tensor<2x8x3x3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4x2x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4x2x8xf32>) -> tensor<2x4x4x2x8xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xg, %wg : tensor<2x6x6x2x4xf32>, tensor<2x8x3x3x4xf32>) outs(%init : tensor<2x4x4x2x8xf32>) -> tensor<2x4x4x2x8xf32>
  %c = tensor.collapse_shape %y [[0], [1], [2], [3, 4]] : tensor<2x4x4x2x8xf32> into tensor<2x4x4x16xf32>
  return %c : tensor<2x4x4x16xf32>
}

// A 7x7 output (49 pixels: three 16-lane vectors and one lane) of one
// image: W first while W^T would be transposed per call; rows first, with
// the fold's transpose, where the filter is packed once.
// CHECK-LABEL: func.func @ragged_pixels
// CHECK: scf.forall
// CHECK:   linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x36xf32>, tensor<36x{{[0-9]+}}xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return
// PACKED-LABEL: func.func @ragged_pixels
// PACKED: %[[WT:.*]] = linalg.transpose
// PACKED: scf.forall
// PACKED:   linalg.matmul ins(%{{.*}}, %[[WT]] : tensor<{{[0-9]+}}x36xf32>, tensor<36x16xf32>)
// PACKED: linalg.transpose
// PACKED: return
func.func @ragged_pixels(%x: tensor<1x4x9x9xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<1x16x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x7x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x4x9x9xf32>, tensor<16x4x3x3xf32>) outs(%init : tensor<1x16x7x7xf32>) -> tensor<1x16x7x7xf32>
  return %y : tensor<1x16x7x7xf32>
}

// Two blocks of one output row are fewer than min-blocks = 4: the 64
// filters are split into 2 chunks of 32 (whole tile-n = 16 tiles), each
// block multiplying its panel by its chunk of W^T.
// CHECK-LABEL: func.func @filter_chunks
// CHECK: %[[WT:.*]] = linalg.transpose
// CHECK: scf.forall (%{{.*}}, %[[F:.*]]) in (2, 2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<4x64xf32>)
// CHECK:   %[[F0:.*]] = affine.apply #{{.*}}(%[[F]])
// CHECK:   tensor.extract_slice %[[OUT]][%{{.*}}, %[[F0]]] [2, 32]
// CHECK:   %[[WC:.*]] = tensor.extract_slice %[[WT]][0, %[[F0]]] [72, 32]
// CHECK:   linalg.matmul ins(%{{.*}}, %[[WC]] : tensor<2x72xf32>, tensor<72x32xf32>)
func.func @filter_chunks(%x: tensor<1x4x4x8xf32>, %w: tensor<64x3x3x8xf32>) -> tensor<1x2x2x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x2x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x2x64xf32>) -> tensor<1x2x2x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x4x4x8xf32>, tensor<64x3x3x8xf32>) outs(%init : tensor<1x2x2x64xf32>) -> tensor<1x2x2x64xf32>
  return %y : tensor<1x2x2x64xf32>
}

// Quantized with a filter zero point: the window sums of X_col's rows move
// into the block too (a second shared output), so X_col is never whole.
// CHECK-LABEL: func.func @quantized
// CHECK-NOT: tensor<1x1x4x4x3x3x4xi8>
// CHECK: scf.forall (%{{.*}}) in (4) shared_outs(%[[OUT:.*]] = %{{.*}}, %[[SUMS:.*]] = %{{.*}}) -> (tensor<16x8xi32>, tensor<16xi32>)
// CHECK:   %[[PANEL:.*]] = tensor.collapse_shape {{.*}} into tensor<4x36xi8>
// CHECK:   %[[MM:.*]] = linalg.matmul ins(%[[PANEL]]
// CHECK:   %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[PANEL]] : tensor<4x36xi8>)
// CHECK:   tensor.parallel_insert_slice %[[MM]] into %[[OUT]]
// CHECK:   tensor.parallel_insert_slice %[[S]] into %[[SUMS]]
func.func @quantized(%x: tensor<1x6x6x4xi8>, %w: tensor<8x3x3x4xi8>) -> tensor<1x4x4x8xi32> {
  %zero = arith.constant 0 : i32
  %xz = arith.constant 3 : i32
  %wz = arith.constant -2 : i32
  %e = tensor.empty() : tensor<1x4x4x8xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e : tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xi32>
  %y = linalg.conv_2d_nhwc_fhwc_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w, %xz, %wz : tensor<1x6x6x4xi8>, tensor<8x3x3x4xi8>, i32, i32) outs(%init : tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xi32>
  return %y : tensor<1x4x4x8xi32>
}

// A dynamic batch is left as it was: X_col whole, then the GEMM.
// CHECK-LABEL: func.func @dynamic
// CHECK-NOT: scf.forall
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x?x6x6x3x3x4xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x36xf32>, tensor<36x16xf32>)
func.func @dynamic(%x: tensor<?x8x8x4xf32>, %w: tensor<16x3x3x4xf32>, %init: tensor<?x6x6x16xf32>) -> tensor<?x6x6x16xf32> {
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<?x8x8x4xf32>, tensor<16x3x3x4xf32>) outs(%init : tensor<?x6x6x16xf32>) -> tensor<?x6x6x16xf32>
  return %y : tensor<?x6x6x16xf32>
}
