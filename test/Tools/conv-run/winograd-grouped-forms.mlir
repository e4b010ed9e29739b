// Winograd on the grouped named forms with one group (a rank-5 image whose
// (g, c) the rewrite collapses), padded on every side so the windows reach
// past the image: conv-run checks the result against the reference lowering.
// (Reading the rows from the rank-5 shape once took C for H: the high padding
// was read past the image, and the check saw INF.)
// RUN: conv-run %s --function ngchw --winograd always --check --repeat 1 | FileCheck %s
// RUN: conv-run %s --function nhwgc --winograd always --check --repeat 1 | FileCheck %s
// CHECK: compile   : {{.*}}im2col winograd)
// CHECK: check     : PASS {{.*}} against the reference lowering (no im2col)

func.func @ngchw(%x: tensor<1x1x16x10x10xf32>, %w: tensor<16x1x16x3x3xf32>) -> tensor<1x1x16x10x10xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 0, 1, 1] high[0, 0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index, %e: index):
    tensor.yield %zero : f32
  } : tensor<1x1x16x10x10xf32> to tensor<1x1x16x12x12xf32>
  %e = tensor.empty() : tensor<1x1x16x10x10xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x1x16x10x10xf32>) -> tensor<1x1x16x10x10xf32>
  %y = linalg.conv_2d_ngchw_fgchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%p, %w : tensor<1x1x16x12x12xf32>, tensor<16x1x16x3x3xf32>) outs(%init : tensor<1x1x16x10x10xf32>) -> tensor<1x1x16x10x10xf32>
  return %y : tensor<1x1x16x10x10xf32>
}

func.func @nhwgc(%x: tensor<2x9x11x1x8xf32>, %w: tensor<1x16x3x3x8xf32>) -> tensor<2x9x11x1x16xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0, 0] high[0, 1, 1, 0, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index, %e: index):
    tensor.yield %zero : f32
  } : tensor<2x9x11x1x8xf32> to tensor<2x11x13x1x8xf32>
  %e = tensor.empty() : tensor<2x9x11x1x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x9x11x1x16xf32>) -> tensor<2x9x11x1x16xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
       ins(%p, %w : tensor<2x11x13x1x8xf32>, tensor<1x16x3x3x8xf32>) outs(%init : tensor<2x9x11x1x16xf32>) -> tensor<2x9x11x1x16xf32>
  return %y : tensor<2x9x11x1x16xf32>
}
