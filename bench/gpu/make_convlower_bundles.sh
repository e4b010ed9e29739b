#!/usr/bin/env bash
# Writes ConvLower's tensor-core kernels as runtime bundles into
# bench/gpu/bundles/ (git-ignored), for bench/gpu/run.sh to run on a GPU
# machine that has no MLIR. Run here, after scripts/build.sh:
#
#   bench/gpu/make_convlower_bundles.sh [CHIP] [--no-models] [--models-batch N]
#                                                  # CHIP default sm_90 (the H200)
#
# The problems: the seed's layer (N=16) and the ResNet-50 3x3 layers at N=128,
# each as f16 NHWC, f16 NCHW and f32 NCHW (tf32 math) — the issue's table —
# two of them as quantized i8 NHWC (the s8 MMA with both zero-point sums;
# checked against the reference only: cuDNN has no zero points), and two
# MobileNetV2 depthwise layers (the direct kernel), and one layer with a fused
# bias and residual (*_residual); with CHIP sm_90, the same five layers again
# as f16, bf16 and tf32 NHWC for sm_90a (the TMA + wgmma kernels, *_sm90a)
# and the residual layer for sm_90a. Then carry the directory
# with the device call: carry ["bench/gpu/bundles"].
#
# And, unless --no-models, bundles/models/<model>/<id>/: every distinct conv
# problem of ResNet-50, MobileNetV2 and ResNeXt-50 32x4d (bench/gpu/models.json,
# batch 8 unless --models-batch N; f16 NHWC) by make_model_bundles.py, with
# bundles/models/index.json (the problems conv-run refused, and why). On by
# default: 77 bundles, ~9.6 MB and ~1 min here; at batch 8 the 67 GFLOP of
# float64 host checks keep them cheap on the device.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CHIP=sm_90
MODELS=1
MODELS_BATCH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-models) MODELS=0 ;;
    --models-batch) MODELS_BATCH="${2:?--models-batch N}"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) CHIP="$1" ;;
  esac
  shift
done
CONV_RUN="${CONV_RUN:-$ROOT/build/release/bin/conv-run}"
OUT="$ROOT/bench/gpu/bundles"
[ -x "$CONV_RUN" ] || { echo "no $CONV_RUN: run scripts/build.sh first" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"

# name  input N,C,H,W  filter F,C,KH,KW
problems=(
  "seed_n16_c64_56_f128 16,64,56,56 128,64,3,3"
  "r50_c64_56_n128 128,64,56,56 64,64,3,3"
  "r50_c128_28_n128 128,128,28,28 128,128,3,3"
  "r50_c256_14_n128 128,256,14,14 256,256,3,3"
  "r50_c512_7_n128 128,512,7,7 512,512,3,3"
)
# suffix  flags
variants=(
  "f16_nhwc --dtype f16 --layout nhwc"
  "f16_nchw --dtype f16 --layout nchw"
  "tf32_nchw --dtype f32 --layout nchw"
)
emit() { # name input filter flags...
  local name=$1 input=$2 filter=$3
  shift 3
  "$CONV_RUN" --input-shape "$input" --filter-shape "$filter" --padding 1 "$@" \
    --chip "$CHIP" --emit-bundle "$OUT/$name" | sed -n 2p
}
for p in "${problems[@]}"; do
  read -r name input filter <<<"$p"
  for v in "${variants[@]}"; do
    read -r suffix flags <<<"$v"
    # shellcheck disable=SC2086
    emit "${name}_${suffix}" "$input" "$filter" $flags
  done
done
# Quantized: torch's padding by the input zero point, both sums in the kernel.
emit seed_n16_c64_56_f128_i8_nhwc 16,64,56,56 128,64,3,3 --dtype i8 --layout nhwc \
  --zero-points 3,-2
emit r50_c256_14_n128_i8_nhwc 128,256,14,14 256,256,3,3 --dtype i8 --layout nhwc \
  --zero-points 3,-2
# Depthwise (MobileNetV2 3x3 layers): the direct CUDA-core kernel, 8 channels a
# thread, next to cuDNN's grouped convolution.
emit mbv2_dw_c144_56_n128_f16_nhwc 128,144,56,56 144,1,3,3 --groups 144 --dtype f16 \
  --layout nhwc
emit mbv2_dw_c576_14_n128_f16_nhwc 128,576,14,14 576,1,3,3 --groups 576 --dtype f16 \
  --layout nhwc
# The fused epilogue: a bias and a residual (a ResNet block's skip connection,
# one more kernel argument read at the output's offsets), checked against the
# convolution plus both; cuDNN's time is the convolution and bias alone.
emit r50_c128_28_n128_f16_nhwc_residual 128,128,28,28 128,128,3,3 --dtype f16 \
  --layout nhwc --bias --residual
emit r50_c128_28_n128_tf32_nchw_residual 128,128,28,28 128,128,3,3 --dtype f32 \
  --layout nchw --bias --residual

# The sm_90a family (TMA im2col + mbarrier ring + wgmma, warp-specialized) beside
# the mma.sync kernels above, on the same problems: f16, bf16 and f32 (tf32
# math) NHWC (FHWC filters), and f16 and f32 NCHW (FCHW filters: the producer
# warpgroup gathers the A tiles), named *_sm90a, so that one run on an H200 puts
# both families next to cuDNN. Only for an sm_90 run (the sm_90a code runs on
# compute capability 9.0 only).
if [ "$CHIP" = sm_90 ]; then
  for p in "${problems[@]}"; do
    read -r name input filter <<<"$p"
    for form in "f16 nhwc" "bf16 nhwc" "f32 nhwc" "f16 nchw" "f32 nchw"; do
      read -r dtype layout <<<"$form"
      "$CONV_RUN" --input-shape "$input" --filter-shape "$filter" --padding 1 \
        --dtype "$dtype" --layout "$layout" --chip sm_90a \
        --emit-bundle "$OUT/${name}_${dtype/f32/tf32}_${layout}_sm90a" | sed -n 2p
    done
  done
  "$CONV_RUN" --input-shape 128,128,28,28 --filter-shape 128,128,3,3 --padding 1 \
    --dtype f16 --layout nhwc --bias --residual --chip sm_90a \
    --emit-bundle "$OUT/r50_c128_28_n128_f16_nhwc_residual_sm90a" | sed -n 2p
fi

if [ "$MODELS" = 1 ]; then
  batch=()
  [ "$MODELS_BATCH" != 0 ] && batch=(--batch "$MODELS_BATCH")
  python3 "$ROOT/bench/gpu/make_model_bundles.py" --conv-run "$CONV_RUN" --chip "$CHIP" \
    --out "$OUT/models" "${batch[@]}"
fi

# runtime/ builds against nlohmann-json (header-only), which the GPU machine
# may lack and cannot download: carry this machine's Debian copy with the
# bundles (relocatable CMake package; run.sh puts it on CMAKE_PREFIX_PATH).
DEPS="$OUT/.deps"
NLOHMANN_CMAKE=$(dirname "$(find /usr/share/cmake /usr/lib/cmake -name nlohmann_jsonConfig.cmake 2>/dev/null | head -1)")
mkdir -p "$DEPS/include" "$DEPS/share/cmake"
cp -r /usr/include/nlohmann "$DEPS/include/"
cp -r "$NLOHMANN_CMAKE" "$DEPS/share/cmake/"
[ -d "$OUT/models" ] && du -sh "$OUT/models"
du -sh "$OUT"
