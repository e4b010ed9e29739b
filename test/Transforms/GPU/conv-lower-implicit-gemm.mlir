// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm --canonicalize --cse | FileCheck %s
// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm=target=cpu-twin --canonicalize --cse | FileCheck %s --check-prefix=TWIN
//
// The structure of the implicit-GEMM kernel; its numerics are checked through the CPU
// twin (test/Integration/CPU/conv-twin.test) and, on a GPU, test/Integration/GPU.

// NHWC f16, channels a multiple of 8: both operands move in 16-byte cp.async chunks
// with zero-fill (the padding is absorbed, never materialized); 3 stages, wait for
// all but the newest group, ldmatrix.x4 fragments, mma.sync m16n8k16 with f32
// accumulators carried in registers through the K loop. Cg = 16 is half a K tile, so
// the tap table has an entry per 16-byte chunk: [5 K tiles x 4 chunks, 2]; chunk 1 is
// channel 8 of tap (0, 0): offset 8; chunk 2 is tap (0, 1): offset Cg = 16, window
// (0, 1); chunk 6 is tap (1, 0): offset W*Cg = 160, window (1, 0) = 65536; the last two
// chunks lie past K = 144. Five K tiles: the first three load tile kt+2 while they
// compute (one round of the main loop, unrolled by the 3 stages, so canonicalize
// leaves it straight-line: stages 0, 1, 2 as constants), the last two (the drain)
// load nothing and commit an empty group each.
// CHECK-LABEL: func.func @nhwc_f16
// CHECK-NOT: tensor.pad
// CHECK: gpu.alloc host_shared () : memref<3200xf16>
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%{{.*}} : memref<3200xf16>, %{{.*}} : memref<4608xf16>, %{{.*}} : memref<6400xf32>)
// CHECK: gpu.module @conv_lower_kernels
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<3200xf16>, %{{.*}}: memref<4608xf16>, %{{.*}}: memref<6400xf32>)
// CHECK-SAME: workgroup(%[[BUF:[a-z0-9]+]] : memref<30720xi8, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}) kernel
// CHECK-SAME: conv_lower.block = array<i64: 128, 1, 1>, conv_lower.grid = array<i64: 2, 1, 1>
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [128, 32, 32], warps = [2, 2], stages = 3, a_vectorized = true, b_vectorized = true, store_vector = 4>
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[TAPS:.*]] = memref.get_global @conv_lower_taps : memref<20x2xi32, 4>
// One shared buffer: the A ring, the B ring after it (3 x 128 x 64 bytes on), and
// the staged epilogue's tiles over both (4 warps x 16 rows x 16 f32: one m16 row of
// each warp's 64x16 tile).
// CHECK: %[[SA:.*]] = memref.view %[[BUF]][%c0][] : memref<30720xi8, #gpu.address_space<workgroup>> to memref<3x128x32xf16, #gpu.address_space<workgroup>>
// CHECK: %[[SB:.*]] = memref.view %[[BUF]][%c24576][] : memref<30720xi8, #gpu.address_space<workgroup>> to memref<3x32x32xf16, #gpu.address_space<workgroup>>
// CHECK: %[[STAGED:.*]] = memref.view %[[BUF]][%c0][] : memref<30720xi8, #gpu.address_space<workgroup>> to memref<4x16x16xf32, #gpu.address_space<workgroup>>
// CHECK: vector.load %[[TAPS]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<20x2xi32, 4>, vector<2xi32>
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[SA]][%{{.*}}], 8, %{{.*}} {bypassL1} : memref<3200xf16> to memref<3x128x32xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[SB]][%{{.*}}], 8, %{{.*}} {bypassL1} : memref<4608xf16> to memref<3x32x32xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK-NOT: scf.for
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.ldmatrix %[[SA]][%c0, {{.*}}] {numTiles = 4 : i32, transpose = false} : memref<3x128x32xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: nvgpu.ldmatrix %[[SB]][%c0, {{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: nvgpu.ldmatrix %[[SA]][%c1, {{.*}}]
// CHECK: nvgpu.ldmatrix %[[SA]][%c2, {{.*}}]
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvgpu.device_async_create_group{{ *$}}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvgpu.ldmatrix %[[SA]][%c0, {{.*}}]
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: nvgpu.device_async_create_group{{ *$}}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvgpu.ldmatrix %[[SA]][%c1, {{.*}}]
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// The staged epilogue: after a CTA barrier (the tiles lie over the rings), each warp
// writes a row of its fragments, the two adjacent columns a lane holds as one pair,
// then (after a warp barrier) reads 16-byte vectors of 4 channels back, consecutive
// lanes along a pixel's channels, each stored when its pixel is inside M.
// CHECK: gpu.barrier
// CHECK-NEXT: arith.divui
// CHECK: %[[PAIR:.*]] = vector.from_elements %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK: vector.store %[[PAIR]], %[[STAGED]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<4x16x16xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK: nvvm.bar.warp.sync %{{.*}} : i32
// CHECK: %[[VEC:.*]] = vector.load %[[STAGED]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4x16x16xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: arith.cmpi slt, %{{.*}}, %c200 : index
// CHECK: scf.if
// CHECK: vector.store %[[VEC]], %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<6400xf32>, vector<4xf32>
// CHECK: nvvm.bar.warp.sync %{{.*}} : i32
// CHECK-NOT: vector<2xf32>, vector<2xf32>
// CHECK: gpu.return
// The twin: the same copies on the host, ldmatrix emulated into per-lane
// fragment registers, mma.sync as the ISA's fragment layout says.
// TWIN-LABEL: func.func @nhwc_f16
// TWIN-NOT: gpu.
// TWIN-NOT: nvgpu.
// TWIN-NOT: nvvm.
// TWIN: memref.alloca() {alignment = 128 : i64} : memref<3x128x32xf16>
// TWIN: memref.alloca() : memref<4x32x4x2xf16>
// TWIN: memref.alloca() : memref<1x32x4x2xf16>
// TWIN: scf.for
// TWIN: vector.load %{{.*}} : memref<3200xf16>, vector<8xf16>
// TWIN: memref.store %{{.*}} : memref<4x32x4x2xf16>
// TWIN: scf.for {{.*}} iter_args
// TWIN: arith.mulf
// TWIN: vector.store %{{.*}} {alignment = 8 : i64} : memref<4x16x16xf32>, vector<2xf32>
// TWIN: vector.load %{{.*}} {alignment = 16 : i64} : memref<4x16x16xf32>, vector<4xf32>
// TWIN: vector.store %{{.*}} {alignment = 16 : i64} : memref<6400xf32>, vector<4xf32>
// TWIN: return
func.func @nhwc_f16(%x: tensor<2x10x10x16xf16>, %w: tensor<32x3x3x16xf16>) -> tensor<2x10x10x32xf32> {
  %c0 = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : f16
  } : tensor<2x10x10x16xf16> to tensor<2x12x12x16xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x10x10x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xf32>
  %r = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : tensor<2x12x12x16xf16>, tensor<32x3x3x16xf16>) outs(%f : tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xf32>
  return %r : tensor<2x10x10x32xf32>
}

// -----

// NCHW f32 as tf32: the image is contiguous along pixels, not K, so A is gathered
// element by element (no cp.async for A); the FCHW filter is K-contiguous (4-float
// chunks). The K step is 16 floats (64 bytes), the mma m16n8k8 tf32, with operands as
// i32 registers; Fg = 16, so a 16-wide N tile on one warp column (2x1 warps). The
// init (a fill of 1.5) is added in the epilogue. The gather reads
// the tap table, a constant ([5 K tiles x 16 k, 2] = 80 entries, in PTX's .const
// space 4), each entry (offset, tap bit) read as one 8-byte vector: k = 1 is (c 0, kh 0,
// kw 1): offset 1, tap 1, bit 2; k = 3 is (0, 1, 0): offset W = 8, tap 3, bit 8; k >= K
// = 72 has no tap bit (0): no row's mask of the taps inside the image matches it.
// A gathered element is rounded to tf32 (cvt.rna: the default chip, sm_80) as it
// passes through its register, before its shared store: its A fragments are then
// its bits as they are (bitcast), and only B's (copied) are converted.
// CHECK-LABEL: func.func @nchw_tf32
// CHECK: memref.global "private" constant @conv_lower_taps : memref<80x2xi32, 4> = dense<"0x00000000010000000100000002000000020000000400000008000000080000000900
// CHECK-SAME: 0000000000000000">
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<1664xf32>, %{{.*}}: memref<1152xf32>, %{{.*}}: memref<1152xf32>)
// CHECK-SAME: workgroup(%[[BUF:[a-z0-9]+]] : memref<27648xi8, #gpu.address_space<workgroup>> {llvm.align = 128 : i64})
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [128, 16, 16], warps = [2, 1], stages = 3, a_vectorized = false, b_vectorized = true, store_vector = 4>
// CHECK: %[[INIT:.*]] = arith.constant 1.500000e+00 : f32
// CHECK: %[[TAPS:.*]] = memref.get_global @conv_lower_taps : memref<80x2xi32, 4>
// CHECK: %[[SA:.*]] = memref.view %[[BUF]][%c0][] : {{.*}} to memref<3x128x16xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SB:.*]] = memref.view %[[BUF]][%c24576][] : {{.*}} to memref<3x16x16xf32, #gpu.address_space<workgroup>>
// The NCHW output's planes (36 pixels) hold whole 16-byte vectors: the staged
// tile is a row of 16 pixels per channel, padded to 20 f32 (the lanes' scalar
// writes, channels 2 apart, then fall in distinct banks).
// CHECK: %[[STAGED:.*]] = memref.view %[[BUF]][%c0][] : {{.*}} to memref<2x16x20xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: nvgpu.device_async_copy %{{.*}}, %[[SA]]
// CHECK: vector.load %[[TAPS]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<80x2xi32, 4>, vector<2xi32>
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<1664xf32>
// CHECK: %[[ROUNDED:.*]] = nvvm.convert.float.to.tf32 %{{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// CHECK: %[[GATHERED:.*]] = arith.bitcast %[[ROUNDED]] : i32 to f32
// CHECK: memref.store %[[GATHERED]], %[[SA]][%{{.*}}] : memref<3x128x16xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[SB]][%{{.*}}], 4, %{{.*}} {bypassL1} : memref<1152xf32>
// CHECK: nvgpu.ldmatrix %[[SA]][{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<3x128x16xf32, #gpu.address_space<workgroup>> -> vector<4x1xf32>
// CHECK: nvgpu.ldmatrix %[[SB]]
// CHECK: nvvm.convert.float.to.tf32 %{{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// CHECK: vector.bitcast %{{.*}} : vector<1xf32> to vector<1xi32>
// CHECK: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32)
// CHECK: arith.addf %{{.*}}, %[[INIT]] : f32
// CHECK: memref.store %{{.*}}, %[[STAGED]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x16x20xf32, #gpu.address_space<workgroup>>
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.load %[[STAGED]]{{.*}} : memref<2x16x20xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<1152xf32>, vector<4xf32>
func.func @nchw_tf32(%x: tensor<2x8x13x8xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<2x16x6x6xf32> {
  %z = arith.constant 1.5 : f32
  %e = tensor.empty() : tensor<2x16x6x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>}
    ins(%x, %w : tensor<2x8x13x8xf32>, tensor<16x8x3x3xf32>) outs(%f : tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32>
  return %r : tensor<2x16x6x6xf32>
}

// -----

// Grouped bf16 (NHWGC input, GFHWC filter): one grid slice per group, bf16 pairs as
// i32 registers of mma m16n8k16.bf16.
// CHECK-LABEL: func.func @grouped_bf16
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0
// CHECK: conv_lower.grid = array<i64: 1, 1, 2>
// CHECK: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @grouped_bf16(%x: tensor<1x6x6x2x8xbf16>, %w: tensor<2x16x3x3x8xbf16>) -> tensor<1x4x4x2x16xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<1x4x4x2x16xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<1x4x4x2x16xbf16>) -> tensor<1x4x4x2x16xbf16>
  %r = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x6x6x2x8xbf16>, tensor<2x16x3x3x8xbf16>) outs(%f : tensor<1x4x4x2x16xbf16>) -> tensor<1x4x4x2x16xbf16>
  return %r : tensor<1x4x4x2x16xbf16>
}

// -----

// A per-channel bias add and a ReLU after the convolution run in the epilogue:
// no linalg op is left, the kernel takes the bias (input, filter, bias, output).
// CHECK-LABEL: func.func @bias_relu
// CHECK-NOT: linalg.
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 {{.*}} args(%{{.*}} : memref<512xf16>, %{{.*}} : memref<1152xf16>, %{{.*}} : memref<16xf16>, %{{.*}} : memref<576xf32>)
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<512xf16>, %{{.*}}: memref<1152xf16>, %[[BIAS:.*]]: memref<16xf16>, %{{.*}}: memref<576xf32>)
// CHECK: scf.if
// CHECK:   %[[B:.*]] = memref.load %[[BIAS]][%{{.*}}] : memref<16xf16>
// CHECK:   %[[BF:.*]] = arith.extf %[[B]] : f16 to f32
// CHECK:   %[[SUM:.*]] = arith.addf %{{.*}}, %[[BF]] : f32
// CHECK:   %[[RELU:.*]] = arith.maximumf %[[SUM]], %{{.*}} : f32
// CHECK:   memref.store %[[RELU]]
// TWIN-LABEL: func.func @bias_relu
// TWIN-NOT: linalg.
// TWIN: arith.maximumf
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
#ch = affine_map<(n, c, h, w) -> (c)>
func.func @bias_relu(%x: tensor<1x8x8x8xf16>, %w: tensor<16x8x3x3xf16>, %b: tensor<16xf16>) -> tensor<1x16x6x6xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x8x8x8xf16>, tensor<16x8x3x3xf16>) outs(%f : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %yb = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %b : tensor<1x16x6x6xf32>, tensor<16xf16>) outs(%y : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %bb: f16, %o: f32):
    %bf = arith.extf %bb : f16 to f32
    %s = arith.addf %a, %bf : f32
    linalg.yield %s : f32
  } -> tensor<1x16x6x6xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%yb : tensor<1x16x6x6xf32>) outs(%e : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x16x6x6xf32>
  return %r : tensor<1x16x6x6xf32>
}

// -----

// The bias is not fused when something else also reads the convolution.
// CHECK-LABEL: func.func @bias_not_fused
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 {{.*}} args(%{{.*}} : memref<512xf16>, %{{.*}} : memref<1152xf16>, %{{.*}} : memref<576xf32>)
// CHECK: linalg.generic
#id2 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#ch2 = affine_map<(n, c, h, w) -> (c)>
func.func @bias_not_fused(%x: tensor<1x8x8x8xf16>, %w: tensor<16x8x3x3xf16>, %b: tensor<16xf32>) -> (tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x8x8x8xf16>, tensor<16x8x3x3xf16>) outs(%f : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %yb = linalg.generic {indexing_maps = [#id2, #ch2, #id2], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %b : tensor<1x16x6x6xf32>, tensor<16xf32>) outs(%e : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %bb, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16x6x6xf32>
  return %yb, %y : tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>
}

// -----

// A bias, a residual add (the ResNet block's skip connection) and a clamp to
// [0, 6] (ReLU6) run in the epilogue: no linalg op is left; the kernel takes
// (input, filter, bias, residual, output). The 36-pixel planes are staged: the
// values go to shared memory with the bias only, and each 4-pixel vector read
// back gets the residual's vector at the output's own offset, then the
// generic's two clamp ops, before its store.
// CHECK-LABEL: func.func @bias_residual_clamp
// CHECK-NOT: linalg.
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 {{.*}} args(%{{.*}} : memref<512xf16>, %{{.*}} : memref<1152xf16>, %{{.*}} : memref<16xf16>, %{{.*}} : memref<576xf32>, %{{.*}} : memref<576xf32>)
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<512xf16>, %{{.*}}: memref<1152xf16>, %[[BIAS:.*]]: memref<16xf16>, %[[RES:.*]]: memref<576xf32>, %[[Y:.*]]: memref<576xf32>)
// CHECK-DAG: %[[SIX:.*]] = arith.constant dense<6.000000e+00> : vector<4xf32>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<4xf32>
// CHECK: memref.load %[[BIAS]]
// CHECK-NOT: arith.maximumf
// CHECK: %[[R:.*]] = vector.load %[[RES]][%[[AT:.*]]] {alignment = 16 : i64} : memref<576xf32>, vector<4xf32>
// CHECK: %[[WITH:.*]] = arith.addf %{{.*}}, %[[R]] : vector<4xf32>
// CHECK: %[[LOW:.*]] = arith.maximumf %[[WITH]], %[[ZERO]] : vector<4xf32>
// CHECK: %[[HIGH:.*]] = arith.minimumf %[[LOW]], %[[SIX]] : vector<4xf32>
// CHECK: vector.store %[[HIGH]], %[[Y]][%[[AT]]]
// TWIN-LABEL: func.func @bias_residual_clamp
// TWIN-NOT: linalg.
// TWIN: arith.minimumf
#id3 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#ch3 = affine_map<(n, c, h, w) -> (c)>
func.func @bias_residual_clamp(%x: tensor<1x8x8x8xf16>, %w: tensor<16x8x3x3xf16>, %b: tensor<16xf16>, %skip: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x8x8x8xf16>, tensor<16x8x3x3xf16>) outs(%f : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %yb = linalg.generic {indexing_maps = [#id3, #ch3, #id3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %b : tensor<1x16x6x6xf32>, tensor<16xf16>) outs(%y : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %bb: f16, %o: f32):
    %bf = arith.extf %bb : f16 to f32
    %s = arith.addf %a, %bf : f32
    linalg.yield %s : f32
  } -> tensor<1x16x6x6xf32>
  %yr = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%yb, %skip : tensor<1x16x6x6xf32>, tensor<1x16x6x6xf32>) outs(%e : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %s = arith.addf %r, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x16x6x6xf32>
  %c = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%yr : tensor<1x16x6x6xf32>) outs(%e : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %lo = arith.constant 0.0 : f32
    %hi = arith.constant 6.0 : f32
    %m = arith.maximumf %a, %lo : f32
    %n = arith.minimumf %m, %hi : f32
    linalg.yield %n : f32
  } -> tensor<1x16x6x6xf32>
  return %c : tensor<1x16x6x6xf32>
}

// -----

// What the epilogue leaves alone: a residual that broadcasts (its map is not
// the identity) and a clamp whose bound is not a constant stay linalg ops
// after the kernel, which then takes (input, filter, output).
// CHECK-LABEL: func.func @residual_broadcast_not_fused
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 {{.*}} args(%{{.*}} : memref<512xf16>, %{{.*}} : memref<1152xf16>, %{{.*}} : memref<576xf32>)
// CHECK: linalg.generic
// CHECK-LABEL: func.func @clamp_not_constant
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_1 {{.*}} args(%{{.*}} : memref<512xf16>, %{{.*}} : memref<1152xf16>, %{{.*}} : memref<576xf32>)
// CHECK: linalg.generic
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#row4 = affine_map<(n, c, h, w) -> (n, 0, h, w)>
func.func @residual_broadcast_not_fused(%x: tensor<1x8x8x8xf16>, %w: tensor<16x8x3x3xf16>, %skip: tensor<1x1x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x8x8x8xf16>, tensor<16x8x3x3xf16>) outs(%f : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %yr = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y, %skip : tensor<1x16x6x6xf32>, tensor<1x1x6x6xf32>) outs(%e : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %s = arith.addf %a, %r : f32
    linalg.yield %s : f32
  } -> tensor<1x16x6x6xf32>
  return %yr : tensor<1x16x6x6xf32>
}
func.func @clamp_not_constant(%x: tensor<1x8x8x8xf16>, %w: tensor<16x8x3x3xf16>, %hi: f32) -> tensor<1x16x6x6xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x6x6xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x8x8x8xf16>, tensor<16x8x3x3xf16>) outs(%f : tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32>
  %c = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : tensor<1x16x6x6xf32>) outs(%e : tensor<1x16x6x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %lo = arith.constant 0.0 : f32
    %m = arith.maximumf %a, %lo : f32
    %n = arith.minimumf %m, %hi : f32
    linalg.yield %n : f32
  } -> tensor<1x16x6x6xf32>
  return %c : tensor<1x16x6x6xf32>
}

// -----

// A pad before the grouped expand_shape is absorbed too: the kernel takes the
// unpadded image (1x6x6x8 = 288 elements), as the runtime's manifest says.
// CHECK-LABEL: func.func @grouped_pad_before_expand
// CHECK-NOT: tensor.pad
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<288xf16>, %{{.*}}: memref<288xf16>, %{{.*}}: memref<280xf32>)
// CHECK-SAME: conv_lower.grid = array<i64: 1, 1, 2>
func.func @grouped_pad_before_expand(%x: tensor<1x6x6x8xf16>, %w: tensor<2x4x3x3x4xf16>) -> tensor<1x5x7x2x4xf32> {
  %c0 = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 1, 2, 0] high[0, 0, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : f16
  } : tensor<1x6x6x8xf16> to tensor<1x7x9x8xf16>
  %e = tensor.expand_shape %p [[0], [1], [2], [3, 4]] output_shape [1, 7, 9, 2, 4] : tensor<1x7x9x8xf16> into tensor<1x7x9x2x4xf16>
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<1x5x7x2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<1x5x7x2x4xf32>) -> tensor<1x5x7x2x4xf32>
  %r = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%e, %w : tensor<1x7x9x2x4xf16>, tensor<2x4x3x3x4xf16>) outs(%f : tensor<1x5x7x2x4xf32>) -> tensor<1x5x7x2x4xf32>
  return %r : tensor<1x5x7x2x4xf32>
}

// -----

// NCHW f16 whose output rows (Wo = 16) hold whole runs of 8 pixels: A is gathered by
// pixel runs into an M-major tile ([stage][k][pixel], 3x32x128) with one 16-byte
// store per run (its 8 loads at constant offsets from one address, each predicated),
// and read by ldmatrix.trans. K = 288 is 9 K tiles: two rounds of the main loop, each
// the 3 stages unrolled (ring positions %c0, %c1, %c2 as constants), one more loading
// step and the two-step drain after it.
// CHECK-LABEL: func.func @nchw_pixel_runs
// CHECK: gpu.func @conv2d_implicit_gemm_0
// CHECK-SAME: workgroup(%[[BUF:[a-z0-9]+]] : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>> {llvm.align = 128 : i64}
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, block = [128, 64, 32], warps = [4, 2], stages = 3, a_vectorized = false, b_vectorized = true, store_vector = 4, a_pixel_run = 8>
// CHECK: %[[SA:.*]] = memref.view %[[BUF]][%c0][] : {{.*}} to memref<3x32x128xf16, #gpu.address_space<workgroup>>
// CHECK: %[[PIXELS:.*]] = vector.from_elements {{.*}} : vector<8xf16>
// CHECK: vector.store %[[PIXELS]], %[[SA]][%c0, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<3x32x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: scf.for %{{.*}} = %c0_i32 to %c2_i32 step %c1_i32 iter_args
// CHECK:   nvgpu.ldmatrix %[[SA]][%c0, %{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<3x32x128xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK:   vector.store %{{.*}}, %[[SA]][%c2, %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK:   nvgpu.ldmatrix %[[SA]][%c1, {{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK:   nvgpu.ldmatrix %[[SA]][%c2, {{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK:   scf.yield
// CHECK: nvgpu.ldmatrix %[[SA]][%c0, {{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// TWIN-LABEL: func.func @nchw_pixel_runs
// TWIN: memref.alloca() {alignment = 128 : i64} : memref<3x32x128xf16>
// TWIN: vector.store %{{.*}} {alignment = 16 : i64} : memref<3x32x128xf16>, vector<8xf16>
func.func @nchw_pixel_runs(%x: tensor<2x32x8x16xf16>, %w: tensor<64x32x3x3xf16>) -> tensor<2x64x8x16xf32> {
  %c0 = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : f16
  } : tensor<2x32x8x16xf16> to tensor<2x32x10x18xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x8x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x64x8x16xf32>) -> tensor<2x64x8x16xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : tensor<2x32x10x18xf16>, tensor<64x32x3x3xf16>) outs(%f : tensor<2x64x8x16xf32>) -> tensor<2x64x8x16xf32>
  return %r : tensor<2x64x8x16xf32>
}
