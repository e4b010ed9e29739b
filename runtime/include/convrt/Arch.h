//===- Arch.h - The GPU architectures ConvLower compiles for ----*- C++ -*-===//
//
// The one table of compile targets, shared by the compiler (the implicit-GEMM
// pass's chip option, the pipelines, conv-run's --chip) and the runtime
// (manifests, choosing a chip for a device). Header-only and free of LLVM and
// CUDA so that both sides include it.
//
// The kernels need sm_80 instructions (cp.async, ldmatrix, mma.sync with
// bf16/tf32 operands); the PTX ISA floor of each architecture is from the PTX
// ISA release notes (sm_86: 7.1, sm_89 and sm_90: 7.8, sm_90a: 8.0).
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_ARCH_H
#define CONVRT_ARCH_H

#include <optional>
#include <string>
#include <string_view>

namespace convrt {

enum class Arch { SM80, SM86, SM89, SM90, SM90a };

struct ArchInfo {
  Arch arch;
  const char *name;    ///< "sm_90a": the ptxas/NVVM spelling.
  int ccMajor, ccMinor; ///< The compute capability it runs on.
  bool archSpecific;   ///< The "a" variants run on that exact CC only.
  int minPtxVersion;   ///< e.g. 78 for PTX ISA 7.8 (+ptx78).
};

inline constexpr ArchInfo kArchs[] = {
    {Arch::SM80, "sm_80", 8, 0, false, 70},
    {Arch::SM86, "sm_86", 8, 6, false, 71},
    {Arch::SM89, "sm_89", 8, 9, false, 78},
    {Arch::SM90, "sm_90", 9, 0, false, 78},
    {Arch::SM90a, "sm_90a", 9, 0, true, 80},
};

/// The PTX features every supported architecture accepts.
inline constexpr const char *kDefaultPtxFeatures = "+ptx80";

inline const ArchInfo &archInfo(Arch arch) {
  for (const ArchInfo &info : kArchs)
    if (info.arch == arch)
      return info;
  return kArchs[0];
}

inline const char *archName(Arch arch) { return archInfo(arch).name; }

inline std::optional<Arch> parseArch(std::string_view name) {
  for (const ArchInfo &info : kArchs)
    if (name == info.name)
      return info.arch;
  return std::nullopt;
}

/// "sm_80, sm_86, sm_89, sm_90 or sm_90a", for diagnostics and --help.
inline std::string archList() {
  std::string list;
  constexpr size_t count = sizeof(kArchs) / sizeof(kArchs[0]);
  for (size_t i = 0; i < count; ++i) {
    if (i)
      list += i + 1 == count ? " or " : ", ";
    list += kArchs[i].name;
  }
  return list;
}

/// The architecture to compile for on a device of compute capability
/// major.minor, for that device: its own where listed, the arch-specific
/// variant where there is one (sm_90a on 9.0: the code runs there only, and
/// its TMA + wgmma kernels need it), sm_90 for newer devices (they JIT its
/// PTX), none below sm_80.
inline std::optional<Arch> archForComputeCapability(int major, int minor) {
  if (major < 8)
    return std::nullopt;
  std::optional<Arch> portable;
  for (const ArchInfo &info : kArchs) {
    if (info.ccMajor != major || info.ccMinor != minor)
      continue;
    if (info.archSpecific)
      return info.arch;
    portable = info.arch;
  }
  if (portable)
    return portable;
  if (major > 9 || (major == 9 && minor > 0))
    return Arch::SM90;
  // An unlisted 8.x (8.7 Orin, ...): sm_80 code runs on every 8.x.
  return Arch::SM80;
}

} // namespace convrt

#endif // CONVRT_ARCH_H
