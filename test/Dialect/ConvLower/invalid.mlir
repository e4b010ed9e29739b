// RUN: conv-opt %s -split-input-file -verify-diagnostics

func.func @input_rank(%x: tensor<16x16xf32>) {
  // expected-error @+1 {{expects a rank-3, 4 or 5 input (1, 2 or 3 spatial dimensions; for 2-D [N, C, H, W] or [N, H, W, C]), got rank 2}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @kernel_entries(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects kernel to have 2 entries, got [3]}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @kernel_positive(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects kernel to be positive, got [0, 3]}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [0, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @stride_positive(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects strides to be positive, got [0, 1]}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [0, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @dilation_positive(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects dilations to be positive, got [1, -2]}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, -2] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @padding_entries(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects padding to have 4 entries (top, left, bottom, right), got [1, 1]}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [1, 1] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<256x72xf32>
  return
}

// -----

func.func @padding_non_negative(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects padding to be non-negative, got [1, -1, 1, 1]}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [1, -1, 1, 1] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<256x72xf32>
  return
}

// -----

func.func @groups_positive(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects groups to be positive, got 0}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 0 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @groups_divide_channels(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects the input channels (8) to be divisible by groups (3)}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 3 k_order = chw : tensor<1x8x16x16xf32> -> tensor<3x196x18xf32>
  return
}

// -----

func.func @static_channels(%x: tensor<1x?x16x16xf32>) {
  // expected-error @+1 {{expects static input channels and spatial sizes; only the batch may be dynamic}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x?x16x16xf32> -> tensor<196x?xf32>
  return
}

// -----

func.func @kernel_fits(%x: tensor<1x8x4x4xf32>) {
  // expected-error @+1 {{expects the dilated kernel to fit the padded input: kernel [3, 3] with dilations [2, 2] on input 4x4 padded by [0, 0, 0, 0]}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [2, 2] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x4x4xf32> -> tensor<1x72xf32>
  return
}

// -----

func.func @element_type(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects the result element type ('f16') to match the input element type ('f32')}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x72xf16>
  return
}

// -----

func.func @result_rank(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects a [G, M, K] result, or [M, K] with one group; got rank 2 with 2 group(s)}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 2 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x36xf32>
  return
}

// -----

func.func @result_groups(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects result dimension 0 to be the group count 2, got 4}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 2 k_order = chw : tensor<1x8x16x16xf32> -> tensor<4x196x36xf32>
  return
}

// -----

func.func @result_k(%x: tensor<1x8x16x16xf32>) {
  // expected-error @+1 {{expects the result K dimension to be Cg*KH*KW = 72, got 64}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x64xf32>
  return
}

// -----

func.func @result_m(%x: tensor<2x8x16x16xf32>) {
  // expected-error @+1 {{expects the result M dimension to be N*Ho*Wo = 2*14*14 = 392, got 196}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<2x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @result_m_dynamic(%x: tensor<?x8x16x16xf32>) {
  // expected-error @+1 {{expects the result M dimension to be dynamic when the batch is dynamic, got 196}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<?x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

func.func @fold_input_rank(%y: tensor<256xf32>) {
  // expected-error @+1 {{expects a [G, M, Fg] or [M, F] input, got rank 1}}
  %0 = conv_lower.fold %y layout = nchw output_size = [16, 16] : tensor<256xf32> -> tensor<1x1x16x16xf32>
  return
}

// -----

func.func @fold_result_rank(%y: tensor<256x32xf32>) {
  // expected-error @+1 {{expects a rank-3, 4 or 5 result (1, 2 or 3 spatial dimensions; for 2-D [N, C, H, W] or [N, H, W, C]), got rank 2}}
  %0 = conv_lower.fold %y layout = nchw output_size = [16, 16] : tensor<256x32xf32> -> tensor<256x32xf32>
  return
}

// -----

func.func @fold_output_size(%y: tensor<256x32xf32>) {
  // expected-error @+1 {{expects output_size to be positive, got [0, 16]}}
  %0 = conv_lower.fold %y layout = nchw output_size = [0, 16] : tensor<256x32xf32> -> tensor<1x32x16x16xf32>
  return
}

// -----

func.func @fold_element_type(%y: tensor<256x32xf32>) {
  // expected-error @+1 {{expects the result element type ('f16') to match the input element type ('f32')}}
  %0 = conv_lower.fold %y layout = nchw output_size = [16, 16] : tensor<256x32xf32> -> tensor<1x32x16x16xf16>
  return
}

// -----

func.func @fold_spatial(%y: tensor<256x32xf32>) {
  // expected-error @+1 {{expects the result spatial size to be output_size [16, 16], got [8, 32]}}
  %0 = conv_lower.fold %y layout = nchw output_size = [16, 16] : tensor<256x32xf32> -> tensor<1x32x8x32xf32>
  return
}

// -----

func.func @fold_channels(%y: tensor<2x256x16xf32>) {
  // expected-error @+1 {{expects the result channel count to be G*Fg = 2*16 = 32, got 16}}
  %0 = conv_lower.fold %y layout = nhwc output_size = [16, 16] : tensor<2x256x16xf32> -> tensor<1x16x16x16xf32>
  return
}

// -----

func.func @fold_static_channels(%y: tensor<256x?xf32>) {
  // expected-error @+1 {{expects static group and channel dimensions}}
  %0 = conv_lower.fold %y layout = nhwc output_size = [16, 16] : tensor<256x?xf32> -> tensor<1x16x16x32xf32>
  return
}

// -----

func.func @fold_rows(%y: tensor<256x32xf32>) {
  // expected-error @+1 {{expects the input M dimension to be N*Ho*Wo = 2*16*16 = 512, got 256}}
  %0 = conv_lower.fold %y layout = nchw output_size = [16, 16] : tensor<256x32xf32> -> tensor<2x32x16x16xf32>
  return
}

// -----

func.func @fold_rows_dynamic(%y: tensor<256x32xf32>) {
  // expected-error @+1 {{expects the input M dimension to be dynamic when the batch is dynamic, got 256}}
  %0 = conv_lower.fold %y layout = nchw output_size = [16, 16] : tensor<256x32xf32> -> tensor<?x32x16x16xf32>
  return
}

// -----

func.func @bad_layout(%x: tensor<1x8x16x16xf32>) {
  // expected-error @below {{expected ::mlir::conv_lower::ImageLayout to be one of: nchw, nhwc}}
  // expected-error @below {{failed to parse ConvLower_LayoutAttr parameter 'value'}}
  %0 = conv_lower.im2col %x layout = nhcw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = chw : tensor<1x8x16x16xf32> -> tensor<196x72xf32>
  return
}

// -----

// 3-D: one rule each on the rank-5 forms.
func.func @im2col_3d_padding_entries(%x: tensor<1x6x6x6x4xf32>) {
  // expected-error @+1 {{expects padding to have 6 entries (the low sides, then the high sides), got [0, 0, 0, 0]}}
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3, 3] strides = [1, 1, 1] dilations = [1, 1, 1] padding = [0, 0, 0, 0] groups = 1 k_order = hwc : tensor<1x6x6x6x4xf32> -> tensor<64x108xf32>
  return
}

// -----

func.func @im2col_3d_kernel_entries(%x: tensor<1x6x6x6x4xf32>) {
  // expected-error @+1 {{expects kernel to have 3 entries, got [3, 3]}}
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3] strides = [1, 1, 1] dilations = [1, 1, 1] padding = [0, 0, 0, 0, 0, 0] groups = 1 k_order = hwc : tensor<1x6x6x6x4xf32> -> tensor<64x108xf32>
  return
}

// -----

func.func @im2col_3d_k(%x: tensor<1x6x6x6x4xf32>) {
  // expected-error @+1 {{expects the result K dimension to be Cg*K_0*...*K_{d-1} = 108, got 36}}
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3, 3] strides = [1, 1, 1] dilations = [1, 1, 1] padding = [0, 0, 0, 0, 0, 0] groups = 1 k_order = hwc : tensor<1x6x6x6x4xf32> -> tensor<64x36xf32>
  return
}

// -----

func.func @im2col_3d_m(%x: tensor<2x4x6x6x6xf32>) {
  // expected-error @+1 {{expects the result M dimension to be N*O_0*...*O_{d-1} = 2*4*2*4 = 64, got 128}}
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3, 3] strides = [1, 2, 1] dilations = [1, 1, 1] padding = [0, 0, 0, 0, 0, 0] groups = 1 k_order = chw : tensor<2x4x6x6x6xf32> -> tensor<128x108xf32>
  return
}

// -----

func.func @im2col_3d_fit(%x: tensor<1x6x6x6x4xf32>) {
  // expected-error @+1 {{expects the dilated kernel to fit the padded input: kernel [3, 3, 3] with dilations [1, 1, 4] on input 6x6x6 padded by [0, 0, 0, 0, 0, 0]}}
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3, 3, 3] strides = [1, 1, 1] dilations = [1, 1, 4] padding = [0, 0, 0, 0, 0, 0] groups = 1 k_order = hwc : tensor<1x6x6x6x4xf32> -> tensor<64x108xf32>
  return
}

// -----

func.func @fold_3d_output_size(%y: tensor<64x8xf32>) {
  // expected-error @+1 {{expects the result spatial size to be output_size [4, 4, 4], got [4, 4, 2]}}
  %0 = conv_lower.fold %y layout = nhwc output_size = [4, 4, 4] : tensor<64x8xf32> -> tensor<2x4x4x2x8xf32>
  return
}

// -----

func.func @fold_3d_m(%y: tensor<32x8xf32>) {
  // expected-error @+1 {{expects the input M dimension to be N*O_0*...*O_{d-1} = 1*4*4*4 = 64, got 32}}
  %0 = conv_lower.fold %y layout = nchw output_size = [4, 4, 4] : tensor<32x8xf32> -> tensor<1x8x4x4x4xf32>
  return
}

// -----

func.func @im2col_1d_k(%x: tensor<2x10x4xf32>) {
  // expected-error @+1 {{expects the result K dimension to be Cg*K_0*...*K_{d-1} = 12, got 4}}
  %0 = conv_lower.im2col %x layout = nhwc kernel = [3] strides = [1] dilations = [1] padding = [0, 0] groups = 1 k_order = hwc : tensor<2x10x4xf32> -> tensor<16x4xf32>
  return
}

// -----

func.func @dot_u8s8_lanes(%c: vector<16xi32>, %a: vector<32xi8>, %b: vector<64xi8>) {
  // expected-error @+1 {{failed to verify that all of {a, b} have same type}}
  %0 = "conv_lower.avx512.dot.u8s8"(%c, %a, %b) : (vector<16xi32>, vector<32xi8>, vector<64xi8>) -> vector<16xi32>
  return
}

// -----

func.func @dot_u8s8_quads(%c: vector<16xi32>, %a: vector<32xi8>) {
  // expected-error @+1 {{failed to verify that `a` has four times as many elements as `acc`}}
  %0 = "conv_lower.avx512.dot.u8s8"(%c, %a, %a) : (vector<16xi32>, vector<32xi8>, vector<32xi8>) -> vector<16xi32>
  return
}
