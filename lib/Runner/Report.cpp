//===- Report.cpp - human-readable and JSON reports -----------------------===//

#include "ConvLower/Runner/Report.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <type_traits>

using namespace mlir::conv_lower;
using llvm::formatv;

llvm::StringRef mlir::conv_lower::toString(Target target) {
  switch (target) {
  case Target::Auto:
    return "auto";
  case Target::Cpu:
    return "cpu";
  case Target::CpuTwin:
    return "cpu-twin";
  case Target::Cuda:
    return "cuda";
  }
  llvm_unreachable("unknown target");
}

llvm::StringRef mlir::conv_lower::toString(Im2colRoute route) {
  switch (route) {
  case Im2colRoute::Explicit:
    return "explicit";
  case Im2colRoute::Implicit:
    return "implicit";
  case Im2colRoute::Panels:
    return "panels";
  case Im2colRoute::Direct:
    return "direct";
  case Im2colRoute::Winograd:
    return "winograd";
  }
  llvm_unreachable("unknown im2col route");
}

static std::string megabytes(int64_t bytes) {
  return formatv("{0:F2} MB", bytes / 1e6).str();
}

/// The bytes the GEMM's A operand occupies over the input's: X_col's when
/// im2col is explicit; 1 when implicit (the input is read in place) or in
/// panels (a block's rows at a time, never the whole X_col).
static double inflation(const RunReport &r) {
  if (r.im2col != Im2colRoute::Explicit)
    return 1.0;
  return *r.inputBytes > 0 ? static_cast<double>(*r.im2colBytes) / *r.inputBytes
                           : 0.0;
}

void mlir::conv_lower::printHuman(const RunReport &r, llvm::raw_ostream &os) {
  assert(r.target != Target::Auto && "a report of a run names its target");
  os << "conv-run: " << r.problem << "  [" << r.source << "]\n";
  os << "target    : " << toString(r.target) << " (" << r.targetReason << ")\n";
  if (!r.devices.empty()) {
    os << "devices   : " << r.devices.size() << ", driver " << r.driverVersion
       << "\n";
    for (auto [i, d] : llvm::enumerate(r.devices))
      os << formatv("  [{0}] {1}, sm_{2}{3}, {4} SMs, {5:F1} GiB, {6}\n", i,
                    d.name, d.ccMajor, d.ccMinor, d.smCount,
                    d.totalMemoryBytes / double(1ull << 30), d.pciBusId);
  } else {
    os << "devices   : none usable (" << r.deviceProblem << ")\n";
  }
  os << formatv("compile   : {0:F0} ms ({1}, im2col {2}){3}\n", r.compileMs,
                r.pipeline, toString(r.im2col),
                r.diskCache == "hit" ? ", linked from the disk cache" : "");
  if (!r.kernel.empty())
    os << "kernel    : " << (r.chip.empty() ? "" : r.chip + " ") << r.kernel
       << "\n";
  if (r.packMs)
    os << formatv("packed    : {0:F2} MB computed from the constant weights "
                  "once, in {1:F3} ms (not in the timed runs)\n",
                  *r.packedBytes / 1e6, *r.packMs);
  os << formatv("lowered   : {0:F3} ms median of {1} (after {2} warm-up)",
                r.loweredMs, r.repeat, r.warmup);
  if (r.threads)
    os << formatv(" on {0} thread{1}", *r.threads, *r.threads == 1 ? "" : "s");
  if (!r.openmpRuntime.empty())
    os << " (" << llvm::sys::path::filename(r.openmpRuntime) << ")";
  if (r.gflops)
    os << formatv(", {0:F1} GFLOP/s", *r.gflops);
  os << "\n";
  if (r.referenceMs)
    os << formatv("reference : {0:F3} ms median of {4} ({1}); lowered is "
                  "{2:F2}x {3}\n",
                  *r.referenceMs, r.referenceKind,
                  *r.referenceMs >= r.loweredMs ? *r.referenceMs / r.loweredMs
                                                : r.loweredMs / *r.referenceMs,
                  *r.referenceMs >= r.loweredMs ? "faster" : "slower",
                  r.referenceRepeat);
  if (r.cudnnMs)
    os << formatv("cudnn     : {0:F3} ms median ({1}); lowered is {2:F2}x "
                  "cuDNN's speed\n",
                  *r.cudnnMs, r.cudnnNote, *r.cudnnMs / r.loweredMs);
  else if (!r.cudnnNote.empty())
    os << "cudnn     : not run (" << r.cudnnNote << ")\n";
  if (r.check) {
    const CheckResult &c = *r.check;
    os << formatv("check     : {0} — max_abs_diff {1:E2}, rel_l2_error {2:E2} "
                  "(tolerance {3:E0}) against {4}, ",
                  c.passed ? "PASS" : "FAIL", c.maxAbsDiff, c.relL2Error,
                  c.tolerance, r.checkAgainst);
    if (c.checked == c.total)
      os << "all " << c.total << " outputs\n";
    else
      os << c.checked << " sampled of " << c.total << " outputs\n";
  }
  if (r.inputBytes && r.im2colBytes)
    os << formatv("memory    : input {0}, im2col {1} ({2}), inflation "
                  "{3:F2}x\n",
                  megabytes(*r.inputBytes), megabytes(*r.im2colBytes),
                  toString(r.im2col), inflation(r));
  if (!r.outputPath.empty())
    os << "output    : " << r.outputPath << "\n";
}

void mlir::conv_lower::writeDevicesJson(llvm::json::OStream &j,
                                        llvm::StringRef driverVersion,
                                        llvm::ArrayRef<DeviceInfo> devices,
                                        llvm::StringRef problem) {
  j.attribute("count", static_cast<int64_t>(devices.size()));
  j.attribute("driver_version", driverVersion);
  if (!problem.empty())
    j.attribute("problem", problem);
  j.attributeArray("devices", [&] {
    for (const DeviceInfo &d : devices)
      j.object([&] {
        j.attribute("name", d.name);
        j.attribute("compute_capability",
                    formatv("{0}.{1}", d.ccMajor, d.ccMinor).str());
        j.attribute("sm_count", d.smCount);
        j.attribute("total_memory_bytes",
                    static_cast<int64_t>(d.totalMemoryBytes));
        j.attribute("pci_bus_id", d.pciBusId);
      });
  });
}

void mlir::conv_lower::printJson(const RunReport &r, llvm::raw_ostream &os) {
  assert(r.target != Target::Auto && "a report of a run names its target");
  llvm::json::OStream j(os, 2);
  // Six significant digits: measurements, not bit patterns.
  auto number = [&](llvm::StringRef key, double v) {
    j.attributeBegin(key);
    j.rawValue(std::isfinite(v) ? formatv("{0}", llvm::format("%.6g", v)).str()
                                : std::string("null"));
    j.attributeEnd();
  };
  // null when unknown; byte counts stay integers, measurements get number().
  auto optional = [&](llvm::StringRef key, auto v) {
    if (!v)
      j.attribute(key, nullptr);
    else if constexpr (std::is_integral_v<typename decltype(v)::value_type>)
      j.attribute(key, *v);
    else
      number(key, *v);
  };
  j.object([&] {
    j.attribute("problem", r.problem);
    j.attribute("source", r.source);
    j.attribute("target", toString(r.target));
    j.attribute("target_reason", r.targetReason);
    j.attributeObject("device", [&] {
      writeDevicesJson(j, r.driverVersion, r.devices, r.deviceProblem);
    });
    j.attribute("pipeline", r.pipeline);
    j.attribute("im2col", toString(r.im2col));
    if (!r.kernel.empty())
      j.attribute("kernel", r.kernel);
    if (!r.chip.empty())
      j.attribute("chip", r.chip);
    if (!r.kernelFamily.empty())
      j.attribute("kernel_family", r.kernelFamily);
    optional("threads", r.threads);
    if (!r.openmpRuntime.empty())
      j.attribute("openmp_runtime", r.openmpRuntime);
    number("compile_ms", r.compileMs);
    if (!r.diskCache.empty())
      j.attribute("disk_cache", r.diskCache);
    optional("pack_ms", r.packMs);
    optional("packed_bytes", r.packedBytes);
    j.attribute("repeat", r.repeat);
    j.attribute("warmup", r.warmup);
    number("lowered_ms", r.loweredMs);
    optional("reference_ms", r.referenceMs);
    j.attribute("reference_repeat", r.referenceRepeat);
    j.attribute("reference_kind", r.referenceKind);
    optional("speedup", r.referenceMs ? std::optional<double>(*r.referenceMs /
                                                              r.loweredMs)
                                      : std::nullopt);
    optional("gflops", r.gflops);
    optional("cudnn_ms", r.cudnnMs);
    if (!r.cudnnNote.empty())
      j.attribute("cudnn_note", r.cudnnNote);
    if (r.check) {
      j.attribute("check_against", r.checkAgainst);
      number("max_abs_diff", r.check->maxAbsDiff);
      number("rel_l2_error", r.check->relL2Error);
      number("tolerance", r.check->tolerance);
      j.attribute("checked_outputs", r.check->checked);
      j.attribute("total_outputs", r.check->total);
      j.attribute("check_passed", r.check->passed);
    }
    optional("input_bytes", r.inputBytes);
    optional("im2col_bytes", r.im2colBytes);
    optional("inflation", r.inputBytes && r.im2colBytes
                              ? std::optional<double>(inflation(r))
                              : std::nullopt);
    if (!r.outputPath.empty())
      j.attribute("output", r.outputPath);
  });
  os << "\n";
}
