//===- ReplayMain.cpp - conv-fuzz without libFuzzer -----------------------===//
//
// conv-fuzz-replay FILE|DIR... [--all-pipelines] [--pipeline=NAME]
//                              [--print-module]
// conv-fuzz-replay --random N [--seed S] [--all-pipelines] ...
//
// Runs the fuzz target on each file (a directory: each file in it, sorted),
// as libFuzzer runs a corpus, so that any build (gcc, no sanitizer runtime)
// replays fuzz/corpus and the reproducers of fixed crashes in its test
// suite. --random N feeds N seeded random inputs instead: no coverage
// feedback, but the same oracle. Exit status 0 when every input passed; a
// violation aborts, with the module printed (conv-fuzz.cpp).
//
//===----------------------------------------------------------------------===//

#include "ConvModuleGenerator.h"
#include "FuzzTarget.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>


namespace {

int runFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    llvm::errs() << "conv-fuzz-replay: cannot read " << path << ": "
                 << buffer.getError().message() << "\n";
    return 2;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                         bytes.size());
  return 0;
}

std::vector<std::string> filesUnder(const std::string &path) {
  std::vector<std::string> files;
  if (!llvm::sys::fs::is_directory(path)) {
    files.push_back(path);
    return files;
  }
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::fs::is_regular_file(it->path()))
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> paths;
  long long randomCount = -1;
  bool printStats = false;
  bool requireEveryForm = false;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--random" && i + 1 < argc) {
      randomCount = std::stoll(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::stoull(argv[++i]);
    } else if (arg == "--stats") {
      printStats = true;
    } else if (arg == "--require-every-form") {
      requireEveryForm = true;
    } else if (arg == "--help" || arg == "-h") {
      llvm::outs()
          << "usage: conv-fuzz-replay FILE|DIR... [--all-pipelines] "
             "[--pipeline=NAME] [--print-module] [--keep-going]\n"
             "       conv-fuzz-replay --random N [--seed S] [--stats] "
             "[--require-every-form] [...]\n"
             "Runs ConvLower's fuzz target on corpus files or on seeded "
             "random inputs.\n";
      return 0;
    } else if (!arg.starts_with("--")) {
      paths.push_back(arg.str());
    }
  }
  if (paths.empty() && randomCount < 0) {
    llvm::errs() << "conv-fuzz-replay: no input (give files, directories or "
                    "--random N; --help)\n";
    return 2;
  }

  long long inputs = 0;
  for (const std::string &path : paths)
    for (const std::string &file : filesUnder(path)) {
      if (int status = runFile(file))
        return status;
      ++inputs;
    }
  std::mt19937_64 rng(seed);
  for (long long i = 0; i < randomCount; ++i) {
    std::vector<uint8_t> bytes(16 + rng() % 240);
    for (uint8_t &b : bytes)
      b = uint8_t(rng());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++inputs;
  }
  const conv_lower_fuzz::FuzzStats &stats = conv_lower_fuzz::fuzzStats();
  if (printStats)
    for (const auto &[form, counts] : stats.forms)
      llvm::outs() << "  " << form << ": " << counts.second << " of "
                   << counts.first << " verified\n";
  // A generator whose modules of some form never verify fuzzes nothing of
  // that form: the test suite asks for at least one valid module of each.
  int missing = 0;
  if (requireEveryForm)
    for (const std::string &form : conv_lower_fuzz::generatorFormNames()) {
      auto it = stats.forms.find(form);
      if (it == stats.forms.end() || it->second.second == 0) {
        llvm::errs() << "conv-fuzz-replay: no valid module of form " << form
                     << "\n";
        ++missing;
      }
    }
  llvm::outs() << "conv-fuzz-replay: " << inputs << " inputs, "
               << stats.verified << " valid modules (--files: accepted files), "
               << stats.pipelineRuns
               << " pipeline runs, " << stats.violations << " violations\n";
  return stats.violations || missing ? 1 : 0;
}
