//===- TestSupport.h - Helpers shared by the convrt tests -------*- C++ -*-===//

#ifndef CONVRT_TESTS_TESTSUPPORT_H
#define CONVRT_TESTS_TESTSUPPORT_H

#include "FakeCuda.h"

#include "convrt/Driver.h"
#include "convrt/Files.h"
#include "convrt/Json.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <ftw.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace convrt::test {

/// The (offset, size) of each kernel parameter of a fake launch record's
/// "params", in order.
struct ParamLayout {
  std::vector<int> offsets, sizes;
};
inline ParamLayout paramLayout(const JsonValue &params) {
  ParamLayout layout;
  for (const JsonValue &param : params) {
    layout.offsets.push_back(param.at("offset").get<int>());
    layout.sizes.push_back(param.at("size").get<int>());
  }
  return layout;
}

/// `path` with symlinks resolved (as Driver records a library's file).
inline std::string canonicalPath(const std::string &path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? resolved : path;
}

/// A fresh Driver over the fake (its own cuInit, same fake state).
inline std::shared_ptr<Driver> loadFakeDriver() {
  LoadOptions options;
  options.path = fakeLibcudaPath();
  Expected<std::shared_ptr<Driver>> driver = Driver::load(options);
  EXPECT_TRUE(driver.ok()) << driver.error().message();
  return driver.ok() ? *driver : nullptr;
}

/// A temporary directory removed with its contents at scope exit.
class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/convrt-test-XXXXXX";
    path_ = mkdtemp(pattern) ? pattern : "";
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TempDir() {
    if (!path_.empty())
      nftw(
          path_.c_str(),
          [](const char *path, const struct stat *, int, struct FTW *) {
            return ::remove(path);
          },
          16, FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  /// Writes `text` to `name` (creating parent directories) and returns it.
  std::string write(const std::string &name, const std::string &text) const {
    std::string full = file(name);
    for (size_t slash = full.find('/', path_.size() + 1);
         slash != std::string::npos; slash = full.find('/', slash + 1))
      ::mkdir(full.substr(0, slash).c_str(), 0755);
    std::ofstream(full, std::ios::binary) << text;
    return full;
  }
  std::string mkdir(const std::string &name) const {
    std::string full = file(name);
    ::mkdir(full.c_str(), 0755);
    return full;
  }

private:
  std::string path_;
};

/// Sets an environment variable for the scope, restoring it afterwards.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) {
      hadOld_ = true;
      old_ = old;
    }
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (hadOld_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

private:
  std::string name_, old_;
  bool hadOld_ = false;
};

/// The events named `event` the fake driver recorded in `path`
/// (FAKE_CUDA_RECORD), in order.
inline std::vector<JsonValue> recordedEvents(const std::string &path,
                                             const std::string &event) {
  std::vector<JsonValue> events;
  Expected<std::string> text = readFile(path);
  if (!text.ok())
    return events;
  size_t start = 0;
  for (size_t end; (end = text->find('\n', start)) != std::string::npos;
       start = end + 1) {
    Expected<JsonValue> line = parseJson(text->substr(start, end - start));
    EXPECT_TRUE(line.ok()) << line.error().message();
    if (line.ok() && line->at("event") == event)
      events.push_back(*line);
  }
  return events;
}

} // namespace convrt::test

#endif // CONVRT_TESTS_TESTSUPPORT_H
