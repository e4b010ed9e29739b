//===- ImplicitGemm.h - the implicit-GEMM rewrite as a C++ API --*- C++ -*-===//
//
// The rewrite behind `--conv-lower-implicit-gemm`, callable on one
// convolution, as upstream offers linalg::rewriteInIm2Col next to its pass:
// a frontend, a transform op or a pattern can turn the convolutions it picks
// into implicit-GEMM kernels (or their CPU twin) without running the pass.
//
// Also the option vocabulary the pass and the GPU pipeline share (targets,
// im2col modes, chips), so their TableGen options have C++ types to name.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_TRANSFORMS_IMPLICITGEMM_H
#define CONVLOWER_TRANSFORMS_IMPLICITGEMM_H

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Transforms/EnumOptionParser.h"
#include "convrt/Arch.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/CommandLine.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <string>
#include <vector>

namespace mlir::conv_lower {

//===----------------------------------------------------------------------===//
// Option vocabulary
//===----------------------------------------------------------------------===//

/// Where the kernel runs.
enum class ImplicitGemmTarget {
  /// A gpu.func (cp.async, ldmatrix, mma.sync) and a gpu.launch_func.
  Cuda,
  /// The same block body as host loops, ldmatrix and mma.sync emulated lane
  /// by lane: the kernel's indexing, runnable and checkable on any CPU.
  CpuTwin,
};

/// How the A operand (the im2col of the input) reaches the GEMM.
enum class Im2colMode {
  /// Gathered from the image inside the GEMM kernel's A loads.
  Implicit,
  /// A first kernel stores X_col [M, G, K]; the GEMM kernel reads it (for
  /// comparison, and to show what the im2col costs).
  Explicit,
};

/// Why a check refused, in the words its callers print (a diagnostic, a
/// remark, a report field). The checks return failure and fill one in.
struct Refusal {
  std::string reason;
};

/// The chips the kernels target are convrt's table (runtime/include/
/// convrt/Arch.h), shared with the runtime; these read it.
bool isSupportedChip(llvm::StringRef chip);
/// Whether `features` (e.g. "+ptx80") can compile the kernels for `chip`;
/// failure says why in `why`: LLVM aborts on a PTX version below the chip's
/// minimum.
LogicalResult checkPtxFeatures(convrt::Arch chip, llvm::StringRef features,
                               Refusal &why);
/// As above for a chip by name (an unknown name is the reason).
LogicalResult checkPtxFeatures(llvm::StringRef chip, llvm::StringRef features,
                               Refusal &why);

/// The `chip` option's values, one per row of convrt's table, so that a new
/// architecture is added in Arch.h alone. Used like llvm::cl::values(...) in
/// the options of Passes.td and Pipelines.td.
struct ArchOptionValues {
  template <typename Opt>
  void apply(Opt &option) const {
    for (const convrt::ArchInfo &info : convrt::kArchs)
      option.getParser().addLiteralOption(info.name, info.arch,
                                          describe(info.arch));
  }
  /// "compute capability 9.0, PTX >= 8.0 (this CC only)", kept alive for cl.
  /// Inline: the CPU pipeline's twin-chip option names the chips too, and
  /// links no GPU library.
  static llvm::StringRef describe(convrt::Arch arch) {
    // cl keeps StringRefs: the texts live as long as the program.
    static const std::vector<std::string> texts = [] {
      std::vector<std::string> all;
      for (const convrt::ArchInfo &info : convrt::kArchs)
        all.push_back(("compute capability " + llvm::Twine(info.ccMajor) +
                       "." + llvm::Twine(info.ccMinor) +
                       (info.archSpecific ? " only" : "") + ", PTX >= " +
                       llvm::Twine(info.minPtxVersion / 10) + "." +
                       llvm::Twine(info.minPtxVersion % 10))
                          .str());
      return all;
    }();
    for (auto [info, text] : llvm::zip(convrt::kArchs, texts))
      if (info.arch == arch)
        return text;
    return "";
  }
};
inline ArchOptionValues archOptionValues() { return {}; }

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

/// CTA tile overrides; 0 leaves a value to the per-problem heuristic.
struct ImplicitGemmTiles {
  int64_t blockM = 0, blockN = 0, warpsM = 0, warpsN = 0, stages = 0;
};

struct ImplicitGemmOptions {
  ImplicitGemmTarget target = ImplicitGemmTarget::Cuda;
  Im2colMode im2col = Im2colMode::Implicit;
  ImplicitGemmTiles tiles;
  /// The architecture the kernels will be compiled for and its PTX features:
  /// checked, because LLVM's NVPTX backend aborts on a PTX version below the
  /// chip's floor. The kernel is the same for every supported chip but for
  /// the tf32 rounding instruction (cvt.rn from sm_90 on, else cvt.rna).
  convrt::Arch chip = convrt::Arch::SM80;
  std::string features = convrt::kDefaultPtxFeatures;
};

/// Why rewriteToImplicitGemm left a convolution unchanged. The reason is also
/// reported through the rewriter's listener (notifyMatchFailure), as
/// upstream's rewrites do.
struct ImplicitGemmFailure {
  enum class Kind {
    /// The kernel cannot take this convolution (form, types, dynamic shapes,
    /// a non-constant init, ...): a caller may leave it to another lowering.
    UnsupportedConvolution,
    /// The convolution is fine but the requested tiles cannot be built for
    /// it (divisibility, shared memory, grid limits): the options are wrong.
    InvalidTiles,
    /// `features` cannot target `chip`.
    InvalidTarget,
  };
  Kind kind = Kind::UnsupportedConvolution;
  std::string reason;
};

// The kernel families the rewrite builds (lib/Transforms/GPU/<family>) are
// the dialect's KernelFamily (mma_sync, sm90a_tma_wgmma, direct_depthwise),
// the `family` of the #conv_lower.tiles each kernel carries;
// stringifyKernelFamily names them in remarks and reports.

/// What the rewrite created.
struct ImplicitGemmResult {
  /// target=cuda: the GEMM kernel (in `gpu.module @conv_lower_kernels`, with
  /// the conv_lower.grid/block/tiles attributes) and its launch; in explicit
  /// mode also the im2col kernel and its launch (null otherwise).
  gpu::GPUFuncOp kernel, im2colKernel;
  gpu::LaunchFuncOp launch, im2colLaunch;
  /// target=cpu-twin: the outermost loop of the grid (over groups).
  scf::ForOp twinGrid;
  /// The tensor that replaced the convolution's result (or, when epilogue
  /// ops were fused, the last fused op's result).
  Value replacement;
  /// Whether a residual add was fused: the kernel then takes the residual
  /// after the bias (input, filter, [bias,] residual, output).
  bool fusedResidual = false;
  /// The kernel family built (stringifyKernelFamily names it).
  KernelFamily family = KernelFamily::mma_sync;
  /// chip=sm_90a and another family built: why the sm_90a kernels do not
  /// take this convolution ("" otherwise).
  std::string whyNotSm90a;
  /// The sm_90a family built with its A tiles gathered by the producer
  /// warpgroup: why TMA's im2col mode could not load them ("" otherwise).
  std::string whyGatheredSm90a;
};

/// Rewrites `conv` (any convolution the im2col rewrite accepts, with
/// f16/bf16/f32 data or i8 data into i32 -- quantized ops with constant zero
/// points included --, static shapes and a constant-fill init) into an
/// implicit-GEMM kernel and its launch, or its CPU twin. On 2-D images, a
/// per-channel bias add, a residual add (a tensor of the output's type and
/// layout) and a ReLU or a constant clamp, in that order, that only the
/// convolution feeds are fused into the epilogue and erased with it; an
/// absorbed tensor.pad (of zeros, or of a quantized op's input zero point)
/// is erased when nothing else reads it. Host code is inserted before the
/// last replaced op; kernels go into the enclosing module's
/// `@conv_lower_kernels`.
/// On failure the IR is unchanged and `whyNot` (if given) says why.
FailureOr<ImplicitGemmResult>
rewriteToImplicitGemm(RewriterBase &rewriter, linalg::LinalgOp conv,
                      const ImplicitGemmOptions &options,
                      ImplicitGemmFailure *whyNot = nullptr);

} // namespace mlir::conv_lower

// Options of these types reject a bad value naming the allowed ones.
CONV_LOWER_ENUM_OPTION_PARSER(::mlir::conv_lower::ImplicitGemmTarget)
CONV_LOWER_ENUM_OPTION_PARSER(::mlir::conv_lower::Im2colMode)
CONV_LOWER_ENUM_OPTION_PARSER(::convrt::Arch)

#endif // CONVLOWER_TRANSFORMS_IMPLICITGEMM_H
