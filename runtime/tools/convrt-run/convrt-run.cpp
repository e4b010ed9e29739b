//===- convrt-run.cpp - Run AOT convolution bundles -----------------------===//
//
// For each bundle: load the kernel, run it on seeded random data, time it
// (median of --repeat launches after --warmup), check it against the float64
// reference, time cuDNN on the same problem, and print a table row or one
// JSON object per line. Exit status: 0 every bundle ran and matched, 1 a
// result was outside its tolerance, 2 a bundle could not run (bad manifest,
// no usable GPU, CUDA error) or bad arguments.
//
//===----------------------------------------------------------------------===//

#include "../common/CommandLine.h"

#include "convrt/Driver.h"
#include "convrt/Json.h"
#include "convrt/Manifest.h"
#include "convrt/Runner.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace convrt;

static void printUsage(const char *program) {
  std::printf(
      "usage: %s BUNDLE... [--repeat N] [--warmup N] [--json] [--no-cudnn]\n"
      "       [--no-check] [--seed S] [--device N] [--no-header]\n"
      "       [--libcuda PATH]\n\n"
      "Runs, times and checks the kernel of each AOT bundle directory.\n"
      "  --repeat N      timed launches, median reported (default 20)\n"
      "  --warmup N      untimed launches first (default 5)\n"
      "  --json          one JSON object per bundle and line\n"
      "  --no-cudnn      do not run cuDNN for the baseline\n"
      "  --no-check      skip the float64 reference check\n"
      "  --seed S        seed of the random inputs (default 0)\n"
      "  --device N      CUDA device ordinal (default 0)\n"
      "  --no-header     omit the table header\n"
      "  --libcuda PATH  load this libcuda (like CONVRT_LIBCUDA)\n"
      "Exit status: 0 all matched, 1 a mismatch, 2 a bundle could not run.\n",
      program);
}

int main(int argc, char **argv) {
  RunOptions options;
  bool json = false, header = true;
  LoadOptions load;
  std::vector<std::string> bundles;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    long long number = 0;
    bool ok = true;
    if (arg == "--repeat") {
      ok = tools::integerOption(argc, argv, i, 1, 1000000, number);
      options.repeat = static_cast<int>(number);
    } else if (arg == "--warmup") {
      ok = tools::integerOption(argc, argv, i, 0, 1000000, number);
      options.warmup = static_cast<int>(number);
    } else if (arg == "--seed") {
      ok = tools::integerOption(argc, argv, i, 0, LLONG_MAX, number);
      options.seed = static_cast<uint64_t>(number);
    } else if (arg == "--device") {
      ok = tools::integerOption(argc, argv, i, 0, 1 << 20, number);
      options.device = static_cast<int>(number);
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--no-cudnn") {
      options.cudnn = false;
    } else if (arg == "--no-check") {
      options.check = false;
    } else if (arg == "--no-header") {
      header = false;
    } else if (arg == "--libcuda") {
      ok = tools::optionValue(argc, argv, i, load.path);
    } else if (arg == "-h" || arg == "--help") {
      printUsage(argv[0]);
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr, "%s: unknown option '%s' (see --help)\n", argv[0],
                   arg.c_str());
      return tools::kUsageExit;
    } else {
      bundles.push_back(arg);
    }
    if (!ok)
      return tools::kUsageExit;
  }
  if (bundles.empty()) {
    std::fprintf(stderr, "%s: no bundle given (see --help)\n", argv[0]);
    return tools::kUsageExit;
  }

  Expected<std::shared_ptr<Driver>> driver = Driver::load(load);
  Error usable = driver.ok() ? (*driver)->init() : driver.error();
  if (!usable.ok()) {
    std::fprintf(stderr, "%s: %s\n(run convrt-info for a full diagnosis)\n",
                 argv[0], usable.message().c_str());
    return 2;
  }

  int status = 0;
  bool printedHeader = false;
  for (const std::string &directory : bundles) {
    Expected<Bundle> bundle = loadBundle(directory);
    Expected<RunReport> report = bundle.ok()
                                     ? runBundle(*bundle, *driver, options)
                                     : Expected<RunReport>(bundle.error());
    if (!report.ok()) {
      std::fprintf(stderr, "%s: %s: %s\n", argv[0], directory.c_str(),
                   report.error().message().c_str());
      if (json)
        std::printf("%s\n", dumpJson({{"source", directory},
                                      {"error", report.error().message()}})
                                .c_str());
      status = 2;
      continue;
    }
    if (json) {
      std::printf("%s\n", dumpJson(runReportJson(*report)).c_str());
    } else {
      if (header && !printedHeader)
        std::printf("%s\n", runTableHeader().c_str());
      printedHeader = true;
      std::printf("%s\n", runTableRow(*report).c_str());
      if (!report->loadNote.empty())
        std::printf("  note: %s\n", report->loadNote.c_str());
      if (!report->cudnn.ran)
        std::printf("  cudnn: not run: %s\n", report->cudnn.reason.c_str());
    }
    if (!report->passed() && status == 0)
      status = 1;
    std::fflush(stdout);
  }
  return status;
}
