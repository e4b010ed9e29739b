//===- Context.cpp - The device's primary context -------------------------===//

#include "convrt/Context.h"

namespace convrt {

Expected<PrimaryContext> PrimaryContext::acquire(std::shared_ptr<Driver> driver,
                                                 int ordinal) {
  CONVRT_TRY(driver->init());
  const Driver &drv = *driver;
  PrimaryContext result;
  result.ordinal_ = ordinal;
  CONVRT_TRY(CONVRT_CU(drv, cuDeviceGet)(&result.device_, ordinal));
  CUcontext context = nullptr;
  CONVRT_TRY(
      CONVRT_CU(drv, cuDevicePrimaryCtxRetain)(&context, result.device_));
  // From here on the destructor releases the retain, whatever fails next.
  result.driver_ = std::move(driver);
  result.context_ = context;
  CONVRT_TRY(CONVRT_CU(drv, cuCtxGetCurrent)(&result.previous_));
  CONVRT_TRY(result.makeCurrent());
  return result;
}

PrimaryContext::PrimaryContext(PrimaryContext &&other) noexcept {
  *this = std::move(other);
}

PrimaryContext &PrimaryContext::operator=(PrimaryContext &&other) noexcept {
  if (this != &other) {
    reset();
    driver_ = std::move(other.driver_);
    context_ = other.context_;
    previous_ = other.previous_;
    device_ = other.device_;
    ordinal_ = other.ordinal_;
    other.context_ = nullptr;
  }
  return *this;
}

PrimaryContext::~PrimaryContext() { reset(); }

void PrimaryContext::reset() {
  if (!context_)
    return;
  // Leave no released context current on this thread: restore what was.
  CUcontext current = nullptr;
  if (CONVRT_CU(*driver_, cuCtxGetCurrent)(&current).ok() &&
      current == context_)
    (void)CONVRT_CU(*driver_, cuCtxSetCurrent)(previous_);
  (void)CONVRT_CU(*driver_, cuDevicePrimaryCtxRelease)(device_);
  context_ = nullptr;
}

Error PrimaryContext::makeCurrent() const {
  return CONVRT_CU(*driver_, cuCtxSetCurrent)(context_);
}

Error PrimaryContext::synchronize() const {
  return CONVRT_CU(*driver_, cuCtxSynchronize)();
}

} // namespace convrt
