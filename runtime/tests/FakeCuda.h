//===- FakeCuda.h - Controls of the test-only fake libcuda ------*- C++ -*-===//
//
// The fake's controls are reached through dlopen of the same path the
// runtime loads, which yields the same handle and so the same state.
//
//===----------------------------------------------------------------------===//

#ifndef CONVRT_TESTS_FAKECUDA_H
#define CONVRT_TESTS_FAKECUDA_H

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <dlfcn.h>
#include <string>

namespace convrt::test {

inline const char *fakeLibcudaPath() { return CONVRT_FAKE_LIBCUDA; }

class FakeCuda {
public:
  static FakeCuda &get() {
    static FakeCuda fake;
    return fake;
  }

  int live(const char *kind) const { return live_(kind); }
  void setFailures(const std::string &spec) const {
    setFailures_(spec.c_str());
  }
  int calls(const char *name) const { return calls_(name); }
  int maxDynamicShared(const char *kernel) const {
    return maxDynamicShared_(kernel);
  }
  std::string lastLaunch() const { return lastLaunch_(); }
  int currentDevice() const { return currentDevice_(); }
  /// cuFuncGetParamInfo (a CUresult; convrt does not call it itself).
  int paramInfo(void *function, size_t index, size_t *offset,
                size_t *size) const {
    return static_cast<int>(
        paramInfo_(static_cast<CUfunction>(function), index, offset, size));
  }

  /// Everything a test may create, except contexts (checked separately as
  /// the mgpu ABI keeps its primary context for the process's lifetime).
  void expectNoLiveObjects() const {
    for (const char *kind :
         {"allocations", "modules", "streams", "events", "host_registrations"})
      EXPECT_EQ(live(kind), 0) << "leaked " << kind;
  }

private:
  FakeCuda() {
    handle_ = dlopen(fakeLibcudaPath(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      ADD_FAILURE() << "cannot load the fake libcuda: " << dlerror();
      std::abort();
    }
    resolve(live_, "fakecuda_live");
    resolve(setFailures_, "fakecuda_set_failures");
    resolve(calls_, "fakecuda_calls");
    resolve(maxDynamicShared_, "fakecuda_max_dynamic_shared");
    resolve(lastLaunch_, "fakecuda_last_launch");
    resolve(currentDevice_, "fakecuda_current_device");
    resolve(paramInfo_, "cuFuncGetParamInfo");
  }
  template <typename Fn> void resolve(Fn &fn, const char *name) {
    fn = reinterpret_cast<Fn>(dlsym(handle_, name));
    if (!fn) {
      ADD_FAILURE() << "the fake libcuda lacks " << name;
      std::abort();
    }
  }

  void *handle_ = nullptr;
  int (*live_)(const char *) = nullptr;
  void (*setFailures_)(const char *) = nullptr;
  int (*calls_)(const char *) = nullptr;
  int (*maxDynamicShared_)(const char *) = nullptr;
  const char *(*lastLaunch_)() = nullptr;
  int (*currentDevice_)() = nullptr;
  // The entry point's own type: a call through another one is undefined
  // (UBSan's -fsanitize=function reports it).
  CUresult (*paramInfo_)(CUfunction, size_t, size_t *, size_t *) = nullptr;
};

/// A test fixture over the fake: no injected failures at the start, and
/// nothing left alive at the end.
class FakeCudaTest : public ::testing::Test {
protected:
  void SetUp() override { FakeCuda::get().setFailures(""); }
  void TearDown() override {
    FakeCuda::get().setFailures("");
    FakeCuda::get().expectNoLiveObjects();
    EXPECT_EQ(FakeCuda::get().live("contexts"), 0) << "leaked a context";
  }
  static const FakeCuda &fake() { return FakeCuda::get(); }
};

/// A module image the fake accepts; `conv` is an optional "conv ..." line.
inline std::string fakeImage(const std::string &conv = "") {
  return "FAKECUBIN\n" + conv + (conv.empty() ? "" : "\n");
}

} // namespace convrt::test

#endif // CONVRT_TESTS_FAKECUDA_H
