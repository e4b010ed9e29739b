//===- OpenMPRuntime.cpp - the process's OpenMP runtime for threaded code -===//
//
// Threaded CPU code starts its parallel regions through GCC's OpenMP ABI
// (GOMP_parallel, omp_get_thread_num, omp_get_num_threads; see
// conv-lower-omp-parallel-to-gomp), which GCC's libgomp, LLVM's libomp and
// Intel's libiomp5 all export. The JIT binds those three names to the
// runtime the process already runs, so a host with its own OpenMP (torch:
// libgomp) and ConvLower share one thread pool instead of two that spin
// against each other. Only a process with none loads LLVM's libomp, into the
// global scope, where an OpenMP library loaded later (torch imported after
// the first convolution) binds to it too. $CONVLOWER_OPENMP names another.
//
//===----------------------------------------------------------------------===//

#include "ConvLower/Runner/Run.h"

#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <string>

using namespace mlir::conv_lower;

namespace {

struct Entry {
  const char *name;
  void *OpenMPRuntime::*slot;
};
constexpr Entry kEntries[] = {
    {"GOMP_parallel", &OpenMPRuntime::parallel},
    {"omp_get_thread_num", &OpenMPRuntime::threadNum},
    {"omp_get_num_threads", &OpenMPRuntime::numThreads},
};

/// The file that defines `address`, or "".
std::string fileOf(void *address) {
  Dl_info info;
  if (!dladdr(address, &info) || !info.dli_fname)
    return "";
  return info.dli_fname;
}

/// The three entry points from `handle` (RTLD_DEFAULT: the global scope),
/// provided all three come from one library.
std::optional<OpenMPRuntime> bindFrom(void *handle) {
  OpenMPRuntime runtime;
  for (const Entry &e : kEntries) {
    void *address = dlsym(handle, e.name);
    if (!address)
      return std::nullopt;
    std::string file = fileOf(address);
    if (&e != kEntries && file != runtime.path)
      return std::nullopt;
    runtime.path = file;
    runtime.*e.slot = address;
  }
  return runtime;
}

/// `library` loaded into the global scope, and its own entry points.
std::optional<OpenMPRuntime> load(const char *library) {
  void *handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
  if (!handle)
    return std::nullopt;
  std::optional<OpenMPRuntime> runtime = bindFrom(handle);
  if (runtime)
    runtime->loaded = true;
  return runtime;
}

OpenMPRuntime failure(std::string why) {
  OpenMPRuntime runtime;
  runtime.error = std::move(why);
  return runtime;
}

/// $CONVLOWER_OPENMP: a library the user names instead (a path, or a name the
/// loader finds). Its own entry points are taken even when the process's
/// global scope has another runtime's: two pools, on purpose (bench/models
/// measures what that costs).
OpenMPRuntime chooseNamed(const char *library) {
  if (std::optional<OpenMPRuntime> runtime = load(library))
    return *runtime;
  return failure(std::string("CONVLOWER_OPENMP=") + library +
                 " is not an OpenMP runtime ConvLower can use (it must load "
                 "and export GOMP_parallel, omp_get_thread_num and "
                 "omp_get_num_threads); unset it to use the process's own");
}

OpenMPRuntime choose() {
  if (const char *named = std::getenv("CONVLOWER_OPENMP"); named && *named)
    return chooseNamed(named);
  // The runtime the process's own OpenMP calls bind to: the global scope
  // first (torch's libgomp is there, as is a preloaded libomp), then a
  // runtime some library loaded privately.
  if (std::optional<OpenMPRuntime> runtime = bindFrom(RTLD_DEFAULT))
    return *runtime;
  for (const char *soname :
       {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so"})
    if (void *handle = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD))
      if (std::optional<OpenMPRuntime> runtime = bindFrom(handle))
        return *runtime;
#ifdef CONV_LOWER_LIBOMP_PATH
  if (std::optional<OpenMPRuntime> runtime = load(CONV_LOWER_LIBOMP_PATH))
    return *runtime;
  return failure(std::string("threads need an OpenMP runtime, the process "
                             "has none, and loading ") +
                 CONV_LOWER_LIBOMP_PATH +
                 " failed (install libomp-22-dev: scripts/setup.sh does)");
#else
  return failure("threads need an OpenMP runtime, the process has none, and "
                 "this build found no libomp: install libomp-22-dev "
                 "(scripts/setup.sh does) and reconfigure");
#endif
}

} // namespace

const OpenMPRuntime &mlir::conv_lower::processOpenMPRuntime() {
  static const OpenMPRuntime runtime = choose();
  return runtime;
}

llvm::StringRef mlir::conv_lower::openMPRuntimePath() {
  return processOpenMPRuntime().path;
}
