//===- conv-opt.cpp - mlir-opt with the ConvLower dialect and passes ------===//
//
// Upstream's dialects, passes and interface extensions, plus ConvLower's
// dialect, passes, named pipelines and transform ops.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/TransformOps/ConvLowerTransformOps.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#ifndef CONV_LOWER_VERSION
#define CONV_LOWER_VERSION "unknown"
#endif

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::conv_lower::registerConvLowerPasses();
  mlir::conv_lower::registerConvLowerPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary serializes gpu.modules through LLVM IR to PTX/cubin.
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::conv_lower::ConvLowerDialect>();
  mlir::conv_lower::registerTransformDialectExtension(registry);

  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "ConvLower conv-opt version " CONV_LOWER_VERSION
          " (built against LLVM/MLIR " LLVM_VERSION_STRING ")\n";
  });

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ConvLower optimizer driver\n", registry));
}
