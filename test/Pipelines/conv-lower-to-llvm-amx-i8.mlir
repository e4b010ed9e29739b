// The CPU pipeline with `amx` and `i8-dot` (AMX hosts: the runners set
// both): the quantized convolutions' i8 GEMMs in K quads run on AMX tiles,
// TDPBSSD on signed bytes, so A is neither flipped nor corrected by B's
// column sums (pack-vnni's signed-i8 form); the tiles' partial edges (the
// 196 = 12 x 16 + 4 rows of a 14x14 image) run on VPDPBUSD.
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot amx threads=2 constant-weights" | FileCheck %s
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot amx" | FileCheck %s
// CHECK-NOT: amx.tile
// CHECK-LABEL: llvm.func @pointwise_q
// CHECK: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// CHECK: llvm.call_intrinsic "llvm.x86.tdpbssd.internal"
// CHECK: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK-LABEL: llvm.func @nhwc_3x3_q
// CHECK: llvm.call_intrinsic "llvm.x86.tdpbssd.internal"
//
// Without amx the same convolutions take VPDPBUSD alone, A flipped.
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot" | FileCheck %s --check-prefix=DOTS
// DOTS-NOT: tdpbssd
// DOTS-LABEL: llvm.func @pointwise_q
// DOTS: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
//
// LLVM's X86 backend configures the tiles and keeps the i32 accumulators in
// tile registers across the K loop.
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot amx threads=2" | mlir-translate --mlir-to-llvmir > %t.ll
// RUN: llc -O3 -mcpu=sapphirerapids %t.ll -o - | FileCheck %s --check-prefix=ASM
// ASM-LABEL: pointwise_q:
// ASM: ldtilecfg
// ASM: tileloadd
// ASM: tdpbssd
// ASM: tilerelease
// ASM-LABEL: nhwc_3x3_q:
// ASM: ldtilecfg
// ASM: tdpbssd
//
// With amx-emulated the tile program is vector code, with no tile intrinsic
// or type left: it compiles and runs on any AVX512-VNNI CPU
// (test/Tools/conv-run/amx.test runs it through the JIT).
// RUN: conv-opt %s --conv-lower-to-llvm="i8-dot amx amx-emulated" | FileCheck %s --check-prefix=EMU --implicit-check-not=llvm.x86.t --implicit-check-not=x86_amx
// EMU: llvm.func @pointwise_q
// EMU: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"

func.func @pointwise_q(%x: tensor<1x14x14x64xi8>, %w: tensor<64x1x1x64xi8>) -> tensor<1x14x14x64xi32> {
  %xz = arith.constant 3 : i32
  %wz = arith.constant -2 : i32
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<1x14x14x64xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<1x14x14x64xi32>) -> tensor<1x14x14x64xi32>
  %y = linalg.conv_2d_nhwc_fhwc_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w, %xz, %wz : tensor<1x14x14x64xi8>, tensor<64x1x1x64xi8>, i32, i32) outs(%init : tensor<1x14x14x64xi32>) -> tensor<1x14x14x64xi32>
  return %y : tensor<1x14x14x64xi32>
}

func.func @nhwc_3x3_q(%x: tensor<1x18x18x32xi8>, %w: tensor<3x3x32x64xi8>) -> tensor<1x16x16x64xi32> {
  %xz = arith.constant -1 : i32
  %wz = arith.constant 0 : i32
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<1x16x16x64xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<1x16x16x64xi32>) -> tensor<1x16x16x64xi32>
  %y = linalg.conv_2d_nhwc_hwcf_q {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w, %xz, %wz : tensor<1x18x18x32xi8>, tensor<3x3x32x64xi8>, i32, i32) outs(%init : tensor<1x16x16x64xi32>) -> tensor<1x16x16x64xi32>
  return %y : tensor<1x16x16x64xi32>
}
