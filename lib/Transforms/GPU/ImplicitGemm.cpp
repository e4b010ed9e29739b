//===- ImplicitGemm.cpp - one convolution into an implicit-GEMM kernel ----===//
//
// Every convolution the im2col rewrite accepts (same analysis, same forms)
// becomes one kernel computing, per group g,
//
//   Y[m, f] = sum_k A[m, k] * B[k, f]   M = N*Ho*Wo, F = filters per group,
//                                       K = Cg*KH*KW
//
// where A is the im2col of the input, never stored: each K step gathers the
// A tile straight from the image into shared memory (the address of A[m, k]
// is computed from (n, oh, ow) and (c, kh, kw); padding and bounds become a
// zero-fill predicate), and the epilogue writes Y[m, f] to its place in the
// output layout (the fold). i8 data run on the s8 MMA; a quantized op's zero
// points are applied in the epilogue from row and column sums that extra
// MMAs against all-ones operands compute (Sm80/Sm80Kernel.cpp).
//
// The kernel is built for one CTA of `warpsM x warpsN` warps owning a
// blockM x blockN tile of C, stepping K by blockK through a ring of `stages`
// shared-memory buffers:
//
//   prologue: load K tiles 0 .. stages-2             (one cp.async group each)
//   for kt < kTiles-(stages-1):
//             wait for tile kt; barrier;
//             load tile kt+stages-1 into the buffer freed by tile kt-1;
//             each warp: ldmatrix A/B fragments, mma.sync into registers
//   drain:    the last stages-1 tiles, computed with no loads
//   epilogue: accumulators -> (fold) -> output, + the init value
//
// Shared memory rows are blockK elements = 64 bytes = four 16-byte chunks;
// chunk q of row r is stored at chunk q ^ ((r / 2) % 4), so the 8 rows an
// ldmatrix phase reads hit 8 different bank groups.
//
// target=cpu-twin emits the same block body (tiling, gather addresses,
// predicates, swizzle, stage ring, fragment-to-output mapping) as plain loops
// on the host: threads and warps become loops, cp.async a predicated vector
// copy, ldmatrix and mma.sync lane-by-lane emulations of the PTX ISA's
// definitions fed by the GPU code's own addresses. It is how the kernel's
// indexing is tested without a GPU. (The body itself: Sm80/Sm80Kernel.)
//
// This file is the order of the steps (Core/Core.h), the chip checks and
// the one place that picks a kernel family: Sm90 (chip=sm_90a where it
// takes the problem), Depthwise (directDepthwiseVector) or Sm80.
//
//===----------------------------------------------------------------------===//

#include "Transforms/GPU/Core/Core.h"
#include "Transforms/GPU/Depthwise/DepthwiseKernel.h"
#include "Transforms/GPU/Sm80/Sm80.h"
#include "Transforms/GPU/Sm90/Sm90.h"
#include "Transforms/GPU/Twin/Twin.h"

#include "ConvLower/Transforms/GPU/ImplicitGemm.h"

#include "llvm/Support/Debug.h"

#include <vector>

#define DEBUG_TYPE "conv-lower-implicit-gemm"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::igemm;

//===----------------------------------------------------------------------===//
// Chips (convrt's table)
//===----------------------------------------------------------------------===//

bool mlir::conv_lower::isSupportedChip(llvm::StringRef chip) {
  return convrt::parseArch(chip).has_value();
}

LogicalResult mlir::conv_lower::checkPtxFeatures(convrt::Arch chip,
                                                 llvm::StringRef features,
                                                 Refusal &why) {
  const convrt::ArchInfo &info = convrt::archInfo(chip);
  SmallVector<StringRef> items;
  features.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    int version = 0;
    if (!item.consume_front("+ptx") || item.getAsInteger(10, version)) {
      why.reason = ("unsupported PTX feature '" + item +
                    "' (expected +ptxNN, e.g. +ptx80)")
                       .str();
      return failure();
    }
    if (version < info.minPtxVersion) {
      why.reason = ("PTX " + Twine(version / 10) + "." + Twine(version % 10) +
                    " cannot target " + info.name + " (at least +ptx" +
                    Twine(info.minPtxVersion) + ")")
                       .str();
      return failure();
    }
  }
  return success();
}

LogicalResult mlir::conv_lower::checkPtxFeatures(llvm::StringRef chip,
                                                 llvm::StringRef features,
                                                 Refusal &why) {
  std::optional<convrt::Arch> arch = convrt::parseArch(chip);
  if (!arch) {
    why.reason = ("unsupported chip '" + chip + "' (expected " +
                  convrt::archList() + ")")
                     .str();
    return failure();
  }
  return checkPtxFeatures(*arch, features, why);
}


//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

namespace {

/// Everything decided about one convolution before the IR changes.
struct Decision {
  ConvPlan plan;
  GemmProblem problem;
  TileConfig tiles;
  FusedEpilogue epilogue;
  /// chip=sm_90a and the family takes the problem: its tiles (then `tiles`
  /// is unused).
  std::optional<Sm90Tiles> sm90;
  std::string whyNotSm90a;
};

/// For chip=sm_90a: the sm_90a family where it takes the problem, else the
/// reason the mma.sync (or direct) kernel runs instead.
void chooseFamily(Decision &d, const ImplicitGemmOptions &options,
                  bool tileOptions) {
  if (options.chip != convrt::Arch::SM90a)
    return;
  Refusal why;
  if (tileOptions)
    d.whyNotSm90a = "tile options select the mma.sync kernels";
  else if (failed(checkSm90Problem(d.problem, why)))
    d.whyNotSm90a = why.reason;
  else
    d.sm90 = chooseSm90Tiles(d.problem);
  LLVM_DEBUG({
    if (d.sm90)
      llvm::dbgs() << "[sm_90a] TMA + wgmma family: block " << d.sm90->blockM
                   << "x" << d.sm90->blockN << "x" << d.sm90->blockK << ", "
                   << d.sm90->stages << " stages, A "
                   << (d.sm90->gatherA ? "gathered" : "by TMA im2col") << "\n";
    else
      llvm::dbgs() << "[sm_90a] not the TMA + wgmma family: " << d.whyNotSm90a
                   << "\n";
  });
}

/// Analysis, problem, tiles and epilogue for `conv`; failure (the IR
/// untouched) with the reason in `why`.
FailureOr<Decision> decide(linalg::LinalgOp conv,
                           const ImplicitGemmOptions &options,
                           ImplicitGemmFailure &why) {
  auto fail = [&](ImplicitGemmFailure::Kind kind, std::string reason) {
    why = {kind, std::move(reason)};
    return failure();
  };
  if (Refusal bad; failed(checkPtxFeatures(options.chip, options.features, bad)))
    return fail(ImplicitGemmFailure::Kind::InvalidTarget, bad.reason);
  std::string whyNot;
  // The kernel fills absorbed padding with the pad's value, so a quantized
  // convolution's pad of its input zero point is absorbed too.
  AnalysisOptions analysis;
  analysis.absorbZeroPointPad = true;
  FailureOr<ConvPlan> plan = analyzeConv(conv, whyNot, analysis);
  FailureOr<GemmProblem> problem = failure();
  if (succeeded(plan))
    problem = buildProblem(*plan, whyNot);
  if (failed(problem))
    return fail(ImplicitGemmFailure::Kind::UnsupportedConvolution, whyNot);
  if (options.target == ImplicitGemmTarget::Cuda &&
      !conv->getParentOfType<ModuleOp>())
    return fail(ImplicitGemmFailure::Kind::UnsupportedConvolution,
                "no enclosing module to hold the kernels");
  // Depthwise layers (one channel, one filter per group) run on CUDA cores
  // with no K padding: through the GEMM, K = KH*KW padded to a 64-byte step
  // left ~1% of the MMA work useful. Tile options ask for the GEMM kernel.
  const ImplicitGemmTiles &o = options.tiles;
  bool tileOptions = o.blockM || o.blockN || o.warpsM || o.warpsN || o.stages;
  bool direct = directDepthwiseVector(*problem) != 0 && !tileOptions &&
                options.im2col == Im2colMode::Implicit;
  TileConfig tiles =
      direct ? directTiles(*problem) : chooseTiles(*problem, options.tiles);
  LLVM_DEBUG(llvm::dbgs() << "[tiles] "
                          << (direct ? "direct depthwise, " : "mma.sync, ")
                          << "block " << tiles.blockM << "x" << tiles.blockN
                          << "x" << tiles.blockK << ", warps " << tiles.warpsM
                          << "x" << tiles.warpsN << ", " << tiles.stages
                          << " stages" << (tileOptions ? " (overridden)" : "")
                          << "\n");
  if (Refusal bad; !direct && failed(checkTiles(tiles, *problem, bad)))
    return fail(ImplicitGemmFailure::Kind::InvalidTiles, bad.reason);
  Decision d{*plan, *problem, tiles, matchEpilogue(conv, *plan->form)};
  if (d.epilogue.bias) {
    auto biasType = cast<RankedTensorType>(d.epilogue.bias.getType());
    d.problem.biasType = biasType.getElementType();
    d.problem.biasElements = biasType.getNumElements();
  }
  d.problem.residual = static_cast<bool>(d.epilogue.residual);
  d.problem.activation = d.epilogue.activation;
  d.problem.explicitIm2col = options.im2col == Im2colMode::Explicit;
  d.problem.nativeTf32Rounding = convrt::archInfo(options.chip).ccMajor >= 9;
  chooseFamily(d, options, tileOptions);
  return d;
}

/// The kernels, their launch and the result, before the last replaced op.
void buildGpu(RewriterBase &rewriter, const Decision &d, Value filter,
              RankedTensorType outputType, ImplicitGemmResult &result) {
  const GemmProblem &p = d.problem;
  Operation *conv = d.plan.op;
  Location loc = conv->getLoc();
  auto module = conv->getParentOfType<ModuleOp>();
  int64_t index = nextKernelIndex(module);
  if (d.sm90) {
    result.kernel =
        buildSm90GpuKernel(rewriter, module, index, p, *d.sm90, loc);
    GpuLaunch launch =
        buildSm90GpuLaunch(rewriter, loc, result.kernel, p, *d.sm90,
                             d.plan.input, filter, d.epilogue, outputType);
    result.launch = launch.launch;
    result.replacement = launch.result;
    return;
  }
  result.kernel =
      d.tiles.directVector
          ? buildDepthwiseGpuKernel(rewriter, module, index, p, d.tiles, loc)
          : buildSm80GpuKernel(rewriter, module, index, p, d.tiles, loc);
  if (p.explicitIm2col)
    result.im2colKernel =
        buildIm2colKernel(rewriter, module, index, p, d.tiles, loc);
  GpuLaunch launch =
      buildGpuLaunch(rewriter, loc, result.kernel, result.im2colKernel, p,
                     d.tiles, d.plan.input, filter, d.epilogue, outputType);
  result.launch = launch.launch;
  result.im2colLaunch = launch.im2colLaunch;
  result.replacement = launch.result;
}

/// Replaces the last fused op (or the convolution) with `replacement` and
/// erases what the kernel absorbed.
void replaceAndErase(RewriterBase &rewriter, const Decision &d,
                     Operation *last, Value replacement) {
  rewriter.replaceAllUsesWith(last->getResult(0), replacement);
  for (Operation *fused : llvm::reverse(d.epilogue.ops))
    rewriter.eraseOp(fused);
  rewriter.eraseOp(static_cast<Operation *>(d.plan.op));
  if (d.plan.absorbedExpand && d.plan.absorbedExpand->use_empty())
    rewriter.eraseOp(d.plan.absorbedExpand);
  if (d.plan.absorbedPad && d.plan.absorbedPad->use_empty())
    rewriter.eraseOp(d.plan.absorbedPad);
}

} // namespace

FailureOr<ImplicitGemmResult> mlir::conv_lower::rewriteToImplicitGemm(
    RewriterBase &rewriter, linalg::LinalgOp conv,
    const ImplicitGemmOptions &options, ImplicitGemmFailure *whyNot) {
  ImplicitGemmFailure why;
  FailureOr<Decision> d = decide(conv, options, why);
  if (failed(d)) {
    if (whyNot)
      *whyNot = why;
    return rewriter.notifyMatchFailure(conv, why.reason);
  }
  // The kernel's result replaces the last fused op (same elements, in the
  // same memory order: the collapse only merges contiguous dims).
  Operation *last =
      d->epilogue.ops.empty() ? conv.getOperation() : d->epilogue.ops.back();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(last);
  auto outputType = cast<RankedTensorType>(last->getResult(0).getType());
  Value filter = conv.getDpsInputOperand(1)->get();
  ImplicitGemmResult result;
  result.family = d->sm90                ? KernelFamily::sm90a_tma_wgmma
                  : d->tiles.directVector ? KernelFamily::direct_depthwise
                                          : KernelFamily::mma_sync;
  result.whyNotSm90a = d->whyNotSm90a;
  result.fusedResidual = d->problem.residual;
  if (Refusal why; d->sm90 && d->sm90->gatherA &&
                   failed(checkSm90ImageTma(d->problem, why)))
    result.whyGatheredSm90a = why.reason;
  if (options.target == ImplicitGemmTarget::CpuTwin && d->sm90) {
    TwinLoops twin = buildSm90Twin(rewriter, conv.getLoc(), d->problem,
                                   *d->sm90, d->plan.input, filter,
                                   d->epilogue, outputType);
    result.twinGrid = twin.grid;
    result.replacement = twin.result;
  } else if (options.target == ImplicitGemmTarget::CpuTwin) {
    auto buildTwin =
        d->tiles.directVector ? buildDepthwiseTwin : buildSm80Twin;
    TwinLoops twin =
        buildTwin(rewriter, conv.getLoc(), d->problem, d->tiles, d->plan.input,
                  filter, d->epilogue, outputType);
    result.twinGrid = twin.grid;
    result.replacement = twin.result;
  } else {
    buildGpu(rewriter, *d, filter, outputType, result);
  }
  replaceAndErase(rewriter, *d, last, result.replacement);
  return result;
}
