#!/usr/bin/env bash
# Fuzzes ConvLower's passes: conv-fuzz (fuzz/conv-fuzz.cpp) under libFuzzer,
# ASan and UBSan, built from the sanitize preset (clang-22). Each input is a
# convolution module and one of the passes/pipelines; a crash, a sanitizer
# report, a pass failure or invalid IR on a valid module stops the run and
# leaves the input in build/sanitize/fuzz-artifacts.
#
# Then the same for the files the tools read (conv-fuzz --files: .npy
# tensors and bundle manifests; a crash, an abort or a manifest that does not
# print back to itself is a finding).
#
# Usage: scripts/fuzz.sh [SECONDS]        (default 120; the modules)
#   FILES_SECONDS=N  the file readers' run (default 30)
#   JOBS=N        fuzzing processes (libFuzzer -fork; default 1)
#   CORPUS=DIR    the working corpus (default build/sanitize/fuzz-corpus,
#                 seeded from fuzz/corpus; new coverage is kept there; the
#                 file readers' is DIR-files, seeded from fuzz/corpus-files)
#   MERGE=1       afterwards, merge what each run found into fuzz/corpus
#                 and fuzz/corpus-files (only inputs that add coverage)
# Replay an artifact:  build/sanitize/bin/conv-fuzz FILE  (add --print-module
# to see the module; build/release/bin/conv-fuzz-replay FILE without ASan).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-120}"
jobs="${JOBS:-1}"
corpus="${CORPUS:-build/sanitize/fuzz-corpus}"
artifacts=build/sanitize/fuzz-artifacts

scripts/setup.sh --sanitize
if [ ! -f build/sanitize/build.ninja ]; then
  cmake --preset sanitize >/dev/null
fi
cmake --build build/sanitize --target conv-fuzz

mkdir -p "$corpus" "$corpus-files" "$artifacts"
fork=()
[ "$jobs" -gt 1 ] && fork=(-fork="$jobs")
# allow_user_poisoning=0: LLVM's BumpPtrAllocator, inlined into our
# instrumented code, poisons new slabs, and the uninstrumented libMLIR hands
# out pieces of them without unpoisoning (a false use-after-poison, seen in
# a one-hour run). Heap, stack and leak checks are unaffected.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:allow_user_poisoning=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# fuzz NAME SECONDS CORPUS SEEDS [FLAG]: one libFuzzer run; stops the script
# with the reproducer's name on a finding.
fuzz() {
  local name="$1" time="$2" work="$3" seeds="$4"
  shift 4
  echo "fuzz: $name for ${time}s, $jobs job(s), corpus $work (+ $seeds), artifacts in $artifacts"
  local status=0
  build/sanitize/bin/conv-fuzz "$work" "$seeds" "${fork[@]}" "$@" \
    -max_total_time="$time" -max_len=512 -timeout=120 -rss_limit_mb=6144 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" || status=$?
  if [ "$status" != 0 ]; then
    echo "fuzz: $name FAILED (exit $status); reproducers: $(ls "$artifacts" | tr '\n' ' ')"
    echo "fuzz: replay with build/sanitize/bin/conv-fuzz $* $artifacts/FILE [--print-module]"
    exit "$status"
  fi
  if [ "${MERGE:-0}" = 1 ]; then
    build/sanitize/bin/conv-fuzz -merge=1 "$seeds" "$work" "$@"
  fi
}

fuzz "the passes" "$seconds" "$corpus" fuzz/corpus
fuzz "the file readers" "${FILES_SECONDS:-30}" "$corpus-files" fuzz/corpus-files --files
echo "fuzz: no violation (passes ${seconds}s, file readers ${FILES_SECONDS:-30}s)"
