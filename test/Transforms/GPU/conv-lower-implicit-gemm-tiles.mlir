// RUN: conv-opt %s --conv-lower-implicit-gemm="block-m=64 block-n=64 warps-m=1 warps-n=2 stages=2" | FileCheck %s
// RUN: not conv-opt %s --conv-lower-implicit-gemm=block-m=48 2>&1 | FileCheck %s --check-prefix=BAD-M
// RUN: not conv-opt %s --conv-lower-implicit-gemm=stages=5 2>&1 | FileCheck %s --check-prefix=BAD-SMEM
// RUN: not conv-opt %s --conv-lower-implicit-gemm=target=tpu 2>&1 | FileCheck %s --check-prefix=BAD-TARGET
//
// Tile overrides reach the kernel (shared buffers, launch, attributes); tiles the
// kernel cannot be built with are errors that say why.

// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0
// The two 2-stage rings (2 x 64 x 64 bytes each) in one buffer.
// CHECK: workgroup(%{{.*}} : memref<16384xi8, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
// CHECK-SAME: conv_lower.block = array<i64: 64, 1, 1>, conv_lower.grid = array<i64: 5, 2, 1>
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [64, 64, 32], warps = [1, 2], stages = 2, {{.*}}store_vector = 4>
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<16384xi8, #gpu.address_space<workgroup>> to memref<2x64x32xf16, #gpu.address_space<workgroup>>
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<16384xi8, #gpu.address_space<workgroup>> to memref<2x64x32xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// BAD-M: error: conv-lower-implicit-gemm: invalid tiles: block-m (48) must be a multiple of 16 x warps-m (32)
// BAD-SMEM: error: conv-lower-implicit-gemm: invalid tiles: the stages need 81920 bytes of shared memory (at most 49152)
// BAD-TARGET: for the --target option: unknown value 'tpu' (expected cuda or cpu-twin)
func.func @conv(%x: tensor<2x14x14x32xf16>, %w: tensor<128x3x3x32xf16>) -> tensor<2x12x12x128xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x12x12x128xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x12x12x128xf32>) -> tensor<2x12x12x128xf32>
  %r = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x14x14x32xf16>, tensor<128x3x3x32xf16>) outs(%f : tensor<2x12x12x128xf32>) -> tensor<2x12x12x128xf32>
  return %r : tensor<2x12x12x128xf32>
}
