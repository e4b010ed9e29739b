//===- ConvLowerToLLVM.cpp - the CPU pipeline -----------------------------===//
//
// linalg on tensors -> LLVM dialect, runnable by mlir-runner and the JIT.
//
//===----------------------------------------------------------------------===//

#include "Pipelines/Bufferize.h"
#include "Pipelines/PipelinePass.h"

#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Transforms/CPU/Passes.h"
#include "ConvLower/Transforms/Common/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/Debug.h"

#include <atomic>

#define DEBUG_TYPE "conv-lower-to-llvm"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERTOLLVM
#include "ConvLower/Pipelines/Pipelines.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

/// The implicit-gemm-twin stage: the GPU room's pass, which this library
/// does not link (a CPU-only consumer links no GPU code);
/// registerConvLowerPipelines() installs it.
static std::atomic<ImplicitGemmTwinStage> &twinStage() {
  static std::atomic<ImplicitGemmTwinStage> stage{nullptr};
  return stage;
}

void mlir::conv_lower::setImplicitGemmTwinStage(ImplicitGemmTwinStage stage) {
  twinStage().store(stage);
}

namespace {
/// Stands in for the twin stage where none is installed: fails, naming the
/// fix, instead of silently running the im2col route.
struct MissingTwinStagePass
    : PassWrapper<MissingTwinStagePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MissingTwinStagePass)
  StringRef getArgument() const override {
    return "conv-lower-missing-twin-stage";
  }
  void runOnOperation() override {
    getOperation().emitError()
        << "conv-lower-to-llvm: implicit-gemm-twin needs the GPU kernels: "
           "link MLIRConvLowerPipelines and call "
           "registerConvLowerPipelines() (this program has the CPU "
           "pipeline only)";
    signalPassFailure();
  }
};
} // namespace

/// Whether GEMMs run on AMX tiles (the tiles need K in groups: bf16 pairs,
/// i8 quads).
static bool amxOn(const ConvLowerToLLVMOptions &options) {
  return options.amx && (options.bf16Dot || options.i8Dot);
}

/// Whether the i8 GEMMs run on AMX tiles: TDPBSSD reads both operands
/// signed, so A keeps its sign (no flip, no column sums).
static bool amxI8(const ConvLowerToLLVMOptions &options) {
  return options.amx && options.i8Dot;
}

/// Convolutions into im2col + GEMM + fold, then plain linalg/tensor.
static void addConvRewrite(OpPassManager &pm,
                           const ConvLowerToLLVMOptions &options) {
  // One function, so that the constant weights' uses are all in sight.
  if (options.constantWeights)
    pm.addPass(createInlinerPass());
  if (options.implicitGemmTwin || options.im2col)
    pm.addPass(createConvLowerLiftTo2D());
  if (options.implicitGemmTwin) {
    if (ImplicitGemmTwinStage stage = twinStage().load())
      stage(pm, options);
    else
      pm.addPass(std::make_unique<MissingTwinStagePass>());
  } else if (options.im2col) {
    if (options.depthwiseDirect) {
      pm.addPass(createConvLowerDepthwiseDirect());
      pm.addPass(createConvLowerMaxPoolRows());
    }
    if (options.groupedDirect) {
      pm.addPass(createConvLowerGroupedDirect(
          cpuGroupedDirectOptions(options.tileN)));
    }
    if (options.winograd) {
      ConvLowerWinogradOptions winograd;
      winograd.minTiles = options.winogradMinTiles;
      winograd.threads = options.threads;
      winograd.filterPackedOnce = options.constantWeights;
      pm.addPass(createConvLowerWinograd(winograd));
    }
    // With constant weights only: the filter's transpose is then packed
    // once; per call it cost more than the gather saved on ResNeXt's g32
    // 1024-channel layer (0.75 -> 1.14 ms; packed once: 1.52 -> 0.77).
    if (options.nchwToNhwc && options.constantWeights)
      pm.addPass(createConvLowerNchwToNhwc());
    pm.addPass(createConvLowerIm2Col());
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createConvLowerDecompose());
  pm.addPass(createCanonicalizerPass());
}

/// The GEMMs become register-tiled vector.contract loops (still on tensors),
/// reading B row by row.
static void addTileAndVectorize(OpPassManager &pm,
                                const ConvLowerToLLVMOptions &options) {
  pm.addPass(createConvLowerPackRhs());
  if (options.im2col && options.im2colPanels && !options.implicitGemmTwin) {
    ConvLowerIm2ColPanelsOptions panels;
    panels.minBlocks = 4 * options.threads;
    panels.threads = options.threads;
    panels.tileM = options.tileM;
    panels.tileN = options.tileN;
    panels.filterPackedOnce = options.constantWeights;
    panels.amxRows = amxOn(options);
    pm.addPass(createConvLowerIm2ColPanels(panels));
    pm.addPass(createCanonicalizerPass());
  }
  // After the panels, which slice W^T per block of filters.
  if (options.filterPanels) {
    ConvLowerPackFilterPanelsOptions filterPanels;
    filterPanels.panelWidth = options.tileN;
    pm.addPass(createConvLowerPackFilterPanels(filterPanels));
  }
  // Before the hoist: a constant filter's repack into K groups (and, for
  // i8, its column sums) is then made once, in the packing function.
  ConvLowerPackVNNIOptions vnni;
  vnni.bf16 = options.bf16Dot;
  vnni.i8 = options.i8Dot;
  vnni.signedI8 = amxI8(options);
  if (options.bf16Dot || options.i8Dot)
    pm.addPass(createConvLowerPackVNNI(vnni));
  // After every rewrite that derives values from the filter (the panels
  // take back pack-rhs's W^T for channels-first outputs: hoisted before
  // them, the NCHW stem kept W^T and the fold, 3.8 -> 7.3 ms), before
  // tiling (both functions are tiled alike).
  if (options.constantWeights) {
    pm.addPass(createCSEPass());
    pm.addPass(createConvLowerHoistConstantWeights());
  }
  ConvLowerTileAndVectorizeOptions tiling;
  tiling.tileM = options.tileM;
  tiling.tileN = options.tileN;
  tiling.tileK = options.tileK;
  tiling.amxTiles = amxOn(options);
  // Row blocks for the threads: a few per thread, so that uneven blocks
  // still balance (GEMMs already in the panels' blocks keep those).
  if (options.threads > 1) {
    tiling.parallelBlocks = 4 * options.threads;
    tiling.parallelThreads = options.threads;
  }
  pm.addPass(createConvLowerTileAndVectorize(tiling));
  pm.addPass(createConvLowerVectorizeTransposes());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (options.bf16Dot || options.i8Dot) {
    ConvLowerX86DotProductOptions dots;
    dots.bf16 = options.bf16Dot;
    dots.i8 = options.i8Dot;
    dots.signedI8 = amxI8(options);
    // With AMX the whole tiles stay contractions for conv-lower-amx-tiles.
    dots.leaveAMXTiles = amxOn(options);
    pm.addPass(createConvLowerX86DotProduct(dots));
  }
  // After canonicalization, which turns the unit-K contractions into the
  // multiplies and adds this fuses.
  pm.addPass(createConvLowerFuseMultiplyAdd());
  // The bias add and activation after the GEMM: one generic, in blocks for
  // the threads (after every rewrite that matches the GEMM's consumers).
  ConvLowerParallelEpilogueOptions epilogue;
  epilogue.threads = options.threads;
  pm.addNestedPass<func::FuncOp>(createConvLowerParallelEpilogue(epilogue));
  // In the GEMM's register tiles where a block is one loop nest of them:
  // applied to the accumulators before their store, not a second pass.
  pm.addNestedPass<func::FuncOp>(createConvLowerEpilogueInRegisterTile());
  // Elsewhere its blocks in vector tiles along the rows: as scalar loops,
  // LLVM vectorized a short channels-last row across pixels with gathers.
  pm.addPass(createConvLowerVectorizeEpilogue());
}

/// Tensors into buffers, the result computed in the output buffer, with
/// deallocation made explicit.
static void addBufferize(OpPassManager &pm) {
  addOneShotBufferize(pm);
  pm.addNestedPass<func::FuncOp>(createConvLowerResultInDestination());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createCanonicalizerPass());
}

/// Remaining linalg ops (im2col copies, transposes, fills) into loops, then
/// every dialect into LLVM. With threads, the GEMMs' row blocks become
/// OpenMP parallel regions, each thread taking a chunk of the blocks, started
/// through GOMP_parallel: the host's OpenMP runtime, whichever it is, runs
/// them.
static void addLowerToLLVM(OpPassManager &pm,
                           const ConvLowerToLLVMOptions &options) {
  // The im2col copies in vector runs, on buffers (on tensors, a vector read
  // of a slice written whole into another folds back into a slice copy).
  pm.addPass(createConvLowerVectorizeGathers());
  // A residual past the caches read by every register tile's epilogue:
  // prefetched a row of tiles ahead (on buffers: addresses).
  pm.addNestedPass<func::FuncOp>(createConvLowerPrefetchEpilogueOperands());
  // The register tiles on AMX tiles: tile loads and stores address
  // buffers, so after bufferization; before the loops' lowering.
  if (amxOn(options)) {
    pm.addPass(createConvLowerAMXTiles());
    if (options.amxEmulated)
      pm.addPass(createConvLowerEmulateAMX());
    pm.addPass(createCanonicalizerPass());
  }
  if (options.threads > 1) {
    // Only the GEMMs' row blocks (an scf.forall) run in parallel: a copy
    // lowered to one collapsed 7-D parallel loop recomputes every index per
    // element and ran 2x slower on 2 threads than on one.
    pm.addPass(createForallToParallelLoopPass());
    ConvLowerParallelToThreadChunksOptions chunks;
    chunks.numThreads = options.threads;
    pm.addPass(createConvLowerParallelToThreadChunks(chunks));
  } else {
    pm.addPass(createForallToForLoopPass());
  }
  pm.addPass(createConvLowerCopiesToLinalg());
  pm.addPass(createConvertLinalgToLoopsPass());
  // Fully unrolled: the default keeps a memref.alloca per transfer inside
  // the GEMM loops, which grows the stack every iteration.
  VectorTransferToSCFOptions vectorToSCF;
  vectorToSCF.enableFullUnroll(true);
  pm.addPass(createConvertVectorToSCFPass(vectorToSCF));
  pm.addPass(createLowerAffinePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.vectorContractLowering =
      vector::VectorContractLowering::OuterProduct;
  // The transposes' 16x16 tiles as shuffles (AVX-512's unpack/permute
  // network), not 256 element extracts and inserts.
  vectorOptions.vectorTransposeLowering =
      vector::VectorTransposeLowering::Shuffle16x16;
  // The dot products (x86vector's and conv_lower's, through the x86
  // intrinsic interface) become LLVM's AVX512-BF16 / AVX512-VNNI intrinsics.
  vectorOptions.x86Vector = options.bf16Dot || options.i8Dot;
  // AMX's ops become LLVM's tile intrinsics (the tile configuration is
  // LLVM's: its X86 pre-tile-config pass writes LDTILECFG).
  vectorOptions.amx = amxOn(options) && !options.amxEmulated;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  if (vectorOptions.amx)
    pm.addPass(createConvLowerAMXLoopTypes());
  // Memrefs before structured control flow: the OpenMP loop bodies are
  // memref.alloca_scope regions, which must still be one block when they are
  // lowered.
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  if (options.threads > 1)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (options.threads > 1)
    pm.addPass(createConvLowerOmpParallelToGomp());
  // Last, on the LLVM dialect: no bf16 reaches LLVM's type legalization,
  // which aborts on some bf16 vectors where AVX512-BF16 is present.
  ConvLowerLegalizeBF16Options legalize;
  legalize.avx512BF16 = options.bf16Dot;
  pm.addPass(createConvLowerLegalizeBF16(legalize));
}

void mlir::conv_lower::buildConvLowerToLLVMPipeline(
    OpPassManager &pm, const ConvLowerToLLVMOptions &options) {
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] "
                          << "im2col " << options.im2col << ", panels "
                          << options.im2colPanels << ", winograd "
                          << options.winograd << ", twin "
                          << options.implicitGemmTwin << ", threads "
                          << options.threads << "\n");
  addConvRewrite(pm, options);
  addTileAndVectorize(pm, options);
  addBufferize(pm);
  addLowerToLLVM(pm, options);
}

namespace {

struct ConvLowerToLLVMPass
    : PipelinePass<ConvLowerToLLVMPass,
                   conv_lower::impl::ConvLowerToLLVMBase<ConvLowerToLLVMPass>,
                   ConvLowerToLLVMOptions, buildConvLowerToLLVMPipeline> {
  using PipelinePass::PipelinePass;

  /// The parsed option members as the struct C++ callers fill in.
  ConvLowerToLLVMOptions getPipelineOptions() const {
    ConvLowerToLLVMOptions options;
    options.tileM = tileM;
    options.tileN = tileN;
    options.tileK = tileK;
    options.threads = threads;
    options.im2col = im2col;
    options.im2colPanels = im2colPanels;
    options.depthwiseDirect = depthwiseDirect;
    options.groupedDirect = groupedDirect;
    options.winograd = winograd;
    options.winogradMinTiles = winogradMinTiles;
    options.filterPanels = filterPanels;
    options.nchwToNhwc = nchwToNhwc;
    options.constantWeights = constantWeights;
    options.bf16Dot = bf16Dot;
    options.i8Dot = i8Dot;
    options.amx = amx;
    options.amxEmulated = amxEmulated;
    options.implicitGemmTwin = implicitGemmTwin;
    options.twinExplicitIm2col = twinExplicitIm2col;
    options.twinChip = twinChip;
    return options;
  }
};

} // namespace

namespace mlir::conv_lower {
#define GEN_PASS_REGISTRATION
#include "ConvLower/Pipelines/Pipelines.h.inc"
} // namespace mlir::conv_lower

void mlir::conv_lower::registerConvLowerCPUPipelines() {
  registerConvLowerToLLVM();
}
