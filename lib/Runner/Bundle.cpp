//===- Bundle.cpp - the GPU kernel written as a runtime bundle ------------===//
//
// conv-run --emit-bundle: conv-lower-to-nvvm for one chip (GpuKernel.cpp),
// written for convrt-run on a machine without MLIR; and its report, as text
// or JSON.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Bundle.h"

#include "RunSteps.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::conv_lower;
using namespace mlir::conv_lower::runner;

llvm::Expected<BundleReport>
mlir::conv_lower::emitBundle(MLIRContext &context, const RunOptions &options,
                             const std::string &directory) {
  if (!options.mlirFile.empty())
    return badInput("--emit-bundle takes its problem from flags (the "
                    "bundle's manifest describes it), not a .mlir file");
  if (options.im2col == Im2colChoice::Explicit)
    return badInput("--emit-bundle writes the implicit-GEMM kernel; "
                    "--im2col explicit needs two kernels and a bundle holds "
                    "one");
  auto prepared = prepare(context, options);
  if (!prepared)
    return prepared.takeError();
  assert(prepared->problem && "a problem from flags is described");
  std::string refusal;
  if (failed(checkGpuRoute(*prepared->problem, refusal)))
    return badInput("--emit-bundle: " + refusal);
  convrt::Arch arch = options.chip.value_or(convrt::Arch::SM80);
  auto build = compileKernelFor(*prepared->module, prepared->function,
                                *prepared->problem, arch);
  if (!build)
    return build.takeError();
  if (llvm::Error e = writeGpuBundle(directory, *build))
    return asFailure(std::move(e));
  BundleReport r;
  r.directory = directory;
  r.kernel = build->manifest.kernel;
  r.tiles = build->tiles;
  r.cubinBytes = build->cubin.size();
  return r;
}

void mlir::conv_lower::printBundleHuman(const BundleReport &r,
                                        llvm::raw_ostream &os) {
  const convrt::KernelSpec &k = r.kernel;
  os << llvm::formatv(
      "conv-run: wrote {0}: {1}, {2} ({3} bytes), {4}\n"
      "  kernel {5} for {6}: grid {7}x{8}x{9}, block {10}, tiles {11}\n",
      r.directory, convrt::kManifestFileName, k.binary, r.cubinBytes, k.ptx,
      k.name, k.chip, k.grid.x, k.grid.y, k.grid.z, k.block.x, r.tiles);
}

void mlir::conv_lower::printBundleJson(const BundleReport &r,
                                       llvm::raw_ostream &os) {
  const convrt::KernelSpec &k = r.kernel;
  llvm::json::OStream j(os, 2);
  auto dims = [&](llvm::StringRef key, const convrt::Dim3 &d) {
    j.attributeArray(key, [&] {
      for (unsigned v : {d.x, d.y, d.z})
        j.value(v);
    });
  };
  j.object([&] {
    j.attribute("bundle", r.directory);
    j.attributeArray("files", [&] {
      for (const std::string &f :
           {std::string(convrt::kManifestFileName), k.binary, k.ptx})
        j.value(f);
    });
    j.attribute("kernel", k.name);
    j.attribute("chip", k.chip);
    dims("grid", k.grid);
    dims("block", k.block);
    j.attribute("tiles", r.tiles);
    j.attribute("cubin_bytes", static_cast<int64_t>(r.cubinBytes));
  });
  os << "\n";
}
