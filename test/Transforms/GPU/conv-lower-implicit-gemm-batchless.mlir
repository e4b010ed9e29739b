// RUN: conv-opt %s --conv-lower-implicit-gemm | FileCheck %s
// RUN: conv-opt %s --conv-lower-implicit-gemm=target=cpu-twin | FileCheck %s --check-prefix=TWIN
// Numbers on the twin (against the reference lowering):
// RUN: conv-run %s --function hwc_hwcf --target cpu-twin --check --repeat 1 | FileCheck %s --check-prefix=NUM
// RUN: conv-run %s --function hwc_fhwc_bf16 --target cpu-twin --check --repeat 1 | FileCheck %s --check-prefix=NUM
// RUN: conv-run %s --function hwc_depthwise --target cpu-twin --check --repeat 1 | FileCheck %s --check-prefix=NUM
// RUN: conv-run %s --function conv1d_nwc --target cpu-twin --check --repeat 1 | FileCheck %s --check-prefix=NUM
// RUN: conv-run %s --function hwc_hwcf --target cpu --check --repeat 1 | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: check {{.*}}: PASS
//
// The kernels take every form the im2col route takes: IREE's batchless
// channels-last convolution generic ((h, w, c) image, (oh, ow, f) output,
// as IREE writes one after dropping a unit batch) and the 1-D named forms,
// which the pass lifts to the 2-D NHWC forms with N = 1 (the same rewrite
// as conv-lower-lift-to-2d) before building the kernel. They were left
// untouched ("not one of the supported convolution forms").

// CHECK-LABEL: func.func @hwc_hwcf
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_0
// CHECK-NOT: linalg.generic
// TWIN-LABEL: func.func @hwc_hwcf
// TWIN-NOT: linalg.generic {{.*}}"reduction", "reduction", "reduction"
// TWIN: scf.for
func.func @hwc_hwcf(%x: tensor<10x12x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<4x10x16xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x10x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x10x16xf32>) -> tensor<4x10x16xf32>
  %y = linalg.generic {indexing_maps = [
        affine_map<(oh, ow, f, kh, kw, c) -> (oh * 2 + kh, ow + kw, c)>,
        affine_map<(oh, ow, f, kh, kw, c) -> (kh, kw, c, f)>,
        affine_map<(oh, ow, f, kh, kw, c) -> (oh, ow, f)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<10x12x8xf32>, tensor<3x3x8x16xf32>) outs(%init : tensor<4x10x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x10x16xf32>
  return %y : tensor<4x10x16xf32>
}

// FHWC filter, bf16 widened to f32 in the body, a dilation, a zero pad.
// CHECK-LABEL: func.func @hwc_fhwc_bf16
// CHECK: gpu.launch_func @conv_lower_kernels::@conv2d_implicit_gemm_1
// CHECK-NOT: linalg.generic
// TWIN-LABEL: func.func @hwc_fhwc_bf16
// TWIN: scf.for
func.func @hwc_fhwc_bf16(%x: tensor<9x9x16xbf16>, %w: tensor<8x3x3x16xbf16>) -> tensor<7x9x8xf32> {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : bf16
  %p = tensor.pad %x low[1, 1, 0] high[1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index):
    tensor.yield %zh : bf16
  } : tensor<9x9x16xbf16> to tensor<11x11x16xbf16>
  %empty = tensor.empty() : tensor<7x9x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<7x9x8xf32>) -> tensor<7x9x8xf32>
  %y = linalg.generic {indexing_maps = [
        affine_map<(oh, ow, f, kh, kw, c) -> (oh + kh * 2, ow + kw, c)>,
        affine_map<(oh, ow, f, kh, kw, c) -> (f, kh, kw, c)>,
        affine_map<(oh, ow, f, kh, kw, c) -> (oh, ow, f)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%p, %w : tensor<11x11x16xbf16>, tensor<8x3x3x16xbf16>) outs(%init : tensor<7x9x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %ea = arith.extf %a : bf16 to f32
    %eb = arith.extf %b : bf16 to f32
    %m = arith.mulf %ea, %eb : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<7x9x8xf32>
  return %y : tensor<7x9x8xf32>
}

// Depthwise, batchless: (h, w, c) x (kh, kw, c) -> (oh, ow, c).
// CHECK-LABEL: func.func @hwc_depthwise
// CHECK: gpu.launch_func
// CHECK-NOT: linalg.generic
// TWIN-LABEL: func.func @hwc_depthwise
// TWIN: scf.for
func.func @hwc_depthwise(%x: tensor<8x8x32xf32>, %w: tensor<3x3x32xf32>) -> tensor<6x6x32xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<6x6x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<6x6x32xf32>) -> tensor<6x6x32xf32>
  %y = linalg.generic {indexing_maps = [
        affine_map<(oh, ow, c, kh, kw) -> (oh + kh, ow + kw, c)>,
        affine_map<(oh, ow, c, kh, kw) -> (kh, kw, c)>,
        affine_map<(oh, ow, c, kh, kw) -> (oh, ow, c)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<8x8x32xf32>, tensor<3x3x32xf32>) outs(%init : tensor<6x6x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<6x6x32xf32>
  return %y : tensor<6x6x32xf32>
}

// A named 1-D form, which only the pipelines lifted before.
// CHECK-LABEL: func.func @conv1d_nwc
// CHECK: gpu.launch_func
// CHECK-NOT: linalg.conv_1d
func.func @conv1d_nwc(%x: tensor<2x12x8xf32>, %w: tensor<3x8x16xf32>) -> tensor<2x10x16xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x10x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x10x16xf32>) -> tensor<2x10x16xf32>
  %y = linalg.conv_1d_nwc_wcf {strides = dense<1> : tensor<1xi64>, dilations = dense<1> : tensor<1xi64>}
    ins(%x, %w : tensor<2x12x8xf32>, tensor<3x8x16xf32>) outs(%init : tensor<2x10x16xf32>) -> tensor<2x10x16xf32>
  return %y : tensor<2x10x16xf32>
}
