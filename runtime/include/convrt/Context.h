//===- Context.h - The device's primary context -----------------*- C++ -*-===//
//
// convrt only uses primary contexts: cuDNN and anything else built on the
// CUDA runtime work in the primary context, so buffers, modules and streams
// created here are valid there too.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_CONTEXT_H
#define CONVRT_CONTEXT_H

#include "convrt/Driver.h"

namespace convrt {

/// A retained primary context, made current on the calling thread. On
/// destruction it releases the retain and, if it is still current, puts back
/// the context that was current before, so scopes nest (a caller holding a
/// PrimaryContext may call code that acquires its own).
class PrimaryContext {
public:
  /// cuInit, cuDeviceGet(ordinal), cuDevicePrimaryCtxRetain, cuCtxSetCurrent.
  static Expected<PrimaryContext> acquire(std::shared_ptr<Driver> driver,
                                          int ordinal = 0);

  PrimaryContext(PrimaryContext &&other) noexcept;
  PrimaryContext &operator=(PrimaryContext &&other) noexcept;
  ~PrimaryContext();

  CUcontext get() const { return context_; }
  CUdevice device() const { return device_; }
  int ordinal() const { return ordinal_; }
  const std::shared_ptr<Driver> &driver() const { return driver_; }

  /// Makes the context current on the calling thread (threads other than
  /// the one that acquired it).
  Error makeCurrent() const;
  Error synchronize() const;

private:
  PrimaryContext() = default;
  void reset();

  std::shared_ptr<Driver> driver_;
  CUcontext context_ = nullptr;
  CUcontext previous_ = nullptr; ///< Current before acquire().
  CUdevice device_ = 0;
  int ordinal_ = 0;
};

} // namespace convrt

#endif // CONVRT_CONTEXT_H
