//===- ConvLowerDialect.td - conv_lower dialect ------------*- tablegen -*-===//

#ifndef CONVLOWER_DIALECT_TD
#define CONVLOWER_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def ConvLower_Dialect : Dialect {
  let name = "conv_lower";
  let cppNamespace = "::mlir::conv_lower";
  let summary = "Convolution lowering through im2col + GEMM + fold";
  let description = [{
    The `conv_lower` dialect holds the two data-movement halves of a
    convolution lowered to a GEMM: `conv_lower.im2col` gathers input patches
    into the GEMM's A operand, and `conv_lower.fold` scatters the GEMM result
    back into the output image layout. Between them sits an ordinary linalg
    contraction. Both ops work on ranked tensors.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::tensor::TensorDialect"];

  // The launch the implicit-GEMM pass records on each kernel (gpu.func) it
  // builds: written by the pass, read by conv-run (which launches the cubin
  // itself) and by readers of the IR. Declared here so that writer and
  // readers share one name and one type: ConvLowerDialect::GridAttrHelper
  // etc. (constructible from an MLIRContext, no loaded dialect needed).
  //  - grid:  [x, y, z] blocks (pixel tiles, filter tiles, groups);
  //  - block: [x, y, z] threads per block;
  //  - tiles: #conv_lower.tiles<family = ..., ...>, the kernel family and
  //    its tile configuration (KernelTilesAttr below, verified per family);
  // The sm_90a kernels add:
  //  - shared_memory: dynamic shared memory bytes per block (the launch's);
  //  - tensor_maps: one #conv_lower.tensor_map<...> per TMA tensor map the
  //    kernel takes by value after its memref arguments (TensorMapAttr
  //    below: convrt::TensorMapSpec's fields), which the runtime encodes
  //    for the caller's buffers.
  // The CPU's conv-lower-winograd and conv-lower-grouped-direct mark the
  // scf.forall of each convolution they rewrite (conv-run's report counts
  // them to name the route):
  //  - winograd, grouped_direct: unit attributes.
  // Constant weights (conv-lower-hoist-constant-weights):
  //  - constant: a unit attribute on a function's memref argument whose
  //    values are the same on every call (inference weights);
  //  - packed: on the function and its @<name>_pack, the types of the
  //    trailing memref arguments that hold what was computed from them once.
  let discardableAttrs = (ins
    "::mlir::DenseI64ArrayAttr":$grid,
    "::mlir::DenseI64ArrayAttr":$block,
    "::mlir::conv_lower::KernelTilesAttr":$tiles,
    "::mlir::IntegerAttr":$shared_memory,
    "::mlir::ArrayAttr":$tensor_maps,
    "::mlir::UnitAttr":$winograd,
    "::mlir::UnitAttr":$grouped_direct,
    "::mlir::UnitAttr":$constant,
    "::mlir::ArrayAttr":$packed
  );
  // Checks the shapes above wherever the attributes appear.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def ConvLower_Layout : I32EnumAttr<"ImageLayout",
    "memory layout of an image tensor", [
      I32EnumAttrCase<"nchw", 0>,
      I32EnumAttrCase<"nhwc", 1>,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::conv_lower";
}

def ConvLower_LayoutAttr : EnumAttr<ConvLower_Dialect, ConvLower_Layout,
                                    "layout"> {
  let assemblyFormat = "$value";
}

def ConvLower_KOrder : I32EnumAttr<"KOrder",
    "order of the (c, kh, kw) reduction index inside an im2col row", [
      I32EnumAttrCase<"chw", 0>,
      I32EnumAttrCase<"hwc", 1>,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::conv_lower";
}

def ConvLower_KOrderAttr : EnumAttr<ConvLower_Dialect, ConvLower_KOrder,
                                    "k_order"> {
  let assemblyFormat = "$value";
}

//===----------------------------------------------------------------------===//
// Kernel attributes: the tiles and the TMA tensor maps of a GPU kernel
//===----------------------------------------------------------------------===//

def ConvLower_KernelFamily : I32EnumAttr<"KernelFamily",
    "the implicit-GEMM kernel family a gpu.func belongs to", [
      // sm_80 and later: cp.async + ldmatrix + mma.sync, warps over the tile.
      I32EnumAttrCase<"mma_sync", 0>,
      // sm_90a: a TMA (or gathering) producer warpgroup, wgmma consumers.
      I32EnumAttrCase<"sm90a_tma_wgmma", 1>,
      // Depthwise: CUDA cores, one output pixel's channels per thread.
      I32EnumAttrCase<"direct_depthwise", 2>,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::conv_lower";
}

def ConvLower_TensorMapMode : I32EnumAttr<"TensorMapMode",
    "how a TMA tensor map addresses its tensor", [
      I32EnumAttrCase<"tiled", 0>,
      I32EnumAttrCase<"im2col", 1>,
    ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::conv_lower";
}

// Integer lists printed and parsed in brackets ([64, 32, 32]): a bare
// ArrayRef parameter prints its elements comma-separated, which a struct of
// parameters cannot parse back.
class ConvLower_I64List<string desc = "">
    : ArrayRefParameter<"int64_t", desc> {
  let parser = [{ ::mlir::conv_lower::parseI64List($_parser) }];
  let printer = [{ ::mlir::conv_lower::printI64List($_printer, $_self) }];
}
class ConvLower_OptionalI64List<string desc = "">
    : ConvLower_I64List<desc> {
  let defaultValue = cppStorageType # "()";
  let comparator = cppType # "($_lhs) == " # cppType # "($_rhs)";
}

class ConvLower_Attr<string name, string attrMnemonic>
    : AttrDef<ConvLower_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def ConvLower_KernelTilesAttr : ConvLower_Attr<"KernelTiles", "tiles"> {
  let summary = "a GPU kernel's family and tile configuration";
  let description = [{
    What the implicit-GEMM pass built, recorded on the kernel for readers of
    the IR and for conv-run's reports (as IREE records a lowering config).
    Which parameters a family takes, all checked by the verifier:

    - `mma_sync`: `block` = [M, N, K] (elements), `warps` = [M, N]
      dividing the block, `stages` >= 2 (the shared-memory ring),
      `a_vectorized` / `b_vectorized` (16-byte cp.async copies, else an
      element gather), and where built `store_vector` (the staged
      epilogue's elements per store) and `a_pixel_run` (pixels per run of
      the M-major A gather);
    - `sm90a_tma_wgmma`: `block`, `warpgroups` = [producers, consumers],
      `stages` >= 2, `store_vector`, `a_gathered` (the producer gathers the
      A tiles TMA cannot load);
    - `direct_depthwise`: `channels_per_thread` only.

    ```mlir
    conv_lower.tiles = #conv_lower.tiles<family = mma_sync,
        block = [64, 32, 32], warps = [1, 2], stages = 2,
        a_vectorized = true, b_vectorized = true, store_vector = 4>
    ```
  }];
  let parameters = (ins
    EnumParameter<ConvLower_KernelFamily>:$family,
    ConvLower_OptionalI64List<>:$block,
    ConvLower_OptionalI64List<>:$warps,
    ConvLower_OptionalI64List<>:$warpgroups,
    OptionalParameter<"std::optional<int64_t>">:$stages,
    OptionalParameter<"::mlir::BoolAttr">:$a_vectorized,
    OptionalParameter<"::mlir::BoolAttr">:$b_vectorized,
    OptionalParameter<"std::optional<int64_t>">:$store_vector,
    OptionalParameter<"std::optional<int64_t>">:$a_pixel_run,
    OptionalParameter<"::mlir::BoolAttr">:$a_gathered,
    OptionalParameter<"std::optional<int64_t>">:$channels_per_thread
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def ConvLower_TensorMapAttr : ConvLower_Attr<"TensorMap", "tensor_map"> {
  let summary = "one TMA tensor map a kernel takes by value";
  let description = [{
    convrt::TensorMapSpec's fields (the bundle manifest's JSON names), which
    the runtime encodes into a CUtensorMap for the caller's buffer of
    `argument`. Sizes are innermost first. The verifier checks the ranks the
    driver requires: 1 to 5 dimensions (im2col: 3 to 5), `strides_bytes`
    for all but the innermost, `element_strides` for each, `box` for each
    (im2col: [channels per pixel, pixels per column]), the im2col corners
    (rank - 2 each, im2col only), a buffer element type and a swizzle.
  }];
  let parameters = (ins
    StringRefParameter<"free-form, for messages">:$name,
    StringRefParameter<"the manifest argument it maps">:$argument,
    EnumParameter<ConvLower_TensorMapMode>:$mode,
    StringRefParameter<"f16, bf16, f32, i8 or i32">:$dtype,
    ConvLower_I64List<>:$dims,
    ConvLower_I64List<>:$strides_bytes,
    ConvLower_I64List<>:$box,
    ConvLower_I64List<>:$element_strides,
    ConvLower_OptionalI64List<>:$lower_corner,
    ConvLower_OptionalI64List<>:$upper_corner,
    StringRefParameter<"none, 32B, 64B or 128B">:$swizzle
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // CONVLOWER_DIALECT_TD
