//===- Memory.cpp - Device memory -----------------------------------------===//

#include "convrt/Memory.h"

namespace convrt {

Expected<DeviceBuffer> DeviceBuffer::allocate(std::shared_ptr<Driver> driver,
                                              size_t bytes) {
  DeviceBuffer buffer;
  // cuMemAlloc rejects 0 bytes; an empty tensor still needs a valid handle.
  CONVRT_TRY(
      CONVRT_CU(*driver, cuMemAlloc)(&buffer.pointer_, bytes == 0 ? 1 : bytes));
  buffer.driver_ = std::move(driver);
  buffer.bytes_ = bytes;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept {
  *this = std::move(other);
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    (void)free();
    driver_ = std::move(other.driver_);
    pointer_ = other.pointer_;
    bytes_ = other.bytes_;
    other.pointer_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { (void)free(); }

Error DeviceBuffer::free() {
  if (!pointer_)
    return Error::success();
  CUdeviceptr pointer = pointer_;
  pointer_ = 0;
  bytes_ = 0;
  return CONVRT_CU(*driver_, cuMemFree)(pointer);
}

static Error checkSize(size_t bytes, size_t capacity, const char *what) {
  if (bytes <= capacity)
    return Error::success();
  return Error::failure(std::string(what) + " of " + std::to_string(bytes) +
                        " bytes exceeds the buffer's " +
                        std::to_string(capacity));
}

Error DeviceBuffer::copyFromHost(const void *source, size_t bytes) {
  CONVRT_TRY(checkSize(bytes, bytes_, "host-to-device copy"));
  if (bytes == 0)
    return Error::success();
  return CONVRT_CU(*driver_, cuMemcpyHtoD)(pointer_, source, bytes);
}

Error DeviceBuffer::copyToHost(void *destination, size_t bytes) const {
  CONVRT_TRY(checkSize(bytes, bytes_, "device-to-host copy"));
  if (bytes == 0)
    return Error::success();
  return CONVRT_CU(*driver_, cuMemcpyDtoH)(destination, pointer_, bytes);
}

Error DeviceBuffer::fillBytes(uint8_t value) {
  if (bytes_ == 0)
    return Error::success();
  return CONVRT_CU(*driver_, cuMemsetD8)(pointer_, value, bytes_);
}

} // namespace convrt
