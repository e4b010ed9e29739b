// An opt tool of another project: upstream's dialects plus ConvLower's,
// with ConvLower's passes and pipelines registered from the installed package.
#include "ConvLower/Dialect/ConvLower/IR/ConvLowerDialect.h"
#include "ConvLower/Pipelines/Pipelines.h"
#include "ConvLower/TransformOps/ConvLowerTransformOps.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::conv_lower::registerConvLowerPasses();
  mlir::conv_lower::registerConvLowerPipelines();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<mlir::conv_lower::ConvLowerDialect>();
  mlir::conv_lower::registerTransformDialectExtension(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "consumer-opt\n", registry));
}
