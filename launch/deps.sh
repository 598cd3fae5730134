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
