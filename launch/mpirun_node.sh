#!/usr/bin/env bash
# tpbench with mpirun on one 8-GPU node: one rank per GPU, bound to cores, mapped in order so
# that contiguous TP groups stay on one NVLink domain. Arguments go to tpbench.
#
#   launch/mpirun_node.sh run --backend cuda --model llama-3.1-8b --phase decode --batch 1 \
#       --context 1024 --dtype bf16 --out out/8b-b1
#   NP=16 HOSTS=node1:8,node2:8 launch/mpirun_node.sh run --backend cuda --tp 8 ...  # 2 groups
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NP=${NP:-8}
args=(-np "$NP" --map-by ppr:8:node --bind-to core -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1)
[[ -n ${HOSTS:-} ]] && args+=(--host "$HOSTS")
# NCCL settings worth recording travel with the job (tpbench writes them into context.env).
for v in NCCL_ALGO NCCL_PROTO NCCL_P2P_DISABLE NCCL_SHM_DISABLE NCCL_IB_DISABLE NCCL_NVLS_ENABLE \
         NCCL_DEBUG CUDA_VISIBLE_DEVICES; do
  [[ -n ${!v:-} ]] && args+=(-x "$v")
done
exec mpirun "${args[@]}" "$ROOT/build/tpbench" "$@"
