//===- ConvLowerTransformOps.cpp - transform ops of ConvLower -------------===//
//
// Each op walks its target handle, applies the rewrite's C++ entry point
// (rewriteToIm2Col, rewriteToImplicitGemm) to every payload op and maps its
// result handles to what was built. A payload op the rewrite does not take is
// a silenceable failure with the rewrite's own reason, reported after the
// others are rewritten (as upstream's TransformEachOpTrait does); the handles
// then hold what was built for the rest.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/TransformOps/ConvLowerTransformOps.h"
#include "ConvLower/Transforms/Common/Im2Col.h"
#include "ConvLower/Transforms/GPU/ImplicitGemm.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::conv_lower;

#define GET_OP_CLASSES
#include "ConvLower/TransformOps/ConvLowerTransformOps.cpp.inc"

namespace {

/// The payload ops that are linalg ops; a definite failure names the first
/// that is not (a script that hands over, say, a func.func is wrong).
FailureOr<SmallVector<linalg::LinalgOp>>
linalgPayload(Operation *transformOp, transform::TransformState &state,
              Value target, StringRef opName) {
  SmallVector<linalg::LinalgOp> ops;
  for (Operation *payload : state.getPayloadOps(target)) {
    auto linalgOp = dyn_cast<linalg::LinalgOp>(payload);
    if (!linalgOp) {
      InFlightDiagnostic diag = transformOp->emitOpError()
                                << "expects linalg ops (convolutions), got '"
                                << payload->getName() << "'";
      diag.attachNote(payload->getLoc()) << "payload op";
      return failure();
    }
    ops.push_back(linalgOp);
  }
  return ops;
}

/// Collects "left untouched" reasons into one silenceable failure.
class Untouched {
public:
  Untouched(transform::TransformOpInterface op, StringRef what)
      : op(op), what(what) {}
  void add(linalg::LinalgOp payload, StringRef reason) {
    reasons.push_back({payload.getLoc(), reason.str()});
  }
  DiagnosedSilenceableFailure result() {
    if (reasons.empty())
      return DiagnosedSilenceableFailure::success();
    DiagnosedSilenceableFailure diag = op.emitSilenceableError()
                                       << what << ": " << reasons.size()
                                       << " convolution(s) left untouched";
    for (auto &[loc, reason] : reasons)
      diag.attachNote(loc) << "left untouched: " << reason;
    return diag;
  }

private:
  transform::TransformOpInterface op;
  std::string what;
  SmallVector<std::pair<Location, std::string>> reasons;
};

} // namespace

//===----------------------------------------------------------------------===//
// transform.conv_lower.im2col
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure ConvLowerIm2ColTransformOp::apply(
    transform::TransformRewriter &rewriter,
    transform::TransformResults &results, transform::TransformState &state) {
  FailureOr<SmallVector<linalg::LinalgOp>> payload =
      linalgPayload(*this, state, getTarget(), getOperationName());
  if (failed(payload))
    return DiagnosedSilenceableFailure::definiteFailure();
  SmallVector<Operation *> im2cols, gemms, transformed;
  Untouched untouched(*this, getOperationName());
  for (linalg::LinalgOp conv : *payload) {
    std::string whyNot;
    FailureOr<Im2ColResult> built = rewriteToIm2Col(rewriter, conv, &whyNot);
    if (failed(built)) {
      untouched.add(conv, whyNot);
      continue;
    }
    if (built->im2col)
      im2cols.push_back(built->im2col);
    gemms.push_back(built->gemm);
    if (Operation *op = built->replacement.getDefiningOp())
      transformed.push_back(op);
  }
  results.set(cast<OpResult>(getIm2col()), im2cols);
  results.set(cast<OpResult>(getGemm()), gemms);
  results.set(cast<OpResult>(getTransformed()), transformed);
  return untouched.result();
}

//===----------------------------------------------------------------------===//
// transform.conv_lower.implicit_gemm
//===----------------------------------------------------------------------===//

namespace {

std::optional<ImplicitGemmTarget> parseBackend(StringRef name) {
  if (name == "cuda")
    return ImplicitGemmTarget::Cuda;
  if (name == "cpu-twin")
    return ImplicitGemmTarget::CpuTwin;
  return std::nullopt;
}

std::optional<Im2colMode> parseIm2colMode(StringRef name) {
  if (name == "implicit")
    return Im2colMode::Implicit;
  if (name == "explicit")
    return Im2colMode::Explicit;
  return std::nullopt;
}

} // namespace

LogicalResult ConvLowerImplicitGemmTransformOp::verify() {
  if (!parseBackend(getBackend()))
    return emitOpError() << "unknown backend '" << getBackend()
                         << "' (expected cuda or cpu-twin)";
  if (!parseIm2colMode(getIm2col()))
    return emitOpError() << "unknown im2col mode '" << getIm2col()
                         << "' (expected implicit or explicit)";
  if (!convrt::parseArch(getChip().str()))
    return emitOpError() << "unknown chip '" << getChip() << "' (expected "
                         << convrt::archList() << ")";
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"block_m", getBlockMAttr().getInt()},
        {"block_n", getBlockNAttr().getInt()},
        {"warps_m", getWarpsMAttr().getInt()},
        {"warps_n", getWarpsNAttr().getInt()},
        {"stages", getStagesAttr().getInt()}})
    if (value < 0)
      return emitOpError() << name << " must be >= 0 (0: the heuristic's)";
  return success();
}

DiagnosedSilenceableFailure ConvLowerImplicitGemmTransformOp::apply(
    transform::TransformRewriter &rewriter,
    transform::TransformResults &results, transform::TransformState &state) {
  FailureOr<SmallVector<linalg::LinalgOp>> payload =
      linalgPayload(*this, state, getTarget(), getOperationName());
  if (failed(payload))
    return DiagnosedSilenceableFailure::definiteFailure();
  ImplicitGemmOptions options;
  options.target = *parseBackend(getBackend());
  options.im2col = *parseIm2colMode(getIm2col());
  options.chip = *convrt::parseArch(getChip().str());
  options.tiles = {getBlockMAttr().getInt(), getBlockNAttr().getInt(),
                   getWarpsMAttr().getInt(), getWarpsNAttr().getInt(),
                   getStagesAttr().getInt()};

  SmallVector<Operation *> kernels, launches, transformed;
  Untouched untouched(*this, getOperationName());
  for (linalg::LinalgOp conv : *payload) {
    ImplicitGemmFailure whyNot;
    FailureOr<ImplicitGemmResult> built =
        rewriteToImplicitGemm(rewriter, conv, options, &whyNot);
    if (failed(built)) {
      if (whyNot.kind == ImplicitGemmFailure::Kind::UnsupportedConvolution) {
        untouched.add(conv, whyNot.reason);
        continue;
      }
      // Tiles or a target that cannot work: the script is wrong.
      InFlightDiagnostic diag = emitOpError() << whyNot.reason;
      diag.attachNote(conv.getLoc()) << "for this convolution";
      return DiagnosedSilenceableFailure::definiteFailure();
    }
    if (built->kernel)
      kernels.push_back(built->kernel);
    else if (built->twinGrid)
      kernels.push_back(built->twinGrid);
    if (built->launch)
      launches.push_back(built->launch);
    if (Operation *op = built->replacement.getDefiningOp())
      transformed.push_back(op);
  }
  results.set(cast<OpResult>(getKernel()), kernels);
  results.set(cast<OpResult>(getLaunch()), launches);
  results.set(cast<OpResult>(getTransformed()), transformed);
  return untouched.result();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

namespace {

class ConvLowerTransformDialectExtension
    : public transform::TransformDialectExtension<
          ConvLowerTransformDialectExtension> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(
      ConvLowerTransformDialectExtension)

  ConvLowerTransformDialectExtension() {
    // What the rewrites create, loaded before the interpreter runs them.
    declareGeneratedDialect<ConvLowerDialect>();
    declareGeneratedDialect<arith::ArithDialect>();
    declareGeneratedDialect<bufferization::BufferizationDialect>();
    declareGeneratedDialect<gpu::GPUDialect>();
    declareGeneratedDialect<linalg::LinalgDialect>();
    declareGeneratedDialect<LLVM::LLVMDialect>();
    declareGeneratedDialect<memref::MemRefDialect>();
    declareGeneratedDialect<NVVM::NVVMDialect>();
    declareGeneratedDialect<nvgpu::NVGPUDialect>();
    declareGeneratedDialect<scf::SCFDialect>();
    declareGeneratedDialect<tensor::TensorDialect>();
    declareGeneratedDialect<vector::VectorDialect>();
    registerTransformOps<
#define GET_OP_LIST
#include "ConvLower/TransformOps/ConvLowerTransformOps.cpp.inc"
        >();
  }
};

} // namespace

void mlir::conv_lower::registerTransformDialectExtension(
    DialectRegistry &registry) {
  registry.addExtensions<ConvLowerTransformDialectExtension>();
}
