//===- conv-fuzz.cpp - structure-aware fuzzer of the ConvLower passes -----===//
//
// Each input is a convolution module (ConvModuleGenerator) and a choice of
// one of ConvLower's passes or pipelines. The property checked is the passes'
// contract on valid IR:
//
//   - no crash (a signal, an ASan/UBSan report: the sanitize build);
//   - a module that verifies comes out of every pass verifying (the pass
//     manager verifies after each pass, nested pipelines included);
//   - no pass fails on it, except with the one error a pipeline documents:
//     "invalid tiles" for tile overrides that do not fit a convolution, and
//     "unsupported convolution" from the twin routes, which take every
//     convolution through the kernel or fail.
//
// A violation prints the pipeline, the module and the diagnostics and aborts,
// so libFuzzer keeps the input. Built with -fsanitize=fuzzer (clang, the
// sanitize preset) this is a libFuzzer target; in every build it is also
// conv-fuzz-replay, which runs the files it is given (the corpus in
// fuzz/corpus, in the test suite) without libFuzzer.
//
// Flags after libFuzzer's own (libFuzzer ignores those starting with "--"):
//   --all-pipelines   run every pipeline on each input, not the one it names
//   --print-module    print each input's module and summary, run nothing
//   --pipeline=NAME   run only the named pipeline on each input
//   --keep-going      count violations instead of aborting (triage; the
//                     replay tool's exit status is then 1)
//   --files           fuzz the files the tools read instead (.npy tensors,
//                     bundle manifests: FileInputs.cpp)
//
//===----------------------------------------------------------------------===//

#include "ConvModuleGenerator.h"
#include "FuzzTarget.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using namespace mlir;

namespace {

struct Pipeline {
  const char *name;
  const char *spec; // a pass pipeline on builtin.module
  /// The one error this pipeline may stop with on valid input ("" for none).
  const char *allowedError = "";
};

/// Every ConvLower pass and pipeline, with the options that change what
/// code it emits. format=isa keeps the NVVM pipelines in-process (ptxas is
/// not run per input; the PTX is produced by LLVM's NVPTX backend).
const std::vector<Pipeline> &pipelines() {
  static const std::vector<Pipeline> all = {
      {"im2col", "conv-lower-im2col{emit-remarks}"},
      {"decompose", "conv-lower-im2col,conv-lower-decompose"},
      {"lift-decompose",
       "conv-lower-lift-to-2d,conv-lower-im2col,conv-lower-decompose"},
      {"cpu-gemm", "conv-lower-im2col,conv-lower-decompose,canonicalize,"
                   "conv-lower-pack-rhs,conv-lower-tile-and-vectorize"},
      {"to-llvm", "conv-lower-to-llvm"},
      {"to-llvm-threads", "conv-lower-to-llvm{threads=2 tile-k=4}"},
      // The epilogue alone, on the module's own bias adds and ReLUs (in the
      // pipelines it runs after tile-and-vectorize).
      {"parallel-epilogue",
       "func.func(conv-lower-parallel-epilogue{threads=2 min-elements=0})"},
      {"to-llvm-no-im2col", "conv-lower-to-llvm{im2col=0}"},
      // bf16 GEMMs in K pairs on AVX512-BF16's dot product, i8 ones in K
      // quads on AVX512-VNNI's (the IR only: the fuzzer runs nothing).
      {"to-llvm-bf16-dot",
       "conv-lower-to-llvm{bf16-dot=1 threads=2 constant-weights=1}"},
      {"to-llvm-i8-dot",
       "conv-lower-to-llvm{i8-dot=1 threads=2 constant-weights=1}"},
      // The bf16 and i8 GEMMs on AMX tiles (the intrinsics), and the same
      // tile program emulated in vector code (what --amx=emulated runs).
      {"to-llvm-amx", "conv-lower-to-llvm{bf16-dot=1 i8-dot=1 amx=1 "
                      "threads=2 constant-weights=1}"},
      {"to-llvm-amx-emulated",
       "conv-lower-to-llvm{bf16-dot=1 i8-dot=1 amx=1 amx-emulated=1}"},
      // Winograd's cost rule off, so that every convolution it can take
      // (3x3, stride 1, f32, whole 8-lane channel vectors) goes through it.
      {"winograd", "conv-lower-winograd{min-tiles=0 emit-remarks}"},
      {"to-llvm-winograd",
       "conv-lower-to-llvm{winograd-min-tiles=0 threads=2}"},
      // The twin routes run every convolution through the kernel, and say
      // so when one does not fit it (the option's documented failure).
      {"twin", "conv-lower-to-llvm{implicit-gemm-twin}",
       "conv-lower-implicit-gemm: unsupported convolution"},
      {"twin-explicit",
       "conv-lower-to-llvm{implicit-gemm-twin twin-explicit-im2col}",
       "conv-lower-implicit-gemm: unsupported convolution"},
      {"igemm-cuda", "conv-lower-implicit-gemm{target=cuda emit-remarks}"},
      {"igemm-explicit-sm80",
       "conv-lower-implicit-gemm{target=cuda im2col=explicit chip=sm_80}"},
      {"igemm-small-tiles",
       "conv-lower-implicit-gemm{target=cpu-twin block-m=64 block-n=32 "
       "warps-m=1 warps-n=2 stages=2}",
       "conv-lower-implicit-gemm: invalid tiles"},
      {"to-nvvm-sm90", "conv-lower-to-nvvm{chip=sm_90 format=isa}"},
      {"to-nvvm-sm80-explicit",
       "conv-lower-to-nvvm{chip=sm_80 format=isa im2col=explicit}"},
  };
  return all;
}

struct Flags {
  bool allPipelines = false;
  bool printModule = false;
  bool keepGoing = false;
  bool files = false;
  std::string onlyPipeline;
};

Flags &flags() {
  static Flags f;
  return f;
}

std::unique_ptr<MLIRContext> &contextSlot() {
  static std::unique_ptr<MLIRContext> ctx;
  return ctx;
}

MLIRContext &context() {
  std::unique_ptr<MLIRContext> &ctx = contextSlot();
  if (!ctx) {
    DialectRegistry registry;
    registerAllDialects(registry);
    registerAllExtensions(registry);
    registerAllToLLVMIRTranslations(registry);
    registry.insert<conv_lower::ConvLowerDialect>();
    ctx = std::make_unique<MLIRContext>(registry);
    // One thread: deterministic, and the fuzzer's parallelism is processes.
    ctx->disableMultithreading();
    ctx->loadAllAvailableDialects();
  }
  return *ctx;
}

/// A context keeps every type and attribute it ever uniqued: a fresh one
/// every so many inputs bounds a long run's memory.
void recycleContextEvery(long inputs) {
  static long seen = 0;
  if (++seen % inputs == 0)
    contextSlot().reset();
}

/// Prints the violation and aborts (libFuzzer keeps the input), or with
/// --keep-going counts it; the caller then stops checking this input.
void reportViolation(llvm::StringRef what,
                                  const Pipeline *pipeline,
                                  const conv_lower_fuzz::GeneratedModule &gen,
                                  const std::string &diagnostics) {
  llvm::errs() << "conv-fuzz: " << what;
  if (pipeline)
    llvm::errs() << " in pipeline '" << pipeline->name << "' ("
                 << pipeline->spec << ")";
  llvm::errs() << "\n// convolutions:\n" << gen.summary << "// module:\n"
               << gen.text << "// diagnostics:\n"
               << diagnostics << "\n";
  llvm::errs().flush();
  if (!flags().keepGoing)
    std::abort();
  ++conv_lower_fuzz::fuzzStats().violations;
}

/// Runs one pipeline on a copy of `module`; a failure other than the
/// pipeline's allowed error is a violation.
void checkPipeline(const Pipeline &pipeline, ModuleOp module,
                   const conv_lower_fuzz::GeneratedModule &gen) {
  MLIRContext &ctx = context();
  OwningOpRef<ModuleOp> copy(module.clone());
  PassManager pm(&ctx, ModuleOp::getOperationName());
  pm.enableVerifier(true);
  std::string parseError;
  llvm::raw_string_ostream parseErrors(parseError);
  if (failed(parsePassPipeline(pipeline.spec, pm, parseErrors))) {
    reportViolation("unparsable pass pipeline: " + parseError, &pipeline, gen,
                    "");
    return;
  }

  std::string diagnostics;
  bool allowedOnly = true;
  int errors = 0;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error)
      return success(); // remarks: why a conv was left untouched
    std::string message = diag.str();
    ++errors;
    if (!*pipeline.allowedError ||
        message.find(pipeline.allowedError) == std::string::npos)
      allowedOnly = false;
    llvm::raw_string_ostream os(diagnostics);
    os << diag.getLocation() << ": error: " << message << "\n";
    for (const Diagnostic &note : diag.getNotes())
      os << "  note: " << note.str() << "\n";
    return success();
  });
  // The pass manager verifies after every pass (the last one included), so
  // invalid output is a failed run.
  if (failed(pm.run(*copy)) && !(errors > 0 && allowedOnly))
    reportViolation("a pass failed or emitted invalid IR on a valid module",
                    &pipeline, gen, diagnostics);
}

} // namespace

conv_lower_fuzz::FuzzStats &conv_lower_fuzz::fuzzStats() {
  static FuzzStats stats;
  return stats;
}

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv) {
  registerAllPasses();
  conv_lower::registerConvLowerPasses();
  conv_lower::registerConvLowerPipelines();
  for (int i = 1; i < *argc; ++i) {
    llvm::StringRef arg = (*argv)[i];
    if (arg == "--all-pipelines")
      flags().allPipelines = true;
    else if (arg == "--print-module")
      flags().printModule = true;
    else if (arg == "--keep-going")
      flags().keepGoing = true;
    else if (arg == "--files")
      flags().files = true;
    else if (arg.consume_front("--pipeline="))
      flags().onlyPipeline = arg.str();
  }
  if (!flags().onlyPipeline.empty()) {
    bool known = false;
    for (const Pipeline &p : pipelines())
      known |= p.name == flags().onlyPipeline;
    if (!known) {
      llvm::errs() << "conv-fuzz: unknown --pipeline=" << flags().onlyPipeline
                   << "; one of:";
      for (const Pipeline &p : pipelines())
        llvm::errs() << " " << p.name;
      llvm::errs() << "\n";
      std::exit(2);
    }
  }
  context();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (flags().files) {
    conv_lower_fuzz::FuzzStats &stats = conv_lower_fuzz::fuzzStats();
    ++stats.inputs;
    stats.verified += conv_lower_fuzz::checkFileInput(data, size);
    return 0;
  }
  conv_lower_fuzz::FuzzInput input(data, size);
  const std::vector<Pipeline> &all = pipelines();
  const Pipeline &chosen = all[input.range(0, int64_t(all.size()) - 1)];
  conv_lower_fuzz::GeneratedModule gen =
      conv_lower_fuzz::generateConvModule(input);
  if (flags().printModule) {
    llvm::outs() << "// pipeline: " << chosen.name << "\n// convolutions:\n"
                 << gen.summary << gen.text;
    return 0;
  }

  recycleContextEvery(500);
  MLIRContext &ctx = context();
  // Shapes the verifier rejects (an output larger than the formula allows,
  // say) are drawn on purpose; they stop here, with their diagnostics
  // swallowed. A parse error is the generator's bug.
  std::string parseDiagnostics;
  OwningOpRef<ModuleOp> module;
  {
    ScopedDiagnosticHandler quiet(&ctx, [&](Diagnostic &diag) {
      parseDiagnostics += diag.str() + "\n";
      return success();
    });
    ParserConfig config(&ctx, /*verifyAfterParse=*/false);
    module = parseSourceString<ModuleOp>(gen.text, config);
    if (!module) {
      reportViolation("the generator printed a module that does not parse",
                      nullptr, gen, parseDiagnostics);
      return 0;
    }
    conv_lower_fuzz::FuzzStats &stats = conv_lower_fuzz::fuzzStats();
    ++stats.inputs;
    bool valid = succeeded(verify(*module));
    for (const std::string &form : gen.forms) {
      ++stats.forms[form].first;
      stats.forms[form].second += valid;
    }
    if (!valid)
      return 0;
    ++stats.verified;
  }

  for (const Pipeline &pipeline : all) {
    bool selected = flags().onlyPipeline.empty()
                        ? (flags().allPipelines || &pipeline == &chosen)
                        : flags().onlyPipeline == pipeline.name;
    if (selected) {
      checkPipeline(pipeline, *module, gen);
      ++conv_lower_fuzz::fuzzStats().pipelineRuns;
    }
  }
  return 0;
}
