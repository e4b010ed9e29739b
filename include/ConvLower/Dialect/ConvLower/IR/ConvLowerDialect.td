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
  //  - tiles: {block = [M, N, K], warps = [M, N], stages, a_vectorized,
  //           b_vectorized}, the tile configuration, for people and reports.
  // The sm_90a kernels add:
  //  - shared_memory: dynamic shared memory bytes per block (the launch's);
  //  - tensor_maps: one dictionary per TMA tensor map the kernel takes by
  //    value after its memref arguments (convrt::TensorMapSpec's fields:
  //    name, argument, mode, dtype, dims, strides_bytes, box,
  //    element_strides[, lower_corner, upper_corner], swizzle), which the
  //    runtime encodes for the caller's buffers.
  // The CPU's conv-lower-winograd marks the scf.forall of each convolution it
  // rewrites (conv-run's report counts them to name the route):
  //  - winograd: a unit attribute.
  let discardableAttrs = (ins
    "::mlir::DenseI64ArrayAttr":$grid,
    "::mlir::DenseI64ArrayAttr":$block,
    "::mlir::DictionaryAttr":$tiles,
    "::mlir::IntegerAttr":$shared_memory,
    "::mlir::ArrayAttr":$tensor_maps,
    "::mlir::UnitAttr":$winograd
  );
  // Checks the shapes above wherever the attributes appear.
  let hasOperationAttrVerify = 1;
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

#endif // CONVLOWER_DIALECT_TD
