#!/usr/bin/env bash
# Builds the ConvLower images without a Docker engine, with debootstrap +
# buildah (vfs storage, chroot isolation), and smoke-tests them:
#
#   1. rootfs     debootstrap --variant=minbase bookworm (reused if present)
#   2. base       import it as localhost/bookworm-base
#   3. cuda base  localhost/bookworm-cuda13: that base + the parts of this
#                 machine's CUDA toolkit the build needs (see below)
#   4. build      buildah build -f docker/Dockerfile, target `build` (the
#                 project built and ctest run inside) -> localhost/convlower:dev
#   5. runtime    target `runtime` (layers reused) -> localhost/convlower:latest
#   6. smoke      in :dev, conv-opt examples/conv2d_nchw.mlir --conv-lower-im2col;
#                 in :latest, convrt-info must exit 1 with the "no /dev/nvidia*"
#                 verdict (no GPU is passed to buildah run)
#
# Not part of the test suite (scripts/test.sh, .ci/run never call it): it
# needs root, network access to deb.debian.org, ~20 GiB of disk, and takes long.
#
# Usage: docker/build-offline.sh [--work DIR] [--keep] [--jobs N] [--no-tests]
#                                [--cuda DIR] [--mirror URL]
#   --work DIR   working directory (default /tmp/convlower-offline): the rootfs,
#                the toolkit copy, buildah's storage (--root DIR/storage)
#   --keep       keep buildah's storage (images, layer cache) afterwards; the
#                rootfs and the toolkit copy are always kept and reused
#   --jobs N     build parallelism inside the image (default 1)
#   --no-tests   RUN_TESTS=0 (skip ctest in the image)
#   --cuda DIR   the toolkit to copy (default /usr/local/cuda)
#   --mirror URL Debian mirror (default http://deb.debian.org/debian)
set -euo pipefail

WORK=/tmp/convlower-offline
KEEP=0
JOBS=1
RUN_TESTS=1
CUDA_SRC=/usr/local/cuda
MIRROR=http://deb.debian.org/debian
while (($#)); do
  case "$1" in
    --work) WORK="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --no-tests) RUN_TESTS=0; shift ;;
    --cuda) CUDA_SRC="$2"; shift 2 ;;
    --mirror) MIRROR="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-offline: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

REPO="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
ROOTFS="$WORK/rootfs"
LOG="$WORK/logs"
mkdir -p "$LOG"
BASE_IMAGE=localhost/bookworm-base
CUDA_IMAGE=localhost/bookworm-cuda13
DEV_IMAGE=localhost/convlower:dev
RT_IMAGE=localhost/convlower:latest
BUILDAH=(buildah --root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
export BUILDAH_ISOLATION=chroot
CONTAINERS=()

say() { printf 'build-offline: %s\n' "$*"; }
die() { printf 'build-offline: FAILED: %s\n' "$*" >&2; exit 1; }
declare -a TIMES=()
step() {  # step NAME COMMAND...: runs it, times it, records the time
  local name="$1"; shift
  local t0=$SECONDS
  say "== $name"
  "$@"
  local dt=$((SECONDS - t0))
  TIMES+=("$(printf '%-34s %4dm%02ds' "$name" $((dt / 60)) $((dt % 60)))")
  say "== $name: done in $((dt / 60))m$((dt % 60))s"
}
cleanup() {
  local c
  for c in "${CONTAINERS[@]}"; do "${BUILDAH[@]}" rm "$c" >/dev/null 2>&1 || true; done
  if [ "$KEEP" != 1 ] && [ -d "$WORK/storage" ]; then
    say "removing buildah storage $WORK/storage (--keep keeps it)"
    "${BUILDAH[@]}" rmi --all --force >/dev/null 2>&1 || true
    rm -rf "$WORK/storage" "$WORK/run" 2>/dev/null || true
  fi
}
summary() {
  say "timings:"
  local t; for t in "${TIMES[@]}"; do printf '  %s\n' "$t"; done
}
trap 'summary; cleanup' EXIT

image_exists() { "${BUILDAH[@]}" inspect --type image "$1" >/dev/null 2>&1; }

# ---- 0. preflight ---------------------------------------------------------
preflight() {
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap, and buildah with chroot isolation, mount and chroot)"
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v buildah >/dev/null || missing+=(buildah)
  if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
      || die "apt-get install ${missing[*]} failed"
  fi
  [ -x "$CUDA_SRC/bin/ptxas" ] && [ -f "$CUDA_SRC/include/cuda.h" ] \
    || die "no CUDA toolkit at $CUDA_SRC (need bin/ptxas and include/cuda.h; --cuda DIR)"
  say "buildah $(buildah --version | awk '{print $3}'), debootstrap $(debootstrap --version | awk '{print $2}'), storage $WORK/storage (vfs), isolation chroot"
  # Can buildah make a container at all (storage, user namespace setup)?
  local out
  if ! out=$("${BUILDAH[@]}" from --name convlower-probe scratch 2>&1); then
    die "buildah cannot create a container here: $out"
  fi
  "${BUILDAH[@]}" rm convlower-probe >/dev/null 2>&1 || true
  local avail
  avail=$(df -Pk "$WORK" | awk 'NR==2{print int($4/1048576)}')
  # vfs stores every layer as a full copy: the LLVM/MLIR layer (~4 GB) is
  # copied for each later step. ~20 GiB at the peak; refuse below 25.
  ((avail >= 25)) || die "only ${avail} GiB free under $WORK; the vfs storage needs ~20 GiB (--work DIR elsewhere)"
  say "${avail} GiB free under $WORK"
}

# ---- 1. rootfs ------------------------------------------------------------
# debootstrap mounts proc/sys in the target; a run killed halfway leaves them
# mounted, and rm -rf must not walk into them.
unmount_rootfs() {
  local m
  for m in dev/pts dev proc sys; do
    if mountpoint -q "$ROOTFS/$m" 2>/dev/null; then umount -l "$ROOTFS/$m" || true; fi
  done
}
make_rootfs() {
  if [ -f "$ROOTFS/.convlower-complete" ]; then
    say "reusing $ROOTFS"
    return
  fi
  unmount_rootfs
  rm -rf "$ROOTFS"
  debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >"$LOG/debootstrap.log" 2>&1 \
    || { tail -20 "$LOG/debootstrap.log" >&2; die "debootstrap failed (log: $LOG/debootstrap.log)"; }
  unmount_rootfs
  # LLVM/MLIR 22 come from bookworm-security here; debootstrap writes only the
  # main suite.
  cat >"$ROOTFS/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
SOURCES
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
  touch "$ROOTFS/.convlower-complete"
}

# ---- 2. base image --------------------------------------------------------
import_base() {
  if image_exists "$BASE_IMAGE" && [ "$BASE_IMAGE_FRESH" != 1 ]; then
    say "reusing image $BASE_IMAGE"; return
  fi
  tar --numeric-owner -C "$ROOTFS" --exclude=./.convlower-complete \
      --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
      -cf "$WORK/rootfs.tar" .
  local c; c=$("${BUILDAH[@]}" from scratch); CONTAINERS+=("$c")
  "${BUILDAH[@]}" add "$c" "$WORK/rootfs.tar" / >/dev/null
  "${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --cmd /bin/bash --label org.opencontainers.image.description="debootstrap minbase bookworm" "$c"
  "${BUILDAH[@]}" commit --quiet "$c" "$BASE_IMAGE" >/dev/null
  rm -f "$WORK/rootfs.tar"
  # Can buildah run a command in it (chroot isolation needs mount + chroot)?
  local out
  if ! out=$("${BUILDAH[@]}" run "$c" -- /bin/sh -c 'echo ok' 2>&1); then
    die "buildah run (chroot isolation) does not work here: $out"
  fi
  say "buildah run works: $out"
}

# ---- 3. CUDA base ---------------------------------------------------------
# Copied from the host toolkit, in the host's layout (cuda -> cuda-13.0;
# targets/x86_64-linux/{include,lib} are symlinks to ../../include, ../../lib,
# lib64 -> lib), so that the Dockerfile's COPYs go through symlinks as they do
# with nvidia/cuda images (where the symlinks point the other way):
#   bin/   nvcc nvcc.profile ptxas fatbinary nvlink cudafe++ bin2c crt/
#   nvvm/  bin/cicc libdevice/
#   include/          all of it (cuda.h for the runtime, cuda_runtime.h,
#                     crt/, cccl/ for nvcc)
#   lib/stubs/        libcuda.so (the stub-detection test)
# and nothing else: no cuBLAS/cuDNN/NCCL/... libraries, no libcudart.
stage_cuda() {
  local real; real=$(readlink -f "$CUDA_SRC")
  local name; name=$(basename "$real")       # cuda-13.0
  local dst="$WORK/cuda/usr/local/$name"
  if [ -f "$WORK/cuda/.convlower-complete" ]; then say "reusing $WORK/cuda"; return; fi
  rm -rf "$WORK/cuda"
  mkdir -p "$dst/bin" "$dst/nvvm" "$dst/lib/stubs" "$dst/targets/x86_64-linux"
  local f
  for f in nvcc nvcc.profile ptxas fatbinary nvlink cudafe++ bin2c crt; do
    [ -e "$real/bin/$f" ] && cp -a "$real/bin/$f" "$dst/bin/"
  done
  cp -a "$real/nvvm/bin" "$real/nvvm/libdevice" "$dst/nvvm/"
  cp -aL "$real/include" "$dst/include"
  cp -aL "$real/lib64/stubs/." "$dst/lib/stubs/"
  ln -s lib "$dst/lib64"
  ln -s ../../include "$dst/targets/x86_64-linux/include"
  ln -s ../../lib "$dst/targets/x86_64-linux/lib"
  ln -s "$name" "$WORK/cuda/usr/local/cuda"
  touch "$WORK/cuda/.convlower-complete"
  say "toolkit copy: $(du -sh "$WORK/cuda/usr" | cut -f1) (of $(du -sh "$real/" | cut -f1) in $real)"
}
make_cuda_base() {
  if image_exists "$CUDA_IMAGE" && [ "$BASE_IMAGE_FRESH" != 1 ]; then
    say "reusing image $CUDA_IMAGE"; return
  fi
  tar --numeric-owner -C "$WORK/cuda" --exclude=./.convlower-complete -cf "$WORK/cuda.tar" .
  local c; c=$("${BUILDAH[@]}" from --pull=never "$BASE_IMAGE"); CONTAINERS+=("$c")
  "${BUILDAH[@]}" add "$c" "$WORK/cuda.tar" / >/dev/null
  "${BUILDAH[@]}" config --env CUDA_HOME=/usr/local/cuda "$c"
  "${BUILDAH[@]}" commit --quiet "$c" "$CUDA_IMAGE" >/dev/null
  rm -f "$WORK/cuda.tar"
}

# ---- 4/5. the project -----------------------------------------------------
build_target() {  # build_target STAGE TAG LOGNAME
  local args=(
    build --isolation chroot --layers --pull=never
    -f "$REPO/docker/Dockerfile" --ignorefile "$REPO/docker/Dockerfile.dockerignore"
    --build-arg "CUDA_IMAGE=$CUDA_IMAGE"
    --build-arg "BUILD_BASE=$BASE_IMAGE"
    --build-arg "RUNTIME_BASE=$BASE_IMAGE"
    --build-arg "RUN_TESTS=$RUN_TESTS"
    --build-arg "JOBS=$JOBS"
    --target "$1" -t "$2" "$REPO"
  )
  if ! "${BUILDAH[@]}" "${args[@]}" >"$LOG/$3.log" 2>&1; then
    tail -40 "$LOG/$3.log" >&2
    die "buildah build --target $1 failed (log: $LOG/$3.log)"
  fi
  grep -E '^(STEP|COMMIT)|tests passed|tests failed|Total Test time' "$LOG/$3.log" | tail -8 || true
}

# ---- 6. smoke tests -------------------------------------------------------
smoke() {
  local c out status
  c=$("${BUILDAH[@]}" from --pull=never "$DEV_IMAGE"); CONTAINERS+=("$c")
  out=$("${BUILDAH[@]}" run --workingdir /src "$c" -- \
        conv-opt examples/conv2d_nchw.mlir --conv-lower-im2col 2>&1) \
    || die "conv-opt failed in $DEV_IMAGE: $out"
  grep -q 'conv_lower.im2col' <<<"$out" || die "conv-opt output has no conv_lower.im2col: $out"
  say "conv-opt in $DEV_IMAGE: ok ($(grep -c 'conv_lower\.' <<<"$out") conv_lower ops)"
  printf '%s\n' "$out" >"$LOG/conv-opt.out"

  c=$("${BUILDAH[@]}" from --pull=never "$RT_IMAGE"); CONTAINERS+=("$c")
  set +e
  out=$("${BUILDAH[@]}" run "$c" -- convrt-info 2>&1); status=$?
  set -e
  printf '%s\n' "$out" >"$LOG/convrt-info.out"
  grep VERDICT <<<"$out" || true
  [ "$status" = 1 ] || die "convrt-info in $RT_IMAGE exited $status (want 1: no GPU here)"
  grep -q 'VERDICT: no usable GPU: no /dev/nvidia\* nodes' <<<"$out" \
    || die "convrt-info in $RT_IMAGE: not the no-/dev/nvidia verdict"
  say "convrt-info in $RT_IMAGE: exit 1, no-/dev/nvidia verdict: ok"

  # The entrypoint (buildah run does not apply ENTRYPOINT: call it by name).
  out=$("${BUILDAH[@]}" run "$c" -- convlower-entrypoint echo entrypoint-ran 2>&1) \
    || die "convlower-entrypoint echo failed: $out"
  grep -q '^VERDICT: no usable GPU' <<<"$out" && grep -q '^entrypoint-ran$' <<<"$out" \
    || die "convlower-entrypoint: expected the diagnosis then the command: $out"
  set +e
  out=$("${BUILDAH[@]}" run --env CONVLOWER_REQUIRE_GPU=1 "$c" -- convlower-entrypoint echo entrypoint-ran 2>&1); status=$?
  set -e
  [ "$status" = 1 ] && ! grep -q '^entrypoint-ran$' <<<"$out" \
    || die "CONVLOWER_REQUIRE_GPU=1: expected exit 1 without running the command (exit $status): $out"
  out=$("${BUILDAH[@]}" run --env CONVLOWER_SKIP_DIAGNOSIS=1 "$c" -- convlower-entrypoint echo entrypoint-ran 2>&1)
  [ "$out" = entrypoint-ran ] || die "CONVLOWER_SKIP_DIAGNOSIS=1: expected only the command's output: $out"
  say "entrypoint in $RT_IMAGE (diagnosis + command, CONVLOWER_REQUIRE_GPU, CONVLOWER_SKIP_DIAGNOSIS): ok"
  say "image sizes:"; "${BUILDAH[@]}" images --format '  {{.Name}}:{{.Tag}} {{.Size}}' | grep -v '<none>' || true
}

BASE_IMAGE_FRESH=0
step "preflight" preflight
if [ ! -f "$ROOTFS/.convlower-complete" ]; then BASE_IMAGE_FRESH=1; fi
step "1. debootstrap rootfs" make_rootfs
step "2. import localhost/bookworm-base" import_base
step "3a. stage the CUDA toolkit copy" stage_cuda
step "3b. commit localhost/bookworm-cuda13" make_cuda_base
step "4. build target 'build' (+ ctest)" build_target build "$DEV_IMAGE" build-dev
step "5. build target 'runtime'" build_target runtime "$RT_IMAGE" build-runtime
step "6. smoke tests" smoke
say "all steps passed"
