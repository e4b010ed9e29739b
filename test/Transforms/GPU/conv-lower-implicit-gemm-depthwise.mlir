// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm --canonicalize --cse | FileCheck %s
// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm=target=cpu-twin --canonicalize --cse | FileCheck %s --check-prefix=TWIN
// RUN: conv-opt %s --split-input-file "--conv-lower-implicit-gemm=block-m=64" | FileCheck %s --check-prefix=GEMM
//
// Depthwise convolutions (one channel, one filter per group) take the direct kernel:
// CUDA cores, no K padding (through the GEMM the 3x3 K = 9 filled a 64-byte K step:
// ~1% of the MMA work useful). A thread computes 16 bytes of channels of one output
// pixel, unrolled over the taps; numerics on the twin (test/Integration/CPU/conv-twin.test,
// test/Tools/conv-run/twin.test), PTX and ptxas in test/Pipelines/implicit-gemm-depthwise.test.

// NHWC f16, C = 16: 8 channels a thread (one 16-byte load of the image per tap, one of
// the contiguous HWC filter), f32 accumulation by vector FMA, padding predicated (it
// reads 0), 8 f32 results as one vector store; 2 x 16 x 8 pixel-vectors in one
// 256-thread block; no shared memory, no MMA.
// CHECK-LABEL: func.func @depthwise_nhwc_f16
// CHECK-NOT: tensor.pad
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<2048xf16>, %{{.*}}: memref<144xf16>, %{{.*}}: memref<2048xf32>) kernel
// CHECK-SAME: conv_lower.block = array<i64: 256, 1, 1>, conv_lower.grid = array<i64: 1, 1, 1>
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = direct_depthwise, channels_per_thread = 8>
// CHECK-NOT: workgroup
// CHECK: scf.if
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<2048xf16>, vector<8xf16>
// CHECK: vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<144xf16>, vector<8xf16>
// CHECK: arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
// CHECK: vector.fma %{{.*}} : vector<8xf32>
// CHECK-NOT: nvvm.mma.sync
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<2048xf32>, vector<8xf32>
// CHECK: gpu.return
// TWIN-LABEL: func.func @depthwise_nhwc_f16
// TWIN-NOT: gpu.
// TWIN: scf.for
// TWIN: vector.fma %{{.*}} : vector<8xf32>
// Tile options ask for the GEMM kernel.
// GEMM-LABEL: func.func @depthwise_nhwc_f16
// GEMM: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = {{.*}}, a_vectorized = false
// GEMM: nvvm.mma.sync
func.func @depthwise_nhwc_f16(%x: tensor<2x8x8x16xf16>, %w: tensor<3x3x16xf16>) -> tensor<2x8x8x16xf32> {
  %c0 = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : f16
  } : tensor<2x8x8x16xf16> to tensor<2x10x10x16xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x8x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  %r = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : tensor<2x10x10x16xf16>, tensor<3x3x16xf16>) outs(%f : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  return %r : tensor<2x8x8x16xf32>
}

// -----

// NCHW f32: channels are not innermost, so one channel a thread, scalar loads and
// store; the padding still predicated, the taps still unrolled.
// CHECK-LABEL: func.func @depthwise_nchw_f32
// CHECK: conv_lower.tiles = #conv_lower.tiles<family = direct_depthwise, channels_per_thread = 1>
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<392xf32>
// CHECK-NOT: nvvm.mma.sync
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<200xf32>
func.func @depthwise_nchw_f32(%x: tensor<2x4x7x7xf32>, %w: tensor<4x3x3xf32>) -> tensor<2x4x5x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x5x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %r = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x4x7x7xf32>, tensor<4x3x3xf32>) outs(%f : tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  return %r : tensor<2x4x5x5xf32>
}
