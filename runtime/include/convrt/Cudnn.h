//===- Cudnn.h - cuDNN's convolution as the baseline ------------*- C++ -*-===//
//
// Runs cuDNN's convolution forward on the problem a bundle's kernel solves,
// in the same process and on the same stream, so the two timings compare
// like for like. cuDNN is dlopen'ed (libcudnn.so.9, else .8, or
// $CONVRT_CUDNN): it is optional at build and at run time, and never linked.
// It runs in the primary context that convrt uses too.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_CUDNN_H
#define CONVRT_CUDNN_H

#include "convrt/ConvProblem.h"
#include "convrt/Driver.h"
#include "convrt/Stream.h"

#include <memory>
#include <string>
#include <vector>

namespace convrt {

inline constexpr const char *kCudnnEnvVar = "CONVRT_CUDNN";

struct CudnnResult {
  std::string algorithm; ///< "IMPLICIT_PRECOMP_GEMM", ...
  double medianMs = 0;
  /// Y in problem.layout, decoded from cuDNN's output (problem storage type).
  std::vector<double> output;
};

class Cudnn {
public:
  /// Loads the library; the Error says why it is unavailable.
  static Expected<std::unique_ptr<Cudnn>> load();
  ~Cudnn();
  Cudnn(const Cudnn &) = delete;
  Cudnn &operator=(const Cudnn &) = delete;

  const std::string &libraryPath() const { return path_; }
  /// "9.19.0".
  std::string version() const;

  /// Why cuDNN's legacy convolution API cannot express `problem` (e.g.
  /// asymmetric padding), or "" if it can.
  static std::string unsupportedReason(const ConvProblem &problem);

  /// Uploads the operands (filter in cuDNN's layout), picks the fastest
  /// algorithm (cudnnFindConvolutionForwardAlgorithm), times it on `stream`
  /// (+ cudnnAddTensor for the bias) and returns the output. The primary
  /// context must be current.
  Expected<CudnnResult>
  run(const ConvProblem &problem, std::shared_ptr<Driver> driver,
      const Stream &stream, const std::vector<double> &input,
      const std::vector<double> &filter, const std::vector<double> &bias,
      int warmup, int repeat);

  struct Api;

private:
  Cudnn() = default;
  void *library_ = nullptr;
  std::string path_;
  std::unique_ptr<Api> api_;
  void *handle_ = nullptr; ///< cudnnHandle_t, created on first run.
};

} // namespace convrt

#endif // CONVRT_CUDNN_H
