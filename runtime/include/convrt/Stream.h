//===- Stream.h - Streams and events ----------------------------*- C++ -*-===//

#ifndef CONVRT_STREAM_H
#define CONVRT_STREAM_H

#include "convrt/Driver.h"

namespace convrt {

class Event;

class Stream {
public:
  /// A non-blocking stream: it does not serialize with the legacy default
  /// stream that other libraries in the process may use.
  static Expected<Stream> create(std::shared_ptr<Driver> driver);

  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  ~Stream();

  CUstream get() const { return stream_; }
  Error synchronize() const;
  Error waitFor(const Event &event) const;

private:
  Stream() = default;
  void reset();
  std::shared_ptr<Driver> driver_;
  CUstream stream_ = nullptr;
};

class Event {
public:
  /// Timing events cost a little more to record; MLIR's ABI uses
  /// non-timing ones for synchronization.
  static Expected<Event> create(std::shared_ptr<Driver> driver,
                                bool timing = true);

  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  ~Event();

  CUevent get() const { return event_; }
  Error record(CUstream stream) const;
  Error synchronize() const;

  /// Milliseconds between two recorded timing events (waits for `end`).
  static Expected<float> elapsedMs(const Event &start, const Event &end);

private:
  Event() = default;
  void reset();
  std::shared_ptr<Driver> driver_;
  CUevent event_ = nullptr;
};

} // namespace convrt

#endif // CONVRT_STREAM_H
