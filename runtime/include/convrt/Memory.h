//===- Memory.h - Device memory ---------------------------------*- C++ -*-===//
//
// A DeviceBuffer owns one cuMemAlloc allocation. Like every driver call here,
// its operations run in the context current on the calling thread (a
// PrimaryContext acquired on this thread).
//
// Copies and fills are ordered on the legacy default stream, which
// CU_STREAM_NON_BLOCKING streams do not wait for (and a host-to-device copy
// from pageable memory may return before its DMA lands): synchronize the
// context before work on another stream reads what they wrote.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_MEMORY_H
#define CONVRT_MEMORY_H

#include "convrt/Driver.h"

#include <cstddef>
#include <cstdint>

namespace convrt {

class DeviceBuffer {
public:
  static Expected<DeviceBuffer> allocate(std::shared_ptr<Driver> driver,
                                         size_t bytes);

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer();

  CUdeviceptr get() const { return pointer_; }
  size_t size() const { return bytes_; }

  /// Synchronous copies of `bytes` (at most size()) from/to host memory.
  Error copyFromHost(const void *source, size_t bytes);
  Error copyToHost(void *destination, size_t bytes) const;
  /// Sets every byte (0xFF fills floats with NaN: unwritten output shows).
  Error fillBytes(uint8_t value);

  /// Frees now and reports a failure (the destructor can only drop it).
  Error free();

private:
  std::shared_ptr<Driver> driver_;
  CUdeviceptr pointer_ = 0;
  size_t bytes_ = 0;
};

} // namespace convrt

#endif // CONVRT_MEMORY_H
