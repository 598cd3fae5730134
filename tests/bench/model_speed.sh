#!/usr/bin/env bash
# The model backend's speed targets (issue 11), timed as whole runs: a 1024-virtual-rank decode
# point (--world 1024 --tp 8, Llama-3.1-70B bf16 on h100-sxm, nvlink4 inside nodes and ib-ndr
# between) and a 200-point sweep at TP 8 (batch 1..200), each under 10 s. Each is run REPEATS
# times and the median printed; exits 1 when a median is over its target.
# Usage: tests/bench/model_speed.sh [BUILD_DIR (build-cpu)] [REPEATS (3)]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build-cpu}
REPEATS=${2:-3}
OUT=$(mktemp -d /tmp/tpb-model-speed.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
COMMON=(--backend model --model llama-3.1-70b --dtype bf16 --hardware h100-sxm --phase decode
        --context 2048)

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() {  # prints the wall seconds of one run of "$@"; a failed run fails the benchmark
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null || { echo "failed: $*" >&2; return 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

fail=0
check() {  # name, target seconds, command...
  local name=$1 target=$2
  shift 2
  local runs=()
  local t
  for _ in $(seq "$REPEATS"); do
    t=$(timed "$@") || exit 1
    runs+=("$t")
  done
  local med
  med=$(printf '%s\n' "${runs[@]}" | median)
  printf '%-40s median %6.2f s over %s runs (%s), target < %s s\n' "$name" "$med" "$REPEATS" \
    "$(printf '%.2f ' "${runs[@]}")" "$target"
  if (( $(echo "$med >= $target" | bc -l) )); then fail=1; fi
}

[ -x "$BUILD/tpbench" ] || { echo "no tpbench in $BUILD (give the build directory)" >&2; exit 1; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
check "run, 1024 virtual ranks (128 x TP 8)" 10 \
  "$BUILD/tpbench" run "${COMMON[@]}" --world 1024 --tp 8 --batch 64 --topology ib-ndr --out "$OUT/run"
check "sweep, 200 points at TP 8" 10 \
  "$BUILD/tpbench" sweep "${COMMON[@]}" --world 8 --tp 8 --batch 1..200:+1 --topology nvlink4 \
  --trace-steps 0 --out "$OUT/sweep"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $fail
