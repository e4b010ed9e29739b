// conv-lower-to-nvvm's host code: operands copied into managed memory, one
// gpu.launch_func of the implicit-GEMM kernel, the result copied back, the
// buffers freed; run through MLIR's mgpu* ABI, served by runtime/'s
// libconvrt_mlir_cuda.so. (Numerics on random data against a float64
// reference: conv-run-cuda.test.)
//
// RUN: conv-opt %s --conv-lower-to-nvvm=chip=sm_80 > %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir | FileCheck %s --check-prefix=HOST
// HOST-DAG: call ptr @mgpuModuleLoad(
// HOST-DAG: call ptr @mgpuModuleGetFunction(
// HOST-DAG: call void @mgpuLaunchKernel(
// HOST-DAG: call ptr @mgpuMemAlloc(
// HOST-DAG: call void @mgpuMemFree(
//
// On a device: X = 1, W = 1/2, 8 channels, a 3x3 window with one pixel of zero
// padding: each output is 4 x (the taps inside the image): 16 at the corners,
// 24 on the edges, 36 inside; all 8 filters alike.
// RUN: %if cuda-device %{ mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:   -shared-libs=%convrt_mlir_cuda,%mlir_runner_utils,%mlir_c_runner_utils \
// RUN:   | FileCheck %s --check-prefix=DEVICE %}
// DEVICE: sizes = [1, 4, 4, 8]
// DEVICE: {{\[}}[16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16],
// DEVICE-NEXT: [24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24],
// DEVICE-NEXT: [24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24,{{ +}}24],
// DEVICE-NEXT: [16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16,{{ +}}16]],
// DEVICE-NEXT: {{\[}}[24,
// DEVICE-NEXT: [36,{{ +}}36,{{ +}}36,{{ +}}36,{{ +}}36,{{ +}}36,{{ +}}36,{{ +}}36],
//
// REQUIRES: ptxas, convrt-runtime

func.func private @printMemrefF32(memref<*xf32>)

func.func @conv(%x: tensor<1x4x4x8xf16>, %w: tensor<8x3x3x8xf16>) -> tensor<1x4x4x8xf32> {
  %c0 = arith.constant 0.0 : f16
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : f16
  } : tensor<1x4x4x8xf16> to tensor<1x6x6x8xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %r = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %w : tensor<1x6x6x8xf16>, tensor<8x3x3x8xf16>) outs(%f : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %r : tensor<1x4x4x8xf32>
}

func.func @main() {
  %x = arith.constant dense<1.0> : tensor<1x4x4x8xf16>
  %w = arith.constant dense<0.5> : tensor<8x3x3x8xf16>
  %y = call @conv(%x, %w) : (tensor<1x4x4x8xf16>, tensor<8x3x3x8xf16>) -> tensor<1x4x4x8xf32>
  %m = bufferization.to_buffer %y : tensor<1x4x4x8xf32> to memref<1x4x4x8xf32>
  %u = memref.cast %m : memref<1x4x4x8xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
