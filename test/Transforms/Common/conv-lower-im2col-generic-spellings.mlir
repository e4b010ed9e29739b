// RUN: conv-opt %s --conv-lower-im2col=emit-remarks -verify-diagnostics | FileCheck %s
// RUN: conv-opt %s --conv-lower-implicit-gemm=target=cpu-twin | FileCheck %s --check-prefix=TWIN
//
// Convolution-shaped linalg.generic ops are recognised by what they compute
// (their maps and a multiply-accumulate body), not by one spelling: the
// multiply and the accumulate may be commuted and the loops in any order.
// test/Integration/Random runs such spellings against numpy.

#nchw_x = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, c, oh * 2 + kh, ow * 2 + kw * 2)>
#nchw_w = affine_map<(n, f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#nchw_y = affine_map<(n, f, oh, ow, c, kh, kw) -> (n, f, oh, ow)>

// mul(w, x) and add(prod, acc): the operands commuted.
// CHECK-LABEL: func.func @commuted_body
// CHECK:         conv_lower.im2col {{.*}} strides = [2, 2] dilations = [1, 2]
// CHECK-NOT:     linalg.generic {{.*}}reduction", "reduction", "reduction"
// The GPU kernel's analysis is the same (its CPU twin: the kernel's loops).
// TWIN-LABEL:  func.func @commuted_body
// TWIN-NOT:      linalg.generic {{.*}}"reduction", "reduction", "reduction"
// TWIN:          scf.for
// TWIN-LABEL:  func.func @depthwise_output_order
func.func @commuted_body(%x: tensor<1x8x9x9xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x16x4x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x16x4x3xf32>) -> tensor<1x16x4x3xf32>
  %y = linalg.generic {indexing_maps = [#nchw_x, #nchw_w, #nchw_y],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x8x9x9xf32>, tensor<16x8x3x3xf32>) outs(%init : tensor<1x16x4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %b, %a : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x16x4x3xf32>
  return %y : tensor<1x16x4x3xf32>
}

// Depthwise NCHW with its loops in the output's order (n, c, oh, ow, kh, kw),
// as frontends write it (the named op's order is (n, oh, ow, c, kh, kw)),
// f16 widened to f32 inside the body.
// CHECK-LABEL: func.func @depthwise_output_order
// CHECK:         conv_lower.im2col {{.*}} groups = 4
func.func @depthwise_output_order(%x: tensor<2x4x6x6xf16>, %w: tensor<4x3x3xf16>, %init: tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32> {
  %y = linalg.generic {indexing_maps = [
        affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh + kh, ow + kw)>,
        affine_map<(n, c, oh, ow, kh, kw) -> (c, kh, kw)>,
        affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh, ow)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<2x4x6x6xf16>, tensor<4x3x3xf16>) outs(%init : tensor<2x4x4x4xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %ea = arith.extf %a : f16 to f32
    %eb = arith.extf %b : f16 to f32
    %p = arith.mulf %ea, %eb : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x4x4xf32>
  return %y : tensor<2x4x4x4xf32>
}

// NHWC/HWCF with the reductions first and the window terms swapped
// (kh * 1 + oh * 1): still the same convolution.
// CHECK-LABEL: func.func @reductions_first
// CHECK:         conv_lower.im2col
func.func @reductions_first(%x: tensor<1x7x7x8xi8>, %w: tensor<3x3x8x4xi8>, %init: tensor<1x5x5x4xi32>) -> tensor<1x5x5x4xi32> {
  %y = linalg.generic {indexing_maps = [
        affine_map<(kh, kw, c, n, oh, ow, f) -> (n, kh + oh, kw + ow, c)>,
        affine_map<(kh, kw, c, n, oh, ow, f) -> (kh, kw, c, f)>,
        affine_map<(kh, kw, c, n, oh, ow, f) -> (n, oh, ow, f)>],
      iterator_types = ["reduction", "reduction", "reduction", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %w : tensor<1x7x7x8xi8>, tensor<3x3x8x4xi8>) outs(%init : tensor<1x5x5x4xi32>) {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %ea = arith.extsi %a : i8 to i32
    %eb = arith.extsi %b : i8 to i32
    %p = arith.muli %eb, %ea : i32
    %s = arith.addi %p, %acc : i32
    linalg.yield %s : i32
  } -> tensor<1x5x5x4xi32>
  return %y : tensor<1x5x5x4xi32>
}

// Not a multiply-accumulate in the accumulator's type: the product is taken
// in f16 and then widened, which rounds differently from the GEMM. Left alone.
// CHECK-LABEL: func.func @product_in_input_type
// CHECK:         linalg.generic
// CHECK-NOT:     conv_lower.im2col
func.func @product_in_input_type(%x: tensor<1x8x9x9xf16>, %w: tensor<16x8x3x3xf16>, %init: tensor<1x16x4x3xf32>) -> tensor<1x16x4x3xf32> {
  // expected-remark @+1 {{conv-lower-im2col: left untouched: not one of the supported convolution forms (linalg.generic)}}
  %y = linalg.generic {indexing_maps = [#nchw_x, #nchw_w, #nchw_y],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x8x9x9xf16>, tensor<16x8x3x3xf16>) outs(%init : tensor<1x16x4x3xf32>) {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %p = arith.mulf %a, %b : f16
    %ep = arith.extf %p : f16 to f32
    %s = arith.addf %acc, %ep : f32
    linalg.yield %s : f32
  } -> tensor<1x16x4x3xf32>
  return %y : tensor<1x16x4x3xf32>
}
