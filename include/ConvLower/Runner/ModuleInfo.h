//===- ModuleInfo.h - what a conv module costs ------------------*- C++ -*-===//

#ifndef CONVLOWER_RUNNER_MODULEINFO_H
#define CONVLOWER_RUNNER_MODULEINFO_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir::conv_lower {

/// `name` if given, else @conv, else the module's only public function.
llvm::Expected<func::FuncOp> findConvFunction(ModuleOp module,
                                              llvm::StringRef name);

struct ModuleInfo {
  std::string description;          // the function and its convolutions
  std::optional<int64_t> inputBytes; // the first argument
  std::optional<int64_t> im2colBytes;
  std::optional<double> flops;      // 2 x multiply-adds of every GEMM
};

/// Reads the costs off the im2col rewrite of a copy of `module`: X_col bytes
/// from the conv_lower.im2col results, FLOPs from the contractions' loop
/// ranges. Unknown (dynamic) quantities stay empty.
ModuleInfo analyzeConvModule(ModuleOp module, llvm::StringRef function);

/// How many convolutions of `function` conv-lower-grouped-direct computes
/// directly (groups of fewer than `maxFilters` filters), asked of the pass
/// on a copy of `module`.
int64_t countGroupedDirectConvs(ModuleOp module, llvm::StringRef function,
                                int64_t maxFilters);

/// How many of `function`'s convolutions conv-lower-winograd rewrites with
/// `minTiles` (its cost rule) and `filterPackedOnce` (constant weights: half
/// of min-tiles), counted on a copy of `module`.
int64_t countWinogradConvs(ModuleOp module, llvm::StringRef function,
                           int64_t minTiles, bool filterPackedOnce);

} // namespace mlir::conv_lower

#endif
