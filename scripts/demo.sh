#!/usr/bin/env bash
# The main job on an example: rewrite a padded 3x3 convolution into
# im2col + GEMM + fold, then compile it to LLVM and run it on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh >/dev/null
BIN=build/release/bin
LIB=/usr/lib/llvm-22/lib

echo "== examples/conv2d_nchw.mlir after --conv-lower-im2col --canonicalize"
"$BIN/conv-opt" examples/conv2d_nchw.mlir --conv-lower-im2col --canonicalize \
  | sed -n '/func.func @conv/,/^  }/p'

echo
echo "== compiled with --conv-lower-to-llvm and run on the CPU (mlir-runner)"
"$BIN/conv-opt" examples/conv2d_nchw.mlir --conv-lower-to-llvm \
  | /usr/lib/llvm-22/bin/mlir-runner -e main -entry-point-result=void \
      -shared-libs="$LIB/libmlir_runner_utils.so,$LIB/libmlir_c_runner_utils.so"
