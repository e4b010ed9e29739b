#!/usr/bin/env bash
# Soak test: N random convolutions (default 10000) through every ConvLower route,
# differentially against upstream's loop lowering and a float64 numpy reference
# (test/Integration/Random/random_convs.py), one configuration per core at a time.
#
# Usage: scripts/soak.sh [N]
#   SEED=S          replay a run (default: a fresh seed, printed first)
#   KEEP=DIR        where reproducers of failures go (default: /tmp/convlower-soak-SEED)
#   STRICT=1        count the known defects (--xfail-known) as failures too
#   PYTHON=python3  an interpreter with numpy (default: the first of python3,
#                   /usr/bin/python3 that imports it)
#   BUILD=DIR       the build holding bin/conv-opt (default: build/release)
# Exit status 1 when any configuration failed; the last line is the summary.
set -euo pipefail
cd "$(dirname "$0")/.."

count="${1:-10000}"
seed="${SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) % 2147483648 ))}"
keep="${KEEP:-/tmp/convlower-soak-$seed}"
build="${BUILD:-build/release}"

# pyenv and virtualenv shims may shadow the system python that has numpy.
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import numpy' 2>/dev/null; then python="$candidate"; break; fi
  done
fi
[ -n "$python" ] || { echo "soak: no python3 with numpy (set PYTHON)" >&2; exit 2; }

xfail=(--xfail-known)
[ "${STRICT:-0}" = 1 ] && xfail=()

echo "soak: seed $seed, $count configurations, $(nproc) jobs, reproducers in $keep"
start=$SECONDS
status=0
"$python" test/Integration/Random/random_convs.py --count "$count" --seed "$seed" \
  --jobs "$(nproc)" --keep-failures "$keep" "${xfail[@]}" \
  --conv-opt "$build/bin/conv-opt" || status=$?
echo "soak: seed $seed done in $(( SECONDS - start ))s, exit $status" \
     "(replay: SEED=$seed scripts/soak.sh $count)"
exit "$status"
