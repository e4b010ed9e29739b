#!/usr/bin/env bash
# Installs what ConvLower needs to build and test, idempotently and quietly:
# Debian's LLVM/MLIR 22, lit/FileCheck, Ninja, CMake, numpy (numerical tests),
# torch/torchvision (the Python package's tests).
# Says whether the CUDA toolkit (ptxas) is present; it is optional.
#   scripts/setup.sh              # what the release build and tests need
#   scripts/setup.sh --sanitize   # also clang-22 and its sanitizer/libFuzzer
#                                 # runtimes (the sanitize preset, conv-fuzz)
set -euo pipefail

PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  ninja-build cmake g++ python3 python3-numpy python3-venv libgtest-dev libgmock-dev
  libomp-22-dev nlohmann-json3-dev
  # The Python package's tests: torch (oneDNN, the reference), torchvision
  # (the end-to-end model test, bench/models), pip + setuptools (its install test).
  python3-torch python3-torchvision python3-pip python3-setuptools
)
if [ "${1:-}" = "--sanitize" ]; then
  PACKAGES+=(clang-22 libclang-rt-22-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all packages present"
fi

CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
if [ -x "$CUDA_HOME/bin/ptxas" ]; then
  echo "setup: CUDA toolkit found: $("$CUDA_HOME/bin/ptxas" --version | tail -1)"
else
  echo "setup: no CUDA toolkit at $CUDA_HOME (ptxas missing): PTX/cubin tests will be reported UNSUPPORTED"
fi

# cuobjdump and nvdisasm (PyPI's nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm; the
# CUDA 13 toolkit image here has neither): the SASS structure test of the kernels'
# main loops (test/Pipelines/sass-mainloop.test) reads cubins with them. Into a
# virtual environment under .cache/ (git-ignored); offline, the test is UNSUPPORTED.
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.cache/cuda-tools"
if compgen -G "$TOOLS/lib/python3*/site-packages/nvidia/*/bin/cuobjdump" >/dev/null &&
   compgen -G "$TOOLS/lib/python3*/site-packages/nvidia/*/bin/nvdisasm" >/dev/null; then
  echo "setup: cuobjdump and nvdisasm present in $TOOLS"
elif python3 -m venv "$TOOLS" >/dev/null 2>&1 &&
     "$TOOLS/bin/pip" install -q --disable-pip-version-check \
       nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm >/dev/null 2>&1; then
  echo "setup: installed cuobjdump and nvdisasm (PyPI) into $TOOLS"
else
  echo "setup: could not install cuobjdump/nvdisasm from PyPI: the SASS test will be UNSUPPORTED"
fi
