// The CPU pipeline with `amx` (AMX-BF16 hosts: the runners set it): the bf16
// GEMMs in K pairs run on AMX tiles. Every register tile's K loop is tile
// loads and TDPBF16PS on accumulator tiles it carries; no !amx.tile type
// and no AVX512-BF16 dot is left for these GEMMs.
// RUN: conv-opt %s --conv-lower-to-llvm="bf16-dot amx threads=2 constant-weights" | FileCheck %s
// RUN: conv-opt %s --conv-lower-to-llvm="bf16-dot amx" | FileCheck %s
// CHECK-NOT: amx.tile
// CHECK-NOT: llvm.x86.avx512bf16
// CHECK-LABEL: llvm.func @pointwise_bias_relu
// CHECK: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// CHECK: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// CHECK: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// CHECK-LABEL: llvm.func @nhwc_3x3
// CHECK: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// CHECK-LABEL: llvm.func @nchw_pointwise
// CHECK: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// CHECK-LABEL: llvm.func @dynamic_batch
// CHECK: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
//
// LLVM's X86 backend configures the tiles (LDTILECFG) and keeps the
// accumulators in tile registers across the K loop.
// RUN: conv-opt %s --conv-lower-to-llvm="bf16-dot amx threads=2" | mlir-translate --mlir-to-llvmir > %t.ll
// RUN: llc -O3 -mcpu=sapphirerapids %t.ll -o - | FileCheck %s --check-prefix=ASM
// RUN: llc -O3 -mcpu=graniterapids %t.ll -o /dev/null
// ASM-LABEL: pointwise_bias_relu:
// ASM: ldtilecfg
// ASM: tileloadd
// ASM: tdpbf16ps
// ASM: tilerelease
// ASM-LABEL: nhwc_3x3:
// ASM: ldtilecfg
// ASM: tdpbf16ps
//
// With amx-emulated the same tile program is vector code, with no tile
// intrinsic or type left: it compiles and runs on any AVX512-BF16 CPU
// (test/Tools/conv-run/amx.test runs it through the JIT; llc on this
// module's emulated code alone took 112 s, so it is not repeated here).
// RUN: conv-opt %s --conv-lower-to-llvm="bf16-dot amx amx-emulated threads=2" | FileCheck %s --check-prefix=EMU --implicit-check-not=llvm.x86.t --implicit-check-not=x86_amx
// RUN: conv-opt %s --conv-lower-to-llvm="bf16-dot amx amx-emulated" | FileCheck %s --check-prefix=EMU --implicit-check-not=llvm.x86.t --implicit-check-not=x86_amx
// EMU: llvm.func @pointwise_bias_relu

func.func @pointwise_bias_relu(%x: tensor<1x14x14x64xbf16>, %w: tensor<64x1x1x64xbf16>, %bias: tensor<64xf32>) -> tensor<1x14x14x64xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x14x14x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x14x14x64xf32>) -> tensor<1x14x14x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x14x14x64xbf16>, tensor<64x1x1x64xbf16>) outs(%init : tensor<1x14x14x64xf32>) -> tensor<1x14x14x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (c)>, affine_map<(n, h, w, c) -> (n, h, w, c)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%y, %bias : tensor<1x14x14x64xf32>, tensor<64xf32>) outs(%empty : tensor<1x14x14x64xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x14x14x64xf32>
  return %r : tensor<1x14x14x64xf32>
}

func.func @nhwc_3x3(%x: tensor<1x14x14x32xbf16>, %w: tensor<64x3x3x32xbf16>) -> tensor<1x12x12x64xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x12x12x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x12x12x64xf32>) -> tensor<1x12x12x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x14x14x32xbf16>, tensor<64x3x3x32xbf16>) outs(%init : tensor<1x12x12x64xf32>) -> tensor<1x12x12x64xf32>
  return %y : tensor<1x12x12x64xf32>
}

func.func @nchw_pointwise(%x: tensor<1x32x8x8xbf16>, %w: tensor<48x32x1x1xbf16>) -> tensor<1x48x8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x48x8x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x48x8x8xf32>) -> tensor<1x48x8x8xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x32x8x8xbf16>, tensor<48x32x1x1xbf16>) outs(%init : tensor<1x48x8x8xf32>) -> tensor<1x48x8x8xf32>
  return %y : tensor<1x48x8x8xf32>
}

func.func @dynamic_batch(%x: tensor<?x10x10x32xbf16>, %w: tensor<32x3x3x32xbf16>) -> tensor<?x8x8x32xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x10x10x32xbf16>
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty(%n) : tensor<?x8x8x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x8x8x32xf32>) -> tensor<?x8x8x32xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<?x10x10x32xbf16>, tensor<32x3x3x32xbf16>) outs(%init : tensor<?x8x8x32xf32>) -> tensor<?x8x8x32xf32>
  return %y : tensor<?x8x8x32xf32>
}
