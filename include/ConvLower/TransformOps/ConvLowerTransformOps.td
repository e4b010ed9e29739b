//===- ConvLowerTransformOps.td - transform ops of ConvLower -*- tablegen -*-===//
//
// The two rewrites as transform-dialect ops, so that transform scripts
// compose them with upstream's (match, tile, fuse, ...) as they do with
// `transform.structured.convert_conv2d_to_img2col`.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMOPS_TD
#define CONVLOWER_TRANSFORMOPS_TD

include "mlir/Dialect/Transform/IR/TransformDialect.td"
include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

def ConvLowerIm2ColTransformOp : Op<Transform_Dialect, "conv_lower.im2col",
    [DeclareOpInterfaceMethods<TransformOpInterface>,
     FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
     ReportTrackingListenerFailuresOpTrait]> {
  let summary = "rewrites convolutions into conv_lower.im2col + GEMM + fold";
  let description = [{
    Applies `--conv-lower-im2col`'s rewrite to each payload op of `target`:
    every form that pass takes (the 2-D named convolutions, their quantized
    `_q` ops and conv-shaped `linalg.generic`s; 1-D and batchless ones after
    `--conv-lower-lift-to-2d`). The target handle is consumed.

    Returns three handles, each listing the payload ops in target order:
    - `im2col`: the `conv_lower.im2col` ops (none for a 1x1, stride-1,
      unpadded convolution, whose GEMM reads the image itself);
    - `gemm`: the contractions (`linalg.matmul`, `linalg.batch_matmul` or a
      `linalg.generic`), one per convolution, for tiling or vectorizing;
    - `transformed`: the ops whose results replaced the convolutions.

    #### Return modes

    A payload op that is not a convolution the rewrite takes is left
    unchanged and produces a silenceable failure naming why (the pass's
    remark); the other payload ops are still rewritten.

    ```mlir
    %im2col, %gemm, %y = transform.conv_lower.im2col %conv
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    ```
  }];

  let arguments = (ins TransformHandleTypeInterface:$target);
  let results = (outs TransformHandleTypeInterface:$im2col,
                      TransformHandleTypeInterface:$gemm,
                      TransformHandleTypeInterface:$transformed);
  let assemblyFormat =
      "$target attr-dict `:` functional-type(operands, results)";
  let cppNamespace = "::mlir::conv_lower";
}

def ConvLowerImplicitGemmTransformOp
    : Op<Transform_Dialect, "conv_lower.implicit_gemm",
    [DeclareOpInterfaceMethods<TransformOpInterface>,
     FunctionalStyleTransformOpTrait, MemoryEffectsOpInterface,
     ReportTrackingListenerFailuresOpTrait]> {
  let summary = "rewrites convolutions into implicit-GEMM kernels";
  let description = [{
    Applies `--conv-lower-implicit-gemm`'s rewrite to each payload op of
    `target`: an implicit-GEMM `gpu.func` (cp.async, ldmatrix, mma.sync) and
    its `gpu.launch_func` (`backend = "cuda"`, the default) or the same block
    body as host loops (`backend = "cpu-twin"`). A per-channel bias add and a
    ReLU that only the convolution feeds are fused into the epilogue. The
    target handle is consumed.

    Attributes, as the pass's options: `im2col` (`"implicit"`, the default,
    or `"explicit"`: a first kernel stores X_col), `chip` (`"sm_80"` ...
    `"sm_90a"`: checked against the default PTX features), and `block_m`,
    `block_n`, `warps_m`, `warps_n`, `stages` (0, the default, leaves a value
    to the per-problem heuristic).

    Returns three handles, each listing the payload ops in target order:
    - `kernel`: the GEMM `gpu.func`s (cuda) or the twins' outermost grid
      loops (cpu-twin);
    - `launch`: the `gpu.launch_func`s (cuda; empty for cpu-twin);
    - `transformed`: the ops whose results replaced the convolutions (or the
      last fused op).

    #### Return modes

    A payload op the kernel cannot take (types, dynamic shapes, a
    non-constant init, a quantized op, ...) is left unchanged and produces a
    silenceable failure naming why; tiles that cannot be built for a
    convolution, an unknown backend, im2col mode or chip, are definite
    failures (the script is wrong, not the payload).

    ```mlir
    %kernel, %launch, %y = transform.conv_lower.implicit_gemm %conv
        {backend = "cpu-twin", block_m = 64, stages = 2}
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    ```
  }];

  let arguments = (ins TransformHandleTypeInterface:$target,
                       DefaultValuedStrAttr<StrAttr, "cuda">:$backend,
                       DefaultValuedStrAttr<StrAttr, "implicit">:$im2col,
                       DefaultValuedStrAttr<StrAttr, "sm_80">:$chip,
                       DefaultValuedAttr<I64Attr, "0">:$block_m,
                       DefaultValuedAttr<I64Attr, "0">:$block_n,
                       DefaultValuedAttr<I64Attr, "0">:$warps_m,
                       DefaultValuedAttr<I64Attr, "0">:$warps_n,
                       DefaultValuedAttr<I64Attr, "0">:$stages);
  let results = (outs TransformHandleTypeInterface:$kernel,
                      TransformHandleTypeInterface:$launch,
                      TransformHandleTypeInterface:$transformed);
  let assemblyFormat =
      "$target attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let cppNamespace = "::mlir::conv_lower";
}

#endif // CONVLOWER_TRANSFORMOPS_TD
