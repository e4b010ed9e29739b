//===- Driver.cpp - Loading libcuda.so.1 and resolving entry points -------===//

#include "convrt/Driver.h"

#include "convrt/Files.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace convrt {
namespace {

#define CONVRT_STRINGIFY_IMPL(x) #x
#define CONVRT_STRINGIFY(x) CONVRT_STRINGIFY_IMPL(x)

/// One row of DriverApi: the plain name (for cuGetProcAddress), the versioned
/// symbol cuda.h maps it to (for dlsym), and the member to fill. Optional
/// ones say what needs them.
struct EntryPoint {
  const char *name;
  const char *abiName;
  void **slot;
  const char *neededBy = nullptr; ///< Optional entry points only.
};

std::vector<EntryPoint> entryPoints(DriverApi &api) {
#define CONVRT_ENTRY_POINT(name)                                               \
  EntryPoint{#name, CONVRT_STRINGIFY(name),                                    \
             reinterpret_cast<void **>(&api.name)},
#define CONVRT_OPTIONAL_ENTRY_POINT(name, needs)                               \
  EntryPoint{#name, CONVRT_STRINGIFY(name),                                    \
             reinterpret_cast<void **>(&api.name), needs},
  return {CONVRT_DRIVER_ENTRY_POINTS(CONVRT_ENTRY_POINT)
              CONVRT_DRIVER_OPTIONAL_ENTRY_POINTS(CONVRT_OPTIONAL_ENTRY_POINT)};
#undef CONVRT_OPTIONAL_ENTRY_POINT
#undef CONVRT_ENTRY_POINT
}

/// Entry points whose versioned symbol is newer than some supported drivers
/// while the plain symbol has the same signature: cuEventElapsedTime_v2 first
/// appeared in 12.8. Only these may fall back to the plain name, which for
/// the others (cuMemAlloc, ...) is an older, incompatible ABI.
bool plainNameHasSameSignature(const char *name) {
  return std::strcmp(name, "cuEventElapsedTime") == 0;
}

/// Where driver installs put libcuda.so.1 when the dynamic linker's cache
/// does not list it (containers whose ld.so.cache predates the injection).
std::vector<std::string> defaultSearchNames() {
  return {kLibcudaSoname,
          "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
          "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
          "/usr/lib64/libcuda.so.1",
          "/usr/local/nvidia/lib64/libcuda.so.1",
          "/usr/lib/wsl/lib/libcuda.so.1"};
}

std::string lastDlError() {
  const char *message = dlerror();
  return message ? message : "unknown dlopen error";
}

bool isUnderStubsDirectory(const std::string &path) {
  return path.find("/stubs/") != std::string::npos;
}

struct BuiltinError {
  int code;
  const char *name;
  const char *text;
};

/// The codes this runtime's diagnoses talk about, with the driver's own
/// wording, for when the driver cannot be asked (the stub answers every call,
/// cuGetErrorName included, with CUDA_ERROR_STUB_LIBRARY).
constexpr BuiltinError kBuiltinErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
     "API call requires a newer CUDA driver"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {304, "CUDA_ERROR_OPERATING_SYSTEM",
     "OS call failed or operation not supported on this OS"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
     "forward compatibility was attempted on non supported HW"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const BuiltinError *findBuiltinError(int code) {
  for (const BuiltinError &e : kBuiltinErrors)
    if (e.code == code)
      return &e;
  return nullptr;
}

} // namespace

const char *optionalEntryPointNeed(const std::string &name) {
#define CONVRT_OPTIONAL_NEED(entry, needs)                                     \
  if (name == #entry)                                                          \
    return needs;
  CONVRT_DRIVER_OPTIONAL_ENTRY_POINTS(CONVRT_OPTIONAL_NEED)
#undef CONVRT_OPTIONAL_NEED
  return nullptr;
}

const char *builtinErrorName(int result) {
  const BuiltinError *e = findBuiltinError(result);
  return e ? e->name : "";
}

Expected<std::shared_ptr<Driver>> Driver::load(const LoadOptions &options) {
  std::string explicitPath = options.path;
  const char *fromEnv = nullptr;
  if (explicitPath.empty()) {
    fromEnv = std::getenv(kLibcudaEnvVar);
    if (fromEnv && *fromEnv)
      explicitPath = fromEnv;
  }

  std::shared_ptr<Driver> driver(new Driver());
  if (!explicitPath.empty()) {
    driver->handle_ = dlopen(explicitPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!driver->handle_) {
      std::string where = fromEnv
                              ? std::string(kLibcudaEnvVar) + "=" + explicitPath
                              : explicitPath;
      return Error::failure("cannot load libcuda from " + where + " (" +
                            lastDlError() + ")")
          .withHint(fromEnv ? "point " + std::string(kLibcudaEnvVar) +
                                  " at the driver's libcuda.so.1 or unset it"
                            : "check the path");
    }
    driver->library_.requested = explicitPath;
  } else {
    std::vector<std::string> names = options.searchNames.empty()
                                         ? defaultSearchNames()
                                         : options.searchNames;
    std::string firstError;
    for (const std::string &name : names) {
      driver->handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (driver->handle_) {
        driver->library_.requested = name;
        break;
      }
      if (firstError.empty())
        firstError = lastDlError();
    }
    if (!driver->handle_) {
      std::string tried;
      for (const std::string &name : names)
        tried += (tried.empty() ? "" : ", ") + name;
      return Error::failure(
          std::string(kLibcudaSoname) +
          " not found: the NVIDIA container toolkit did not inject the "
          "driver; start the container with --gpus all (and "
          "NVIDIA_DRIVER_CAPABILITIES including compute) or install the "
          "NVIDIA driver (tried " +
          tried + "; dlopen: " + firstError + ")");
    }
  }

  LibraryInfo &library = driver->library_;
  library.realPath = loadedLibraryPath(driver->handle_, library.requested);
  if (isUnderStubsDirectory(library.realPath) ||
      isUnderStubsDirectory(library.requested)) {
    library.stub = true;
    library.stubReason = "lives in the CUDA toolkit's stubs directory";
  }
  if (!dlsym(driver->handle_, "cuInit"))
    return Error::failure(library.realPath +
                          " is not a CUDA driver library: it has no cuInit");
  driver->resolveEntryPoints();
  return driver;
}

Driver::~Driver() {
  if (handle_)
    dlclose(handle_);
}

void Driver::resolveEntryPoints() {
  // cuGetProcAddress_v2 returns the entry point matching the ABI of a given
  // CUDA version: ask for the version our prototypes come from, or the
  // driver's own if it is older (it knows no newer ABI).
  using GetProcAddressFn = decltype(&::cuGetProcAddress_v2);
  auto getProcAddress =
      reinterpret_cast<GetProcAddressFn>(dlsym(handle_, "cuGetProcAddress_v2"));
  int requestedVersion = CUDA_VERSION;
  using DriverGetVersionFn = decltype(&::cuDriverGetVersion);
  auto driverGetVersion = reinterpret_cast<DriverGetVersionFn>(
      dlsym(handle_, "cuDriverGetVersion"));
  int driverVersion = 0;
  if (driverGetVersion && driverGetVersion(&driverVersion) == CUDA_SUCCESS &&
      driverVersion > 0)
    requestedVersion = std::min(requestedVersion, driverVersion);

  for (const EntryPoint &entry : entryPoints(api_)) {
    void *fn = nullptr;
    bool driverLacksIt = false;
    if (getProcAddress) {
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
      // Legacy-stream variants, as linking against libcuda would give.
      if (getProcAddress(entry.name, &fn, requestedVersion,
                         CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                         &status) != CUDA_SUCCESS ||
          status != CU_GET_PROC_ADDRESS_SUCCESS) {
        fn = nullptr;
        driverLacksIt = status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND ||
                        status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      } else if (fn) {
        library_.resolvedWithGetProcAddress = true;
      }
    }
    // An optional entry point is newer than cuGetProcAddress_v2, so when
    // that says the driver has none (at our ABI), it is the driver's own
    // answer: take it rather than a dlsym'ed symbol of another ABI. (This
    // is also how the fake driver plays an older one: FAKE_CUDA_NO_TMA.)
    if (!fn && !(entry.neededBy && driverLacksIt)) {
      fn = dlsym(handle_, entry.abiName);
      if (!fn && plainNameHasSameSignature(entry.name))
        fn = dlsym(handle_, entry.name);
    }
    *entry.slot = fn;
    if (!fn)
      (entry.neededBy ? library_.missingOptionalEntryPoints
                      : library_.missingEntryPoints)
          .push_back(entry.name);
  }
}

Error Driver::init() {
  std::call_once(initOnce_, [this] {
    initError_ = CONVRT_CU(*this, cuInit)(0u);
    if (initError_.code() == CUDA_ERROR_STUB_LIBRARY) {
      library_.stub = true;
      library_.stubReason = "cuInit returned CUDA_ERROR_STUB_LIBRARY";
    }
    if (!initError_.ok() && library_.stub)
      initError_.withHint(
          library_.realPath +
          " is the CUDA toolkit's stub libcuda, not a driver: it only "
          "satisfies the linker. Remove the toolkit's stubs directory from "
          "LD_LIBRARY_PATH / " +
          std::string(kLibcudaEnvVar) +
          " and run where the NVIDIA driver is installed or injected "
          "(docker run --gpus all ...)");
  });
  return initError_;
}

Expected<int> Driver::version() const {
  int version = 0;
  CONVRT_TRY(CONVRT_CU(*this, cuDriverGetVersion)(&version));
  return version;
}

std::string Driver::errorName(CUresult result) const {
  const char *name = nullptr;
  if (api_.cuGetErrorName &&
      api_.cuGetErrorName(result, &name) == CUDA_SUCCESS && name)
    return name;
  if (const BuiltinError *e = findBuiltinError(result))
    return e->name;
  return "CUresult " + std::to_string(static_cast<int>(result));
}

std::string Driver::errorString(CUresult result) const {
  const char *text = nullptr;
  if (api_.cuGetErrorString &&
      api_.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    return text;
  if (const BuiltinError *e = findBuiltinError(result))
    return e->text;
  return "";
}

Error Driver::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Error::success();
  return Error::callFailure(call, static_cast<int>(result), errorName(result),
                            errorString(result));
}

Error Driver::missingEntryPoint(const char *name) const {
  if (const char *neededBy = optionalEntryPointNeed(name))
    return Error::callFailure(name, CUDA_ERROR_NOT_FOUND, "not available",
                              "the driver " + library_.realPath + " has no " +
                                  name + ": " + neededBy +
                                  "; update the NVIDIA driver");
  return Error::callFailure(
      name, CUDA_ERROR_NOT_FOUND, "not available",
      "the driver " + library_.realPath +
          " does not export it; it is older "
          "than this runtime needs, update the NVIDIA driver");
}

} // namespace convrt
