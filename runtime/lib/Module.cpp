//===- Module.cpp - Loading kernels and launching them --------------------===//

#include "convrt/Module.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace convrt {

Error Function::allowDynamicSharedMemory(unsigned bytes) const {
  if (bytes <= kDefaultDynamicSharedMemoryLimit)
    return Error::success();
  return CONVRT_CU(*driver_, cuFuncSetAttribute)(
             function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
             static_cast<int>(bytes))
      .withContext("kernel " + name_ + " asks for " + std::to_string(bytes) +
                   " bytes of dynamic shared memory");
}

Error Function::launch(const LaunchConfig &config, void **params,
                       void **extra) const {
  CONVRT_TRY(allowDynamicSharedMemory(config.dynamicSharedMemoryBytes));
  return CONVRT_CU(*driver_, cuLaunchKernel)(
      function_, config.grid.x, config.grid.y, config.grid.z, config.block.x,
      config.block.y, config.block.z, config.dynamicSharedMemoryBytes,
      config.stream, params, extra);
}

Expected<Module> Module::loadImage(std::shared_ptr<Driver> driver,
                                   const void *image) {
  Module module;
  CONVRT_TRY(CONVRT_CU(*driver, cuModuleLoadData)(&module.module_, image));
  module.driver_ = std::move(driver);
  return module;
}

/// Trims the unused tail of a fixed-size log buffer.
static std::string logText(const std::vector<char> &buffer, size_t used) {
  size_t length = strnlen(buffer.data(), std::min(used, buffer.size()));
  std::string text(buffer.data(), length);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

Expected<Module> Module::loadPtx(std::shared_ptr<Driver> driver,
                                 const std::string &ptx,
                                 int optimizationLevel) {
  constexpr size_t kLogBytes = 16 * 1024;
  std::vector<char> errorLog(kLogBytes, '\0'), infoLog(kLogBytes, '\0');
  // The driver reads each option value as a pointer-sized word and writes
  // the log sizes it used back into the same slots.
  std::vector<CUjit_option> options = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  std::vector<void *> values = {
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes)),
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(kLogBytes))};
  if (optimizationLevel >= 0) {
    options.push_back(CU_JIT_OPTIMIZATION_LEVEL);
    values.push_back(reinterpret_cast<void *>(uintptr_t(optimizationLevel)));
  }

  Module module;
  Error error = CONVRT_CU(*driver, cuModuleLoadDataEx)(
      &module.module_, ptx.c_str(), static_cast<unsigned>(options.size()),
      options.data(), values.data());
  size_t errorUsed = reinterpret_cast<uintptr_t>(values[1]);
  size_t infoUsed = reinterpret_cast<uintptr_t>(values[3]);
  if (!error.ok()) {
    std::string jitLog = logText(errorLog, errorUsed);
    return error.withHint(jitLog.empty() ? "the JIT left no error log"
                                         : "JIT error log:\n" + jitLog);
  }
  module.driver_ = std::move(driver);
  module.jitInfoLog_ = logText(infoLog, infoUsed);
  return module;
}

Module::Module(Module &&other) noexcept { *this = std::move(other); }

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    reset();
    driver_ = std::move(other.driver_);
    module_ = other.module_;
    jitInfoLog_ = std::move(other.jitInfoLog_);
    other.module_ = nullptr;
  }
  return *this;
}

Module::~Module() { reset(); }

void Module::reset() {
  if (module_)
    (void)CONVRT_CU(*driver_, cuModuleUnload)(module_);
  module_ = nullptr;
}

CUmodule Module::release() {
  CUmodule module = module_;
  module_ = nullptr;
  return module;
}

Expected<Function> Module::function(const std::string &name) const {
  CUfunction function = nullptr;
  CONVRT_TRY(
      CONVRT_CU(*driver_, cuModuleGetFunction)(&function, module_, name.c_str())
          .withContext("kernel " + name));
  return Function(driver_, function, name);
}

} // namespace convrt
