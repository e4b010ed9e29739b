// A 3x3 convolution for the CPU-only pipeline test (not a test itself).
func.func @conv(%x: tensor<1x8x8x16xf32>, %w: tensor<3x3x16x8xf32>) -> tensor<1x6x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x6x6x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%x, %w : tensor<1x8x8x16xf32>, tensor<3x3x16x8xf32>) outs(%init : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %y : tensor<1x6x6x8xf32>
}
