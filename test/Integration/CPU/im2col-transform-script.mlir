// The transform script of conv_harness's "transform" route: every linalg
// convolution (named, quantized or generic) through
// transform.conv_lower.im2col. A linalg.generic that is not a convolution (the
// harness's own widening to f32) is a silenceable failure, suppressed; the
// route checks separately that no convolution is left.
// RUN: conv-opt %s -o /dev/null
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %convs = transform.structured.match ops{[
        "linalg.conv_2d_nchw_fchw", "linalg.conv_2d_nhwc_hwcf",
        "linalg.conv_2d_nhwc_fhwc", "linalg.conv_2d_ngchw_fgchw",
        "linalg.conv_2d_ngchw_gfchw", "linalg.conv_2d_nhwgc_gfhwc",
        "linalg.depthwise_conv_2d_nchw_chw", "linalg.depthwise_conv_2d_nhwc_hwc",
        "linalg.depthwise_conv_2d_nhwc_hwcm",
        "linalg.conv_2d_nchw_fchw_q", "linalg.conv_2d_nhwc_hwcf_q",
        "linalg.conv_2d_nhwc_fhwc_q", "linalg.conv_2d_ngchw_gfchw_q",
        "linalg.conv_2d_nhwgc_gfhwc_q", "linalg.depthwise_conv_2d_nhwc_hwc_q",
        "linalg.depthwise_conv_2d_nhwc_hwcm_q",
        "linalg.conv_3d_ndhwc_dhwcf", "linalg.conv_3d_ncdhw_fcdhw",
        "linalg.depthwise_conv_3d_ndhwc_dhwc", "linalg.depthwise_conv_3d_ncdhw_cdhw",
        "linalg.depthwise_conv_3d_ndhwc_dhwcm", "linalg.conv_3d_ndhwc_dhwcf_q",
        "linalg.generic"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %convs : !transform.any_op {
    ^bb0(%conv: !transform.any_op):
      transform.sequence %conv : !transform.any_op failures(suppress) {
      ^bb1(%one: !transform.any_op):
        %col, %gemm, %y = transform.conv_lower.im2col %one
            : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
      }
    }
    transform.yield
  }
}
