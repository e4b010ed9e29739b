#!/usr/bin/env bash
# The main job: conv-run on the seed's layer (N=16, C=64, 56x56, F=128, 3x3,
# stride 1, pad 1). It builds the linalg convolution, rewrites it into
# im2col + GEMM + fold, compiles and runs it (the CPU JIT where no GPU is
# usable; it says which and why), checks it against a float64 direct
# convolution and reports time, error and im2col memory inflation.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh >/dev/null

build/release/bin/conv-run \
  --input-shape 16,64,56,56 --filter-shape 128,64,3,3 --stride 1 --padding 1 \
  --check --repeat 3 "$@"
