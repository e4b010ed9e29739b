// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="panel-bytes=8192 min-blocks=8 threads=2 tile-n=16 filter-cache-bytes=65536" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=STREAMED
// RUN: conv-opt %s --conv-lower-im2col --canonicalize --conv-lower-decompose \
// RUN:   --canonicalize --conv-lower-pack-rhs \
// RUN:   --conv-lower-im2col-panels="panel-bytes=8192 min-blocks=8 threads=2 tile-n=16" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=CACHED
//
// The row blocks when the filter is past filter-cache-bytes: each block's GEMM
// reads all of it, so fewer, larger blocks read it fewer times. Here the filter
// is 288 x 64 f32 (72 KiB) and an output row's panel 4 x 288 f32 (4.5 KiB).
// Under its 64 KiB budget the filter streams: the row blocks are the largest
// whose panels fit twice panel-bytes (2 rows: 9 KiB), and two of them keep the
// two threads busy, so the filters are not split: 2 blocks.
// STREAMED-LABEL: func.func @nhwc
// STREAMED: scf.forall (%{{.*}}) in (2) shared_outs
// STREAMED: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x288xf32>, tensor<288x64xf32>)
// With the default 1 MiB budget the filter stays cached: one-row panels under
// panel-bytes, and the 4 row blocks, fewer than min-blocks = 8, split the
// filters in 2 chunks: 8 blocks.
// CACHED-LABEL: func.func @nhwc
// CACHED: scf.forall (%{{.*}}, %{{.*}}) in (4, 2) shared_outs
// CACHED: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x288xf32>, tensor<288x32xf32>)
func.func @nhwc(%x: tensor<1x4x4x32xf32>, %w: tensor<64x3x3x32xf32>) -> tensor<1x4x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x32xf32> to tensor<1x6x6x32xf32>
  %e = tensor.empty() : tensor<1x4x4x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xp, %w : tensor<1x6x6x32xf32>, tensor<64x3x3x32xf32>) outs(%init : tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32>
  return %y : tensor<1x4x4x64xf32>
}
