#!/usr/bin/env bash
# Configures (once) and builds a CMake preset into build/<preset>:
#   scripts/build.sh            # release (build/release)
#   scripts/build.sh sanitize   # ASan + UBSan (build/sanitize)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
if [ ! -f "build/$preset/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null
fi
cmake --build "build/$preset"
