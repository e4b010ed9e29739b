#!/usr/bin/env bash
# From nothing to green: install dependencies, configure, build, run every
# test (the lit suite and the unit tests) through ctest.
#   scripts/test.sh [ctest args]              # the release build (CI)
#   scripts/test.sh --sanitize [ctest args]   # the same under ASan + UBSan
#                                             # (clang-22, build/sanitize;
#                                             # slower; builds conv-fuzz too)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=release
setup_args=()
if [ "${1:-}" = "--sanitize" ]; then
  preset=sanitize
  setup_args=(--sanitize)
  shift
  # Reports are fatal, with stacks (lit sets the same for its tests).
  # allow_user_poisoning=0: see scripts/fuzz.sh (LLVM's inlined allocator
  # poisons slabs that the uninstrumented libMLIR never unpoisons).
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:allow_user_poisoning=0}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
fi
scripts/setup.sh "${setup_args[@]}"
scripts/build.sh "$preset"
cd "build/$preset"
ctest --output-on-failure "$@"
