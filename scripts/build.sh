#!/usr/bin/env bash
# Configures (once) and builds the release preset into build/release.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/release/build.ninja ]; then
  cmake --preset release >/dev/null
fi
cmake --build build/release
