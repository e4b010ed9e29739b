// RUN: conv-opt %s --conv-lower-grouped-direct --canonicalize | FileCheck %s
// RUN: conv-opt %s --conv-lower-grouped-direct="max-filters=32" --canonicalize \
// RUN:   | FileCheck %s --check-prefix=WIDE
// Half-vector groups (4 filters) with filter-lanes=4, as the CPU pipeline
// runs it: @left_alone's 4-filter conv is taken, the rest stay.
// RUN: conv-opt %s --conv-lower-grouped-direct="filter-lanes=4" --canonicalize \
// RUN:   | FileCheck %s --check-prefix=HALF
// RUN: not conv-opt %s --conv-lower-grouped-direct="accumulators=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: conv-lower-grouped-direct: the sizes must be positive

// 4 groups of 3 channels into 8 filters, NHWC: an scf.forall over (image,
// group), marked, each group a conv_2d_nhwc_hwcf on its 3 channels of the
// image, padded by the task (not the whole batch before the loop), with its
// [3, 3, 3, 8] taps (the filter regrouped once). Each
// is tiled to one output row x 7 columns (14 accumulators / one 8-filter
// vector, the largest divisor of 7 up to 14) x one tap x one channel: one
// FMA per column (the contraction, lowered to outer products), a broadcast
// pixel on the tap's filter vector, the 7 accumulators read once and
// carried through the tap and channel loops.
// CHECK-LABEL: func.func @nhwc_groups
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x7x7x12xf32>
// CHECK-NOT: tensor.pad
// CHECK: %[[TAPS:.*]] = linalg.transpose ins(%{{.*}} : tensor<4x8x3x3x3xf32>) outs(%{{.*}} : tensor<4x3x3x3x8xf32>) permutation = [0, 2, 3, 4, 1]
// CHECK: scf.forall (%[[N:.*]], %[[G:.*]]) in (2, 4)
// CHECK:   %[[SLICE:.*]] = tensor.extract_slice %[[X]][%[[N]], 0, 0, %{{.*}}] [1, 7, 7, 3]
// CHECK:   tensor.pad %[[SLICE]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:   } : tensor<1x7x7x3xf32> to tensor<1x9x9x3xf32>
// CHECK:   linalg.fill {{.*}} -> tensor<1x7x7x8xf32>
// CHECK:   tensor.extract_slice %[[TAPS]][%[[G]], 0, 0, 0, 0] [1, 3, 3, 3, 8]
// CHECK:   scf.for
// CHECK:     vector.transfer_read {{.*}} : tensor<1x7x8xf32>, vector<1x7x8xf32>
// CHECK:     scf.for {{.*}} -> (vector<1x7x8xf32>)
// CHECK:       scf.for {{.*}} -> (vector<1x7x8xf32>)
// CHECK:         scf.for {{.*}} -> (vector<1x7x8xf32>)
// CHECK:           vector.transfer_read {{.*}} : tensor<1x7x1xf32>, vector<1x7x1xf32>
// CHECK:           vector.transfer_read {{.*}} : tensor<1x1x8xf32>, vector<1x1x8xf32>
// CHECK:           vector.contract {{.*}} : vector<1x7x1xf32>, vector<1x8xf32> into vector<1x7x8xf32>
// CHECK:     vector.transfer_write {{.*}} : vector<1x7x8xf32>, tensor<1x7x8xf32>
// CHECK: } {conv_lower.grouped_direct}
// CHECK-NOT: linalg.conv_2d_nhwgc_gfhwc
func.func @nhwc_groups(%x: tensor<2x7x7x12xf32>, %w: tensor<4x8x3x3x3xf32>) -> tensor<2x7x7x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x7x7x12xf32> to tensor<2x9x9x12xf32>
  %xg = tensor.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [2, 9, 9, 4, 3] : tensor<2x9x9x12xf32> into tensor<2x9x9x4x3xf32>
  %e = tensor.empty() : tensor<2x7x7x4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x7x7x4x8xf32>) -> tensor<2x7x7x4x8xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xg, %w : tensor<2x9x9x4x3xf32>, tensor<4x8x3x3x3xf32>) outs(%init : tensor<2x7x7x4x8xf32>) -> tensor<2x7x7x4x8xf32>
  return %y : tensor<2x7x7x4x8xf32>
}

// Groups of 8 channels, NHWC: a task takes two groups, so that its reads of
// a pixel's channels and its writes of its filters are whole 64-byte lines
// (one group's 32 bytes of every line were read and written by two tasks);
// it pads its 16 channels once and convolves each group of the pair on its
// half of them, in a loop.
// CHECK-LABEL: func.func @nhwc_group_pairs
// CHECK-SAME: (%[[X:[a-z0-9]+]]: tensor<2x6x6x32xf32>
// CHECK: scf.forall (%[[N:.*]], %[[P:.*]]) in (2, 2) shared_outs(%[[OUT:.*]] = %{{.*}})
// CHECK:   %[[SLICE:.*]] = tensor.extract_slice %[[X]][%[[N]], 0, 0, %{{.*}}] [1, 6, 6, 16]
// CHECK:   %[[PADDED:.*]] = tensor.pad %[[SLICE]]
// CHECK:   } : tensor<1x6x6x16xf32> to tensor<1x8x8x16xf32>
// CHECK:   %[[PART:.*]] = tensor.extract_slice %[[OUT]][%[[N]], 0, 0, %{{.*}}] [1, 6, 6, 16]
// CHECK:   %[[FILLED:.*]] = linalg.fill {{.*}} outs(%[[PART]] : tensor<1x6x6x16xf32>)
// CHECK:   %[[PAIR:.*]] = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[FILLED]])
// CHECK:     tensor.extract_slice %[[PADDED]][0, 0, 0, %{{.*}}] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x8x8x8xf32>
// CHECK:     tensor.extract_slice %[[ACC]][0, 0, 0, %{{.*}}] [1, 6, 6, 8]
// CHECK:     vector.contract {{.*}} into vector<1x6x8xf32>
// CHECK:     tensor.insert_slice %{{.*}} into %[[ACC]][0, 0, 0, %{{.*}}] [1, 6, 6, 8]
// CHECK:   tensor.parallel_insert_slice %[[PAIR]] into %[[OUT]][%[[N]], 0, 0, %{{.*}}] [1, 6, 6, 16]
// CHECK: } {conv_lower.grouped_direct}
func.func @nhwc_group_pairs(%x: tensor<2x6x6x32xf32>, %w: tensor<4x8x3x3x8xf32>) -> tensor<2x6x6x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x6x6x32xf32> to tensor<2x8x8x32xf32>
  %xg = tensor.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [2, 8, 8, 4, 8] : tensor<2x8x8x32xf32> into tensor<2x8x8x4x8xf32>
  %e = tensor.empty() : tensor<2x6x6x4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6x6x4x8xf32>) -> tensor<2x6x6x4x8xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xg, %w : tensor<2x8x8x4x8xf32>, tensor<4x8x3x3x8xf32>) outs(%init : tensor<2x6x6x4x8xf32>) -> tensor<2x6x6x4x8xf32>
  return %y : tensor<2x6x6x4x8xf32>
}

// Channels first, strided, groups of 16 filters (taken with max-filters =
// 32): each task transposes its group's slice of the image (cropped to the
// 15 x 15 the output reads) to channels last, and its result back into its
// channels of the channels-first output (no whole-image transpose either
// way); one image: a loop over the 2 groups; 14 accumulators at two 8-filter
// vectors a column are 7 columns (strided: the 1-D vectorizer contracts each
// column apart, from one read of the 13 pixels the row's taps cover).
// Taken with the default max-filters (16, a full tile of the GEMM) too: a
// strided convolution takes groups of as many filters as max-filters (its
// im2col gathers, and the per-group GEMMs' result is transposed back;
// ResNeXt-50's 1024-channel stride-2 layer, 32 filters a group, 0.49 -> 0.27
// ms at batch 1). @left_alone's stride-1 16-filter groups stay.
// CHECK-LABEL: func.func @nchw_strided
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<1x32x7x7xf32>)
// CHECK: } {conv_lower.grouped_direct}
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
// CHECK: return
// WIDE-LABEL: func.func @nchw_strided
// WIDE-NOT: linalg.transpose ins(%{{.*}} : tensor<1x32x15x15xf32>)
// WIDE: scf.forall (%{{.*}}) in (2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<1x32x7x7xf32>)
// WIDE:   %[[SLICE:.*]] = tensor.extract_slice %{{.*}}[0, %{{.*}}, 0, 0] [1, 16, 15, 15]
// WIDE:   linalg.transpose ins(%[[SLICE]] : tensor<1x16x15x15xf32>) outs(%{{.*}} : tensor<1x15x15x16xf32>) permutation = [0, 2, 3, 1]
// WIDE:   %[[PART:.*]] = tensor.extract_slice %[[OUT]][0, %[[F:.*]], 0, 0] [1, 16, 7, 7]
// WIDE:   vector.transfer_read {{.*}} : tensor<1x7x16xf32>, vector<1x7x16xf32>
// WIDE-COUNT-7: vector.contract {{.*}} : vector<1x1x1xf32>, vector<1x16xf32> into vector<1x1x16xf32>
// WIDE:   %[[BACK:.*]] = linalg.transpose ins(%{{.*}} : tensor<1x7x7x16xf32>) outs(%[[PART]] : tensor<1x16x7x7xf32>) permutation = [0, 3, 1, 2]
// WIDE:   tensor.parallel_insert_slice %[[BACK]] into %[[OUT]][0, %[[F]], 0, 0] [1, 16, 7, 7]
// WIDE: } {conv_lower.grouped_direct}
// WIDE-NOT: linalg.transpose
// WIDE: return
func.func @nchw_strided(%x: tensor<1x2x16x16x16xf32>, %w: tensor<2x16x16x3x3xf32>) -> tensor<1x2x16x7x7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x16x7x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x16x7x7xf32>) -> tensor<1x2x16x7x7xf32>
  %y = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
       ins(%x, %w : tensor<1x2x16x16x16xf32>, tensor<2x16x16x3x3xf32>) outs(%init : tensor<1x2x16x7x7xf32>) -> tensor<1x2x16x7x7xf32>
  return %y : tensor<1x2x16x7x7xf32>
}

// Left alone: stride-1 groups as wide as the GEMM tile (max-filters = 16),
// filters that are no whole vector (4), depthwise (one channel a group:
// conv-lower-depthwise-direct's), and 16-bit data.
// HALF-LABEL: func.func @left_alone
// HALF: linalg.conv_2d_nhwgc_gfhwc {{.*}}tensor<2x16x3x3x16xf32>
// HALF: scf.forall
// HALF: vector.contract {{.*}} into vector<1x{{[0-9]+}}x4xf32>
// HALF: } {conv_lower.grouped_direct}
// HALF-NOT: grouped_direct
// HALF-COUNT-2: linalg.conv_2d_nhwgc_gfhwc
// HALF: return
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: grouped_direct
// CHECK-COUNT-4: linalg.conv_2d_nhwgc_gfhwc
// CHECK-NOT: grouped_direct
// CHECK: return
func.func @left_alone(%x: tensor<1x9x9x2x16xf32>, %w16: tensor<2x16x3x3x16xf32>, %w4: tensor<2x4x3x3x16xf32>,
                      %xd: tensor<1x9x9x2x1xf32>, %wd: tensor<2x8x3x3x1xf32>, %xh: tensor<1x9x9x2x16xf16>, %wh: tensor<2x8x3x3x16xf16>)
    -> (tensor<1x7x7x2x16xf32>, tensor<1x7x7x2x4xf32>, tensor<1x7x7x2x8xf32>, tensor<1x7x7x2x8xf16>) {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %e16 = tensor.empty() : tensor<1x7x7x2x16xf32>
  %i16 = linalg.fill ins(%zero : f32) outs(%e16 : tensor<1x7x7x2x16xf32>) -> tensor<1x7x7x2x16xf32>
  %y16 = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w16 : tensor<1x9x9x2x16xf32>, tensor<2x16x3x3x16xf32>) outs(%i16 : tensor<1x7x7x2x16xf32>) -> tensor<1x7x7x2x16xf32>
  %e4 = tensor.empty() : tensor<1x7x7x2x4xf32>
  %i4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x7x7x2x4xf32>) -> tensor<1x7x7x2x4xf32>
  %y4 = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%x, %w4 : tensor<1x9x9x2x16xf32>, tensor<2x4x3x3x16xf32>) outs(%i4 : tensor<1x7x7x2x4xf32>) -> tensor<1x7x7x2x4xf32>
  %ed = tensor.empty() : tensor<1x7x7x2x8xf32>
  %id = linalg.fill ins(%zero : f32) outs(%ed : tensor<1x7x7x2x8xf32>) -> tensor<1x7x7x2x8xf32>
  %yd = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xd, %wd : tensor<1x9x9x2x1xf32>, tensor<2x8x3x3x1xf32>) outs(%id : tensor<1x7x7x2x8xf32>) -> tensor<1x7x7x2x8xf32>
  %eh = tensor.empty() : tensor<1x7x7x2x8xf16>
  %ih = linalg.fill ins(%zh : f16) outs(%eh : tensor<1x7x7x2x8xf16>) -> tensor<1x7x7x2x8xf16>
  %yh = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%xh, %wh : tensor<1x9x9x2x16xf16>, tensor<2x8x3x3x16xf16>) outs(%ih : tensor<1x7x7x2x8xf16>) -> tensor<1x7x7x2x8xf16>
  return %y16, %y4, %yd, %yh : tensor<1x7x7x2x16xf32>, tensor<1x7x7x2x4xf32>, tensor<1x7x7x2x8xf32>, tensor<1x7x7x2x8xf16>
}
