#!/usr/bin/env bash
# bench/gpu: the one script for a machine with an NVIDIA GPU, nvcc and CMake
# but no MLIR (the lent H200, a slim container). Run from anywhere:
#
#   OUT=/some/dir bench/gpu/run.sh        # results land in $OUT (default bench/gpu/out)
#
# 1. builds runtime/ (convrt) with CMake;
# 2. convrt-info: the passthrough diagnosis and telemetry;
# 3. the runtime's real-device tests (ctest -R DeviceTest), where GoogleTest exists;
# 4. convrt-run on every bundle: ConvLower's (carried into bench/gpu/bundles/
#    from a machine with MLIR: `conv-run --emit-bundle DIR`) and the naive
#    nvcc reference kernels made here; each is checked against a float64
#    host reference and timed next to cuDNN in the same run;
# 5. one table, $OUT/table.md;
# 6. the per-model bundles (bench/gpu/bundles/models/<model>/<id>/, the distinct
#    conv layers of ResNet-50, MobileNetV2, ResNeXt-50 32x4d in models.json)
#    in a second convrt-run: $OUT/models.jsonl and the per-model tables with
#    each model's total next to cuDNN's, $OUT/models.md.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${OUT:-$ROOT/bench/gpu/out}"
BUILD="${BUILD:-$ROOT/build/gpu-runtime}"
mkdir -p "$OUT"
log() { echo "bench/gpu: $*" | tee -a "$OUT/run.log"; }

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# nlohmann-json carried with the bundles (make_convlower_bundles.sh), for a
# machine without Debian's nlohmann-json3-dev.
if [ -d "$ROOT/bench/gpu/bundles/.deps" ]; then
  generator+=(-DCMAKE_PREFIX_PATH="$ROOT/bench/gpu/bundles/.deps")
fi
log "building runtime/ in $BUILD"
cmake -S "$ROOT/runtime" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  >"$OUT/cmake.log" 2>&1 && cmake --build "$BUILD" -j "$(nproc)" >>"$OUT/cmake.log" 2>&1 \
  || { log "runtime build failed (see $OUT/cmake.log)"; exit 2; }

# cuDNN: a system libcudnn.so.9, else the one PyTorch ships (with its
# sub-libraries beside it).
if ! ldconfig -p 2>/dev/null | grep -q libcudnn.so.9; then
  torch_lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
  for d in "$torch_lib" $(python3 -c 'import nvidia.cudnn, os; print(os.path.join(os.path.dirname(nvidia.cudnn.__file__), "lib"))' 2>/dev/null); do
    if [ -n "$d" ] && [ -e "$d/libcudnn.so.9" ]; then
      export CONVRT_CUDNN="$d/libcudnn.so.9" LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
      log "cuDNN from $d"
      break
    fi
  done
fi

log "convrt-info"
"$BUILD/bin/convrt-info" | tee "$OUT/convrt-info.txt"
"$BUILD/bin/convrt-info" --json >"$OUT/convrt-info.json"
info_rc=${PIPESTATUS[0]}

if [ -n "$(ctest --test-dir "$BUILD" -N 2>/dev/null | grep DeviceTest)" ]; then
  log "runtime device tests"
  ctest --test-dir "$BUILD" -R DeviceTest --output-on-failure 2>&1 | tee "$OUT/device-tests.txt"
else
  log "no GoogleTest here: runtime device tests not built"
fi

log "naive reference bundles (nvcc)"
python3 "$ROOT/bench/gpu/make_reference_bundles.py" --out "$BUILD/reference-bundles" \
  >"$OUT/bundles.log" 2>&1 || log "nvcc failed (see $OUT/bundles.log)"
bundles=()
for b in "$ROOT"/bench/gpu/bundles/*/ "$BUILD"/reference-bundles/*/; do
  [ -f "$b/manifest.json" ] && bundles+=("$b")
done
log "${#bundles[@]} bundles"

"$BUILD/bin/convrt-run" "${bundles[@]}" --json >"$OUT/results.jsonl" 2>"$OUT/convrt-run.err"
run_rc=$?
python3 "$ROOT/bench/gpu/table.py" "$OUT/results.jsonl" | tee "$OUT/table.md"

# Per-model conv layers (make_convlower_bundles.sh writes them by default).
MODELS_DIR="$ROOT/bench/gpu/bundles/models"
model_bundles=()
for b in "$MODELS_DIR"/*/*/; do
  [ -f "$b/manifest.json" ] && model_bundles+=("$b")
done
models_rc=0
if [ "${#model_bundles[@]}" -gt 0 ]; then
  log "${#model_bundles[@]} per-model bundles"
  "$BUILD/bin/convrt-run" "${model_bundles[@]}" --json >"$OUT/models.jsonl" 2>"$OUT/models-run.err"
  models_rc=$?
else
  log "no per-model bundles in $MODELS_DIR (make_convlower_bundles.sh without --no-models)"
  : >"$OUT/models.jsonl"
fi
# Also without bundles or results: every layer is then listed as skipped or not run.
python3 "$ROOT/bench/gpu/table.py" --models "$ROOT/bench/gpu/models.json" \
  --index "$MODELS_DIR/index.json" "$OUT/models.jsonl" >"$OUT/models.md" \
  && grep -A6 '^## Totals' "$OUT/models.md" | tee -a "$OUT/run.log"

if command -v compute-sanitizer >/dev/null && [ "${#bundles[@]}" -gt 0 ]; then
  log "compute-sanitizer memcheck on ${bundles[0]}"
  compute-sanitizer --tool memcheck "$BUILD/bin/convrt-run" "${bundles[0]}" \
    --repeat 1 --warmup 0 --no-cudnn >"$OUT/memcheck.txt" 2>&1
  tail -3 "$OUT/memcheck.txt" | tee -a "$OUT/run.log"
  # The sm_90a family (TMA, mbarriers, wgmma) on its smallest bench layer, with
  # TMA's im2col loads (NHWC) and with the producer's gather (NCHW).
  for form in nhwc nchw; do
    tma="$ROOT/bench/gpu/bundles/seed_n16_c64_56_f128_f16_${form}_sm90a"
    [ -f "$tma/manifest.json" ] || continue
    log "compute-sanitizer memcheck on $tma"
    compute-sanitizer --tool memcheck "$BUILD/bin/convrt-run" "$tma" \
      --repeat 1 --warmup 0 --no-cudnn >"$OUT/memcheck-sm90a-$form.txt" 2>&1
    tail -3 "$OUT/memcheck-sm90a-$form.txt" | tee -a "$OUT/run.log"
  done
fi

{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>/dev/null || true; } >"$OUT/gpu.txt"
log "done: convrt-info exit $info_rc, convrt-run exit $run_rc (models: $models_rc); results in $OUT"
# The worse of the two convrt-runs: 2 (could not run) over 1 (mismatch) over 0.
(( models_rc > run_rc )) && run_rc=$models_rc
exit $(( info_rc != 0 ? 1 : run_rc ))
