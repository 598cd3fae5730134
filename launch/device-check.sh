#!/usr/bin/env bash
# The GPU device check, run from a bundle that launch/device-bundle.sh made on a CPU machine:
# nothing is built here. A lent GPU gives about 15 minutes in all, one command at most 600 s,
# and back come 8 files and the last 12,000 characters of output; this check is shaped for that.
# - One deadline from the start (default 360 s; the call: run(..., timeout_s=390), ~400 s of
#   device time with the machine's start, so a second call fits the 15 minutes): every
#   step's timeout is cut to what is left,
#   and a step that would start with under 10 s left is skipped and listed, so the call ends
#   inside its deadline whatever the steps do.
# - A step that fails is recorded with its exit code and log, and the next step runs.
# - Steps run by value (device_plan.sh): a first decode point, the 8B decode grid eager and
#   with --cuda-graph, prefill, --check, the peer reference in PyTorch, serve, calibrate, the
#   layer check, a 70B-sized layer, torch.compile, then 2 and 4 ranks sharing the GPU under
#   the bundle's own Open MPI (device_mpi.sh), and cuDNN's attention, FP8 and slow_op.
# - From trap EXIT, whatever happened: OUT/device-check.tgz (every log and results folder),
#   OUT/summary.txt and OUT/table.txt; three files, where a call brings back eight.
# - Printed: the GPU facts, one line per step, the layer check's verdict line
#   (`device-check: PASS|FAIL|SKIP|error`, else that none came) and its FAIL lines, the
#   table; under 8,000 characters in all, so the call's 12,000-character tail holds it.
# Usage: BUNDLE/device-check.sh [--rehearse] [--deadline S]
#   --rehearse  no GPU: the GPU steps run on the CPU backend at tiny sizes (tests/device_rehearsal.sh)
# Env: OUT (default /tmp/tpb-device-check). Exit: 0 every step and check passed, 1 a step
# failed or was skipped, 3 the steps passed but a performance target in the table did not.
set -u
BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-/tmp/tpb-device-check}
DEADLINE=${TPB_DEADLINE:-360}
MODE=gpu
while (($#)); do
  case "$1" in
    --rehearse) MODE=rehearse; shift ;;
    --deadline) DEADLINE=$2; shift 2 ;;
    *) echo "device-check.sh: unknown argument '$1' (usage: [--rehearse] [--deadline S])" >&2; exit 2 ;;
  esac
done
[[ "$DEADLINE" =~ ^[0-9]+$ ]] || { echo "device-check.sh: --deadline: '$DEADLINE' is not whole seconds" >&2; exit 2; }
T0=$SECONDS
R=$(mktemp -d /tmp/tpb-device-check.XXXXXX)  # everything the steps write; packed at exit
STEPS=$R/steps.tsv
PRINT_LIMIT=5000  # after the facts (1,500) and ~21 step lines (1,000), under 8,000 in all
mkdir -p "$OUT"
printf 'step\trc\tseconds\tstarted_at_s\n' >"$STEPS"

elapsed() { echo $((SECONDS - T0)); }

# step NAME TIMEOUT CMD...: runs CMD under min(TIMEOUT, time left - 5), its output in R/NAME.log.
# rc 124/137 is a timeout; "skipped" is a step the deadline left no room for.
step() {
  local name=$1 limit=$2 left start rc
  shift 2
  left=$((DEADLINE - $(elapsed)))
  if ((left < 10)); then
    printf '%s\tskipped\t0\t%s\n' "$name" "$(elapsed)" >>"$STEPS"
    printf '%-16s SKIPPED (deadline: %ss left)\n' "$name" "$left"
    return 0
  fi
  ((limit > left - 5)) && limit=$((left - 5))
  # The rehearsal's hung step (tests/device_rehearsal.sh), to show what the deadline does.
  [[ $MODE == rehearse && "${TPB_REHEARSE_HANG:-}" == "$name" ]] && set -- sleep 3600
  start=$SECONDS
  timeout -k 3 "$limit" "$@" >"$R/$name.log" 2>&1 </dev/null
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" $((SECONDS - start)) $((start - T0)) >>"$STEPS"
  printf '%-16s rc=%-3s %4ss (at %ss)\n' "$name" "$rc" $((SECONDS - start)) "$(elapsed)"
  if ((rc != 0)); then
    tail -n 2 "$R/$name.log" | cut -c1-200 | sed 's/^/    | /'
  fi
  return 0
}

# layer_verdict LOG: tpb_device_check's verdict line (its last `device-check: ` line; the
# first names the GPU), or that it printed none, then its FAIL lines (indented under sections).
layer_verdict() {
  local v
  v=$(grep -E '^device-check: (PASS|FAIL|SKIP|error)' "$1" 2>/dev/null | tail -n 1)
  echo "layer check: ${v:-no verdict line (it did not finish: see layer-check.log)}"
  grep -E 'FAIL' "$1" 2>/dev/null | grep -v '^device-check: ' | sed 's/^ */  /' | cut -c1-160 | head -n 12
}

# At exit: the table, the archive and the summary, whatever stopped the check.
finish() {
  local rc=0 table_rc
  trap - EXIT INT TERM
  python3 "$BUNDLE/device_table.py" --steps "$STEPS" --calibration "$R/calibrate/calibration.json" \
    --peer "$R/peer.jsonl" --target-model "${TARGET_MODEL:-llama-3.1-8b}" --dtype "${TABLE_DTYPE:-bf16}" "$R" >"$OUT/table.txt" 2>&1
  table_rc=$?
  # Without a GPU (the rehearsal) the layer check's "no GPU" exit, 77, is the expected one.
  awk -F'\t' -v ok77=$([[ $MODE == rehearse ]] && echo 1 || echo 0) \
    'NR > 1 && $2 != "0" && !(ok77 && $2 == "77") {bad = 1} END {exit bad}' "$STEPS" || rc=1
  ((table_rc == 1 || table_rc == 2)) && rc=1
  ((rc == 0 && table_rc == 3)) && rc=3
  {
    echo "device-check ($MODE): exit $rc after $(elapsed) s of a ${DEADLINE} s deadline"
    cat "$R/facts.txt" 2>/dev/null
    awk -F'\t' '{printf "%-14s %-8s %-8s %s\n", $1, $2, $3, $4}' "$STEPS"
    layer_verdict "$R/layer-check.log"
  } >"$OUT/summary.txt"
  cp "$OUT/summary.txt" "$OUT/table.txt" "$R/" 2>/dev/null
  tar -C "$R" -czf "$OUT/device-check.tgz" . 2>/dev/null
  if (($(stat -c %s "$OUT/device-check.tgz") > 15000000)); then  # a call brings back 16 MiB a file
    tar -C "$R" -czf "$OUT/device-check.tgz" --exclude='trace*.json' --exclude='traces' . 2>/dev/null
  fi
  echo  # the facts and the steps are printed above: the verdicts and the table
  { head -n 1 "$OUT/summary.txt"; layer_verdict "$R/layer-check.log"; cat "$OUT/table.txt"; } | head -c "$PRINT_LIMIT"
  echo
  echo "device-check: exit $rc; $OUT holds device-check.tgz, summary.txt, table.txt"
  rm -rf "$R"
  exit "$rc"
}
trap finish EXIT
trap 'exit 1' INT TERM

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
source "$BUNDLE/device_libs.sh"
device_unpack "$BUNDLE" || { echo "device-check: could not unpack $BUNDLE/lib/*.gz" >&2; exit 1; }
export LD_LIBRARY_PATH="$BUNDLE/lib:$(device_lib_path 2>"$R/libs.txt")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
TPB=$BUNDLE/tpbench      # no MPI: the one-rank steps, as the first call ran them
TPBM=$BUNDLE/tpbench-mpi # Open MPI: the steps of many ranks, under the bundle's own mpirun
source "$BUNDLE/device_mpi.sh"
device_mpi_env "$BUNDLE" || echo "device-check: no Open MPI in $BUNDLE/mpi: the steps of many ranks will fail" >&2
source "$BUNDLE/device_plan.sh"  # TARGET_MODEL, plan_facts, plan_steps
plan_facts >"$R/facts.txt" 2>&1
head -c 1500 "$R/facts.txt"
plan_steps
