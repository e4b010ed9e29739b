// bf16 convolutions compile for every x86 the JIT targets. LLVM's x86
// backend aborted ("LLVM ERROR: Do not know how to soft promote this
// operator's operand!") on the bf16 vectors of these two where AVX512-BF16
// makes bf16 vectors legal types (cooperlake, sapphirerapids, znver4), while
// x86-64-v3 and skylake-avx512 compiled them: conv-lower-legalize-bf16 now
// hands LLVM i16 bits and f32 arithmetic instead of bf16.
//
// RUN: conv-opt %s --conv-lower-to-llvm | FileCheck %s
// CHECK-NOT: bf16
// CHECK: llvm.func @nhwc_dilated
// CHECK: llvm.func @nchw_pointwise
// CHECK: llvm.func @bf16_out
// CHECK: llvm.func @nhwc_even_k
// CHECK: llvm.func @nchw_pointwise_even_k
//
// RUN: conv-opt %s --conv-lower-to-llvm | mlir-translate --mlir-to-llvmir > %t.ll
// RUN: llc -O3 -mcpu=cooperlake %t.ll -o /dev/null
// RUN: llc -O3 -mcpu=sapphirerapids %t.ll -o /dev/null
// RUN: llc -O3 -mcpu=znver4 %t.ll -o /dev/null
// RUN: llc -O3 -mcpu=x86-64-v3 %t.ll -o /dev/null
// The twin's kernel loops take the same end of the pipeline.
// RUN: conv-opt %s --conv-lower-to-llvm="implicit-gemm-twin=true" | mlir-translate --mlir-to-llvmir \
// RUN: | llc -O3 -mcpu=sapphirerapids -o /dev/null
//
// With bf16-dot (AVX512-BF16 hosts: the runners set it), the GEMMs whose K
// is even run on VDPBF16PS; the odd-K ones above keep the widened f32 code.
// The intrinsics take bf16 vectors, and compile for every AVX512-BF16 CPU.
// RUN: conv-opt %s --conv-lower-to-llvm="bf16-dot=true threads=2" | FileCheck %s --check-prefix=DOT
// DOT-NOT: llvm.x86.avx512bf16
// DOT-LABEL: llvm.func @nhwc_even_k
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// DOT-LABEL: llvm.func @nchw_pointwise_even_k
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.{{512|256}}"
// RUN: conv-opt %s --conv-lower-to-llvm="bf16-dot=true threads=2" | mlir-translate --mlir-to-llvmir > %t.dot.ll
// RUN: llc -O3 -mcpu=cooperlake %t.dot.ll -o - | FileCheck %s --check-prefix=ASM
// RUN: llc -O3 -mcpu=sapphirerapids %t.dot.ll -o - | FileCheck %s --check-prefix=ASM
// RUN: llc -O3 -mcpu=znver4 %t.dot.ll -o - | FileCheck %s --check-prefix=ASM
// ASM: vdpbf16ps
//
// The numbers on this machine's JIT (bf16 tolerance, against the float64
// convolution): test/Tools/conv-run/bf16-legalized.test, and on VDPBF16PS
// test/Tools/conv-run/bf16-dot.test.

// N=2, C=17, F=7, 16x4 image, 1x3 filter, dilation (3, 1): the issue's case.
func.func @nhwc_dilated(%x: tensor<2x16x4x17xbf16>, %w: tensor<7x1x3x17xbf16>) -> tensor<2x16x2x7xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x16x2x7xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x16x2x7xf32>) -> tensor<2x16x2x7xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<[3, 1]> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x16x4x17xbf16>, tensor<7x1x3x17xbf16>) outs(%init : tensor<2x16x2x7xf32>) -> tensor<2x16x2x7xf32>
  return %y : tensor<2x16x2x7xf32>
}

// The NCHW 1x1 case found earlier.
func.func @nchw_pointwise(%x: tensor<1x17x5x5xbf16>, %w: tensor<9x17x1x1xbf16>) -> tensor<1x9x5x5xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x9x5x5xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x9x5x5xf32>) -> tensor<1x9x5x5xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x17x5x5xbf16>, tensor<9x17x1x1xbf16>) outs(%init : tensor<1x9x5x5xf32>) -> tensor<1x9x5x5xf32>
  return %y : tensor<1x9x5x5xf32>
}

// bf16 out: the GEMM accumulates in bf16 (llvm.intr.fmuladd on bf16 vectors
// before the rewrite), which now computes in f32 and rounds per step.
func.func @bf16_out(%x: tensor<1x17x5x5xbf16>, %w: tensor<9x17x1x1xbf16>) -> tensor<1x9x5x5xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<1x9x5x5xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<1x9x5x5xbf16>) -> tensor<1x9x5x5xbf16>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x17x5x5xbf16>, tensor<9x17x1x1xbf16>) outs(%init : tensor<1x9x5x5xbf16>) -> tensor<1x9x5x5xbf16>
  return %y : tensor<1x9x5x5xbf16>
}

// K = 3 * 3 * 16 = 144, 32 filters: the im2col panels in pairs.
func.func @nhwc_even_k(%x: tensor<2x8x8x16xbf16>, %w: tensor<32x3x3x16xbf16>) -> tensor<2x6x6x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x6x6x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x6x6x32xf32>) -> tensor<2x6x6x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x8x8x16xbf16>, tensor<32x3x3x16xbf16>) outs(%init : tensor<2x6x6x32xf32>) -> tensor<2x6x6x32xf32>
  return %y : tensor<2x6x6x32xf32>
}

// NCHW pointwise, K = 32: the image is the streamed operand, repacked in
// pairs.
func.func @nchw_pointwise_even_k(%x: tensor<1x32x8x8xbf16>, %w: tensor<16x32x1x1xbf16>) -> tensor<1x16x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x16x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x32x8x8xbf16>, tensor<16x32x1x1xbf16>) outs(%init : tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}
