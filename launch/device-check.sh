#!/usr/bin/env bash
# The GPU device check: builds tpbench itself on the machine (no MPI: -DTPB_MPI=OFF; nvcc,
# CMake and a C++ compiler are all it needs, the rest comes from the system or from a folder
# made by launch/device-bundle.sh and carried with the tree), then on its one GPU:
#   1. baselines in the same run: calibrate's copy-bandwidth (add kernel) and cuBLAS GEMM peaks;
#   2. the layer check: every op of one layer against a host fp32 reference, the varlen
#      (serving) ops and the sampling argmax (tpb_device_check, built with nvcc alone);
#   3. tpbench run --backend cuda: decode B = 1, 8, 64, 256 at context 1k and 32k, and prefill
#      S = 512, 4096, for tiny, Llama-3.1-8B and one 70B-sized layer, eager and (decode) with
#      --cuda-graph; NVML telemetry in the results, every results folder kept under OUT;
#   4. the table (launch/device_table.py): MBU, MFU, ceiling and host gap per point, and the
#      targets, each PASS or FAIL: decode B=1 bandwidth >= 0.80 of the measured copy,
#      prefill S=4096 MFU >= 0.60 of dense peak, graph host gap <= 5%.
# Where there is no GPU it builds everything, then stops with one line (exit 77).
# Usage: launch/device-check.sh [--quick]   (exit 0 all targets pass, 1 a target or step fails,
#        77 no GPU). Env: OUT (default out/device-check), BUILD_DIR, TPB_DEPS_DIR, CUDA_ARCH.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/out/device-check}
BUILD=${BUILD_DIR:-/tmp/tpb-device-build}
QUICK=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=1 ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done
T0=$(date +%s)
say() { printf '\n== %s (%ss)\n' "$1" "$(($(date +%s) - T0))"; }
die() { echo "device-check: $*" >&2; exit 1; }
source "$ROOT/launch/device_env.sh"

say "1/6 environment"
device_env  # NVCC, CUDA_HOME, ARCH, HAVE_GPU, CMAKE_DEPS, CMAKE_NCCL
mkdir -p "$OUT"

say "2/6 build tpbench (no MPI, CUDA sm_$ARCH) and the layer check"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTPB_MPI=OFF -DTPB_CUDA=ON \
  -DTPB_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$ARCH-real" \
  "${CMAKE_DEPS[@]}" "${CMAKE_NCCL[@]}" >"$OUT/cmake.log" 2>&1 || die "cmake failed: $(tail -5 "$OUT/cmake.log")"
cmake --build "$BUILD" -j"$(getconf _NPROCESSORS_ONLN)" --target tpbench >"$OUT/build.log" 2>&1 ||
  die "build failed: $(grep -m3 -E 'error' "$OUT/build.log")"
build_layer_check "$BUILD/layer-check"  # tpb_device_check with nvcc alone (device_env.sh)
TPB="$BUILD/tpbench"
"$TPB" info | tee "$OUT/info.txt"
if [[ $HAVE_GPU == 0 ]]; then
  echo "device-check: no GPU here (nvidia-smi lists none): tpbench and the layer check are built; stopped before the first GPU step ($(($(date +%s) - T0)) s)"
  exit 77
fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

say "3/6 baselines: copy bandwidth and cuBLAS GEMM (tpbench calibrate)"
"$TPB" calibrate --backend cuda --collective mpi --op-profile off --out "$OUT/calibrate" |
  tee "$OUT/calibrate.log" || die "calibrate failed"

say "4/6 layer check against the host reference"
set +e
timeout 300 "$BUILD/layer-check/tpb_device_check" --quick 2>&1 | tee "$OUT/layer_check.log"
layer_rc=${PIPESTATUS[0]}
set -e

say "5/6 tpbench points"
run_points "$TPB" "$OUT" "$QUICK"  # device_env.sh: the sweeps, each folder kept

say "6/6 table"
set +e
python3 "$ROOT/launch/device_table.py" --calibration "$OUT/calibrate/calibration.json" \
  "$OUT"/points-* | tee "$OUT/table.txt"
table_rc=${PIPESTATUS[0]}
set -e
[[ $layer_rc == 0 ]] || echo "FAIL  layer check (exit $layer_rc): $OUT/layer_check.log"
rc=$(( layer_rc != 0 || table_rc != 0 ))
echo "device-check: exit $rc after $(($(date +%s) - T0)) s (everything under $OUT)"
exit "$rc"
