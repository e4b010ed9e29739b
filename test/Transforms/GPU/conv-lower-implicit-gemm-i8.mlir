// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm | FileCheck %s
// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm=target=cpu-twin | FileCheck %s --check-prefix=TWIN
//
// i8 convolutions on the tensor cores: mma.sync m16n8k32 s8 x s8 -> s32
// (wrapping, as linalg's i32 arithmetic does) on the same 64-byte shared rows
// as f16 (64 i8 per row, ldmatrix moving the bytes as b16 pairs: the s8 A and
// B fragments are byte-for-byte the f16 ones). A quantized op's result,
// sum (x - zx)(w - zw), is the plain GEMM corrected in the epilogue:
//   C - zw * rowsum(A) - zx * colsum(B) + K * zx * zw
// with the row sums from an extra mma.sync per A tile against an all-ones B
// (only when zw != 0) and the column sums from one per B tile with an
// all-ones A (only when zx != 0). Numerics on the twin:
// test/Integration/CPU/conv-quantized.test; PTX and ptxas:
// test/Pipelines/implicit-gemm-i8.test.

// NHWC/FHWC, both zero points: M = 196 rows (2 blocks of 128), Fg = 64 (one
// block), 2x4 warps of 64x16 (8 warps, for the sums' registers): 8 GEMM
// tiles + 4 row-sum + 2 column-sum tiles, 14 mma.sync per 32-wide K step,
// two K steps per 64-byte stage. The zero pad
// is absorbed (padding reads as 0, so it contributes (0 - zx)(w - zw), as
// the op on the padded tensor does).
// CHECK-LABEL: func.func @nhwc_fhwc_q
// CHECK-NOT: tensor.pad
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in
// CHECK-SAME: args(%{{.*}} : memref<12544xi8>, %{{.*}} : memref<36864xi8>, %{{.*}} : memref<12544xi32>)
// CHECK: gpu.func @conv2d_implicit_gemm_0
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [128, 64, 64], warps = [2, 4], stages = 3, a_vectorized = true, b_vectorized = true, store_vector = 4>
// CHECK: scf.for {{.*}} -> (vector<4xi32>, vector<4xi32>
// CHECK: nvgpu.device_async_copy {{.*}}, 16, %{{.*}} {bypassL1} : memref<12544xi8> to memref<3x128x64xi8, #gpu.address_space<workgroup>>
// CHECK: arith.constant dense<1> : vector<4x4xi8>
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<3x128x64xi8, #gpu.address_space<workgroup>> -> vector<4x4xi8>
// CHECK-COUNT-28: nvvm.mma.sync {{.*}} {intOverflowBehavior = #nvvm.mma_int_overflow<wrapped>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<s8>, multiplicandBPtxType = #nvvm.mma_type<s8>, shape = #nvvm.shape<m = 16, n = 8, k = 32>} : (i32, i32, i32) -> !llvm.struct<(i32, i32, i32, i32)>
// (one K step's MMAs: the next step starts with its barrier)
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// The epilogue: - zw*rowsum (zw = -3), - zx*colsum (zx = 5), + K*zx*zw
// (576 * 5 * -3 = -8640).
// CHECK: %[[ZW:.*]] = arith.constant -3 : i32
// CHECK: %[[RS:.*]] = arith.muli %{{.*}}, %[[ZW]] : i32
// CHECK: %[[T1:.*]] = arith.subi %{{.*}}, %[[RS]] : i32
// CHECK: %[[ZX:.*]] = arith.constant 5 : i32
// CHECK: %[[CS:.*]] = arith.muli %{{.*}}, %[[ZX]] : i32
// CHECK: %[[T2:.*]] = arith.subi %[[T1]], %[[CS]] : i32
// CHECK: %[[KZZ:.*]] = arith.constant -8640 : i32
// CHECK: %[[T3:.*]] = arith.addi %[[T2]], %[[KZZ]] : i32
// CHECK: %[[PAIR:.*]] = vector.from_elements %[[T3]], %{{.*}} : vector<2xi32>
// CHECK: vector.store %[[PAIR]], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<8x16x{{[0-9]+}}xi32, #gpu.address_space<workgroup>>, vector<2xi32>
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<12544xi32>, vector<4xi32>
// CHECK: gpu.return
// TWIN-LABEL: func.func @nhwc_fhwc_q
// TWIN-NOT: linalg.conv
// TWIN: memref.alloca() : memref<8x64x16xi32>
// TWIN: memref.alloca() : memref<8x64x8xi32>
// TWIN: memref.alloca() : memref<8x16x16xi32>
// TWIN: arith.extsi %{{.*}} : i8 to i32
// TWIN: arith.muli
func.func @nhwc_fhwc_q(%x: tensor<1x14x14x64xi8>, %w: tensor<64x3x3x64xi8>) -> tensor<1x14x14x64xi32> {
  %c0 = arith.constant 0 : i32
  %z8 = arith.constant 0 : i8
  %zx = arith.constant 5 : i32
  %zw = arith.constant -3 : i32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z8 : i8
  } : tensor<1x14x14x64xi8> to tensor<1x16x16x64xi8>
  %e = tensor.empty() : tensor<1x14x14x64xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x14x14x64xi32>) -> tensor<1x14x14x64xi32>
  %y = linalg.conv_2d_nhwc_fhwc_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w, %zx, %zw : tensor<1x16x16x64xi8>, tensor<64x3x3x64xi8>, i32, i32) outs(%f : tensor<1x14x14x64xi32>) -> tensor<1x14x14x64xi32>
  return %y : tensor<1x14x14x64xi32>
}

// -----

// A plain i8 convolution (no zero points; NCHW, A gathered element by
// element): only the GEMM's mma.sync (M = 2*4*4 = 32: one 64-row block of
// 2x2 warps with 32x16 tiles, 4 per K step), no sums, no correction, the
// init (7) added.
// CHECK-LABEL: func.func @nchw_plain
// CHECK: gpu.func @conv2d_implicit_gemm_0
// CHECK-SAME: a_vectorized = false
// CHECK-NOT: dense<1> : vector<4x4xi8>
// CHECK-COUNT-8: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<s8>
// (one K step's MMAs: the next step starts with its barrier)
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: arith.subi
// CHECK: %[[INIT:.*]] = arith.constant 7 : i32
// CHECK: %[[Y:.*]] = arith.addi %{{.*}}, %[[INIT]] : i32
// CHECK: memref.store %[[Y]]
// TWIN-LABEL: func.func @nchw_plain
// TWIN-NOT: linalg.conv
// TWIN-NOT: memref<4x32x8xi32>
// TWIN: return
func.func @nchw_plain(%x: tensor<2x16x6x6xi8>, %w: tensor<32x16x3x3xi8>) -> tensor<2x32x4x4xi32> {
  %c7 = arith.constant 7 : i32
  %e = tensor.empty() : tensor<2x32x4x4xi32>
  %f = linalg.fill ins(%c7 : i32) outs(%e : tensor<2x32x4x4xi32>) -> tensor<2x32x4x4xi32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x16x6x6xi8>, tensor<32x16x3x3xi8>) outs(%f : tensor<2x32x4x4xi32>) -> tensor<2x32x4x4xi32>
  return %y : tensor<2x32x4x4xi32>
}

// -----

// Only the input's zero point (symmetric weights, zw = 0): the column sums
// alone, 4 GEMM + 2 column-sum mma.sync per K step.
// CHECK-LABEL: func.func @input_zero_point_only
// CHECK: gpu.func @conv2d_implicit_gemm_0
// CHECK-COUNT-12: nvvm.mma.sync
// (one K step's MMAs: the next step starts with its barrier)
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: %[[ZX:.*]] = arith.constant -7 : i32
// CHECK: %[[CS:.*]] = arith.muli %{{.*}}, %[[ZX]] : i32
// CHECK: %[[Y:.*]] = arith.subi %{{.*}}, %[[CS]] : i32
// CHECK-NOT: arith.addi {{.*}} : i32
// CHECK: vector.from_elements %[[Y]], %{{.*}} : vector<2xi32>
// TWIN-LABEL: func.func @input_zero_point_only
// TWIN: memref.alloca() : memref<4x16x16xi32>
// TWIN-NOT: memref<4x32x8xi32>
// TWIN: return
func.func @input_zero_point_only(%x: tensor<2x6x6x16xi8>, %w: tensor<3x3x16x32xi8>) -> tensor<2x4x4x32xi32> {
  %c0 = arith.constant 0 : i32
  %zx = arith.constant -7 : i32
  %zw = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x4x4x32xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<2x4x4x32xi32>) -> tensor<2x4x4x32xi32>
  %y = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w, %zx, %zw : tensor<2x6x6x16xi8>, tensor<3x3x16x32xi8>, i32, i32) outs(%f : tensor<2x4x4x32xi32>) -> tensor<2x4x4x32xi32>
  return %y : tensor<2x4x4x32xi32>
}

// -----

// Torch's quantized padding: the pad reads the input zero point (the real 0),
// so each padded tap adds (zx - zx)(w - zw) = 0. The kernel absorbs it and
// fills such chunks itself with zx (a store, no cp.async: a zero-fill copy to
// the same bytes would race with it); the K tail still reads 0. The row sums
// then count zx for the padded taps, as the expansion needs.
// CHECK-LABEL: func.func @pad_of_zero_point
// CHECK-NOT: tensor.pad
// CHECK: gpu.func @conv2d_implicit_gemm_0
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: %[[FILL:.*]] = arith.constant dense<5> : vector<16xi8>
// CHECK-NEXT: vector.store %[[FILL]], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<3x128x64xi8, #gpu.address_space<workgroup>>, vector<16xi8>
// CHECK-NEXT: } else {
// CHECK-NEXT: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// TWIN-LABEL: func.func @pad_of_zero_point
// TWIN-NOT: tensor.pad
// TWIN: arith.constant dense<5> : vector<16xi8>
func.func @pad_of_zero_point(%x: tensor<1x14x14x64xi8>, %w: tensor<64x3x3x64xi8>) -> tensor<1x14x14x64xi32> {
  %c0 = arith.constant 0 : i32
  %z8 = arith.constant 5 : i8
  %zx = arith.constant 5 : i32
  %zw = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %z8 : i8
  } : tensor<1x14x14x64xi8> to tensor<1x16x16x64xi8>
  %e = tensor.empty() : tensor<1x14x14x64xi32>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<1x14x14x64xi32>) -> tensor<1x14x14x64xi32>
  %y = linalg.conv_2d_nhwc_fhwc_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w, %zx, %zw : tensor<1x16x16x64xi8>, tensor<64x3x3x64xi8>, i32, i32) outs(%f : tensor<1x14x14x64xi32>) -> tensor<1x14x14x64xi32>
  return %y : tensor<1x14x14x64xi32>
}
