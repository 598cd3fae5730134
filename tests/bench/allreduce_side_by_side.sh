#!/usr/bin/env bash
# Side by side on 2 ranks, in one script run: a plain MPI_Allreduce loop (plain_allreduce, timed
# as applications and OSU/IMB time it) against `tpbench collectives -b 4K -e 1M -f 4` in both
# --mpi-mode values, out-of-place fp32 sum, the same warm-up and iterations. Each is run REPEATS
# times (the order rotated each round, so drift hits all alike) and the table shows medians:
# per size, the plain loop under MPI_Init (SINGLE, the level tpbench initialises when no helper
# thread runs: context.mpi_thread_level) and under MPI_THREAD_FUNNELED (Open MPI 4.1 is slower
# per small call there), tpbench's time_s.mean in blocking mode, its ratio to each plain figure,
# the nonblocking mode's ratio to plain SINGLE, and "same-run": the median of tpbench's own
# --baseline ratio (a plain loop on the same buffers in the same processes, right after the
# timed one), which a busy neighbour disturbs less than runs seconds apart. The acceptance is
# blocking within 10% of the plain SINGLE loop at every size; the script exits 1 when a size is
# outside it, or when tpbench did not run at SINGLE. Timings on a shared machine are noisy: the load average is printed before and after.
# Usage: tests/bench/allreduce_side_by_side.sh [BUILD_DIR (build-cpu)] [REPEATS (3)]
# Env: ITERS (5000: 20 ms of 4 KB calls, so a scheduler blip is a small share), WARMUP (200),
# MPIRUN (mpirun), BIND (core).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build-cpu}
REPEATS=${2:-3}
ITERS=${ITERS:-5000}
WARMUP=${WARMUP:-200}
MPIRUN=${MPIRUN:-mpirun}
BIND=${BIND:-core}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
export OMP_NUM_THREADS=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() { "$MPIRUN" -np 2 --bind-to "$BIND" "$@"; }

plain() {  # round, thread level
  run "$BUILD/tests/plain_allreduce" 4096 1048576 4 "$WARMUP" "$ITERS" "$2" >"$OUT/plain-$2.$1"
}
tpbench() {  # round, mode
  run "$BUILD/tpbench" collectives -b 4K -e 1M -f 4 -w "$WARMUP" -n "$ITERS" --mpi-mode "$2" \
    --baseline --out "$OUT/$2.$1" >/dev/null
}

echo "load before: $(uptime)"
for r in $(seq 1 "$REPEATS"); do
  jobs=("plain $r single" "plain $r funneled" "tpbench $r blocking" "tpbench $r nonblocking")
  for k in 0 1 2 3; do ${jobs[$(((k + r) % 4))]}; done
done
echo "load after:  $(uptime)"

python3 - "$OUT" "$REPEATS" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
series = {}  # name -> bytes -> [values over rounds]
levels = set()  # tpbench's context.mpi_thread_level over its runs
def add(name, b, x):
    series.setdefault(name, {}).setdefault(b, []).append(x)
for r in range(1, reps + 1):
    for level in ("single", "funneled"):
        for line in open(f"{out}/plain-{level}.{r}"):
            b, t = line.split()
            add(level, int(b), float(t))
    for mode in ("blocking", "nonblocking"):
        res = json.load(open(f"{out}/{mode}.{r}/results.json"))
        levels.add(res["context"].get("mpi_thread_level"))
        for p in res["points"]:
            add(mode, p["params"]["bytes"], p["metrics"]["time_s"]["mean"])
            if mode == "blocking":
                add("same", p["params"]["bytes"], p["metrics"]["baseline"]["ratio"])
med = lambda name, b: statistics.median(series[name][b])
print(f"medians of {reps} runs, 2 ranks, times in us; ratios are tpbench / plain")
print(f"{'size':>8} {'plain S':>8} {'plain F':>8} {'blocking':>9} {'/F':>5} {'/S':>5}"
      f" {'nonblk/S':>8} {'same-run':>8}")
bad = 0
for b in sorted(series["single"]):
    s, f, k, n = (med(x, b) * 1e6 for x in ("single", "funneled", "blocking", "nonblocking"))
    ok = abs(k / s - 1) <= 0.10
    bad += not ok
    print(f"{b // 1024:>7}K {s:8.2f} {f:8.2f} {k:9.2f} {k / f:5.2f} {k / s:5.2f} {n / s:8.2f}"
          f" {med('same', b):8.2f}{'' if ok else '  <- outside 10%'}")
print(f"tpbench ran at MPI thread level {sorted(map(str, levels))}")
print("blocking within 10% of plain SINGLE at every size" if not bad
      else f"{bad} size(s) outside 10%")
sys.exit(1 if bad or levels != {"single"} else 0)
PY
