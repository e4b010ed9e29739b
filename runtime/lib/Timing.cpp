//===- Timing.cpp - Timing launches with events ---------------------------===//

#include "convrt/Timing.h"

#include <algorithm>

namespace convrt {

Expected<LaunchTiming> timeLaunches(std::shared_ptr<Driver> driver,
                                    const Stream &stream, int warmup,
                                    int repeat,
                                    const std::function<Error()> &launch) {
  if (repeat < 1)
    return Error::failure("repeat must be at least 1");
  for (int i = 0; i < warmup; ++i)
    CONVRT_TRY(launch());
  CONVRT_TRY(stream.synchronize());

  CONVRT_ASSIGN_OR_RETURN(Event start, Event::create(driver));
  CONVRT_ASSIGN_OR_RETURN(Event stop, Event::create(driver));
  LaunchTiming timing;
  for (int i = 0; i < repeat; ++i) {
    CONVRT_TRY(start.record(stream.get()));
    CONVRT_TRY(launch());
    CONVRT_TRY(stop.record(stream.get()));
    CONVRT_ASSIGN_OR_RETURN(float ms, Event::elapsedMs(start, stop));
    timing.samplesMs.push_back(ms);
  }
  std::vector<double> sorted = timing.samplesMs;
  std::sort(sorted.begin(), sorted.end());
  size_t mid = sorted.size() / 2;
  timing.medianMs =
      sorted.size() % 2 ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
  return timing;
}

} // namespace convrt
