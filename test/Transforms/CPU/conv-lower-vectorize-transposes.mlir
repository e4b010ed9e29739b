// RUN: conv-opt %s --conv-lower-vectorize-transposes --canonicalize | FileCheck %s
// RUN: not conv-opt %s --conv-lower-vectorize-transposes="tile=0" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD
// BAD: conv-lower-vectorize-transposes: the tile must be positive

// pack-rhs's transpose of W [F, K] into [K, F]: 16x16 tiles, each read row by
// row, transposed in registers and written row by row (no permutation map
// left on the read: the transfer lowering would load it one lane at a time).
// CHECK-LABEL: func.func @filter
// CHECK: scf.for %{{.*}} = %c0 to %c48 step %c16
// CHECK:   scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK:     %[[R:.*]] = vector.transfer_read {{.*}} {in_bounds = [true, true]} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK:     %[[T:.*]] = vector.transpose %[[R]], [1, 0] : vector<16x16xf32> to vector<16x16xf32>
// CHECK:     vector.transfer_write %[[T]]
// CHECK-NOT: linalg.transpose
func.func @filter(%w: tensor<32x48xf32>) -> tensor<48x32xf32> {
  %e = tensor.empty() : tensor<48x32xf32>
  %t = linalg.transpose ins(%w : tensor<32x48xf32>) outs(%e : tensor<48x32xf32>) permutation = [1, 0]
  return %t : tensor<48x32xf32>
}

// An NCHW image into NHWC moves (H, W) together: it is transposed as
// [1, 24, 98] -> [1, 98, 24] and reshaped back. The exchanged dims are C (the
// output's innermost, 24: tiles of 12) and H*W (98: tiles of 14).
// CHECK-LABEL: func.func @image
// CHECK: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<1x24x7x14xf32> into tensor<1x24x98xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c98 step %c14
// CHECK:   scf.for %{{.*}} = %c0 to %c24 step %c12
// CHECK:     vector.transfer_read {{.*}} : tensor<1x12x14xf32>, vector<1x12x14xf32>
// CHECK:     vector.transpose %{{.*}}, [0, 2, 1] : vector<1x12x14xf32> to vector<1x14x12xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3]] output_shape [1, 7, 14, 24] : tensor<1x98x24xf32> into tensor<1x7x14x24xf32>
// CHECK-NOT: linalg.transpose
func.func @image(%x: tensor<1x24x7x14xf32>) -> tensor<1x7x14x24xf32> {
  %e = tensor.empty() : tensor<1x7x14x24xf32>
  %t = linalg.transpose ins(%x : tensor<1x24x7x14xf32>) outs(%e : tensor<1x7x14x24xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x7x14x24xf32>
}

// Large transposes (here 1.8 MB, the MobileNetV2 depthwise layer's image, and
// a 2.4 MB filter) spread their outermost multi-tile dimension over the threads
// first: an scf.forall over 16-pixel strips of the collapsed H*W (3136 = 196 x
// 16: whole 16x16 tiles, where W = 56 alone gave 14-wide ones), or over 16-row
// strips.
// CHECK-LABEL: func.func @large_image
// CHECK: scf.forall (%{{.*}}) = (0) to (3136) step (16)
// CHECK:   scf.for %{{.*}} = %c0 to %c144 step %c16
// CHECK:     vector.transpose %{{.*}}, [0, 2, 1] : vector<1x16x16xf32> to vector<1x16x16xf32>
// CHECK-NOT: linalg.transpose
func.func @large_image(%x: tensor<1x144x56x56xf32>) -> tensor<1x56x56x144xf32> {
  %e = tensor.empty() : tensor<1x56x56x144xf32>
  %t = linalg.transpose ins(%x : tensor<1x144x56x56xf32>) outs(%e : tensor<1x56x56x144xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x56x56x144xf32>
}
// CHECK-LABEL: func.func @large_filter
// CHECK: scf.forall (%{{.*}}) = (0) to (576) step (16)
// CHECK:   scf.for %{{.*}} = %c0 to %c1024 step %c16
// CHECK:     vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
func.func @large_filter(%w: tensor<1024x576xf32>) -> tensor<576x1024xf32> {
  %e = tensor.empty() : tensor<576x1024xf32>
  %t = linalg.transpose ins(%w : tensor<1024x576xf32>) outs(%e : tensor<576x1024xf32>) permutation = [1, 0]
  return %t : tensor<576x1024xf32>
}

// bf16 is left for the loop lowering: x86 cannot lower its vector shuffles
// without AVX512-BF16.
// CHECK-LABEL: func.func @bf16
// CHECK: linalg.transpose
func.func @bf16(%w: tensor<32x48xbf16>) -> tensor<48x32xbf16> {
  %e = tensor.empty() : tensor<48x32xbf16>
  %t = linalg.transpose ins(%w : tensor<32x48xbf16>) outs(%e : tensor<48x32xbf16>) permutation = [1, 0]
  return %t : tensor<48x32xbf16>
}

// A dynamic transpose is left for the loop lowering.
// CHECK-LABEL: func.func @dynamic
// CHECK: linalg.transpose
func.func @dynamic(%x: tensor<?x8xf32>, %e: tensor<8x?xf32>) -> tensor<8x?xf32> {
  %t = linalg.transpose ins(%x : tensor<?x8xf32>) outs(%e : tensor<8x?xf32>) permutation = [1, 0]
  return %t : tensor<8x?xf32>
}

// A slice of an image is not contiguous: collapsing it would need a copy, so
// its transpose keeps its rank (W = 14: one whole tile; C tiles of 12).
// CHECK-LABEL: func.func @cropped_image
// CHECK-NOT: tensor.collapse_shape
// CHECK: vector.transpose %{{.*}}, [0, 2, 3, 1] : vector<1x12x1x14xf32> to vector<1x1x14x12xf32>
// CHECK-NOT: linalg.transpose
func.func @cropped_image(%x: tensor<1x24x8x16xf32>) -> tensor<1x7x14x24xf32> {
  %s = tensor.extract_slice %x[0, 0, 0, 0] [1, 24, 7, 14] [1, 1, 1, 1] : tensor<1x24x8x16xf32> to tensor<1x24x7x14xf32>
  %e = tensor.empty() : tensor<1x7x14x24xf32>
  %t = linalg.transpose ins(%s : tensor<1x24x7x14xf32>) outs(%e : tensor<1x7x14x24xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x7x14x24xf32>
}
