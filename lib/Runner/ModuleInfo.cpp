//===- ModuleInfo.cpp - what a conv module costs --------------------------===//

#include "ConvLower/Runner/ModuleInfo.h"

#include "ConvLower/Dialect/ConvLower/IR/ConvLowerOps.h"
#include "ConvLower/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::conv_lower;

llvm::Expected<func::FuncOp>
mlir::conv_lower::findConvFunction(ModuleOp module, llvm::StringRef name) {
  if (!name.empty()) {
    if (auto f = module.lookupSymbol<func::FuncOp>(name))
      return f;
    return llvm::createStringError("no function @" + name + " in the module");
  }
  if (auto f = module.lookupSymbol<func::FuncOp>("conv"))
    return f;
  SmallVector<func::FuncOp> candidates;
  for (auto f : module.getOps<func::FuncOp>())
    if (f.isPublic() && !f.isExternal())
      candidates.push_back(f);
  if (candidates.size() == 1)
    return candidates.front();
  return llvm::createStringError(
      "the module has no @conv and " + std::to_string(candidates.size()) +
      " public functions: name one with --function");
}

static std::optional<int64_t> staticBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape() ||
      !shaped.getElementType().isIntOrFloat())
    return std::nullopt;
  return shaped.getNumElements() *
         ((shaped.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

ModuleInfo mlir::conv_lower::analyzeConvModule(ModuleOp module,
                                               llvm::StringRef function) {
  ModuleInfo info;
  OwningOpRef<ModuleOp> copy(module.clone());
  auto func = copy->lookupSymbol<func::FuncOp>(function);
  if (!func)
    return info;
  SmallVector<std::string> convs;
  func.walk([&](linalg::LinalgOp op) {
    if (isa<linalg::ConvolutionOpInterface>(op.getOperation()) ||
        linalg::isaConvolutionOpInterface(op))
      convs.push_back(op->getName().getStringRef().str());
  });
  info.description =
      llvm::formatv("@{0}: {1}", function,
                    convs.empty() ? std::string("no linalg convolution")
                                  : llvm::join(convs, ", "))
          .str();
  if (func.getNumArguments() > 0)
    info.inputBytes = staticBytes(func.getArgumentTypes()[0]);

  PassManager pm(copy->getContext());
  pm.addPass(createConvLowerIm2Col());
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*copy)))
    return info;

  int64_t im2col = 0;
  double macs = 0;
  bool known = true;
  func.walk([&](Im2ColOp op) {
    std::optional<int64_t> b = staticBytes(op.getResult().getType());
    known &= b.has_value();
    im2col += b.value_or(0);
  });
  func.walk([&](linalg::LinalgOp op) {
    if (!linalg::isaContractionOpInterface(op))
      return;
    double product = 1;
    for (int64_t r : op.getStaticLoopRanges()) {
      known &= !ShapedType::isDynamic(r);
      product *= r;
    }
    macs += product;
  });
  if (known) {
    info.im2colBytes = im2col;
    info.flops = 2 * macs;
  }
  return info;
}

/// How many ops of `function` carry the dialect attribute `mark` after the
/// CPU pipeline's lift-to-2d and `pass` ran on a copy of `module`: the
/// convolutions that pass rewrote (it marks each one's loop).
static int64_t countMarkedByPass(ModuleOp module, llvm::StringRef function,
                                 std::unique_ptr<Pass> pass,
                                 llvm::StringRef mark) {
  OwningOpRef<ModuleOp> copy(module.clone());
  auto func = copy->lookupSymbol<func::FuncOp>(function);
  if (!func)
    return 0;
  PassManager pm(copy->getContext());
  pm.addPass(createConvLowerLiftTo2D());
  pm.addPass(std::move(pass));
  if (failed(pm.run(*copy)))
    return 0;
  int64_t count = 0;
  func.walk([&](Operation *op) { count += op->hasAttr(mark); });
  return count;
}

int64_t mlir::conv_lower::countGroupedDirectConvs(ModuleOp module,
                                                  llvm::StringRef function,
                                                  int64_t maxFilters) {
  return countMarkedByPass(
      module, function,
      createConvLowerGroupedDirect(cpuGroupedDirectOptions(maxFilters)),
      ConvLowerDialect::GroupedDirectAttrHelper::getNameStr());
}

int64_t mlir::conv_lower::countWinogradConvs(ModuleOp module,
                                             llvm::StringRef function,
                                             int64_t minTiles,
                                             bool filterPackedOnce) {
  ConvLowerWinogradOptions options;
  options.minTiles = minTiles;
  options.filterPackedOnce = filterPackedOnce;
  return countMarkedByPass(module, function, createConvLowerWinograd(options),
                           ConvLowerDialect::WinogradAttrHelper::getNameStr());
}
