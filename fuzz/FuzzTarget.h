//===- FuzzTarget.h - the fuzz target's entry points and counts -*- C++ -*-===//

#ifndef CONVLOWER_FUZZ_FUZZTARGET_H
#define CONVLOWER_FUZZ_FUZZTARGET_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace conv_lower_fuzz {

/// What the target saw, for conv-fuzz-replay --stats: a generator whose
/// modules the verifier rejects is fuzzing nothing.
struct FuzzStats {
  long inputs = 0;
  long verified = 0;     // modules that verified and went through the passes
                         // (--files: files a reader accepted)
  long pipelineRuns = 0;
  long violations = 0;   // counted with --keep-going (else the first aborts)
  /// Per op form: (drawn, in a module that verified).
  std::map<std::string, std::pair<long, long>> forms;
};
FuzzStats &fuzzStats();

/// conv-fuzz --files: one byte picks a reader (.npy as f32 or f16, a bundle
/// manifest), the rest is the file (FileInputs.cpp). True when the reader
/// accepted the file.
bool checkFileInput(const uint8_t *data, size_t size);

} // namespace conv_lower_fuzz

#endif
