//===- Bundle.h - the GPU kernel written as a runtime bundle -*- C++ -*-===//
//
// conv-run --emit-bundle: the tensor-core kernel compiled for one chip
// (no GPU needed, only ptxas) and written as the bundle convrt-run and
// bench/gpu read, and the report of what was written.
//
//===----------------------------------------------------------------------===//

#ifndef CONVLOWER_RUNNER_BUNDLE_H
#define CONVLOWER_RUNNER_BUNDLE_H

#include "ConvLower/Runner/Run.h"

#include "convrt/Manifest.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::conv_lower {

/// What emitBundle wrote: manifest.json plus the kernel's files.
struct BundleReport {
  std::string directory;
  convrt::KernelSpec kernel; ///< name, binary and PTX files, grid, block, chip
  std::string tiles;
  size_t cubinBytes = 0;
};
/// Compiles the tensor-core kernel for options.chip (default sm_80) and
/// writes the runtime bundle into `directory`; needs ptxas, not a GPU.
llvm::Expected<BundleReport> emitBundle(MLIRContext &context,
                                        const RunOptions &options,
                                        const std::string &directory);

void printBundleHuman(const BundleReport &bundle, llvm::raw_ostream &os);
void printBundleJson(const BundleReport &bundle, llvm::raw_ostream &os);

} // namespace mlir::conv_lower

#endif
