#!/usr/bin/env bash
# README command 1: on a fresh Debian machine, install what is missing, build, and run the
# embedded default benchmark: CPU backend, 2 MPI ranks, the tiny model, a decode batch sweep
# and one prefill point. Prints the per-rank tables; writes results and plots under OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
source launch/deps.sh
tpb_install_deps

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
for b in 1 4 16; do
  "${MPIRUN[@]}" build/tpbench run --backend cpu --model tiny --phase decode --batch "$b" \
    --context 1024 --steps 20 --check --out "$OUT/decode_b$b"
done
"${MPIRUN[@]}" build/tpbench run --backend cpu --model tiny --phase prefill --batch 1 \
  --prompt 512 --steps 5 --out "$OUT/prefill_s512"

# report.md and plots over every point (plots need matplotlib; report says if it has none).
build/tpbench report "$OUT"/decode_b* "$OUT"/prefill_s512 --out "$OUT"
echo "results under $OUT"
