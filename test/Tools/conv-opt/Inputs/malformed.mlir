// Not valid IR: the im2col is missing its result type.
func.func @f(%x: tensor<1x8x16x16xf32>) {
  %0 = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = chw
  return
}
