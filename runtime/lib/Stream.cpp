//===- Stream.cpp - Streams and events ------------------------------------===//

#include "convrt/Stream.h"

namespace convrt {

Expected<Stream> Stream::create(std::shared_ptr<Driver> driver) {
  Stream stream;
  CONVRT_TRY(CONVRT_CU(*driver, cuStreamCreate)(&stream.stream_,
                                                CU_STREAM_NON_BLOCKING));
  stream.driver_ = std::move(driver);
  return stream;
}

Stream::Stream(Stream &&other) noexcept { *this = std::move(other); }

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    reset();
    driver_ = std::move(other.driver_);
    stream_ = other.stream_;
    other.stream_ = nullptr;
  }
  return *this;
}

Stream::~Stream() { reset(); }

void Stream::reset() {
  if (stream_)
    (void)CONVRT_CU(*driver_, cuStreamDestroy)(stream_);
  stream_ = nullptr;
}

Error Stream::synchronize() const {
  return CONVRT_CU(*driver_, cuStreamSynchronize)(stream_);
}

Error Stream::waitFor(const Event &event) const {
  return CONVRT_CU(*driver_, cuStreamWaitEvent)(stream_, event.get(), 0u);
}

Expected<Event> Event::create(std::shared_ptr<Driver> driver, bool timing) {
  Event event;
  CONVRT_TRY(CONVRT_CU(*driver, cuEventCreate)(
      &event.event_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING));
  event.driver_ = std::move(driver);
  return event;
}

Event::Event(Event &&other) noexcept { *this = std::move(other); }

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    reset();
    driver_ = std::move(other.driver_);
    event_ = other.event_;
    other.event_ = nullptr;
  }
  return *this;
}

Event::~Event() { reset(); }

void Event::reset() {
  if (event_)
    (void)CONVRT_CU(*driver_, cuEventDestroy)(event_);
  event_ = nullptr;
}

Error Event::record(CUstream stream) const {
  return CONVRT_CU(*driver_, cuEventRecord)(event_, stream);
}

Error Event::synchronize() const {
  return CONVRT_CU(*driver_, cuEventSynchronize)(event_);
}

Expected<float> Event::elapsedMs(const Event &start, const Event &end) {
  CONVRT_TRY(end.synchronize());
  float ms = 0.0f;
  CONVRT_TRY(CONVRT_CU(*end.driver_, cuEventElapsedTime)(&ms, start.event_,
                                                         end.event_));
  return ms;
}

} // namespace convrt
