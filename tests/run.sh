#!/usr/bin/env bash
# README command 2: install what is missing, build everything (the CUDA backend too when nvcc
# is present), and run every test: unit, multi-rank (mpirun -np 2 and 4), multi-host
# (network namespaces), sanitizers, fuzz.
# Exits non-zero when anything fails; nothing is skipped silently.
set -euo pipefail
cd "$(dirname "$0")/.."
# launch/deps.sh installs the missing Debian packages with apt-get (CI machines start bare).
command -v apt-get >/dev/null || { echo "tests/run.sh: needs apt-get (Debian)" >&2; exit 1; }
source launch/deps.sh
# CI only: ccache (see the no-MPI stage); python3-venv and python3-wheel (the install check's
# offline `pip install ./results`).
tpb_install_deps ccache python3-venv python3-wheel
tpb_fetch_cudnn_frontend "$PWD"  # --attention cudnn in the CUDA build (layers/cuda/cudnn)

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# getconf, not nproc: nproc obeys OMP_NUM_THREADS=1 (exported above) and would build serially.
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN)}

# Each stage's wall time, listed after the last stage with the total: the CI budget is 50 min.
STAGE_NAME="" STAGE_T0=$SECONDS TIMES=""
stage() {
  if [ -n "$STAGE_NAME" ]; then
    TIMES+=$(printf '%6ds  %s' $((SECONDS - STAGE_T0)) "$STAGE_NAME")$'\n'
  fi
  STAGE_NAME=$* STAGE_T0=$SECONDS
  printf '\n=== %s ===\n' "$*"
}

HAVE_NVCC=""
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then HAVE_NVCC=1; fi
# The device rehearsal's minimal root is made in the background while the builds compile:
# debootstrap is mostly downloads (~1 min of CI). At exit only that job is killed, and the root
# is removed only with nothing mounted inside it (the rehearsal binds /dev and the toolkit in).
ROOT_JOB="" ROOT_DIR=""
if [ -n "$HAVE_NVCC" ]; then
  ROOT_DIR=$(mktemp -d /tmp/tpb-rehearsal-root.XXXXXX)
  tests/device_rehearsal.sh --make-root "$ROOT_DIR/root" >"$ROOT_DIR/make.log" 2>&1 &
  ROOT_JOB=$!
fi
drop_root() {
  if [ -n "$ROOT_JOB" ]; then kill "$ROOT_JOB" 2>/dev/null || true; wait "$ROOT_JOB" 2>/dev/null || true; fi
  [ -n "$ROOT_DIR" ] || return 0
  if grep -q " $ROOT_DIR/" /proc/mounts; then
    echo "tests/run.sh: mounts left under $ROOT_DIR; not removed" >&2
  else
    rm -rf "$ROOT_DIR"
  fi
}
trap drop_root EXIT

stage "format check (clang-format)"
tests/format_check.sh

# The CUDA backend compiles for its default architectures (the top CMakeLists.txt: sm_80 and
# sm_90 SASS, sm_100 PTX where nvcc has it), so CI compiles what users run. TPB_CI_CUDA_ARCHS=90-real
# narrows it for a quicker local run.
CUDA_ARCHS=${TPB_CI_CUDA_ARCHS-}
# The Release and the no-MPI builds share a ccache (in this checkout, new each CI run): the
# translation units that never include mpi.h preprocess to the same text in both, so the
# no-MPI build compiles only the ~1/3 that do (measured: 240 -> 112 s; the cold cache costs the
# Release build ~6%). Objects are reused only for identical preprocessed source and flags, so
# the no-MPI binary is what a plain build makes. Off for the sanitizer trees (other compiler).
export CCACHE_DIR=$PWD/build-ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
stage "release build (CUDA: $(command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] && echo "auto-on, archs ${CUDA_ARCHS:-default}" || echo off))"
cmake --preset release ${CUDA_ARCHS:+-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS"} >/dev/null
cmake --build build -j"$JOBS"
build/tpbench info

stage "unit tests"
(cd build && ctest -L unit --output-on-failure -j"$JOBS")

# Two at a time where tests/CMakeLists.txt lets them (TPB_MPI_CONCURRENT); those that time real
# work run alone (RUN_SERIAL).
stage "multi-rank tests (mpirun -np 1/2/4)"
(cd build && ctest -L mpi --output-on-failure -j"$JOBS")

# Hosts made of network namespaces on this machine (root only; tests/multihost/run.sh says
# why it cannot run elsewhere, and fails unless TPB_SKIP_NETNS=1 is set by hand).
stage "multi-host (network namespaces as hosts, shaped links, link faults, Slurm srun)"
TPBENCH=build/tpbench tests/multihost/run.sh

stage "build without MPI (-DTPB_MPI=OFF: one rank, no mpirun)"
tests/nompi.sh

# A fresh clone configured as the Release build above (so its objects come from the shared
# ccache), installed into a prefix, pip-installed ./results, then the clone deleted and the
# prefix moved before tpbench runs from it: configs/ and plot.py come from share/tpbench.
stage "install (fresh clone, cmake --install, pip install ./results, run with the source gone)"
tests/install_check.sh --preset release ${CUDA_ARCHS:+-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS"}

# The GPU device check rehearsed without a GPU: the bundle (CUDA builds for sm_90 without and
# with MPI, as carried to an H200, and this machine's Open MPI relocated; its C++ comes mostly
# from the shared ccache, the MPI tree's CUDA objects from the no-MPI tree's), started in a
# debootstrap minbase root with only the toolkit's and NCCL's libraries and no MPI, and
# device-check.sh with its GPU steps on the CPU backend, ranks sharing the machine under the
# bundle's own mpirun. Its wall time is the stage's line in the list printed at the end.
if [ -n "$HAVE_NVCC" ]; then
  stage "device rehearsal (the GPU check's bundle in a minimal root, its steps on the CPU)"
  wait "$ROOT_JOB" || { cat "$ROOT_DIR/make.log"; echo "tests/run.sh: the minimal root failed" >&2; exit 1; }
  ROOT_JOB=""
  cat "$ROOT_DIR/make.log"
  tests/device_rehearsal.sh --keep-root "$ROOT_DIR/root"
fi
unset CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER CMAKE_CUDA_COMPILER_LAUNCHER

if [ -x tests/sanitize.sh ]; then
  stage "sanitizers (ASan+UBSan, TSan)"
  tests/sanitize.sh
fi
if [ -x tests/fuzz/run_fuzz.sh ]; then
  stage "fuzz (bounded)"
  tests/fuzz/run_fuzz.sh "${TPB_FUZZ_SECONDS:-60}"
fi
stage "all tests passed"
printf 'stage times:\n%s%6ds  in all\n' "$TIMES" "$SECONDS"
