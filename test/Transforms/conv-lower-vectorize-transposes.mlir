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

// An NCHW image into NHWC: the exchanged dims are C (the output's
// innermost, 24: tiles of 12) and W (which the input's innermost becomes,
// 14: one whole tile); N and H by 1.
// CHECK-LABEL: func.func @image
// CHECK: scf.for %{{.*}} = %c0 to %c7 step %c1
// CHECK:   scf.for %{{.*}} = %c0 to %c24 step %c12
// CHECK:     vector.transfer_read {{.*}} : tensor<1x12x1x14xf32>, vector<1x12x1x14xf32>
// CHECK:     vector.transpose %{{.*}}, [0, 2, 3, 1] : vector<1x12x1x14xf32> to vector<1x1x14x12xf32>
// CHECK-NOT: linalg.transpose
func.func @image(%x: tensor<1x24x7x14xf32>) -> tensor<1x7x14x24xf32> {
  %e = tensor.empty() : tensor<1x7x14x24xf32>
  %t = linalg.transpose ins(%x : tensor<1x24x7x14xf32>) outs(%e : tensor<1x7x14x24xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x7x14x24xf32>
}

// Large transposes (here 1.8 MB, the MobileNetV2 depthwise layer's image, and
// a 2.4 MB filter) spread their outermost multi-tile dimension over the threads
// first: an scf.forall over rows of H (tiles of 1), or over 16-row strips.
// CHECK-LABEL: func.func @large_image
// CHECK: scf.forall (%{{.*}}) in (56)
// CHECK:   scf.for %{{.*}} = %c0 to %c56 step %c14
// CHECK:     scf.for %{{.*}} = %c0 to %c144 step %c16
// CHECK:       vector.transpose %{{.*}}, [0, 2, 3, 1] : vector<1x16x1x14xf32> to vector<1x1x14x16xf32>
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
