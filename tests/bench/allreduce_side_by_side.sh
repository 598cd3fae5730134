#!/usr/bin/env bash
# Side by side on 2 ranks, in one script run: a plain MPI_Allreduce loop (plain_allreduce, timed
# as applications and OSU/IMB time it) against `tpbench collectives -b 4K -e 1M -f 4` in both
# --mpi-mode values, out-of-place fp32 sum, the same warm-up and iterations. Each is run REPEATS
# times (the order rotated each round, so drift hits all three alike) and the table shows
# medians: per size, the plain time, tpbench's time_s.mean, their ratio, and the nonblocking
# mode beside them; "same-run" is the median of tpbench's own --baseline ratio (a plain loop on
# the same buffers in the same processes, right after the timed one), which a busy neighbour
# disturbs less than runs seconds apart. The acceptance is blocking within 10% of plain at every size; the script
# exits 1 when a size is outside it. Timings on a shared machine are noisy: the load average
# is printed before and after.
# Usage: tests/bench/allreduce_side_by_side.sh [BUILD_DIR (build-cpu)] [REPEATS (3)]
# Env: ITERS (1000), WARMUP (100), MPIRUN (mpirun), BIND (core).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build-cpu}
REPEATS=${2:-3}
ITERS=${ITERS:-1000}
WARMUP=${WARMUP:-100}
MPIRUN=${MPIRUN:-mpirun}
BIND=${BIND:-core}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMP_NUM_THREADS=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() { "$MPIRUN" -np 2 --bind-to "$BIND" "$@"; }

plain() { run "$BUILD/tests/plain_allreduce" 4096 1048576 4 "$WARMUP" "$ITERS" >"$OUT/plain.$1"; }
tpbench() {  # round, mode
  run "$BUILD/tpbench" collectives -b 4K -e 1M -f 4 -w "$WARMUP" -n "$ITERS" --mpi-mode "$2" \
    --baseline --out "$OUT/$2.$1" >/dev/null
}

echo "load before: $(uptime)"
for r in $(seq 1 "$REPEATS"); do
  case $((r % 3)) in
    1) plain "$r"; tpbench "$r" blocking; tpbench "$r" nonblocking ;;
    2) tpbench "$r" blocking; tpbench "$r" nonblocking; plain "$r" ;;
    0) tpbench "$r" nonblocking; plain "$r"; tpbench "$r" blocking ;;
  esac
done
echo "load after:  $(uptime)"

python3 - "$OUT" "$REPEATS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
def tpbench(mode, r):
    pts = json.load(open(f"{out}/{mode}.{r}/results.json"))["points"]
    return {p["params"]["bytes"]: p["metrics"]["time_s"]["mean"] for p in pts}
def same_run(mode, r):
    pts = json.load(open(f"{out}/{mode}.{r}/results.json"))["points"]
    return {p["params"]["bytes"]: p["metrics"]["baseline"]["ratio"] for p in pts}
plain, blk, nbl, blk_same = {}, {}, {}, {}
for r in range(1, reps + 1):
    for line in open(f"{out}/plain.{r}"):
        b, t = line.split()
        plain.setdefault(int(b), []).append(float(t))
    for d, mode in ((blk, "blocking"), (nbl, "nonblocking")):
        for b, t in tpbench(mode, r).items():
            d.setdefault(b, []).append(t)
    for b, x in same_run("blocking", r).items():
        blk_same.setdefault(b, []).append(x)
med = lambda v: statistics.median(v) * 1e6
print(f"medians of {reps} runs, 2 ranks, times in us")
print(f"{'size':>8} {'plain':>9} {'blocking':>9} {'ratio':>6} {'nonblock':>9} {'ratio':>6}"
      f" {'same-run':>8}")
bad = 0
for b in sorted(plain):
    p, k, n = med(plain[b]), med(blk[b]), med(nbl[b])
    ok = abs(k / p - 1) <= 0.10
    bad += not ok
    same = statistics.median(blk_same[b])
    print(f"{b // 1024:>7}K {p:9.2f} {k:9.2f} {k / p:6.2f} {n:9.2f} {n / p:6.2f} {same:8.2f}"
          f"{'' if ok else '  <- outside 10%'}")
print("blocking within 10% of plain at every size" if not bad else f"{bad} size(s) outside 10%")
sys.exit(1 if bad else 0)
PY
