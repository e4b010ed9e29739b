//===- Common/Passes.td - ConvLower Common passes ---*- tablegen -*-===//
//
// The target-independent passes: analysis-driven rewrites of
// every linalg convolution (lift, im2col, decompose) and the bufferization
// fix-up both pipelines share.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_COMMON_PASSES_TD
#define CONVLOWER_TRANSFORMS_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvLowerIm2Col : Pass<"conv-lower-im2col"> {
  let summary = "Rewrite linalg convolutions into im2col + matmul + fold";
  let description = [{
    Rewrites every supported linalg convolution (2-D and 3-D named NCHW/NHWC,
    grouped and depthwise forms, and convolution-shaped linalg.generic ops)
    into
    `conv_lower.im2col`, a linalg contraction and `conv_lower.fold`.

    - A zero `tensor.pad` producing the input is absorbed into the im2col's
      padding; the padded image is never materialized.
    - The filter becomes the GEMM's B operand by a reshape only: the im2col's
      K order follows the filter layout.
    - A 1x1, stride-1, unpadded convolution needs no im2col: the input is
      reshaped (NHWC) or transposed (NCHW) into the A operand.
    - Convolutions it cannot handle are left untouched; with
      `emit-remarks` a remark on each says why. The pass never fails on
      valid IR.
  }];
  let dependentDialects = [
    "::mlir::conv_lower::ConvLowerDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
  ];
  let options = [
    Option<"emitRemarks", "emit-remarks", "bool", /*default=*/"false",
           "Emit a remark on every convolution left untouched, saying why">,
  ];
}

def ConvLowerLiftTo2D : Pass<"conv-lower-lift-to-2d"> {
  let summary = "Rewrite 1-D and batchless convolutions as 2-D (or 3-D) "
                "convolutions with unit dimensions";
  let description = [{
    Frontends emit `linalg.conv_1d_nwc_wcf` / `conv_1d_ncw_fcw` (torch's
    conv1d), `depthwise_conv_1d_nwc_wc` / `_ncw_cw` / `_nwc_wcm`, and the
    batchless, channel-less `linalg.conv_1d`, `linalg.conv_2d` and
    `linalg.conv_3d`; IREE, once it has dropped a unit batch, writes a
    channels-last convolution as a batchless `linalg.generic` ((h, w, c)
    image, HWCF or FHWC filter, (oh, ow, f) output; or depthwise (h, w, c)
    with an HWC filter). Each is the convolution of the matching form
    (`conv_2d_nhwc_hwcf`, `conv_2d_nchw_fchw`, `depthwise_conv_2d_*`,
    `conv_3d_ndhwc_dhwcf`) with a height, batch or channel of one: this pass
    writes it so, with `tensor.expand_shape` of
    the operands and a `tensor.collapse_shape` of the result, so that the
    im2col rewrite and the implicit-GEMM kernel take it like any 2-D
    convolution. A zero `tensor.pad` of the input is carried through the
    reshape (the 2-D rewrites absorb it). The reshapes add or drop unit
    dimensions only: no data moves.

    Runs first in both ConvLower pipelines, and `--conv-lower-implicit-gemm`
    applies it itself; run it before `--conv-lower-im2col` on its own.
    Everything else is left untouched.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ConvLowerDecompose : Pass<"conv-lower-decompose"> {
  let summary = "Lower conv_lower.im2col and conv_lower.fold to linalg/tensor";
  let description = [{
    Expresses `conv_lower.im2col` as a zero `tensor.pad` plus a copy-like
    `linalg.generic` with affine (strided, dilated) indexing, reshaped to
    `[G, M, K]`, and `conv_lower.fold` as a reshape plus `linalg.transpose`.
    After it, any linalg backend (including upstream's loop lowering) can run
    the module.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect",
  ];
}

def ConvLowerFillEmptyPads : Pass<"conv-lower-fill-empty-pads"> {
  let summary = "Rewrite a tensor.pad of an empty tensor into a fill";
  let description = [{
    A `tensor.pad` whose source has a dimension of size 0 produces nothing
    but its padding value. MLIR 22's bufferization copies the (empty) source
    into a subview of the result at the low padding's offset, and
    `memref.subview` rejects that offset on a dimension of size 0 ("offset 2
    is out-of-bounds: 0 >= 0") even for an empty view, so the module stops
    compiling. This pass replaces such a pad with a `linalg.fill` of its
    padding value (when it is one value) into a `tensor.empty` of the pad's
    result size. Both ConvLower pipelines run it before bufferization; frontends
    emit such pads for degenerate convolutions (no channels, an empty image).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // CONVLOWER_TRANSFORMS_COMMON_PASSES_TD
