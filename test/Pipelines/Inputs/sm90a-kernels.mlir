// The sm_90a kernels of test/Transforms/GPU/conv-lower-implicit-gemm-sm90a.mlir
// (f16 m64n64, bf16 stride 2 m64n128, f32 data with tf32 math m64n64k8), and two
// whose producer gathers the A tiles (NCHW f16 m64n128 with padding, NCHW f32 with
// tf32 math), for test/Pipelines/implicit-gemm-sm90a.test.
module {
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

func.func @nhwc_bf16_stride2(%x: tensor<2x14x14x64xbf16>, %w: tensor<128x3x3x64xbf16>) -> tensor<2x6x6x128xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<2x6x6x128xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<2x6x6x128xf32>) -> tensor<2x6x6x128xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<2x14x14x64xbf16>, tensor<128x3x3x64xbf16>) outs(%init : tensor<2x6x6x128xf32>) -> tensor<2x6x6x128xf32>
  return %y : tensor<2x6x6x128xf32>
}

func.func @nhwc_f32(%x: tensor<1x8x8x32xf32>, %w: tensor<64x3x3x32xf32>) -> tensor<1x6x6x64xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x6x6x64xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  %y = linalg.conv_2d_nhwc_fhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x8x32xf32>, tensor<64x3x3x32xf32>) outs(%init : tensor<1x6x6x64xf32>) -> tensor<1x6x6x64xf32>
  return %y : tensor<1x6x6x64xf32>
}
func.func @nchw_f16_gathered(%x: tensor<2x64x9x11xf16>, %w: tensor<128x64x3x3xf16>) -> tensor<2x128x9x11xf32> {
  %zero = arith.constant 0.000000e+00 : f16
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f16
  } : tensor<2x64x9x11xf16> to tensor<2x64x11x13xf16>
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<2x128x9x11xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<2x128x9x11xf32>) -> tensor<2x128x9x11xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%padded, %w : tensor<2x64x11x13xf16>, tensor<128x64x3x3xf16>) outs(%init : tensor<2x128x9x11xf32>) -> tensor<2x128x9x11xf32>
  return %y : tensor<2x128x9x11xf32>
}
func.func @nchw_f32_gathered(%x: tensor<1x64x8x8xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x6x6xf32> {
  %f0 = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x64x6x6xf32>
  %init = linalg.fill ins(%f0 : f32) outs(%e : tensor<1x64x6x6xf32>) -> tensor<1x64x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>) outs(%init : tensor<1x64x6x6xf32>) -> tensor<1x64x6x6xf32>
  return %y : tensor<1x64x6x6xf32>
}
}
