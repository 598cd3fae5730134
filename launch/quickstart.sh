#!/usr/bin/env bash
# README command 1: on a fresh Debian machine, install what is missing, build, and run the
# embedded default benchmark: CPU backend, 2 MPI ranks, the tiny model, a decode batch sweep
# and one prefill point as one sweep. Prints the sweep table; writes results and plots under OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/deps.sh
tpb_install_deps
tpb_fetch_cudnn_frontend "$PWD"

OUT=${OUT:-out/quickstart}
NP=${NP:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

if [ ! -x build/tpbench ]; then
  cmake --preset release >/dev/null
  cmake --build build -j"$(getconf _NPROCESSORS_ONLN)"
fi

MPIRUN=(mpirun -np "$NP")
[ "$NP" -gt "$(getconf _NPROCESSORS_ONLN)" ] && MPIRUN+=(--oversubscribe)

mkdir -p "$OUT"
# One sweep, so one start-up probe gives every point the same peaks (configs/sweeps/).
"${MPIRUN[@]}" build/tpbench sweep --config configs/sweeps/quickstart.json --out "$OUT"

# report.md and plots over every point (plots need matplotlib; report says if it has none).
build/tpbench report "$OUT" --out "$OUT"
echo "results under $OUT"
