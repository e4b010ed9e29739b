//===- ConvLowerToNVVM.cpp - the GPU pipeline -----------------------------===//
//
// linalg on tensors -> implicit-GEMM kernels in a gpu.binary + LLVM host code.
// Upstream's gpu-lower-to-nvvm-pipeline, spelled out so that the kernel
// conversion uses bare pointers (the runtime launches with plain device
// pointers), the NVVM target gets -O3, and ptxas comes from a known toolkit.
//
//===----------------------------------------------------------------------===//

#include "Pipelines/Bufferize.h"
#include "Pipelines/PipelinePass.h"

#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/OptimizeForNVVM.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "conv-lower-to-nvvm"

namespace mlir::conv_lower {
#define GEN_PASS_DEF_CONVLOWERTONVVM
#include "ConvLower/Pipelines/Pipelines.h.inc"
} // namespace mlir::conv_lower

using namespace mlir;
using namespace mlir::conv_lower;

std::string mlir::conv_lower::findCudaToolkit(llvm::StringRef requested) {
  if (!requested.empty())
    return requested.str();
  for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(env)) {
      llvm::SmallString<256> ptxas(dir);
      llvm::sys::path::append(ptxas, "bin", "ptxas");
      if (llvm::sys::fs::can_execute(ptxas))
        return dir;
    }
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda";
  return "";
}

/// The pipeline's kernel options, handed on to the implicit-GEMM pass: the
/// one place they go from the pipeline's options struct to the pass's (both
/// generated from the same records in PassOptions.td).
static ConvLowerImplicitGemmOptions
getKernelOptions(const ConvLowerToNVVMOptions &options) {
  ConvLowerImplicitGemmOptions kernels;
  kernels.target = ImplicitGemmTarget::Cuda;
  // Checked before anything reaches LLVM's NVPTX backend, which aborts on an
  // unknown chip or too old a PTX version instead of reporting an error.
  kernels.chip = options.chip;
  kernels.features = options.features;
  kernels.im2col = options.im2col;
  kernels.blockM = options.blockM;
  kernels.blockN = options.blockN;
  kernels.warpsM = options.warpsM;
  kernels.warpsN = options.warpsN;
  kernels.stages = options.stages;
  kernels.requireAll = options.requireAll;
  return kernels;
}

/// Convolutions into kernels + launches; then buffers, and the host's other
/// linalg ops into loops.
static void addKernelsAndBuffers(OpPassManager &pm,
                                 const ConvLowerToNVVMOptions &options) {
  pm.addPass(createConvLowerLiftTo2D());
  pm.addPass(createConvLowerImplicitGemm(getKernelOptions(options)));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  addOneShotBufferize(pm);
  // No deallocation pipeline: it rejects gpu.launch_func (unknown memory
  // effects), and the launch code frees its device buffers itself; the
  // result buffer is returned to the caller.
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createCanonicalizerPass());
}

/// Dialects shared by host and kernel into LLVM/NVVM; the target attached.
static void addCommonLowering(OpPassManager &pm,
                              const ConvLowerToNVVMOptions &options) {
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = convrt::archName(options.chip);
  target.features = options.features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

/// The kernels to NVVM, with bare-pointer arguments (static shapes).
static void addKernelLowering(OpPassManager &pm,
                              const ConvLowerToNVVMOptions &options) {
  pm.addNestedPass<gpu::GPUModuleOp>(createStripDebugInfoPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(LLVM::createNVVMOptimizeForTargetPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  if (options.gridConstantTensorMaps)
    pm.nest<gpu::GPUModuleOp>().addNestedPass<LLVM::LLVMFuncOp>(
        createConvLowerGridConstantTensorMaps());
}

/// Launches to runtime calls, and the gpu.module to a gpu.binary.
static void addHostLoweringAndBinary(OpPassManager &pm,
                                     const ConvLowerToNVVMOptions &options) {
  GpuToLLVMConversionPassOptions host;
  host.kernelBarePtrCallConv = true;
  pm.addPass(createGpuToLLVMConversionPass(host));
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = gpu::stringifyCompilationTarget(options.format);
  binary.toolkitPath = findCudaToolkit(options.toolkit);
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::conv_lower::buildConvLowerToNVVMKernelPipeline(
    OpPassManager &pm, const ConvLowerToNVVMOptions &options) {
  addKernelsAndBuffers(pm, options);
}

void mlir::conv_lower::buildConvLowerToNVVMBinaryPipeline(
    OpPassManager &pm, const ConvLowerToNVVMOptions &options) {
  addCommonLowering(pm, options);
  addKernelLowering(pm, options);
  addHostLoweringAndBinary(pm, options);
}

void mlir::conv_lower::buildConvLowerToNVVMPipeline(
    OpPassManager &pm, const ConvLowerToNVVMOptions &options) {
  LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] features '" << options.features
                          << "', require-all " << options.requireAll << "\n");
  buildConvLowerToNVVMKernelPipeline(pm, options);
  buildConvLowerToNVVMBinaryPipeline(pm, options);
}

namespace {

struct ConvLowerToNVVMPass
    : PipelinePass<ConvLowerToNVVMPass,
                   conv_lower::impl::ConvLowerToNVVMBase<ConvLowerToNVVMPass>,
                   ConvLowerToNVVMOptions, buildConvLowerToNVVMPipeline> {
  using PipelinePass::PipelinePass;

  /// The parsed option members as the struct C++ callers fill in.
  ConvLowerToNVVMOptions getPipelineOptions() const {
    ConvLowerToNVVMOptions options;
    options.chip = chip;
    options.features = features;
    options.im2col = im2col;
    options.blockM = blockM;
    options.blockN = blockN;
    options.warpsM = warpsM;
    options.warpsN = warpsN;
    options.stages = stages;
    options.requireAll = requireAll;
    options.format = format;
    options.toolkit = toolkit;
    options.gridConstantTensorMaps = gridConstantTensorMaps;
    return options;
  }
};

} // namespace

/// With implicit-gemm-twin, conv-lower-to-llvm runs every convolution as
/// the GPU kernel's CPU twin instead of the im2col rewrite.
static void addImplicitGemmTwinStage(OpPassManager &pm,
                                     const ConvLowerToLLVMOptions &options) {
  ConvLowerImplicitGemmOptions twin;
  twin.target = ImplicitGemmTarget::CpuTwin;
  twin.im2col = options.twinExplicitIm2col ? Im2colMode::Explicit
                                           : Im2colMode::Implicit;
  twin.requireAll = true;
  twin.chip = options.twinChip;
  pm.addPass(createConvLowerImplicitGemm(twin));
}

void mlir::conv_lower::enableImplicitGemmTwin() {
  setImplicitGemmTwinStage(addImplicitGemmTwinStage);
}

namespace mlir::conv_lower {
#define GEN_PASS_REGISTRATION
#include "ConvLower/Pipelines/Pipelines.h.inc"
} // namespace mlir::conv_lower

void mlir::conv_lower::registerConvLowerPipelines() {
  registerConvLowerCPUPipelines();
  registerConvLowerToNVVM();
  enableImplicitGemmTwin();
}
