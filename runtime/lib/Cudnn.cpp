//===- Cudnn.cpp - cuDNN's convolution as the baseline --------------------===//

#include "convrt/Cudnn.h"

#include "convrt/Files.h"
#include "convrt/Memory.h"
#include "convrt/Timing.h"

#include <cstdlib>
#include <dlfcn.h>

#if CONVRT_HAVE_CUDNN_H
#include <cudnn.h>
#endif

namespace convrt {

std::string Cudnn::unsupportedReason(const ConvProblem &p) {
  if (p.isQuantized())
    return "cuDNN's int8 convolution has no zero points (an i8 problem is "
           "checked against the reference only)";
  if (p.padTop != p.padBottom || p.padLeft != p.padRight)
    return "cuDNN's convolution descriptor has symmetric padding only, the "
           "problem pads [" +
           std::to_string(p.padTop) + ", " + std::to_string(p.padLeft) + ", " +
           std::to_string(p.padBottom) + ", " + std::to_string(p.padRight) +
           "]";
  return "";
}

#if CONVRT_HAVE_CUDNN_H

#define CONVRT_CUDNN_ENTRY_POINTS(X)                                           \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnSetTensor4dDescriptor)                                                \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnGetConvolution2dForwardOutputDim)                                     \
  X(cudnnFindConvolutionForwardAlgorithm)                                      \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnAddTensor)

struct Cudnn::Api {
#define CONVRT_DECLARE_CUDNN(name) decltype(&::name) name = nullptr;
  CONVRT_CUDNN_ENTRY_POINTS(CONVRT_DECLARE_CUDNN)
#undef CONVRT_DECLARE_CUDNN
};

namespace {

/// A cuDNN descriptor destroyed with its scope.
template <typename T> class Descriptor {
public:
  using Destroy = cudnnStatus_t (*)(T);
  explicit Descriptor(Destroy destroy) : destroy_(destroy) {}
  ~Descriptor() {
    if (value_)
      destroy_(value_);
  }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  T *address() { return &value_; }
  T get() const { return value_; }

private:
  Destroy destroy_;
  T value_ = nullptr;
};

const char *algorithmName(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
  case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
    return "IMPLICIT_GEMM";
  case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
    return "IMPLICIT_PRECOMP_GEMM";
  case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
    return "GEMM";
  case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
    return "DIRECT";
  case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
    return "FFT";
  case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
    return "FFT_TILING";
  case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
    return "WINOGRAD";
  case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
    return "WINOGRAD_NONFUSED";
  default:
    return "UNKNOWN";
  }
}

cudnnDataType_t dataTypeOf(DType dtype) {
  switch (storageType(dtype)) {
  case DType::F16:
    return CUDNN_DATA_HALF;
  case DType::BF16:
    return CUDNN_DATA_BFLOAT16;
  default:
    return CUDNN_DATA_FLOAT;
  }
}

/// F32 problems are checked at 1e-5, so cuDNN must not use TF32 tensor
/// cores for them (FMA math); TF32 problems allow exactly that.
cudnnMathType_t mathTypeOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDNN_FMA_MATH;
  case DType::TF32:
    return CUDNN_DEFAULT_MATH;
  default:
    return CUDNN_TENSOR_OP_MATH;
  }
}

} // namespace

Expected<std::unique_ptr<Cudnn>> Cudnn::load() {
  std::vector<std::string> names = {"libcudnn.so.9", "libcudnn.so.8"};
  if (const char *path = std::getenv(kCudnnEnvVar); path && *path)
    names = {path};
  std::unique_ptr<Cudnn> cudnn(new Cudnn());
  std::string firstError;
  for (const std::string &name : names) {
    cudnn->library_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (cudnn->library_)
      break;
    if (firstError.empty())
      firstError = dlerror();
  }
  if (!cudnn->library_) {
    std::string tried;
    for (const std::string &name : names)
      tried += (tried.empty() ? "" : ", ") + name;
    return Error::failure("cuDNN not found (tried " + tried +
                          "; dlopen: " + firstError +
                          "): install cuDNN 9 or set " + kCudnnEnvVar);
  }
  cudnn->path_ = loadedLibraryPath(cudnn->library_, "libcudnn");
  cudnn->api_ = std::make_unique<Api>();
#define CONVRT_RESOLVE_CUDNN(name)                                             \
  cudnn->api_->name =                                                          \
      reinterpret_cast<decltype(&::name)>(dlsym(cudnn->library_, #name));      \
  if (!cudnn->api_->name)                                                      \
    return Error::failure(cudnn->path_ + " does not export " #name             \
                                         " (cuDNN 8 or 9 needed)");
  CONVRT_CUDNN_ENTRY_POINTS(CONVRT_RESOLVE_CUDNN)
#undef CONVRT_RESOLVE_CUDNN
  return cudnn;
}

Cudnn::~Cudnn() {
  if (handle_ && api_)
    api_->cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
  if (library_)
    dlclose(library_);
}

std::string Cudnn::version() const {
  size_t v = api_->cudnnGetVersion();
  // cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 major*1000.
  size_t major = v >= 90000 ? v / 10000 : v / 1000;
  size_t minor = v >= 90000 ? (v / 100) % 100 : (v / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(v % 100);
}

Expected<CudnnResult>
Cudnn::run(const ConvProblem &p, std::shared_ptr<Driver> driver,
           const Stream &stream, const std::vector<double> &input,
           const std::vector<double> &filter, const std::vector<double> &bias,
           int warmup, int repeat) {
  if (std::string reason = unsupportedReason(p); !reason.empty())
    return Error::failure(reason);
  const Api &a = *api_;
  auto check = [&](cudnnStatus_t status, const char *call) {
    if (status == CUDNN_STATUS_SUCCESS)
      return Error::success();
    return Error::callFailure(call, static_cast<int>(status),
                              a.cudnnGetErrorString(status), "");
  };
#define CONVRT_DNN(fn, ...) CONVRT_TRY(check(a.fn(__VA_ARGS__), #fn))

  if (!handle_) {
    cudnnHandle_t handle = nullptr;
    CONVRT_DNN(cudnnCreate, &handle);
    handle_ = handle;
  }
  cudnnHandle_t handle = static_cast<cudnnHandle_t>(handle_);
  CONVRT_DNN(cudnnSetStream, handle, stream.get());

  const cudnnDataType_t dataType = dataTypeOf(p.dtype);
  const cudnnDataType_t computeType =
      p.accumulate == DType::F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const cudnnTensorFormat_t format =
      p.layout == Layout::NCHW ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
  // cuDNN's filter format follows the image format: KCRS or KRSC.
  const FilterLayout filterLayout =
      p.layout == Layout::NCHW ? FilterLayout::FCHW : FilterLayout::FHWC;
  auto dim = [](int64_t v) { return static_cast<int>(v); };

  Descriptor<cudnnTensorDescriptor_t> x(a.cudnnDestroyTensorDescriptor),
      y(a.cudnnDestroyTensorDescriptor), b(a.cudnnDestroyTensorDescriptor);
  Descriptor<cudnnFilterDescriptor_t> w(a.cudnnDestroyFilterDescriptor);
  Descriptor<cudnnConvolutionDescriptor_t> conv(
      a.cudnnDestroyConvolutionDescriptor);
  CONVRT_DNN(cudnnCreateTensorDescriptor, x.address());
  CONVRT_DNN(cudnnCreateTensorDescriptor, y.address());
  CONVRT_DNN(cudnnCreateTensorDescriptor, b.address());
  CONVRT_DNN(cudnnCreateFilterDescriptor, w.address());
  CONVRT_DNN(cudnnCreateConvolutionDescriptor, conv.address());
  CONVRT_DNN(cudnnSetTensor4dDescriptor, x.get(), format, dataType, dim(p.n),
             dim(p.c), dim(p.h), dim(p.w));
  CONVRT_DNN(cudnnSetFilter4dDescriptor, w.get(), dataType, format, dim(p.f),
             dim(p.channelsPerGroup()), dim(p.kh), dim(p.kw));
  CONVRT_DNN(cudnnSetConvolution2dDescriptor, conv.get(), dim(p.padTop),
             dim(p.padLeft), dim(p.strideH), dim(p.strideW), dim(p.dilationH),
             dim(p.dilationW), CUDNN_CROSS_CORRELATION, computeType);
  CONVRT_DNN(cudnnSetConvolutionGroupCount, conv.get(), dim(p.groups));
  CONVRT_DNN(cudnnSetConvolutionMathType, conv.get(), mathTypeOf(p.dtype));
  int on = 0, oc = 0, oh = 0, ow = 0;
  CONVRT_DNN(cudnnGetConvolution2dForwardOutputDim, conv.get(), x.get(),
             w.get(), &on, &oc, &oh, &ow);
  if (on != p.n || oc != p.f || oh != p.outH() || ow != p.outW())
    return Error::failure("cuDNN computes a " + std::to_string(on) + "x" +
                          std::to_string(oc) + "x" + std::to_string(oh) + "x" +
                          std::to_string(ow) + " output, the problem " +
                          formatShape(p.outputShape()));
  CONVRT_DNN(cudnnSetTensor4dDescriptor, y.get(), format, dataType, on, oc, oh,
             ow);
  CONVRT_DNN(cudnnSetTensor4dDescriptor, b.get(), format, dataType, 1, oc, 1,
             1);

  auto upload =
      [&](const std::vector<double> &values) -> Expected<DeviceBuffer> {
    std::vector<uint8_t> bytes = encode(p.dtype, values);
    CONVRT_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                            DeviceBuffer::allocate(driver, bytes.size()));
    CONVRT_TRY(buffer.copyFromHost(bytes.data(), bytes.size()));
    return buffer;
  };
  CONVRT_ASSIGN_OR_RETURN(DeviceBuffer xBuffer, upload(input));
  CONVRT_ASSIGN_OR_RETURN(DeviceBuffer wBuffer,
                          upload(convertFilterLayout(p, filter, filterLayout)));
  CONVRT_ASSIGN_OR_RETURN(DeviceBuffer bBuffer,
                          upload(bias.empty() ? std::vector<double>(1) : bias));
  size_t outputBytes = size_t(p.outputElements()) * dtypeSize(p.dtype);
  CONVRT_ASSIGN_OR_RETURN(DeviceBuffer yBuffer,
                          DeviceBuffer::allocate(driver, outputBytes));
  // The uploads ran on the legacy stream; `stream` does not wait for it.
  CONVRT_TRY(CONVRT_CU(*driver, cuCtxSynchronize)());

  // Benchmark the candidates and keep the fastest that works; fall back to
  // the heuristic when benchmarking itself fails.
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  cudnnStatus_t found = a.cudnnFindConvolutionForwardAlgorithm(
      handle, x.get(), w.get(), conv.get(), y.get(),
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf);
  if (found != CUDNN_STATUS_SUCCESS)
    CONVRT_DNN(cudnnGetConvolutionForwardAlgorithm_v7, handle, x.get(), w.get(),
               conv.get(), y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
               perf);
  int chosen = -1;
  for (int i = 0; i < returned && chosen < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS)
      chosen = i;
  if (chosen < 0)
    return Error::failure("cuDNN has no forward algorithm for this problem");
  const cudnnConvolutionFwdAlgo_t algo = perf[chosen].algo;
  CONVRT_DNN(cudnnSetConvolutionMathType, conv.get(), perf[chosen].mathType);
  size_t workspaceBytes = 0;
  CONVRT_DNN(cudnnGetConvolutionForwardWorkspaceSize, handle, x.get(), w.get(),
             conv.get(), y.get(), algo, &workspaceBytes);
  CONVRT_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                          DeviceBuffer::allocate(driver, workspaceBytes));

  const float one = 1.0f, zero = 0.0f;
  auto forward = [&]() -> Error {
    CONVRT_DNN(cudnnConvolutionForward, handle, &one, x.get(),
               reinterpret_cast<void *>(xBuffer.get()), w.get(),
               reinterpret_cast<void *>(wBuffer.get()), conv.get(), algo,
               workspaceBytes ? reinterpret_cast<void *>(workspace.get())
                              : nullptr,
               workspaceBytes, &zero, y.get(),
               reinterpret_cast<void *>(yBuffer.get()));
    if (!bias.empty())
      CONVRT_DNN(cudnnAddTensor, handle, &one, b.get(),
                 reinterpret_cast<void *>(bBuffer.get()), &one, y.get(),
                 reinterpret_cast<void *>(yBuffer.get()));
    return Error::success();
  };
#undef CONVRT_DNN

  CudnnResult result;
  result.algorithm = algorithmName(algo);
  CONVRT_ASSIGN_OR_RETURN(
      LaunchTiming timing,
      timeLaunches(driver, stream, warmup, repeat, forward));
  result.medianMs = timing.medianMs;
  std::vector<uint8_t> bytes(outputBytes);
  CONVRT_TRY(stream.synchronize());
  CONVRT_TRY(yBuffer.copyToHost(bytes.data(), bytes.size()));
  result.output = decode(p.dtype, bytes);
  return result;
}

#else // !CONVRT_HAVE_CUDNN_H

struct Cudnn::Api {};

Expected<std::unique_ptr<Cudnn>> Cudnn::load() {
  return Error::failure("convrt was built without cudnn.h, so it cannot call "
                        "cuDNN: install cuDNN's headers and rebuild");
}

Cudnn::~Cudnn() {}

std::string Cudnn::version() const { return ""; }

Expected<CudnnResult> Cudnn::run(const ConvProblem &, std::shared_ptr<Driver>,
                                 const Stream &, const std::vector<double> &,
                                 const std::vector<double> &,
                                 const std::vector<double> &, int, int) {
  return Error::failure("convrt was built without cudnn.h");
}

#endif // CONVRT_HAVE_CUDNN_H

} // namespace convrt
