// RUN: conv-opt %s --conv-lower-winograd="min-tiles=0" --canonicalize | FileCheck %s
// RUN: conv-opt %s --conv-lower-winograd | FileCheck %s --check-prefix=RULE
// RUN: conv-opt %s --conv-lower-winograd="filter-packed-once" | FileCheck %s --check-prefix=PACKED
// RUN: conv-opt %s --conv-lower-winograd="filter-packed-once threads=2" --canonicalize \
// RUN:   | FileCheck %s --check-prefix=SPLIT
// RUN: conv-opt %s --conv-lower-winograd="emit-remarks" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REMARK
// RUN: not conv-opt %s --conv-lower-winograd="block-tiles=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: conv-lower-winograd: min-tiles must be >= 0, and max-channels, block-tiles and threads positive

// NCHW, a zero pad absorbed, 10x9 outputs (3x3 tiles of 4x4, the last row and
// column cropped), 24 filters (8-lane vectors), 16 channels (16 lanes).
// CHECK-LABEL: func.func @nchw_padded
// CHECK-NOT: tensor.pad
// The image to channels last, the filter to [3, 3, C, F].
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x16x10x9xf32>) outs(%{{.*}} : tensor<1x10x9x16xf32>) permutation = [0, 2, 3, 1]
// CHECK: %[[HWCF:.*]] = linalg.transpose ins(%{{.*}} : tensor<24x16x3x3xf32>) outs(%{{.*}} : tensor<3x3x16x24xf32>) permutation = [2, 3, 1, 0]
// U = G g G^T once: per channel, its 36 rows of U, an 8-filter vector at a
// time (9 taps in, 36 out).
// U is [filter blocks, 36, C, F / filter blocks]: one block of filters here.
// CHECK: %[[U:.*]] = scf.forall (%{{.*}}) in (16) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x36x16x24xf32>)
// CHECK:   scf.for %{{.*}} = %c0 to %c24 step %c8 iter_args(%{{.*}} = %{{.*}}) -> (tensor<1x36x1x24xf32>)
// CHECK-COUNT-9: vector.transfer_read %[[HWCF]]{{.*}} : tensor<3x3x16x24xf32>, vector<8xf32>
// CHECK-COUNT-36: vector.transfer_write {{.*}} : vector<8xf32>, tensor<1x36x1x24xf32>
// The blocks: one tile row each (3 blocks; one thread asks for 2 at least).
// CHECK: scf.forall (%[[BLK:.*]]) in (3) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x24x12x12xf32>)
// Input transform: the 6x6 window read at clamped places, zero where outside.
// CHECK:   scf.for %[[T:.*]] = %c0 to %c3 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<36x3x16xf32>)
// CHECK:     arith.minsi
// (The loop over 16-channel vectors has one iteration here: folded.)
// CHECK-COUNT-36: vector.transfer_read {{.*}} : tensor<1x10x9x16xf32>, vector<16xf32>
// CHECK:       arith.select
// CHECK-COUNT-36: vector.transfer_write {{.*}} : vector<16xf32>, tensor<36x3x16xf32>
// The 36 GEMMs of the block.
// CHECK:   %[[BU:.*]] = tensor.extract_slice %[[U]][0, 0, 0, 0] [1, 36, 16, 24] [1, 1, 1, 1] : tensor<1x36x16x24xf32> to tensor<36x16x24xf32>
// CHECK:   linalg.batch_matmul ins(%{{.*}}, %[[BU]] : tensor<36x3x16xf32>, tensor<36x16x24xf32>) outs(%{{.*}} : tensor<36x3x24xf32>)
// Output transform, written channels first: 16 pixels x 8 filters transposed
// in registers, 4 rows of 4 pixels per filter.
// CHECK:   scf.for %{{.*}} = %c0 to %c24 step %c8
// CHECK-COUNT-36: vector.transfer_read {{.*}} : tensor<36x3x24xf32>, vector<8xf32>
// CHECK:     vector.transpose %{{.*}}, [1, 0] : vector<16x8xf32> to vector<8x16xf32>
// CHECK-COUNT-32: vector.transfer_write {{.*}} : vector<4xf32>, tensor<1x24x4x12xf32>
// CHECK: } {conv_lower.winograd}
// The padded output cropped; no transpose back.
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 24, 10, 9] [1, 1, 1, 1] : tensor<1x24x12x12xf32> to tensor<1x24x10x9xf32>
// CHECK-NOT: linalg.conv
// CHECK-NOT: linalg.transpose
// The cost rule: 9 tiles are fewer than min-tiles (32): left to the GEMM route.
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: fewer 4x4 output tiles than min-tiles (the GEMM route is faster)
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: strides or dilations are not 1
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: grouped or quantized
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: not f32
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: channels or filters not a multiple of 8
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: the accumulator is not a linalg.fill
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: not a 2-D 3x3 convolution
// REMARK-DAG: remark: conv-lower-winograd: left to the GEMM route: the transformed filters would take more than 16 MiB
// RULE-LABEL: func.func @nchw_padded
// RULE: linalg.conv_2d_nchw_fchw
// RULE-NOT: conv_lower.winograd
func.func @nchw_padded(%x: tensor<1x16x10x9xf32>, %w: tensor<24x16x3x3xf32>) -> tensor<1x24x10x9xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x16x10x9xf32> to tensor<1x16x12x11xf32>
  %e = tensor.empty() : tensor<1x24x10x9xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x24x10x9xf32>) -> tensor<1x24x10x9xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%p, %w : tensor<1x16x12x11xf32>, tensor<24x16x3x3xf32>) outs(%init : tensor<1x24x10x9xf32>) -> tensor<1x24x10x9xf32>
  return %y : tensor<1x24x10x9xf32>
}

// NHWC with an HWCF filter (already [3, 3, C, F]: no transpose), two images
// of 8x8 outputs (4 tiles each, no crop), a nonzero fill: its value is added in
// the output transform, written channels last. With 8 tiles, the default rule
// leaves it too.
// CHECK-LABEL: func.func @nhwc_hwcf_fill
// CHECK-SAME: %[[X:.*]]: tensor<2x10x10x32xf32>, %[[W:.*]]: tensor<3x3x32x16xf32>
// CHECK-NOT: linalg.transpose
// CHECK: %[[BIAS:.*]] = arith.constant dense<5.000000e-01> : vector<16xf32>
// CHECK: scf.forall (%{{.*}}) in (32)
// CHECK: vector.transfer_read %[[W]]
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x8x8x16xf32>)
// CHECK: vector.transfer_read %[[X]]
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<36x4x32xf32>, tensor<36x32x16xf32>) outs(%{{.*}} : tensor<36x4x16xf32>)
// CHECK: arith.addf %{{.*}}, %[[BIAS]] : vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>, tensor<1x8x8x16xf32>
// CHECK: } {conv_lower.winograd}
// CHECK-NOT: tensor.extract_slice {{.*}} to tensor<2x8x8x16xf32>
// CHECK-NOT: linalg.conv
// RULE-LABEL: func.func @nhwc_hwcf_fill
// RULE: linalg.conv_2d_nhwc_hwcf
func.func @nhwc_hwcf_fill(%x: tensor<2x10x10x32xf32>, %w: tensor<3x3x32x16xf32>) -> tensor<2x8x8x16xf32> {
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<2x8x8x16xf32>
  %init = linalg.fill ins(%half : f32) outs(%e : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<2x10x10x32xf32>, tensor<3x3x32x16xf32>) outs(%init : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  return %y : tensor<2x8x8x16xf32>
}

// What it leaves untouched even with min-tiles=0: a stride, a dilation, two
// groups, f16 data, 12 channels (not whole 8-lane vectors), an accumulator
// that is not a fill, a 5x5 filter.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: conv_lower.winograd
// CHECK-COUNT-7: linalg.conv_2d
// CHECK-NOT: conv_lower.winograd
func.func @untouched(%x: tensor<1x16x12x12xf32>, %w: tensor<16x16x3x3xf32>,
                     %xg: tensor<1x2x16x12x12xf32>, %wg: tensor<2x8x16x3x3xf32>,
                     %xh: tensor<1x16x12x12xf16>, %wh: tensor<16x16x3x3xf16>,
                     %x12: tensor<1x12x12x12xf32>, %w12: tensor<16x12x3x3xf32>,
                     %acc: tensor<1x16x10x10xf32>, %w5: tensor<16x16x5x5xf32>)
    -> (tensor<1x16x5x5xf32>, tensor<1x16x8x8xf32>, tensor<1x2x8x10x10xf32>, tensor<1x16x10x10xf16>,
        tensor<1x16x10x10xf32>, tensor<1x16x10x10xf32>, tensor<1x16x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %e5 = tensor.empty() : tensor<1x16x5x5xf32>
  %i5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  %strided = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
       ins(%x, %w : tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) outs(%i5 : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  %e8 = tensor.empty() : tensor<1x16x8x8xf32>
  %i8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %dilated = linalg.conv_2d_nchw_fchw {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) outs(%i8 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %eg = tensor.empty() : tensor<1x2x8x10x10xf32>
  %ig = linalg.fill ins(%zero : f32) outs(%eg : tensor<1x2x8x10x10xf32>) -> tensor<1x2x8x10x10xf32>
  %grouped = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xg, %wg : tensor<1x2x16x12x12xf32>, tensor<2x8x16x3x3xf32>) outs(%ig : tensor<1x2x8x10x10xf32>) -> tensor<1x2x8x10x10xf32>
  %eh = tensor.empty() : tensor<1x16x10x10xf16>
  %ih = linalg.fill ins(%zh : f16) outs(%eh : tensor<1x16x10x10xf16>) -> tensor<1x16x10x10xf16>
  %half = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xh, %wh : tensor<1x16x12x12xf16>, tensor<16x16x3x3xf16>) outs(%ih : tensor<1x16x10x10xf16>) -> tensor<1x16x10x10xf16>
  %e10 = tensor.empty() : tensor<1x16x10x10xf32>
  %i10 = linalg.fill ins(%zero : f32) outs(%e10 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %twelve = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x12, %w12 : tensor<1x12x12x12xf32>, tensor<16x12x3x3xf32>) outs(%i10 : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %accumulating = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) outs(%acc : tensor<1x16x10x10xf32>) -> tensor<1x16x10x10xf32>
  %five = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w5 : tensor<1x16x12x12xf32>, tensor<16x16x5x5xf32>) outs(%i8 : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %strided, %dilated, %grouped, %half, %twelve, %accumulating, %five
      : tensor<1x16x5x5xf32>, tensor<1x16x8x8xf32>, tensor<1x2x8x10x10xf32>, tensor<1x16x10x10xf16>,
        tensor<1x16x10x10xf32>, tensor<1x16x10x10xf32>, tensor<1x16x8x8xf32>
}

// r50's deep layer on a batch of 7x7 images: 32 tiles, but U [36, 512, 512]
// would take 38 MB (past 16 MiB) and each image only 4 tiles: the default rule
// keeps the GEMM route; min-tiles=0 takes it all the same.
// CHECK-LABEL: func.func @deep_small_images
// CHECK: } {conv_lower.winograd}
// RULE-LABEL: func.func @deep_small_images
// RULE: linalg.conv_2d_nhwc_fhwc
// RULE-NOT: conv_lower.winograd
func.func @deep_small_images(%x: tensor<8x9x9x512xf32>, %w: tensor<512x3x3x512xf32>) -> tensor<8x7x7x512xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x7x7x512xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x7x7x512xf32>) -> tensor<8x7x7x512xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<8x9x9x512xf32>, tensor<512x3x3x512xf32>) outs(%init : tensor<8x7x7x512xf32>) -> tensor<8x7x7x512xf32>
  return %y : tensor<8x7x7x512xf32>
}

// A 14x14 output: 16 tiles, fewer than min-tiles (32), left to the GEMM
// route; with the filter packed once (U made once), half of min-tiles (16)
// suffices.
// RULE-LABEL: func.func @sixteen_tiles
// RULE: linalg.conv_2d_nchw_fchw
// PACKED-LABEL: func.func @sixteen_tiles
// PACKED-NOT: linalg.conv_2d_nchw_fchw
// PACKED: return
func.func @sixteen_tiles(%x: tensor<1x16x16x16xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x14x14xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x14x14xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32>) outs(%init : tensor<1x16x14x14xf32>) -> tensor<1x16x14x14xf32>
  return %y : tensor<1x16x14x14xf32>
}

// U past 4 MiB (C = F = 256: 9.4 MB), one 14x14 image (16 tiles), two threads:
// in a network U comes from memory, so the image's tiles are one block and the
// threads split the filters (two blocks of 128, each reading its contiguous
// half of U once) instead of the tile rows (four blocks of 4 tiles, each
// reading all of U). On two images the blocks are the images, U not split.
// SPLIT-LABEL: func.func @streamed_filters
// SPLIT: %[[U:.*]] = scf.forall (%{{.*}}) in (256) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x36x256x128xf32>)
// SPLIT:   %[[FB:.*]] = arith.divui %{{.*}}, %c128 : index
// SPLIT:   %[[FI:.*]] = arith.remui %{{.*}}, %c128 : index
// SPLIT:   vector.transfer_write %{{.*}}, %{{.*}}[%[[FB]], %c0, %c0, %[[FI]]] {{.*}} : vector<16xf32>, tensor<2x36x1x128xf32>
// SPLIT: scf.forall (%[[F:.*]]) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x16x16x256xf32>)
// SPLIT:   %[[BU:.*]] = tensor.extract_slice %[[U]][%[[F]], 0, 0, 0] [1, 36, 256, 128] [1, 1, 1, 1] : tensor<2x36x256x128xf32> to tensor<36x256x128xf32>
// SPLIT:   linalg.batch_matmul ins(%{{.*}}, %[[BU]] : tensor<36x16x256xf32>, tensor<36x256x128xf32>) outs(%{{.*}} : tensor<36x16x128xf32>)
// SPLIT:   %[[F0:.*]] = arith.muli %[[F]], %c128 : index
// SPLIT:   tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, 0, 0, %[[F0]]] [1, 16, 16, 128] [1, 1, 1, 1] : tensor<1x16x16x128xf32> into tensor<1x16x16x256xf32>
// SPLIT: } {conv_lower.winograd}
// SPLIT-LABEL: func.func @streamed_two_images
// SPLIT: scf.forall (%{{.*}}) in (256) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x36x256x256xf32>)
// SPLIT: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x16x16x256xf32>)
// SPLIT:   linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<36x16x256xf32>, tensor<36x256x256xf32>) outs(%{{.*}} : tensor<36x16x256xf32>)
// SPLIT: } {conv_lower.winograd}
func.func @streamed_filters(%x: tensor<1x16x16x256xf32>, %w: tensor<256x3x3x256xf32>) -> tensor<1x14x14x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x14x14x256xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x16x16x256xf32>, tensor<256x3x3x256xf32>) outs(%init : tensor<1x14x14x256xf32>) -> tensor<1x14x14x256xf32>
  return %y : tensor<1x14x14x256xf32>
}

func.func @streamed_two_images(%x: tensor<2x16x16x256xf32>, %w: tensor<256x3x3x256xf32>) -> tensor<2x14x14x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x14x14x256xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x14x14x256xf32>) -> tensor<2x14x14x256xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<2x16x16x256xf32>, tensor<256x3x3x256xf32>) outs(%init : tensor<2x14x14x256xf32>) -> tensor<2x14x14x256xf32>
  return %y : tensor<2x14x14x256xf32>
}

// U in cache, two threads, blocks that would split unevenly: a 56x56 output
// (14 x 14 tiles) in seven blocks of two tile rows would keep one thread
// idle an eighth of the time; fourteen blocks of one tile row split evenly
// (r50's 64-channel layer at batch 1: 0.350 -> 0.302 ms). A 28x28 output has
// 7 tile rows, which no row block splits evenly: its blocks stay (splitting
// the filters instead measured even).
// SPLIT-LABEL: func.func @balanced_rows
// SPLIT: scf.forall (%{{.*}}) in (14) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x56x56x64xf32>)
// SPLIT:   linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<36x14x16xf32>, tensor<36x16x64xf32>)
// SPLIT-LABEL: func.func @seven_tile_rows
// SPLIT: scf.forall (%{{.*}}) in (16) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x36x16x64xf32>)
// SPLIT: scf.forall (%{{.*}}) in (7) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x28x28x64xf32>)
// SPLIT:   linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<36x7x16xf32>, tensor<36x16x64xf32>)
func.func @balanced_rows(%x: tensor<1x58x58x16xf32>, %w: tensor<64x3x3x16xf32>) -> tensor<1x56x56x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x56x56x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x58x58x16xf32>, tensor<64x3x3x16xf32>) outs(%init : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %y : tensor<1x56x56x64xf32>
}

func.func @seven_tile_rows(%x: tensor<1x30x30x16xf32>, %w: tensor<64x3x3x16xf32>) -> tensor<1x28x28x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x28x28x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x28x28x64xf32>) -> tensor<1x28x28x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w : tensor<1x30x30x16xf32>, tensor<64x3x3x16xf32>) outs(%init : tensor<1x28x28x64xf32>) -> tensor<1x28x28x64xf32>
  return %y : tensor<1x28x28x64xf32>
}
