#!/usr/bin/env bash
# GPU device check of tpbench's CUDA backend on one GPU (written for an H200 machine that has
# nvcc, cmake and Python but no MPI and no package registry). It builds tpb_device_check with
# nvcc alone (CudaDevice + kernels + cuBLASLt; no MPI, NCCL or JSON), then runs it:
#   1. per-op correctness of one layer vs a host fp32 reference built from the same fill_hash
#      values (normalized max error <= 5e-4 fp32, 1.5e-2 bf16, 5e-3 fp16; fill bit-exact),
#      and of the mixed step's varlen ops (paged KV, ragged batch) and the sampling argmax,
#   2. the mark()/busy_work() clocks,
#   3. decode B=1..256 (context 1024) and prefill S=512..8192 at TP=1 for a Llama-3.1-8B-shaped
#      stack of 4 layers (per-layer costs are identical, so per-layer MBU/MFU hold for all 32),
#      printing MBU, MFU and mfu_ceiling against 4.8e12 B/s and 989e12 FLOP/s.
# Usage: launch/device-check.sh [--quick]   (about 3-5 minutes; exit 0 pass, 1 fail, 77 no GPU)
# Env: CUDA_ARCH (default: from nvidia-smi, else sm_90), BUILD_DIR, NVCC, CXX.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-/tmp/tpb-device-check}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CXX=${CXX:-g++}
QUICK=""
for a in "$@"; do
  case "$a" in
    --quick) QUICK=--quick ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done
T0=$(date +%s)
say() { printf '\n== %s (%ss)\n' "$1" "$(($(date +%s) - T0))"; }

say "1/4 environment"
if [[ ! -x "$NVCC" ]]; then
  echo "device-check: no nvcc (set NVCC=/path/to/nvcc)" >&2
  exit 1
fi
CUDA_HOME=${CUDA_HOME:-$(cd "$(dirname "$NVCC")/.." && pwd)}
"$NVCC" --version | tail -n 2
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
fi
ARCH=${CUDA_ARCH:-}
if [[ -z "$ARCH" ]] && command -v nvidia-smi >/dev/null; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  [[ "$cap" =~ ^[0-9]+$ ]] && ARCH=sm_$cap
fi
ARCH=${ARCH:-sm_90}
echo "building for $ARCH with $NVCC"

# cuBLASLt: the toolkit's, else the pip wheel's (nvidia-cublas) that PyTorch images carry.
find_lib() {  # $1 = library stem; prints the file to link
  local d f
  for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib" \
           "$(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null || true)"; do
    for f in "$d/$1.so" "$d"/"$1".so.*; do
      [[ -e "$f" ]] && { echo "$f"; return 0; }
    done
  done
  return 1
}
LT=$(find_lib libcublasLt) || { echo "device-check: libcublasLt not found under $CUDA_HOME" >&2; exit 1; }
BLAS=$(find_lib libcublas) || { echo "device-check: libcublas not found under $CUDA_HOME" >&2; exit 1; }
INC=(-I"$ROOT" -I"$CUDA_HOME/include")
WHEEL_INC="$(dirname "$LT")/../include"  # the pip wheel keeps headers beside lib/
if [[ -f "$WHEEL_INC/cublasLt.h" ]]; then INC+=(-I"$WHEEL_INC"); fi
echo "cuBLASLt: $LT"

say "2/4 build ($BUILD)"
mkdir -p "$BUILD/obj"
CU=(attention_decode attention_prefill attention_varlen fill kv_write rmsnorm rope row_argmax
    swiglu_add timer_kernels)
CC=(layers/cuda/bandwidth_hog.cc layers/cuda/cuda_clock.cc layers/cuda/cuda_device.cc
    layers/cuda/cuda_gemm.cc layers/cuda/cuda_varlen.cc layers/cuda/plan/launch_plan.cc
    layers/cuda/plan/varlen_plan.cc layers/base/errors.cc tests/gpu/device_check.cc
    tests/gpu/layer_check.cc tests/gpu/layer_reference.cc tests/gpu/varlen_check.cc)
pids=()
for f in "${CU[@]}"; do
  "$NVCC" -std=c++20 -O3 -lineinfo -arch="$ARCH" "${INC[@]}" -c "$ROOT/layers/cuda/kernels/$f.cu" \
    -o "$BUILD/obj/$f.o" & pids+=($!)
done
for f in "${CC[@]}"; do
  "$CXX" -std=c++20 -O2 "${INC[@]}" -c "$ROOT/$f" -o "$BUILD/obj/$(basename "$f" .cc).o" & pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[[ $fail == 0 ]] || { echo "device-check: compile failed" >&2; exit 1; }
"$NVCC" -arch="$ARCH" "$BUILD"/obj/*.o "$LT" "$BLAS" -Xlinker -rpath -Xlinker "$(dirname "$LT")" \
  -lpthread -o "$BUILD/tpb_device_check"
echo "built $BUILD/tpb_device_check"

say "3/4 correctness, clocks and roofline"
set +e
timeout 420 "$BUILD/tpb_device_check" $QUICK 2>&1 | tee "$BUILD/device_check.log"
rc=${PIPESTATUS[0]}
set -e
if [[ $rc == 124 ]]; then echo "device-check: timed out after 420 s"; fi

say "4/4 the 2-rank --collective mpi check"
if command -v mpirun >/dev/null && command -v mpicc >/dev/null; then
  echo "MPI is present here: build tpbench with CMake (tests/run.sh) and run"
  echo "  mpirun -np 2 build/tpbench run --backend cuda --collective mpi --model tiny --tp 2"
  echo "(both ranks share GPU 0: local_rank % device_count; the all-reduce stages through"
  echo " pinned host memory, so it needs no NCCL and no second GPU)."
else
  echo "NOT RUN: the 2-rank check starts 2 ranks with mpirun and sums across them with"
  echo "MPI_Allreduce (collectives/mpi/cuda_mpi_collective.cc), so it needs an MPI launcher, library"
  echo "and headers. This machine has none: 'command -v mpirun' and 'command -v mpicc' find"
  echo "nothing, and with no package registry Open MPI cannot be installed here. (NCCL cannot"
  echo "stand in: one GPU cannot host two NCCL ranks, and its ranks are still launched by MPI.)"
  echo "Run it where Open MPI exists: tests/run.sh, or mpirun -np 2 build/tpbench run --backend"
  echo "cuda --collective mpi --model tiny --tp 2."
fi

echo
echo "device-check: exit $rc after $(($(date +%s) - T0)) s (log: $BUILD/device_check.log)"
exit "$rc"
