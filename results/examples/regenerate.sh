#!/usr/bin/env bash
# Regenerates the pictures of the README and docs/USAGE.md (results/examples/README.md says what
# they show): the quickstart's sweep (CPU backend, 2 ranks, tiny model: decode B=1,4,16 at
# context 1024 and a prefill of 512 tokens), its report's plots, and two of them copied here.
#   results/examples/regenerate.sh                          # launch/quickstart.sh, build/tpbench
#   TPBENCH=build-cpu/tpbench results/examples/regenerate.sh   # an existing binary
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out/quickstart}
export OUT OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
if [ -n "${TPBENCH:-}" ]; then
  mpirun -np 2 --oversubscribe "$TPBENCH" sweep --config configs/sweeps/quickstart.json --out "$OUT"
  "$TPBENCH" report "$OUT" --out "$OUT"
else
  launch/quickstart.sh
fi
cp "$OUT/plots/utilisation.png" results/examples/utilisation.png
cp "$OUT/plots/timeline-p1.png" results/examples/timeline.png  # point 1: decode B=4
ls -l results/examples/*.png
