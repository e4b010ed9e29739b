//===- Pipelines.td - ConvLower named pipelines -------------*- tablegen -*-===//
//
// The named pipelines, declared as passes that run their pipeline.
//
// Why passes: MLIR 22 declares a pipeline's options only in C++
// (PassPipelineOptions), and a pass's options only in TableGen; a pipeline
// that hands ten options on to a pass would spell each one twice (name,
// type, default, description), and the two copies drift. Declared here, the
// pipelines list the same option records as the passes (PassOptions.td), and
// the generated ConvLowerToLLVMOptions / ConvLowerToNVVMOptions structs are
// what C++ callers fill in. Each pass builds its pipeline from its options
// with buildConvLowerTo*Pipeline (Pipelines.h) and runs it on the module as a
// dynamic pipeline, so `--conv-lower-to-nvvm="chip=sm_90 format=isa"` and
// `builtin.module(conv-lower-to-llvm{threads=2})` work as before, and IR
// printing, timing and crash reproducers see the individual passes.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_PIPELINES_PIPELINES_TD
#define CONVLOWER_PIPELINES_PIPELINES_TD

include "mlir/Pass/PassBase.td"
include "ConvLower/Transforms/PassOptions.td"

def ConvLowerToLLVM : Pass<"conv-lower-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Lower a linalg-on-tensors module (convolutions included) to "
                "the LLVM dialect for the CPU: im2col rewrite, tiled and "
                "vectorized GEMMs, bufferization, LLVM conversion";
  let description = [{
    Runs the CPU pipeline: the im2col rewrite (or, with `implicit-gemm-twin`,
    the GPU kernel's CPU twin), decomposition, B packing, tiling and
    vectorization of the contractions, one-shot bufferization with the
    deallocation pipeline, and conversion of every dialect to LLVM. The
    result runs under mlir-runner or the ExecutionEngine.
  }];
  let options = [
    GemmTileMOption,
    GemmTileNOption,
    GemmTileKOption<"1">,
    Option<"threads", "threads", "int64_t", "1",
           "Worker threads (OpenMP): above 1, the GEMMs run as parallel "
           "blocks of rows; the code then needs libomp at run time">,
    Option<"im2col", "im2col", "bool", "true",
           "Run the im2col rewrite first (off: lower convs as-is)">,
    Option<"depthwiseDirect", "depthwise-direct", "bool", "true",
           "With im2col: depthwise convolutions computed directly on "
           "vectors (conv-lower-depthwise-direct) instead of a K = 9 GEMM">,
    Option<"groupedDirect", "grouped-direct", "bool", "true",
           "With im2col: grouped f32 convolutions with fewer filters a group "
           "than tile-n computed directly on vectors of a group's filters "
           "(conv-lower-grouped-direct) instead of per-group GEMMs">,
    Option<"winograd", "winograd", "bool", "true",
           "With im2col: 3x3 stride-1 f32 convolutions with enough output "
           "tiles computed by Winograd F(4x4, 3x3) (conv-lower-winograd; "
           "its min-tiles cost rule decides) instead of a GEMM">,
    Option<"winogradMinTiles", "winograd-min-tiles", "int64_t", "32",
           "With winograd: the fewest 4x4 output tiles for which it is "
           "chosen (0: every convolution it can take)">,
    Option<"nchwToNhwc", "nchw-to-nhwc", "bool", "true",
           "With im2col and constant-weights: NCHW convolutions with kernels "
           "larger than 1x1 computed on the image transposed to channels "
           "last, their output transposed back (conv-lower-nchw-to-nhwc)">,
    Option<"im2colPanels", "im2col-panels", "bool", "true",
           "With im2col: compute X_col per block of output rows inside the "
           "GEMM's parallel loop (conv-lower-im2col-panels; off: X_col is "
           "materialized whole before the GEMM)">,
    Option<"filterPanels", "filter-panels", "bool", "true",
           "Lay the transposed filter out as contiguous [K, tile-n] column "
           "panels for the GEMMs that read it (conv-lower-pack-filter-panels; "
           "off: they read W^T [K, F] rows)">,
    Option<"constantWeights", "constant-weights", "bool", "false",
           "Pack constant weights once: calls are inlined, and what a "
           "function computes from its arguments marked conv_lower.constant "
           "alone (the transposed filter, Winograd's U) moves into a "
           "@<name>_pack function that writes it into new trailing "
           "arguments (conv-lower-hoist-constant-weights)">,
    Option<"bf16Dot", "bf16-dot", "bool", "false",
           "bf16 GEMMs on AVX512-BF16's dot product (VDPBF16PS): K in "
           "pairs (conv-lower-pack-vnni), the register tiles as "
           "x86vector.avx512.dot (conv-lower-x86-dot-product). The code "
           "then needs a CPU with AVX512-BF16: conv-run and the C API set "
           "it from the host's features">,
    Option<"amx", "amx", "bool", "false",
           "With bf16-dot or i8-dot: those GEMMs' register tiles on AMX "
           "tiles (conv-lower-amx-tiles, after bufferization) instead of "
           "the dots, in 32 x 32 register tiles over 64 bytes of K: bf16 "
           "pairs on TDPBF16PS, i8 quads on TDPBSSD (A kept signed: no "
           "flip, no column sums). The code then needs a CPU with AMX-TILE, "
           "AMX-BF16 and AMX-INT8 and the process's XTILEDATA permission: "
           "conv-run and the C API set it from the host's features after "
           "requesting that permission">,
    Option<"amxEmulated", "amx-emulated", "bool", "false",
           "With amx: each tile operation emulated in vector code "
           "(conv-lower-emulate-amx), so the AMX route's tile program runs, "
           "and is checked, on any CPU">,
    Option<"i8Dot", "i8-dot", "bool", "false",
           "i8 GEMMs on AVX512-VNNI's dot product (VPDPBUSD): K in quads, "
           "A's bytes made unsigned and B's column sums taken back out "
           "(conv-lower-pack-vnni), the register tiles as "
           "llvm.x86.avx512.vpdpbusd (conv-lower-x86-dot-product). The code "
           "then needs a CPU with AVX512-VNNI: conv-run and the C API set it "
           "from the host's features">,
    Option<"implicitGemmTwin", "implicit-gemm-twin", "bool", "false",
           "Instead of the im2col rewrite, run every convolution as the CPU "
           "twin of the GPU implicit-GEMM kernel (fails on a convolution the "
           "kernel cannot take)">,
    Option<"twinExplicitIm2col", "twin-explicit-im2col", "bool", "false",
           "With implicit-gemm-twin: the explicit mode (X_col stored first, "
           "then the GEMM reads it)">,
    Option<"twinChip", "twin-chip", "::convrt::Arch", "::convrt::Arch::SM80",
           "With implicit-gemm-twin: the chip whose kernel the twin runs "
           "(sm_90a: the TMA + wgmma family where it applies)",
           "::mlir::conv_lower::archOptionValues()">,
  ];
}

def ConvLowerToNVVM : Pass<"conv-lower-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "Lower linalg-on-tensors convolutions to implicit-GEMM "
                "tensor-core kernels (cp.async, ldmatrix, mma.sync) in a "
                "gpu.binary for the chip, with LLVM host code that launches "
                "them";
  let description = [{
    Runs the GPU pipeline: conv-lower-implicit-gemm (target=cuda, with this
    pipeline's kernel options), bufferization, the kernels to NVVM with
    bare-pointer arguments, the NVVM target (-O3) attached, the gpu.module
    serialized by gpu-module-to-binary, and the host code to LLVM.
  }];
  let options = !listconcat(ImplicitGemmKernelOptions, [
    Option<"format", "format", "::mlir::gpu::CompilationTarget",
           "::mlir::gpu::CompilationTarget::Binary",
           "What the gpu.binary holds", [{::llvm::cl::values(
             clEnumValN(::mlir::gpu::CompilationTarget::Assembly, "isa",
                        "PTX text"),
             clEnumValN(::mlir::gpu::CompilationTarget::Binary, "bin",
                        "a cubin, assembled by ptxas"),
             clEnumValN(::mlir::gpu::CompilationTarget::Fatbin, "fatbin",
                        "a fatbin (cubin and PTX)"))}]>,
    Option<"toolkit", "toolkit", "std::string", [{""}],
           "CUDA toolkit holding bin/ptxas (default: $CUDA_HOME, $CUDA_PATH "
           "or /usr/local/cuda, where ptxas exists)">,
    Option<"gridConstantTensorMaps", "grid-constant-tensor-maps", "bool",
           "false",
           "sm_90a kernels take their TMA tensor maps by value "
           "(__grid_constant__), as the runtime's bundles launch them; off: "
           "as pointers to device copies, which this pipeline's host code "
           "makes (mgpuConvLowerEncodeTensorMap)">,
  ]);
}

#endif // CONVLOWER_PIPELINES_PIPELINES_TD
