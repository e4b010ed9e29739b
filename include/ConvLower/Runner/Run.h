//===- Run.h - build, compile, run, check and report one convolution -*- C++ -*-//
//
// The run library behind conv-run (and any other front end): a RunOptions
// says what to run and how; run() builds or reads the convolution, picks the
// target, compiles it (CPU JIT, the CPU twin of the GPU kernel, or the
// tensor-core kernel for a CUDA device through runtime/), times it, checks it
// against the float64 reference and returns the report. emitBundle() writes
// the GPU kernel as a runtime bundle (Bundle.h); emitModule() prints the
// linalg module.
//
// Errors carry whether the input was bad (RunError::badInput, RunErrors.h)
// or the run failed, so a front end can map them to its exit codes.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_RUN_H
#define CONVLOWER_RUNNER_RUN_H

#include "ConvLower/Runner/ConvProblem.h"
#include "ConvLower/Runner/Report.h"
#include "ConvLower/Runner/Routes.h"
#include "ConvLower/Runner/RunErrors.h"

#include "convrt/Arch.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>
#include <string>

namespace mlir::conv_lower {

/// How the A operand of the GEMM is formed.
enum class Im2colChoice {
  Default,  ///< implicit
  Explicit, ///< X_col materialized
  Implicit, ///< the gather fused into the GEMM's operand loads (cpu: X_col
            ///< per block of output rows, in the GEMM's parallel loop)
};
/// Whether the CPU computes 3x3 stride-1 f32 convolutions by Winograd
/// F(4x4, 3x3) (conv-lower-winograd) instead of a GEMM.
enum class WinogradChoice {
  Auto,   ///< where its cost rule says it is faster (enough output tiles)
  Always, ///< every convolution it can take
  Off,    ///< never
};
/// Whether the CPU's bf16 and i8 GEMMs run on AMX tiles (TDPBF16PS,
/// TDPBSSD).
enum class AMXChoice {
  Auto,     ///< where the host has AMX and the kernel grants XTILEDATA
  On,       ///< required: an error where the host cannot run them
  Off,      ///< never (AVX512-BF16's VDPBF16PS, AVX512-VNNI's VPDPBUSD)
  Emulated, ///< the same tile program, each tile operation in vector code
};
/// What the lowered convolution is timed next to on the CPU.
enum class ReferenceMode { Direct, None };

/// Threads the CPU code runs on unless told: every core this process may
/// use (its affinity mask), or 1 where the build has no OpenMP runtime.
int64_t defaultCpuThreads();
/// The CPU GEMM's register tile unless told: `m` rows (each a broadcast and
/// a row of accumulators) by `n` filters (whole vectors) by `k` unrolled, the
/// largest that fits the host's vector registers with room for the operands.
struct CpuGemmTile {
  int64_t m, n, k;
  llvm::StringRef registers; ///< "AVX-512" or "AVX2": what `m x n` was sized for
};
const CpuGemmTile &hostGemmTile();
/// Whether the host has AVX512-BF16 (VDPBF16PS): the CPU pipeline's bf16
/// GEMMs then run on its dot product (conv-lower-to-llvm's bf16-dot).
bool hostHasAVX512BF16();
/// Whether the host has AVX512-VNNI (VPDPBUSD): the CPU pipeline's i8 GEMMs
/// then run on its dot product (conv-lower-to-llvm's i8-dot).
bool hostHasAVX512VNNI();
/// Whether the host has AMX-TILE, AMX-BF16 and AMX-INT8 with the OS saving
/// their state (XCR0), per cpuid.
bool hostHasAMX();
/// Asks Linux for this process's permission to use AMX's tile data
/// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)), needed before the
/// first tile instruction; once per process. Empty when granted, else why
/// not (the kernel's answer, and what would fix it).
llvm::StringRef requestAMXTileData();
/// Why this process cannot run AMX tiles; empty when it can (the host has
/// AMX and the kernel granted the tile data).
std::string whyNoAMX();
/// The OpenMP runtime threaded CPU code runs on: the entry points of GCC's
/// OpenMP ABI that conv-lower-omp-parallel-to-gomp calls, bound to the
/// runtime the process already has (torch's libgomp, a preloaded libomp),
/// else to LLVM's libomp, loaded on first use. Chosen once per process.
struct OpenMPRuntime {
  void *parallel = nullptr;   ///< GOMP_parallel
  void *threadNum = nullptr;  ///< omp_get_thread_num
  void *numThreads = nullptr; ///< omp_get_num_threads
  std::string path;           ///< the library that defines them
  bool loaded = false;        ///< ConvLower loaded it (the process had none)
  std::string error;          ///< why there is none (then the rest is empty)
};
const OpenMPRuntime &processOpenMPRuntime();
/// processOpenMPRuntime().path: "" when there is none.
llvm::StringRef openMPRuntimePath();

struct RunOptions {
  // The problem: torch-style flags, or a function of a .mlir file.
  std::optional<ConvFlags> flags;
  std::string mlirFile;
  std::string function; ///< "" : @conv, or the file's only public function
  // Data: .npy files, else seeded random values.
  std::string inputNpy, filterNpy, biasNpy, outputNpy;
  uint64_t seed = 0;
  // Compilation and running.
  Target target = Target::Auto;
  Im2colChoice im2col = Im2colChoice::Default;
  WinogradChoice winograd = WinogradChoice::Auto;
  /// default: the device's (sm_90a on compute capability 9.0), else sm_80;
  /// the cpu-twin runs this chip's kernel family too.
  std::optional<convrt::Arch> chip;
  ReferenceMode reference = ReferenceMode::Direct;
  int repeat = 5, warmup = 1, referenceRepeat = 1;
  bool check = false;
  /// CPU: the filter is constant; what is computed from it alone (its
  /// packed layout, Winograd's U) is made once before the timed runs.
  bool constantWeights = false;
  int64_t threads = defaultCpuThreads(), tileM = hostGemmTile().m,
          tileN = hostGemmTile().n, tileK = hostGemmTile().k;
  /// CPU: bf16 GEMMs on AVX512-BF16's dot product where the host has it
  /// (off: widened to f32 FMAs).
  bool bf16Dot = true;
  /// CPU: i8 GEMMs on AVX512-VNNI's dot product where the host has it
  /// (off: widened to i32 multiplies).
  bool i8Dot = true;
  /// CPU: the bf16 GEMMs on AMX tiles (with bf16Dot).
  AMXChoice amx = AMXChoice::Auto;
  /// Called before each long step ("compiling ...").
  std::function<void(llvm::StringRef)> progress;
};

/// Builds or reads, compiles, runs, times and (with check) checks the
/// convolution. A failed check is a report with check->passed false, not
/// an error.
llvm::Expected<RunReport> run(MLIRContext &context, const RunOptions &options);

/// The linalg module the options describe (flags or file), as text.
llvm::Expected<std::string> emitModule(MLIRContext &context,
                                       const RunOptions &options);

/// Registers what run() needs in a context's registry.
void registerRunDialects(DialectRegistry &registry);

} // namespace mlir::conv_lower

#endif
