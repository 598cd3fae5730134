# Sourced by launch/quickstart.sh and tests/run.sh: installs the Debian packages tpbench needs,
# only those missing, so a fresh machine (CI) and a developer box take the same path.
TPB_DEB_PACKAGES=(build-essential cmake pkg-config git python3 openmpi-bin libopenmpi-dev
  nlohmann-json3-dev libopenblas-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
  libbenchmark-dev clang-format python3-matplotlib universal-ctags python3-pandas
  python3-prometheus-client)

tpb_install_deps() {
  local missing=()
  for p in "${TPB_DEB_PACKAGES[@]}" "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }
}

# What launch/netns_hosts.sh (fake hosts in network namespaces, Slurm across them) needs on top
# of the build: callers do `tpb_install_deps "${TPB_MULTIHOST_PACKAGES[@]}"`.
TPB_MULTIHOST_PACKAGES=(iproute2 iputils-ping util-linux slurm-wlm munge)

tpb_install_multihost_deps() {
  tpb_install_deps "${TPB_MULTIHOST_PACKAGES[@]}"
}

# cudnn-frontend (NVIDIA, Apache-2.0, header-only): cuDNN's fused attention for `--attention
# cudnn` (layers/cuda/cudnn). Only where the CUDA backend builds. Its PyPI wheel carries the
# headers; include/ alone is kept, in the checkout's .deps/cudnn-frontend (CMake looks there).
# cuDNN itself comes with the CUDA toolkit and is loaded at run time. A failed download leaves
# the build without it (the native kernels), and says so.
TPB_CUDNN_FRONTEND_VERSION=1.32.0

tpb_fetch_cudnn_frontend() {
  local dest="$1/.deps/cudnn-frontend"
  command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || return 0
  [ "$(cat "$dest/VERSION" 2>/dev/null)" = "$TPB_CUDNN_FRONTEND_VERSION" ] && return 0
  python3 -m pip --version >/dev/null 2>&1 || tpb_install_deps python3-pip
  local tmp
  tmp=$(mktemp -d)
  if ! python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 -d "$tmp" \
    "nvidia-cudnn-frontend==$TPB_CUDNN_FRONTEND_VERSION"; then
    echo "cudnn-frontend $TPB_CUDNN_FRONTEND_VERSION: download failed; building without --attention cudnn"
    rm -rf "$tmp"
    return 0
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  python3 - "$tmp" "$dest" <<'PY'
import glob, sys, zipfile
wheel = zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0])
for name in wheel.namelist():
    if name.startswith("include/"):
        wheel.extract(name, sys.argv[2])
PY
  echo "$TPB_CUDNN_FRONTEND_VERSION" >"$dest/VERSION"
  rm -rf "$tmp"
}
