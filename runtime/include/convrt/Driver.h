//===- Driver.h - Loading libcuda.so.1 and calling into it ------*- C++ -*-===//
//
// Driver owns one dlopen'ed libcuda: it finds the library (CONVRT_LIBCUDA, the
// dynamic linker's search, then the usual driver directories), records which
// file was really loaded and whether it is the CUDA toolkit's stub, resolves
// the entry points of DriverApi.h (cuGetProcAddress_v2 first, dlsym of the
// versioned names otherwise), and turns every CUresult into a named Error.
//
// RAII objects (contexts, modules, buffers, streams, events) hold a
// shared_ptr<const Driver> so the library outlives everything created from it.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_DRIVER_H
#define CONVRT_DRIVER_H

#include "convrt/DriverApi.h"
#include "convrt/Error.h"
#include "convrt/Library.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace convrt {

class Driver {
public:
  /// Loads per `options`; the Error explains how to fix a missing driver.
  static Expected<std::shared_ptr<Driver>>
  load(const LoadOptions &options = {});

  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  const DriverApi &api() const { return api_; }
  const LibraryInfo &library() const { return library_; }
  bool isStub() const { return library_.stub; }

  /// cuInit(0), once; later calls return the first result. On the stub the
  /// error says so and what to do.
  Error init();

  /// The driver's CUDA version (cuDriverGetVersion), e.g. 13000.
  Expected<int> version() const;

  /// Error for `result` from `call`, success for CUDA_SUCCESS.
  Error check(CUresult result, const char *call) const;

  /// A driver entry point bound to its name: calling it checks the result,
  /// and a missing entry point is an error naming it. Use through CONVRT_CU.
  template <typename Fn> class BoundCall {
  public:
    BoundCall(const Driver &driver, const char *name, Fn fn)
        : driver_(driver), name_(name), fn_(fn) {}
    template <typename... Args> Error operator()(Args &&...args) const {
      if (!fn_)
        return driver_.missingEntryPoint(name_);
      return driver_.check(fn_(std::forward<Args>(args)...), name_);
    }

  private:
    const Driver &driver_;
    const char *name_;
    Fn fn_;
  };
  template <typename Fn> BoundCall<Fn> bind(const char *name, Fn fn) const {
    return BoundCall<Fn>(*this, name, fn);
  }

  /// "CUDA_ERROR_INVALID_IMAGE" and "device kernel image is invalid", asked
  /// of the driver and, where it cannot answer (the stub), from a table.
  std::string errorName(CUresult result) const;
  std::string errorString(CUresult result) const;

private:
  Driver() = default;
  Error missingEntryPoint(const char *name) const;
  void resolveEntryPoints();

  void *handle_ = nullptr;
  DriverApi api_;
  LibraryInfo library_;
  std::once_flag initOnce_;
  Error initError_;
};

/// Name of a CUresult from a built-in table (no driver needed), or "".
const char *builtinErrorName(int result);

/// What needs the optional entry point `name` ("TMA kernels (sm_90a) need a
/// CUDA 12.0 or later driver"), or null if it is not an optional one.
const char *optionalEntryPointNeed(const std::string &name);

} // namespace convrt

/// CONVRT_CU(driver, cuMemAlloc)(&ptr, bytes) calls the entry point of
/// `driver` (a const Driver&) and yields an Error naming the call with its
/// plain name ("cuMemAlloc", not the cuMemAlloc_v2 that cuda.h maps it to).
#define CONVRT_CU(driver, fn) (driver).bind(#fn, (driver).api().fn)

#endif // CONVRT_DRIVER_H
