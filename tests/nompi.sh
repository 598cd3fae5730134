#!/usr/bin/env bash
# The build without MPI (-DTPB_MPI=OFF, the no-mpi preset): tpbench on a world of one rank, run
# with no mpirun, as on a device machine that has no MPI. Checks that the binary links no MPI
# library, that run, serve and a model run work and write valid results, that the context says
# there is no MPI, and that a TP degree the one rank cannot fill is bad input (exit 2).
# Usage: tests/nompi.sh [--tpbench PATH]
#   --tpbench  check this binary, built without MPI elsewhere (tests/run.sh passes the device
#              bundle's, no MPI with CUDA), instead of building the no-mpi preset (no CUDA either)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN)}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
T=""
if [[ "${1:-}" == --tpbench ]]; then
  T=$2
  [[ -x "$T" ]] || { echo "nompi.sh: no executable $T" >&2; exit 2; }
else
  cmake --preset no-mpi >/dev/null
  cmake --build build-nompi -j"$JOBS" --target tpbench
  T=build-nompi/tpbench
fi
OUT=$(mktemp -d /tmp/tpb-nompi.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL $*" >&2; exit 1; }
ok() { echo "ok   $*"; }

if ldd "$T" | grep -q 'libmpi'; then fail "$T links an MPI library: $(ldd "$T" | grep libmpi)"; fi
ok "no MPI library linked"

"$T" run --backend cpu --model tiny --layers 2 --batch 1 --context 128 --steps 5 --out "$OUT/run" \
  >"$OUT/run.log" || fail "run: rc $? ($(tail -3 "$OUT/run.log"))"
# The contract's checker (the vendored copy travels with the repository).
CHECK=../shared/tools/check_results.py
[ -f "$CHECK" ] || CHECK=tests/tools/check_results.py
python3 "$CHECK" "$OUT/run" --expect-ranks 1 >"$OUT/check.log" 2>&1 ||
  fail "run: check_results.py ($(tail -3 "$OUT/check.log"))"
python3 - "$OUT/run" <<'PY' || fail "run: the context does not say there is no MPI"
import json, sys
d = json.load(open(sys.argv[1] + "/results.json"))
assert d["context"]["versions"]["mpi"].startswith("none"), d["context"]["versions"]["mpi"]
assert d["points"][0]["status"] == "ok" and len(d["points"][0]["ranks"]) == 1
PY
ok "run --backend cpu without mpirun: one rank, results ok, context.versions.mpi says none"

"$T" serve --model tiny --layers 2 --concurrency 1,2 --requests 6 --prompt-len 32 --output-len 8 \
  --out "$OUT/serve" >"$OUT/serve.log" || fail "serve: rc $? ($(tail -3 "$OUT/serve.log"))"
ok "serve without mpirun"
"$T" run --backend model --world 8 --tp 8 --model llama-3.1-70b --dtype bf16 --batch 16 \
  --out "$OUT/model" >"$OUT/model.log" || fail "model run: rc $?"
ok "run --backend model --world 8 (virtual ranks need no MPI either)"

# The device check's table over this run (launch/device_table.py): calibrate's copy bandwidth
# is read, the tiny point has its row, and no target is judged on tiny (every one is FAIL with
# no point of the target model), so the exit is 3.
"$T" calibrate --op-profile off --reps 1 --out "$OUT/cal" >"$OUT/cal.log" || fail "calibrate: rc $?"
set +e
python3 launch/device_table.py --calibration "$OUT/cal/calibration.json" --dtype fp32 "$OUT/run" \
  >"$OUT/table.txt"
rc=$?
set -e
[ "$rc" -eq 3 ] && [ "$(grep -c '^FAIL .*no point measured it' "$OUT/table.txt")" -eq 6 ] &&
  grep -qE '^measured copy bandwidth \(fp32 add kernel, calibrate\): [0-9.]+ GB/s' "$OUT/table.txt" &&
  grep -q 'tiny L2 decode B=1 ctx=128' "$OUT/table.txt" ||
  fail "device_table.py: rc $rc, $(cat "$OUT/table.txt")"
ok "device_table.py: the point's row, and no target judged on tiny"

set +e
err=$("$T" run --backend cpu --model tiny --tp 2 --out "$OUT/bad" 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 2 ] && [[ "$err" == *"--tp"* ]] || fail "--tp 2 on one rank: rc $rc ($err)"
ok "--tp 2 on one rank: exit 2 naming --tp"
