//===- ConvLowerOps.td - conv_lower ops --------------------*- tablegen -*-===//

#ifndef CONVLOWER_OPS_TD
#define CONVLOWER_OPS_TD

include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

class ConvLower_Op<string mnemonic, list<Trait> traits = []>
    : Op<ConvLower_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// im2col
//===----------------------------------------------------------------------===//

def ConvLower_Im2ColOp : ConvLower_Op<"im2col", [Pure]> {
  let summary = "gathers convolution input patches into GEMM rows";
  let description = [{
    Builds the A operand of the GEMM that computes a 2-D convolution.

    The input `X` is `[N, C, H, W]` (`layout = nchw`) or `[N, H, W, C]`
    (`layout = nhwc`), with `C = G * Cg` for `G = groups`. With kernel size
    `[KH, KW]`, strides `[sh, sw]`, dilations `[dh, dw]` and zero padding
    `[pt, pl, pb, pr]` (top, left, bottom, right):

    ```
    Ho = floor((H + pt + pb - dh * (KH - 1) - 1) / sh) + 1
    Wo = floor((W + pl + pr - dw * (KW - 1) - 1) / sw) + 1
    M  = N * Ho * Wo          m = (n * Ho + oh) * Wo + ow
    K  = Cg * KH * KW         k = (c * KH + kh) * KW + kw   (k_order = chw)
                              k = (kh * KW + kw) * Cg + c   (k_order = hwc)

    result[g, m, k] = X[n, g * Cg + c, oh * sh - pt + kh * dh,
                                       ow * sw - pl + kw * dw]
    ```

    where X reads as 0 outside `[0, H) x [0, W)` (the padding is never
    materialized). The result has type `[G, M, K]`; when `groups = 1` it may
    also be `[M, K]`. `k_order` is chosen to match the filter layout so that
    the filter becomes the GEMM's B operand by a reshape alone: `chw` for
    FCHW filters, `hwc` for HWCF and FHWC filters.

    The batch `N` (and so `M`) may be dynamic; the channel count and spatial
    sizes must be static.

    Example (a 3x3, pad 1 convolution of a 1x8x16x16 NCHW image):

    ```mlir
    %col = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1]
             dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = chw
           : tensor<1x8x16x16xf32> -> tensor<256x72xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$input,
    ConvLower_LayoutAttr:$layout,
    DenseI64ArrayAttr:$kernel_size,
    DenseI64ArrayAttr:$strides,
    DenseI64ArrayAttr:$dilations,
    DenseI64ArrayAttr:$padding,
    I64Attr:$groups,
    ConvLower_KOrderAttr:$k_order
  );
  let results = (outs AnyRankedTensor:$result);

  let assemblyFormat = [{
    $input `layout` `=` `` $layout `kernel` `=` $kernel_size
    `strides` `=` $strides `dilations` `=` $dilations
    `padding` `=` $padding `groups` `=` $groups `k_order` `=` `` $k_order
    attr-dict `:` type($input) `->` type($result)
  }];

  let extraClassDeclaration = [{
    /// The output spatial size [Ho, Wo] given by the convolution formula.
    /// Fails when the kernel does not fit the padded input.
    FailureOr<std::pair<int64_t, int64_t>> getOutputSpatialSize();
    /// C, H, W of the input in its layout.
    int64_t getInputChannels();
    int64_t getInputHeight();
    int64_t getInputWidth();
    /// True when the im2col is a pure reshape of the input: 1x1 kernel,
    /// stride 1, no padding, NHWC, one group.
    bool isReshape();
  }];

  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// fold
//===----------------------------------------------------------------------===//

def ConvLower_FoldOp : ConvLower_Op<"fold", [Pure]> {
  let summary = "scatters GEMM results back into a convolution output image";
  let description = [{
    The inverse data movement of `conv_lower.im2col` on the output side: the
    GEMM result `Ycol` of type `[G, M, Fg]` (or `[M, F]` for one group), with
    `M = N * Ho * Wo` and `F = G * Fg`, becomes the image `Y` of type
    `[N, F, Ho, Wo]` (`layout = nchw`) or `[N, Ho, Wo, F]` (`layout = nhwc`):

    ```
    Y[n, g * Fg + f, oh, ow] = Ycol[g, (n * Ho + oh) * Wo + ow, f]    (nchw)
    Y[n, oh, ow, g * Fg + f] = Ycol[g, (n * Ho + oh) * Wo + ow, f]    (nhwc)
    ```

    `output_size = [Ho, Wo]` states the spatial size; the batch `N` may be
    dynamic, in which case `M` is too. For NHWC with one group the fold is a
    reshape; for NCHW it is a transpose.

    ```mlir
    %y = conv_lower.fold %ycol layout = nchw output_size = [16, 16]
         : tensor<256x32xf32> -> tensor<1x32x16x16xf32>
    ```
  }];

  let arguments = (ins
    AnyRankedTensor:$input,
    ConvLower_LayoutAttr:$layout,
    DenseI64ArrayAttr:$output_size
  );
  let results = (outs AnyRankedTensor:$result);

  let assemblyFormat = [{
    $input `layout` `=` `` $layout `output_size` `=` $output_size
    attr-dict `:` type($input) `->` type($result)
  }];

  let extraClassDeclaration = [{
    /// Number of groups G (1 for a rank-2 input).
    int64_t getGroups();
    /// True when the fold is a pure reshape: NHWC, one group.
    bool isReshape();
  }];

  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

#endif // CONVLOWER_OPS_TD
