#!/usr/bin/env bash
# tpbench with mpirun on 8-GPU nodes: one rank per GPU, mapped in order so that contiguous TP
# groups stay in one NVLink domain, each rank bound to cores of its GPU's NUMA node. Arguments
# go to tpbench.
#
#   launch/mpirun_node.sh run --backend cuda --model llama-3.1-8b --phase decode --batch 1 \
#       --context 1024 --dtype bf16 --out out/8b-b1
#   NP=16 HOSTS=node1:8,node2:8 launch/mpirun_node.sh run --backend cuda --tp 8 ...  # 2 groups
#   NCCL_SOCKET_IFNAME=ib0 NCCL_IB_HCA=mlx5_0,mlx5_1 NP=16 HOSTS=... launch/mpirun_node.sh ...
#
# GPUS_PER_NODE (default 8) ranks per node; $MPIRUN is the launcher (default mpirun).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/forward_env.sh
source "$ROOT/launch/forward_env.sh"
NP=${NP:-8}
PPN=${GPUS_PER_NODE:-8}
# Open MPI does not bind (--bind-to none): --bind-to core gave rank i core i, all 8 ranks on
# one socket whatever socket their GPU hangs off, and one core each for the rank, NCCL's proxy
# thread, CUPTI and the NVML sampler. Each rank binds itself instead (launch/bind_rank.py) to a
# slice of its GPU's NUMA node with room for those threads. CUDA_DEVICE_ORDER=PCI_BUS_ID makes
# CUDA count GPUs in the bus order that bind_rank.py reads from sysfs.
export CUDA_DEVICE_ORDER=PCI_BUS_ID OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
args=(-np "$NP" --map-by "ppr:$PPN:node" --bind-to none -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS)
[[ -n ${HOSTS:-} ]] && args+=(--host "$HOSTS")
# Every NCCL_*, UCX_*, CUDA_* and TPB_* variable set here reaches every host (forward_env.sh);
# tpbench records the ones of interest in context.env.
mapfile -t forward < <(tpb_forward_env_flags)
args+=("${forward[@]}")
exec "${MPIRUN:-mpirun}" "${args[@]}" python3 "$ROOT/launch/bind_rank.py" -- \
  "${TPBENCH:-$ROOT/build/tpbench}" "$@"
