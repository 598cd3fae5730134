#!/usr/bin/env bash
# Makes DIR (default device-bundle/, ignored by git) for a machine with nvcc and CMake but no
# package registry (the GPU device machine): include/ with this machine's nlohmann/json,
# CLI11, fmt (used header-only) and OpenBLAS headers, lib/ with OpenBLAS and the Fortran
# runtime it needs. About 40 MB. Build there with -DTPB_DEPS_DIR=DIR (launch/device-check.sh
# does) and carry DIR with the working tree.
# Usage: launch/device-bundle.sh [DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-$ROOT/device-bundle}
source "$ROOT/launch/deps.sh"
tpb_install_deps >/dev/null
rm -rf "$DIR"
mkdir -p "$DIR/include" "$DIR/lib"
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/fmt "$DIR/include/"
blas_inc=$(pkg-config --variable=includedir openblas)
cp "$blas_inc"/cblas.h "$blas_inc"/openblas_config.h "$DIR/include/"
blas_lib=$(pkg-config --variable=libdir openblas)/libopenblas.so.0
# The library and what it loads beyond glibc, by the names it asks for (its DT_NEEDED).
cp -L "$blas_lib" "$DIR/lib/libopenblas.so.0"
for dep in libgfortran.so.5 libquadmath.so.0; do
  path=$(ldd "$blas_lib" | awk -v d="$dep" '$1 == d {print $3}')
  if [[ -n "$path" ]]; then cp -L "$path" "$DIR/lib/$dep"; fi
done
du -sh "$DIR"
echo "device-bundle: $DIR (build with -DTPB_DEPS_DIR=$DIR)"
