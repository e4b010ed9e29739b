//===- Timing.h - Timing launches with events -------------------*- C++ -*-===//

#ifndef CONVRT_TIMING_H
#define CONVRT_TIMING_H

#include "convrt/Stream.h"

#include <functional>
#include <vector>

namespace convrt {

struct LaunchTiming {
  double medianMs = 0;
  std::vector<double> samplesMs;
};

/// Runs `launch` (which enqueues work on `stream`) `warmup` times untimed,
/// then `repeat` times, each between two events; returns the median.
/// The median ignores the occasional slow launch that a mean would not.
Expected<LaunchTiming> timeLaunches(std::shared_ptr<Driver> driver,
                                    const Stream &stream, int warmup,
                                    int repeat,
                                    const std::function<Error()> &launch);

} // namespace convrt

#endif // CONVRT_TIMING_H
