#!/bin/sh
# ConvLower container entrypoint: the GPU passthrough diagnosis, then the command.
#
#   CONVLOWER_SKIP_DIAGNOSIS=1   skip the diagnosis
#   CONVLOWER_REQUIRE_GPU=1      exit 1 (without running the command) when the
#                                diagnosis finds no usable GPU
#
# The diagnosis (convrt-info) goes to stderr so that the command's stdout
# (e.g. `convrt-run --json`) stays clean. It is not repeated when the command
# is convrt-info itself (the default command).
set -u

if [ "$#" -eq 0 ]; then
  set -- convrt-info
fi

case "$(basename -- "$1")" in
  convrt-info) skip=1 ;;
  *) skip="${CONVLOWER_SKIP_DIAGNOSIS:-0}" ;;
esac

if [ "$skip" != 1 ]; then
  convrt-info >&2
  status=$?
  if [ "$status" -ne 0 ]; then
    if [ "${CONVLOWER_REQUIRE_GPU:-0}" = 1 ]; then
      echo "convlower-entrypoint: no usable GPU (convrt-info exit $status) and CONVLOWER_REQUIRE_GPU=1: not running '$*'" >&2
      exit 1
    fi
    echo "convlower-entrypoint: no usable GPU (convrt-info exit $status); running '$*' anyway (CONVLOWER_SKIP_DIAGNOSIS=1 hides this)" >&2
  fi
fi

exec "$@"
