// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm="chip=sm_90a emit-remarks" --canonicalize --cse -verify-diagnostics | FileCheck %s
// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm="chip=sm_90a target=cpu-twin" --canonicalize --cse | FileCheck %s --check-prefix=TWIN
// RUN: conv-opt %s --split-input-file --conv-lower-implicit-gemm="chip=sm_90 emit-remarks" | FileCheck %s --check-prefix=SM90
//
// chip=sm_90a: the TMA + wgmma kernel family (Sm90/Sm90Kernel.h) where it applies, the
// mma.sync family with a remark saying why where it does not. Numerics on the twin:
// test/Tools/conv-run/twin-sm90a.test; PTX and ptxas: test/Pipelines/implicit-gemm-sm90a.test.

// NHWC f16, C = 64, 3x3, padding 1 (absorbed): one producer warpgroup and two consumer
// warpgroups (384 threads), a 6-slot ring of 128x64 A and 64x64 B tiles (24 KiB each,
// 1 KiB of alignment slack and 12 mbarriers: 148576 bytes of dynamic shared memory),
// two tensor maps after the three buffers: the image in im2col mode (corners -1: the
// padding; unit traversal strides), the filter [64 rows][576] tiled.
// CHECK-LABEL: func.func @nhwc_f16
// CHECK-NOT: tensor.pad
// CHECK-COUNT-2: call @mgpuConvLowerEncodeTensorMap
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %{{.*}} args(%{{.*}} : memref<4096xf16>, %{{.*}} : memref<36864xf16>, %{{.*}} : memref<4096xf32>, %{{.*}} : !llvm.ptr, %{{.*}} : !llvm.ptr)
// CHECK-COUNT-2: call @mgpuMemFree
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<4096xf16>, %{{.*}}: memref<36864xf16>, %{{.*}}: memref<4096xf32>, %[[IMAGE:.*]]: !llvm.ptr, %[[FILTER:.*]]: !llvm.ptr) kernel
// CHECK-SAME: conv_lower.block = array<i64: 384, 1, 1>, conv_lower.grid = array<i64: 1, 1, 1>, conv_lower.shared_memory = 148576 : i64
// CHECK-SAME: #conv_lower.tensor_map<name = "input_im2col", argument = "input", mode = im2col, dtype = "f16", dims = [64, 8, 8, 1], strides_bytes = [128, 1024, 8192], box = [64, 128], element_strides = [1, 1, 1, 1], lower_corner = [-1, -1], upper_corner = [-1, -1], swizzle = "128B">
// CHECK-SAME: #conv_lower.tensor_map<name = "filter_tiled", argument = "filter", mode = tiled, dtype = "f16", dims = [576, 64], strides_bytes = [1152], box = [64, 64], element_strides = [1, 1], swizzle = "128B">
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = sm90a_tma_wgmma, block = [128, 64, 64], warpgroups = [1, 2], stages = 6, store_vector = 4>
// CHECK: %[[SMEM:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[STAGED:.*]] = memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8x16x72xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-12: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: gpu.barrier
// The producer: 9 K tiles (one per tap); from the second pass, wait for the slot.
// CHECK: scf.for %{{.*}} = %c0_i32 to %c9_i32
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[IMAGE]], %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] im2col[%{{.*}}, %{{.*}}] {mode = #nvvm.tma_load_mode<im2col>}
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[FILTER]], %{{.*}}, box[%{{.*}}, %{{.*}}] :
// The consumers: wait, four m64n64k16 from descriptors, commit, keep one group in
// flight, free the previous slot. K tile 0 comes first, out of the loop: its
// first wgmma overwrites the undefined accumulators (scale-d 0), so nothing
// writes them between the fence and the wgmma (ptxas's C7519).
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK-COUNT-3: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.for %{{.*}} = %c1_i32 to %c9_i32 step %c1_i32 iter_args
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// The staged epilogue over the rings: a barrier of the 256 consumer threads, each
// warp's 16 x 64 accumulators into its staged tile (rows of 64 + 8 f32), a warp
// barrier, 16-byte vectors out.
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// CHECK: vector.store %{{.*}}, %[[STAGED]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<8x16x72xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.load %[[STAGED]]{{.*}} : memref<8x16x72xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<4096xf32>, vector<4xf32>
// CHECK: gpu.return
// The twin: host loops, no NVVM.
// TWIN-LABEL: func.func @nhwc_f16
// TWIN-NOT: nvvm.
// TWIN-NOT: gpu.
// TWIN: memref.alloca() {alignment = 128 : i64} : memref<73728xf16>
// TWIN: memref.alloca() {alignment = 128 : i64} : memref<12x4xi32>
// TWIN: memref.alloca() {alignment = 128 : i64} : memref<2x128x32xf32>
// TWIN: return
// sm_90 (not sm_90a): the mma.sync family, silently (no remark: nothing was chosen).
// SM90-LABEL: func.func @nhwc_f16
// SM90: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, {{.*}}a_vectorized = true
func.func @nhwc_f16(%x: tensor<1x8x8x64xf16>, %w: tensor<64x3x3x64xf16>) -> tensor<1x8x8x64xf32> {
  %zero = arith.constant 0.000000e+00 : f16
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f16
  } : tensor<1x8x8x64xf16> to tensor<1x10x10x64xf16>
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x8x8x64xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : tensor<1x10x10x64xf16>, tensor<64x3x3x64xf16>) outs(%init : tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32>
  return %y : tensor<1x8x8x64xf32>
}

// -----

// bf16, stride 2, 128 filters: m64n128k16 (64 accumulators a thread), traversal
// strides 2, the box's upper corner -3 (6x6 outputs of a 14x14 image with no padding:
// (6 - 1) * 2 + 0 - 13: the last box position is 10).
// CHECK-LABEL: func.func @nhwc_bf16_stride2
// CHECK: mode = im2col, {{.*}}element_strides = [1, 2, 2, 1], lower_corner = [0, 0]
// CHECK-SAME: upper_corner = [-3, -3]
// CHECK-SAME: family = sm90a_tma_wgmma
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
func.func @nhwc_bf16_stride2(%x: tensor<2x14x14x64xbf16>, %w: tensor<128x3x3x64xbf16>) -> tensor<2x6x6x128xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<2x6x6x128xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<2x6x6x128xf32>) -> tensor<2x6x6x128xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<2x14x14x64xbf16>, tensor<128x3x3x64xbf16>) outs(%init : tensor<2x6x6x128xf32>) -> tensor<2x6x6x128xf32>
  return %y : tensor<2x6x6x128xf32>
}

// -----

// NCHW: TMA's im2col mode cannot load the image, so the producer warpgroup's 128
// threads gather the A tiles (a remark says so), one row (output pixel) each: K in
// the FCHW filter's (c, kh, kw) order, one tap-table entry per k in the constant
// space (576 x 2 words), 64 loads a row, eight 16-byte stores into the 128-byte
// swizzled slot, a proxy fence and an arrival each on `full` (128 of them complete
// it); thread 0 arms it with B's 8 KiB (expect_tx, no arrival) and loads B by TMA.
// One tensor map (the filter's); the ring has 4 slots.
// CHECK-LABEL: func.func @nchw_f16
// CHECK-COUNT-1: call @mgpuConvLowerEncodeTensorMap
// CHECK-NOT: call @mgpuConvLowerEncodeTensorMap
// CHECK: gpu.launch_func {{.*}} args(%{{.*}} : memref<4096xf16>, %{{.*}} : memref<36864xf16>, %{{.*}} : memref<2304xf32>, %{{.*}} : !llvm.ptr)
// CHECK: memref.global "private" constant @conv_lower_taps : memref<576x2xi32, 4>
// CHECK: gpu.func @conv2d_implicit_gemm_0(%{{.*}}: memref<4096xf16>, %{{.*}}: memref<36864xf16>, %{{.*}}: memref<2304xf32>, %[[FILTER:.*]]: !llvm.ptr) kernel
// CHECK-SAME: conv_lower.tensor_maps = [#conv_lower.tensor_map<name = "filter_tiled", argument = "filter", mode = tiled, dtype = "f16", dims = [576, 64], strides_bytes = [1152], box = [64, 64], element_strides = [1, 1], swizzle = "128B">]
// CHECK-SAME: conv_lower.tiles = #conv_lower.tiles<family = sm90a_tma_wgmma, block = [128, 64, 64], {{.*}}stages = 4, {{.*}}a_gathered = true>
// CHECK: memref.get_global @conv_lower_taps
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c128_i32
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0_i32 to %c9_i32 step %c1_i32  : i32 {
// CHECK-COUNT-64: memref.load %{{.*}}[%{{.*}}] : memref<4096xf16>
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.mbarrier.expect_tx %{{.*}}, %c8192_i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[FILTER]], %{{.*}}, box[%{{.*}}, %{{.*}}] :
// CHECK-COUNT-8: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.mbarrier.arrive
// CHECK: nvvm.wgmma.mma_async
func.func @nchw_f16(%x: tensor<1x64x8x8xf16>, %w: tensor<64x64x3x3xf16>) -> tensor<1x64x6x6xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x64x6x6xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x64x6x6xf32>) -> tensor<1x64x6x6xf32>
  // expected-remark @below {{sm_90a: the TMA + wgmma kernel, its A tiles gathered by the producer warpgroup (not TMA im2col): the image is not a dense channels-last (NHWC) tensor}}
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x64x8x8xf16>, tensor<64x64x3x3xf16>) outs(%init : tensor<1x64x6x6xf32>) -> tensor<1x64x6x6xf32>
  return %y : tensor<1x64x6x6xf32>
}

// -----

// What the family does not take goes to the mma.sync kernel, with a remark: three
// input channels make 27-element filter rows, 54 bytes (TMA's strides are multiples
// of 16).
// CHECK-LABEL: func.func @nchw_c3
// CHECK: conv_lower.tiles = #conv_lower.tiles<family = mma_sync, {{.*}}a_pixel_run
// CHECK-NOT: sm90a_tma_wgmma
func.func @nchw_c3(%x: tensor<1x3x8x8xf16>, %w: tensor<64x3x3x3xf16>) -> tensor<1x64x6x6xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x64x6x6xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x64x6x6xf32>) -> tensor<1x64x6x6xf32>
  // expected-remark @below {{sm_90a: the mma_sync kernel, not the TMA + wgmma one: the filter rows (K = 27 elements) are not a multiple of 16 bytes, which TMA's global strides need}}
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x3x8x8xf16>, tensor<64x3x3x3xf16>) outs(%init : tensor<1x64x6x6xf32>) -> tensor<1x64x6x6xf32>
  return %y : tensor<1x64x6x6xf32>
}

// -----

// f32 data: tf32 math, m64nNk8; a K tile is 32 channels (128 bytes), so C = 32 is
// taken, as one tile per tap.
// CHECK-LABEL: func.func @nhwc_f32
// CHECK: dtype = "f32", dims = [32, 8, 8, 1], {{.*}}box = [32, 128]
// CHECK-SAME: family = sm90a_tma_wgmma
// CHECK: scf.for %{{.*}} = %c0_i32 to %c9_i32
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
func.func @nhwc_f32(%x: tensor<1x8x8x32xf32>, %w: tensor<64x3x3x32xf32>) -> tensor<1x6x6x64xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x6x6x64xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x32xf32>, tensor<64x3x3x32xf32>) outs(%init : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  return %y : tensor<1x6x6x64xf32>
}

// -----

// NHWC with 32 channels: a K tile (64 k) spans two taps, which no im2col box
// holds; the producer gathers it, its last tile padded (K = 288: 4.5 tiles).
// CHECK-LABEL: func.func @nhwc_c32
// CHECK: memref.global "private" constant @conv_lower_taps : memref<320x2xi32, 4>
// CHECK: conv_lower.tiles = #conv_lower.tiles<family = sm90a_tma_wgmma, {{.*}}a_gathered = true
// CHECK: scf.for %{{.*}} = %c0_i32 to %c5_i32 step %c1_i32  : i32 {
func.func @nhwc_c32(%x: tensor<1x8x8x32xf16>, %w: tensor<64x3x3x32xf16>) -> tensor<1x6x6x64xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x6x6x64xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  // expected-remark @below {{sm_90a: the TMA + wgmma kernel, its A tiles gathered by the producer warpgroup (not TMA im2col): channels per group are not a multiple of 64}}
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x32xf16>, tensor<64x3x3x32xf16>) outs(%init : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  return %y : tensor<1x6x6x64xf32>
}

// -----

// An HWCF filter (F innermost) would need an MN-major B tile.
// CHECK-LABEL: func.func @nhwc_hwcf
func.func @nhwc_hwcf(%x: tensor<1x8x8x64xf16>, %w: tensor<3x3x64x64xf16>) -> tensor<1x6x6x64xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x6x6x64xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  // expected-remark @below {{sm_90a: the mma_sync kernel, not the TMA + wgmma one: the filter rows are not contiguous along K}}
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x64xf16>, tensor<3x3x64x64xf16>) outs(%init : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  return %y : tensor<1x6x6x64xf32>
}
