#!/usr/bin/env bash
# Makes the folder that a lent GPU machine runs (it has nvcc, CMake and PyTorch but no MPI and
# no registry, and every minute there counts): tpbench built here with CUDA, without MPI (the
# one-rank steps) and with it (tpbench-mpi: ranks sharing the GPU), the layer check
# tpb_device_check, this machine's Open MPI made relocatable (device_mpi.sh), the libraries
# they load that such a machine lacks, the model configs (found beside the binary), and the
# check's scripts. Nothing is built there. Both builds must have cuDNN attention compiled in
# (else one line, exit 2): a stub would refuse --attention cudnn only on the GPU.
# What the bundle leaves to the machine: glibc and libstdc++, the CUDA toolkit's libraries
# (cuBLASLt alone is several times the whole bundle), NCCL, and the driver (libcuda, NVML).
# Usage: launch/device-bundle.sh [--arch LIST] [--build DIR] [OUT]
#        launch/device-bundle.sh --check-cache CMakeCache.txt  (the cuDNN check alone)
#   --arch   CMake CUDA architectures (default 90-real: the H200 this is made for; env
#            TPB_BUNDLE_ARCH); "default" takes the top CMakeLists.txt's list
#   --build  build folder (default build-device, and DIR-mpi for the MPI build; reused, so a
#            second bundle is incremental)
#   OUT      the bundle (default device-bundle/, ignored by git); else exit 1 when it is over
#            what a call carries beside the checkout: 64 MiB in all, the tracked files
#            (~5 MiB) sent too, 1 MiB spare (at most 60 MiB)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ARCH=${TPB_BUNDLE_ARCH:-90-real} BUILD=$ROOT/build-device OUT=$ROOT/device-bundle CHECK_CACHE=""
while (($#)); do
  case "$1" in
    --arch) ARCH=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --check-cache) CHECK_CACHE=$2; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "device-bundle.sh: unknown option '$1'" >&2; exit 2 ;;
    *) OUT=$1; shift ;;
  esac
done
# A device call sends the checkout's files with what it carries, 64 MiB together.
# From the root: ls-files names paths relative to it. A sum that fails leaves the 5 MiB guess.
tracked_mib=$(cd "$ROOT" && git ls-files -z 2>/dev/null | xargs -0 stat -c %s 2>/dev/null |
  awk '{s += $1} END {print int(s / 1048576) + 1}') || tracked_mib=""
LIMIT_MIB=$((64 - ${tracked_mib:-5} - 1))
((LIMIT_MIB > 60)) && LIMIT_MIB=60
T0=$SECONDS
die() { echo "device-bundle.sh: $*" >&2; exit 1; }

# cudnn_compiled_in CACHE: exit 2 with one line unless the build configured in CACHE found
# cudnn-frontend and cudnn.h (layers/cuda/cudnn/CMakeLists.txt builds the stub otherwise).
cudnn_compiled_in() {
  local v
  for v in TPB_CUDNN_FRONTEND_INCLUDE_DIR TPB_CUDNN_INCLUDE_DIR; do
    if ! grep -qE "^$v:PATH=/" "$1" 2>/dev/null || grep -qE "^$v:PATH=.*-NOTFOUND$" "$1"; then
      echo "device-bundle.sh: $v: not found in $1: cuDNN attention is not compiled in (launch/deps.sh fetches cudnn-frontend)" >&2
      exit 2
    fi
  done
}
if [[ -n "$CHECK_CACHE" ]]; then cudnn_compiled_in "$CHECK_CACHE"; exit 0; fi
source "$ROOT/launch/deps.sh"
tpb_install_deps >/dev/null
tpb_fetch_cudnn_frontend "$ROOT"
command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || die "no nvcc: the bundle's tpbench is a CUDA build"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=${CUDA_HOME:-$(cd "$(dirname "$NVCC")/.." && pwd)}
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN)}

# ccache where it is installed (CI shares one with the Release build; see tests/run.sh).
launch=()
if command -v ccache >/dev/null; then
  launch=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# build DIR MPI(ON|OFF) TARGET...: configures and builds one tree; refuses a cuDNN stub.
build() {
  local dir=$1 mpi=$2
  shift 2
  mkdir -p "$dir"
  cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTPB_MPI="$mpi" -DTPB_CUDA=ON \
    -DTPB_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="${ARCH/#default/}" \
    "${launch[@]}" >"$dir/bundle-cmake.log" 2>&1 || die "cmake failed: $(tail -5 "$dir/bundle-cmake.log")"
  cudnn_compiled_in "$dir/CMakeCache.txt"
  cmake --build "$dir" -j"$JOBS" --target "$@" >"$dir/bundle-build.log" 2>&1 ||
    die "build failed: $(grep -m3 error "$dir/bundle-build.log")"
}
# tpbench and the layer check (tests/gpu) from one tree: the kernels compile once for both.
# The MPI tree's CUDA objects are the same text and come from ccache where it is installed.
build "$BUILD" OFF tpbench tpb_device_check
build "$BUILD-mpi" ON tpbench
echo "tpbench (without and with MPI) and tpb_device_check built ($((SECONDS - T0)) s, CUDA $ARCH)"

rm -rf "$OUT"
mkdir -p "$OUT/lib"
strip -o "$OUT/tpbench" "$BUILD/tpbench"
strip -o "$OUT/tpb_device_check" "$BUILD/tpb_device_check"
strip -o "$OUT/tpbench-mpi" "$BUILD-mpi/tpbench"
cp -r "$ROOT/configs" "$OUT/configs"
# The engines' kernel tables (8 MB) price the model backend only, which runs here, not there.
rm -rf "$OUT/configs/engine_tables"
cp "$ROOT/launch/device-check.sh" "$ROOT/launch/device_plan.sh" "$ROOT/launch/device_libs.sh" \
  "$ROOT/launch/device_mpi.sh" "$ROOT/launch/device_table.py" "$ROOT/launch/device_table_ranks.py" \
  "$ROOT/launch/peer_torch.py" "$OUT/"
source "$ROOT/launch/device_mpi.sh"
device_mpi_pack "$OUT" || die "no Open MPI to carry (the device machine has none)"

# Every library the two binaries load that the GPU machine does not bring: not the C/C++
# runtime, not the toolkit's or NCCL's, not the driver's.
provided='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libnvidia-ml|libnccl|libcu[a-zA-Z]*|libnv[a-zA-Z]*)\.so'
for bin in "$OUT/tpbench" "$OUT/tpb_device_check" "$OUT/tpbench-mpi"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  # Both sides resolved: the toolkit is often reached through links (/usr/local/cuda ->
  # cuda-13.0, ld.so.conf naming targets/x86_64-linux/lib), so prefixes alone can miss it.
  [[ "$name" =~ $provided || "$(readlink -f "$path")" == "$(readlink -f "$CUDA_HOME")"/* ]] && continue
  [[ -e "$OUT/mpi/$TPB_OMPI_LIBDIR/$name" ]] && continue  # Open MPI's, in its own prefix
  cp -L "$path" "$OUT/lib/$name"
done
# The largest libraries and the three binaries go gzipped (to ~30%: 16 MB each tpbench, 4.7 MB
# packed), device_libs.sh's device_unpack restores them on the device before anything runs.
find "$OUT/lib" "$OUT/tpbench" "$OUT/tpbench-mpi" "$OUT/tpb_device_check" -type f -size +8M -exec gzip -9 {} +
echo "{\"git_sha\": \"$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)\"," \
  "\"dirty\": $([[ -z "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ]] && echo false || echo true)," \
  "\"cuda_architectures\": \"$ARCH\", \"made\": \"$(date -u +%FT%TZ)\"}" >"$OUT/bundle.json"
mib=$(du -sm --apparent-size "$OUT" | cut -f1)
echo "device-bundle: $OUT, ${mib} MiB ($(ls "$OUT/lib" | tr '\n' ' ')), $((SECONDS - T0)) s"
((mib <= LIMIT_MIB)) || die "$OUT is ${mib} MiB, over the ${LIMIT_MIB} MiB a device call can carry beside the checkout's ${tracked_mib} MiB"
