//===- PassOptions.td - options shared by passes and pipelines -*- tablegen -*-===//
//
// Each option a pass and a named pipeline both take is declared here once
// (name, C++ type, default, description, allowed values): Passes.td and
// ConvLower/Pipelines/Pipelines.td list these records instead of spelling
// the option again, so the two cannot drift apart. No passes here, so that
// both files can include it without generating each other's passes.
//
// Modes are enums with their values listed (llvm::cl::values): a bad value
// is the option parser's error, naming the allowed values, before any pass
// runs. The C++ enums live in ConvLower/Transforms/GPU/ImplicitGemm.h; the chips
// are runtime/'s table (convrt/Arch.h), listed by archOptionValues().
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_PASSOPTIONS_TD
#define CONVLOWER_TRANSFORMS_PASSOPTIONS_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// The implicit-GEMM kernel (conv-lower-implicit-gemm, conv-lower-to-nvvm)
//===----------------------------------------------------------------------===//

def ImplicitGemmTargetOption : Option<"target", "target",
    "::mlir::conv_lower::ImplicitGemmTarget",
    "::mlir::conv_lower::ImplicitGemmTarget::Cuda",
    "Where the kernel runs", [{::llvm::cl::values(
      clEnumValN(::mlir::conv_lower::ImplicitGemmTarget::Cuda, "cuda",
                 "a gpu.func with mma.sync, launched by gpu.launch_func"),
      clEnumValN(::mlir::conv_lower::ImplicitGemmTarget::CpuTwin, "cpu-twin",
                 "the same block body as host loops, mma.sync and ldmatrix "
                 "emulated lane by lane"))}]>;

def ImplicitGemmIm2colOption : Option<"im2col", "im2col",
    "::mlir::conv_lower::Im2colMode",
    "::mlir::conv_lower::Im2colMode::Implicit",
    "How the A operand (the im2col of the input) reaches the GEMM", [{
    ::llvm::cl::values(
      clEnumValN(::mlir::conv_lower::Im2colMode::Implicit, "implicit",
                 "gathered from the image inside the GEMM kernel's loads"),
      clEnumValN(::mlir::conv_lower::Im2colMode::Explicit, "explicit",
                 "a first kernel stores X_col [M, G, K], the GEMM kernel "
                 "reads it (for comparison)"))}]>;

def ImplicitGemmBlockMOption : Option<"blockM", "block-m", "int64_t", "0",
    "CTA tile rows (output pixels); 0: heuristic">;
def ImplicitGemmBlockNOption : Option<"blockN", "block-n", "int64_t", "0",
    "CTA tile columns (filters); 0: heuristic">;
def ImplicitGemmWarpsMOption : Option<"warpsM", "warps-m", "int64_t", "0",
    "Warps along M; 0: heuristic">;
def ImplicitGemmWarpsNOption : Option<"warpsN", "warps-n", "int64_t", "0",
    "Warps along N; 0: heuristic">;
def ImplicitGemmStagesOption : Option<"stages", "stages", "int64_t", "0",
    "Shared-memory pipeline stages (>= 2); 0: heuristic">;

// sm_90a builds the TMA + wgmma family where it applies, every other chip
// the mma.sync family; the pass checks chip and features
// because LLVM's NVPTX backend aborts (instead of reporting an error) on a
// PTX version below the chip's floor.
def ImplicitGemmChipOption : Option<"chip", "chip", "::convrt::Arch",
    "::convrt::Arch::SM80",
    "The GPU architecture the kernels are compiled for",
    "::mlir::conv_lower::archOptionValues()">;
def ImplicitGemmFeaturesOption : Option<"features", "features", "std::string",
    "::convrt::kDefaultPtxFeatures",
    "PTX features, checked to be a PTX version the chip and the kernels' "
    "instructions accept (default +ptx80, which every supported chip "
    "accepts)">;

def ImplicitGemmRequireAllOption : Option<"requireAll", "require-all", "bool",
    "false",
    "Fail (with the reason as the error) on a convolution the kernel cannot "
    "take, instead of leaving it untouched">;

// Everything conv-lower-to-nvvm hands on to conv-lower-implicit-gemm.
defvar ImplicitGemmKernelOptions = [
  ImplicitGemmChipOption,
  ImplicitGemmFeaturesOption,
  ImplicitGemmIm2colOption,
  ImplicitGemmBlockMOption,
  ImplicitGemmBlockNOption,
  ImplicitGemmWarpsMOption,
  ImplicitGemmWarpsNOption,
  ImplicitGemmStagesOption,
  ImplicitGemmRequireAllOption,
];

//===----------------------------------------------------------------------===//
// The CPU GEMM tiles (conv-lower-tile-and-vectorize, conv-lower-to-llvm)
//===----------------------------------------------------------------------===//

def GemmTileMOption : Option<"tileM", "tile-m", "int64_t", "8",
    "Tile size along the innermost M (output pixel) dimension">;
def GemmTileNOption : Option<"tileN", "tile-n", "int64_t", "32",
    "Tile size along the innermost N (filter) dimension">;
// The default is given where the option is listed: the pass has always
// defaulted to 8 and conv-lower-to-llvm to 1, and unifying them would change
// the CPU code; measure (docs/performance-journal.md) before doing so.
class GemmTileKOption<string default> : Option<"tileK", "tile-k", "int64_t",
    default, "Tile size along the innermost K (reduction) dimension">;

#endif // CONVLOWER_TRANSFORMS_PASSOPTIONS_TD
