#!/usr/bin/env bash
# From nothing to green: install dependencies, configure, build, run every
# test (the lit suite and the unit tests) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build/release
ctest --output-on-failure "$@"
