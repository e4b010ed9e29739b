// Quantized (i8, zero points) convolutions with i8-dot (AVX512-VNNI hosts:
// the runners set it): the GEMMs run on VPDPBUSD, A's bytes made unsigned,
// the filter's column sums taken back out. Without it they keep the
// widened i32 multiplies.
//
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot=true threads=2" | FileCheck %s --check-prefix=DOT
// DOT-LABEL: llvm.func @nhwc_3x3
// DOT: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// DOT-LABEL: llvm.func @nchw_stem
// DOT: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.{{512|256|128}}"
// DOT-NOT: conv_lower.avx512
//
// The packing function of constant weights computes the repacked quads and
// the column sums; the convolution reads them.
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot=true constant-weights=true" | FileCheck %s --check-prefix=PACK
// PACK-LABEL: llvm.func @constant_filter(
// PACK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// PACK-LABEL: llvm.func @constant_filter_pack(
// PACK-NOT: vpdpbusd
// PACK: llvm.shl %{{.*}} : i32
// PACK-NOT: vpdpbusd
// PACK: llvm.return
//
// RUN: conv-opt %s --conv-lower-to-llvm | FileCheck %s --check-prefix=WIDE
// WIDE-NOT: vpdpbusd
//
// The intrinsics compile for every AVX512-VNNI CPU.
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot=true threads=2" | mlir-translate --mlir-to-llvmir > %t.ll
// RUN: llc -O3 -mcpu=cascadelake %t.ll -o - | FileCheck %s --check-prefix=ASM
// RUN: llc -O3 -mcpu=sapphirerapids %t.ll -o - | FileCheck %s --check-prefix=ASM
// RUN: llc -O3 -mcpu=znver4 %t.ll -o - | FileCheck %s --check-prefix=ASM
// ASM: vpdpbusd
//
// The numbers on this machine's JIT (exact, against the float64
// convolution): test/Tools/conv-run/i8-dot.test.

// K = 3 * 3 * 16 = 144, 32 filters: the im2col panels in quads.
func.func @nhwc_3x3(%x: tensor<2x8x8x16xi8>, %w: tensor<32x3x3x16xi8>) -> tensor<2x6x6x32xi32> {
  %zx = arith.constant 3 : i32
  %zw = arith.constant -1 : i32
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<2x6x6x32xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<2x6x6x32xi32>) -> tensor<2x6x6x32xi32>
  %y = linalg.conv_2d_nhwc_fhwc_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w, %zx, %zw : tensor<2x8x8x16xi8>, tensor<32x3x3x16xi8>, i32, i32) outs(%init : tensor<2x6x6x32xi32>) -> tensor<2x6x6x32xi32>
  return %y : tensor<2x6x6x32xi32>
}

// The RGB stem, NCHW: K = 3 * 7 * 7 = 147, padded to whole quads.
func.func @nchw_stem(%x: tensor<1x3x18x18xi8>, %w: tensor<16x3x7x7xi8>) -> tensor<1x16x6x6xi32> {
  %zx = arith.constant 3 : i32
  %zw = arith.constant -1 : i32
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<1x16x6x6xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  %y = linalg.conv_2d_nchw_fchw_q {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w, %zx, %zw : tensor<1x3x18x18xi8>, tensor<16x3x7x7xi8>, i32, i32) outs(%init : tensor<1x16x6x6xi32>) -> tensor<1x16x6x6xi32>
  return %y : tensor<1x16x6x6xi32>
}

// The filter constant (destination style, as the runners build it).
func.func @constant_filter(%xm: memref<2x8x8x16xi8>, %wm: memref<32x3x3x16xi8> {conv_lower.constant}, %ym: memref<2x6x6x32xi32>) attributes {llvm.emit_c_interface} {
  %x = bufferization.to_tensor %xm restrict : memref<2x8x8x16xi8> to tensor<2x8x8x16xi8>
  %w = bufferization.to_tensor %wm restrict : memref<32x3x3x16xi8> to tensor<32x3x3x16xi8>
  %zx = arith.constant 3 : i32
  %zw = arith.constant -1 : i32
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<2x6x6x32xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<2x6x6x32xi32>) -> tensor<2x6x6x32xi32>
  %y = linalg.conv_2d_nhwc_fhwc_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w, %zx, %zw : tensor<2x8x8x16xi8>, tensor<32x3x3x16xi8>, i32, i32) outs(%init : tensor<2x6x6x32xi32>) -> tensor<2x6x6x32xi32>
  bufferization.materialize_in_destination %y in restrict writable %ym : (tensor<2x6x6x32xi32>, memref<2x6x6x32xi32>) -> ()
  return
}
