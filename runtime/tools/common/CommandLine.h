//===- CommandLine.h - Argument helpers shared by the convrt tools -*- C++ -*-//

#ifndef CONVRT_TOOLS_COMMANDLINE_H
#define CONVRT_TOOLS_COMMANDLINE_H

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace convrt::tools {

/// Exit status for a bad command line (distinct from the tools' results).
inline constexpr int kUsageExit = 2;

/// Reads the value after option `argv[i]` (advancing i), or complains.
inline bool optionValue(int argc, char **argv, int &i, std::string &value) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "%s: %s needs a value\n", argv[0], argv[i]);
    return false;
  }
  value = argv[++i];
  return true;
}

/// An integer option value in [min, max], or a complaint naming the option.
inline bool integerOption(int argc, char **argv, int &i, long long min,
                          long long max, long long &out) {
  std::string option = argv[i], text;
  if (!optionValue(argc, argv, i, text))
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < min ||
      value > max) {
    std::fprintf(stderr,
                 "%s: %s expects an integer in [%lld, %lld], got '%s'\n",
                 argv[0], option.c_str(), min, max, text.c_str());
    return false;
  }
  out = value;
  return true;
}

} // namespace convrt::tools

#endif // CONVRT_TOOLS_COMMANDLINE_H
