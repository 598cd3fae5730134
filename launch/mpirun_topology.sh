#!/usr/bin/env bash
# Launches tpbench under mpirun with a topology preset's launcher settings (the Open MPI MCA
# parameters that must be in place before MPI_Init), read from configs/topologies/PRESET.json,
# the same file tpbench checks them against at start-up.
#
#   launch/mpirun_topology.sh PRESET NP -- PROGRAM [ARGS...]
#   e.g. launch/mpirun_topology.sh tcp 2 -- build/tpbench run --model tiny --out out/tcp
#
# --topology PRESET is appended to ARGS when they do not name one. Extra mpirun flags come
# from $MPIRUN_ARGS (e.g. "--oversubscribe --bind-to none"), the launcher from $MPIRUN, the
# preset directory from $TPB_CONFIG_DIR (default: configs/ next to this script).
set -euo pipefail

usage() { echo "usage: $0 PRESET NP -- PROGRAM [ARGS...]" >&2; exit 2; }
[[ $# -ge 4 && $3 == "--" ]] || usage
preset=$1 np=$2
shift 3
[[ $np =~ ^[0-9]+$ ]] || { echo "$0: NP must be a number (got '$np')" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
config_dir=${TPB_CONFIG_DIR:-$here/../configs}
file=$config_dir/topologies/$preset.json
if [[ $preset != default && ! -f $file ]]; then
  echo "$0: unknown preset '$preset' (no $file)" >&2
  exit 2
fi

# Launcher settings as mpirun flags: OMPI_MCA_x=v -> --mca x v, anything else -> -x K=V.
flags=()
if [[ $preset != default ]]; then
  command -v python3 >/dev/null || { echo "$0: python3 is needed to read $file" >&2; exit 2; }
  while IFS='=' read -r key value; do
    [[ -z $key ]] && continue
    if [[ $key == OMPI_MCA_* ]]; then
      flags+=(--mca "${key#OMPI_MCA_}" "$value")
    else
      flags+=(-x "$key=$value")
    fi
  done < <(python3 -c '
import json, sys
for k, v in sorted(json.load(open(sys.argv[1])).get("mpi", {}).get("launcher_env", {}).items()):
    print(f"{k}={v}")' "$file")
fi

# NCCL_*, UCX_*, CUDA_* and TPB_* set here reach the ranks on every host (forward_env.sh).
# shellcheck source=launch/forward_env.sh
source "$here/forward_env.sh"
mapfile -t forward < <(tpb_forward_env_flags)
flags+=("${forward[@]}")

args=("$@")
has_topology=0
for a in "${args[@]}"; do
  [[ $a == --topology || $a == --topology=* ]] && has_topology=1
done
[[ $has_topology == 1 ]] || args+=(--topology "$preset")

# shellcheck disable=SC2086  # MPIRUN_ARGS is a list of flags on purpose
exec "${MPIRUN:-mpirun}" -np "$np" "${flags[@]}" ${MPIRUN_ARGS:-} "${args[@]}"
