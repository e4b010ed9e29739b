//===- ConvLowerOps.td - conv_lower ops --------------------*- tablegen -*-===//

#ifndef CONVLOWER_OPS_TD
#define CONVLOWER_OPS_TD

include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Dialect/X86Vector/X86VectorInterfaces.td"

class ConvLower_Op<string mnemonic, list<Trait> traits = []>
    : Op<ConvLower_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// im2col
//===----------------------------------------------------------------------===//

def ConvLower_Im2ColOp : ConvLower_Op<"im2col", [Pure]> {
  let summary = "gathers convolution input patches into GEMM rows";
  let description = [{
    Builds the A operand of the GEMM that computes a convolution with
    `d = 1, 2 or 3` spatial dimensions.

    The input `X` has rank `d + 2`: `[N, C, S_0, ..., S_(d-1)]` (`layout =
    nchw`, channels first) or `[N, S_0, ..., S_(d-1), C]` (`layout = nhwc`,
    channels last), with `C = G * Cg` for `G = groups` (for d = 2 the S are
    H, W; for d = 3, D, H, W). `kernel`, `strides` and `dilations` have d
    entries; `padding` has 2d, the low side of every dimension first, then
    the high side (for d = 2: top, left, bottom, right). Per dimension i:

    ```
    O_i = floor((S_i + lo_i + hi_i - dil_i * (K_i - 1) - 1) / str_i) + 1
    M   = N * O_0 * ... * O_(d-1)     m = ((n * O_0 + o_0) * O_1 + o_1) ...
    K   = Cg * K_0 * ... * K_(d-1)    k = ((c * K_0 + k_0) * K_1 + k_1) ...
                                          (k_order = chw: channel outermost)
                                      k = (((k_0 * K_1 + k_1) ...) * Cg + c
                                          (k_order = hwc: channel innermost)

    result[g, m, k] = X[n, g * Cg + c, o_i * str_i - lo_i + k_i * dil_i ...]
    ```

    where X reads as 0 outside `[0, S_i)` (the padding is never
    materialized). The result has type `[G, M, K]`; when `groups = 1` it may
    also be `[M, K]`. `k_order` is chosen to match the filter layout so that
    the filter becomes the GEMM's B operand by a reshape alone: `chw` for
    channels-before-kernel filters (FCHW, FCDHW), `hwc` for kernel-before-
    channels ones (HWCF, FHWC, DHWCF).

    The batch `N` (and so `M`) may be dynamic; the channel count and spatial
    sizes must be static.

    Example (a 3x3, pad 1 convolution of a 1x8x16x16 NCHW image):

    ```mlir
    %col = conv_lower.im2col %x layout = nchw kernel = [3, 3] strides = [1, 1]
             dilations = [1, 1] padding = [1, 1, 1, 1] groups = 1 k_order = chw
           : tensor<1x8x16x16xf32> -> tensor<256x72xf32>
    ```

    A 3x3x3 one of a 1x6x6x6x4 NDHWC volume:

    ```mlir
    %col = conv_lower.im2col %x layout = nhwc kernel = [3, 3, 3]
             strides = [1, 1, 1] dilations = [1, 1, 1]
             padding = [0, 0, 0, 0, 0, 0] groups = 1 k_order = hwc
           : tensor<1x6x6x6x4xf32> -> tensor<64x108xf32>
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
    /// The number d of spatial dimensions: the input's rank - 2.
    unsigned getSpatialRank();
    /// The output spatial sizes O_i given by the convolution formula. Fails
    /// when the kernel does not fit the padded input.
    FailureOr<SmallVector<int64_t>> getOutputSpatialSize();
    /// C and the spatial sizes S_i of the input in its layout.
    int64_t getInputChannels();
    SmallVector<int64_t> getInputSpatialSizes();
    /// True when the im2col is a pure reshape of the input: 1x..x1 kernel,
    /// stride 1, no padding, channels last, one group.
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
    `M = N * O_0 * ... * O_(d-1)` and `F = G * Fg`, becomes the image `Y` of
    type `[N, F, O_0, ..., O_(d-1)]` (`layout = nchw`) or
    `[N, O_0, ..., O_(d-1), F]` (`layout = nhwc`); for d = 2:

    ```
    Y[n, g * Fg + f, oh, ow] = Ycol[g, (n * Ho + oh) * Wo + ow, f]    (nchw)
    Y[n, oh, ow, g * Fg + f] = Ycol[g, (n * Ho + oh) * Wo + ow, f]    (nhwc)
    ```

    `output_size = [O_0, ..., O_(d-1)]` (d = 1, 2 or 3 entries) states the
    spatial size; the batch `N` may be dynamic, in which case `M` is too. For
    channels last with one group the fold is a reshape; for channels first
    it is a transpose.

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

//===----------------------------------------------------------------------===//
// avx512.dot.u8s8
//===----------------------------------------------------------------------===//

def ConvLower_DotU8S8Op : ConvLower_Op<"avx512.dot.u8s8", [Pure,
    X86IntrinsicOpInterface,
    AllTypesMatch<["a", "b"]>,
    AllTypesMatch<["acc", "result"]>,
    TypesMatchWith<"`a` has four times as many elements as `acc`",
                   "acc", "a",
                   "VectorType::get({::llvm::cast<VectorType>($_self)"
                   ".getShape()[0] * 4}, "
                   "IntegerType::get($_self.getContext(), 8))">]> {
  let summary = "AVX512-VNNI's unsigned-by-signed byte dot product "
                "(VPDPBUSD)";
  let description = [{
    Each 32-bit lane i of the result is `acc[i]` plus the sum of the four
    products of `a`'s bytes 4i..4i+3, read unsigned, with `b`'s, read
    signed: VPDPBUSD, exact in i32 (wrapping, no saturation). MLIR's
    x86vector dialect has this for signed bytes on both sides only
    (AVX-VNNI-INT8's VPDPBSSD, which Zen 4 and Sapphire Rapids lack); this op
    is the AVX512-VNNI form that conv-lower-x86-dot-product emits for i8
    GEMMs in K quads. Pure, unlike an `llvm.call_intrinsic`, so the tensor
    and buffer passes between it and the LLVM conversion take it; it lowers
    through x86vector's intrinsic interface to
    `llvm.x86.avx512.vpdpbusd.{128,256,512}` (AVX512VL for the narrower
    two).

    ```mlir
    %r = conv_lower.avx512.dot.u8s8 %acc, %a, %b : vector<64xi8> -> vector<16xi32>
    ```
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 16], [I32]>:$acc,
                   VectorOfLengthAndType<[16, 32, 64], [I8]>:$a,
                   VectorOfLengthAndType<[16, 32, 64], [I8]>:$b);
  let results = (outs VectorOfLengthAndType<[4, 8, 16], [I32]>:$result);
  let assemblyFormat =
    "$acc `,` $a `,` $b attr-dict `:` type($a) `->` type($acc)";
  let extraClassDeclaration = [{
    std::string getIntrinsicName() {
      return "llvm.x86.avx512.vpdpbusd." +
             std::to_string(getAcc().getType().getNumElements() * 32);
    }
  }];
}

#endif // CONVLOWER_OPS_TD
