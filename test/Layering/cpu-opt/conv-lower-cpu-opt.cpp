//===- conv-lower-cpu-opt.cpp - an opt tool of the CPU rooms only --------===//
//
// The CPU-only consumer test/Layering checks: ConvLower's dialect, the
// Common and CPU rooms' passes and the CPU pipeline (conv-lower-to-llvm),
// linked from MLIRConvLowerCPUPipelines alone. Its link closure holds no GPU
// library (cpu-links-no-gpu.test), and it lowers a convolution to LLVM.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/Transforms/CPU/Passes.h"
#include "ConvLower/Transforms/Common/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::conv_lower::registerConvLowerCommonPasses();
  mlir::conv_lower::registerConvLowerCPUPasses();
  mlir::conv_lower::registerConvLowerCPUPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::conv_lower::ConvLowerDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ConvLower's CPU rooms only\n", registry));
}
