//===- Module.h - Loading kernels and launching them ------------*- C++ -*-===//

#ifndef CONVRT_MODULE_H
#define CONVRT_MODULE_H

#include "convrt/Dim3.h"
#include "convrt/Driver.h"

#include <cstdint>
#include <string>

namespace convrt {

/// Dynamic shared memory a kernel may use without opting in; beyond it the
/// driver wants CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set first.
inline constexpr unsigned kDefaultDynamicSharedMemoryLimit = 48 * 1024;

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned dynamicSharedMemoryBytes = 0;
  CUstream stream = nullptr;
};

/// A kernel of a loaded module (not owned: valid while its Module lives).
class Function {
public:
  Function(std::shared_ptr<Driver> driver, CUfunction function,
           std::string name)
      : driver_(std::move(driver)), function_(function),
        name_(std::move(name)) {}

  CUfunction get() const { return function_; }
  const std::string &name() const { return name_; }

  /// Raises the kernel's dynamic shared memory limit when `bytes` is above
  /// the default 48 KiB (a no-op otherwise).
  Error allowDynamicSharedMemory(unsigned bytes) const;

  /// cuLaunchKernel with `params` (one pointer per kernel argument) or
  /// `extra`; sets the shared memory attribute first where needed.
  Error launch(const LaunchConfig &config, void **params,
               void **extra = nullptr) const;

private:
  std::shared_ptr<Driver> driver_;
  CUfunction function_;
  std::string name_;
};

class Module {
public:
  /// cuModuleLoadData: a cubin, a fatbin, or NUL-terminated PTX.
  static Expected<Module> loadImage(std::shared_ptr<Driver> driver,
                                    const void *image);
  /// cuModuleLoadDataEx on PTX with JIT logs; a failure carries the JIT
  /// error log. `optimizationLevel` 0..4, or -1 for the driver's default.
  static Expected<Module> loadPtx(std::shared_ptr<Driver> driver,
                                  const std::string &ptx,
                                  int optimizationLevel = -1);

  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  ~Module();

  CUmodule get() const { return module_; }
  /// The JIT's info log of a PTX load (empty for binaries).
  const std::string &jitInfoLog() const { return jitInfoLog_; }

  Expected<Function> function(const std::string &name) const;

  /// Gives up ownership (for the MLIR ABI, whose caller unloads).
  CUmodule release();

private:
  Module() = default;
  void reset();
  std::shared_ptr<Driver> driver_;
  CUmodule module_ = nullptr;
  std::string jitInfoLog_;
};

} // namespace convrt

#endif // CONVRT_MODULE_H
