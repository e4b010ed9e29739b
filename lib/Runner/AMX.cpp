//===- AMX.cpp - may this process run AMX tiles? --------------------------===//
//
// AMX needs three things: the CPU's AMX-TILE, AMX-BF16 and AMX-INT8
// (cpuid; the route takes bf16 and i8 GEMMs alike), the OS
// saving the tile state (XCR0's XTILECFG and XTILEDATA bits; LLVM's host
// feature detection checks both), and on Linux 5.16 and later the process's
// permission to use the tile data: XTILEDATA is an "off by default" state
// component (8 KiB a thread's signal frame grows by), which a process asks
// for with arch_prctl(ARCH_REQ_XCOMP_PERM) before its first tile
// instruction. Without the permission that instruction raises SIGILL.
// (The CPU's features: hostHasAMX, CpuRunner.cpp, with the others.)
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Run.h"

#include "llvm/Support/FormatVariadic.h"

#include <cerrno>
#include <cstring>
#include <string>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace {
// <asm/prctl.h> and the kernel's xstate numbering (fpu/types.h).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXFeatureXTileData = 18;
} // namespace

llvm::StringRef mlir::conv_lower::requestAMXTileData() {
  static const std::string why = []() -> std::string {
#if defined(__linux__) && defined(__x86_64__)
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXFeatureXTileData) == 0)
      return "";
    int error = errno;
    auto refused = [](llvm::StringRef code, llvm::StringRef why) {
      return llvm::formatv("the kernel refused AMX's tile data (arch_prctl("
                           "ARCH_REQ_XCOMP_PERM, XTILEDATA): {0}){1}",
                           code, why)
          .str();
    };
    if (error == EOPNOTSUPP)
      return refused("EOPNOTSUPP", ": the CPU has no AMX, or the kernel does "
                                   "not enable its state");
    if (error == EINVAL)
      return refused("EINVAL", ": the kernel predates Linux 5.16, which "
                               "added the request");
    if (error == EPERM)
      return refused("EPERM", ": the process's signal stack (sigaltstack) is "
                              "too small for the tile state, or a seccomp "
                              "policy forbids it");
    return refused(std::strerror(error), "");
#else
    return "AMX's tile data is requested from Linux on x86-64 only";
#endif
  }();
  return why;
}

std::string mlir::conv_lower::whyNoAMX() {
  if (!hostHasAMX())
    return "this CPU has no AMX (cpuid: AMX-TILE, AMX-BF16 and AMX-INT8 "
           "absent, or the OS does not save their state)";
  return requestAMXTileData().str();
}
