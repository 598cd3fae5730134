#!/usr/bin/env bash
# tpbench on Slurm: one rank per GPU, TP inside a node. Submit with sbatch or run inside an
# allocation, and it starts the ranks with srun; or give it to srun as the task, and each task
# becomes one rank (no second srun). Every argument after the script name goes to tpbench.
#
#   sbatch -N1 --gpus-per-node=8 launch/srun_node.sh run --backend cuda --model llama-3.1-70b \
#       --phase decode --batch 8 --context 4096 --dtype bf16 --tp 8 --out out/70b-d8
#   sbatch -N2 --gpus-per-node=8 launch/srun_node.sh sweep --backend cuda --tp 8 \
#       --tp-groups contiguous --batch 1..64:x2 --out out/sweep   # two TP=8 groups, one per node
#   srun -N2 --ntasks-per-node=8 --gpus-per-node=8 --gpu-bind=none --mpi=pmix --cpu-bind=none \
#       launch/srun_node.sh run --backend cuda --tp 16 ...        # as the task: TP across 2 nodes
#   launch/netns_hosts.sh srun -N2 --mpi=pmix -- launch/srun_node.sh run --model tiny ...
#       # on fake hosts (network namespaces) on one machine, CPU backend: see that script
#
# The binary is ${TPBENCH:-<repo>/build/tpbench}. Inside an srun step (SLURM_STEP_ID is a step
# number) the script execs it; elsewhere, the sbatch batch script included (it has
# SLURM_PROCID=0 but no SLURM_STEP_ID), it runs srun on it.
#
# GPUs: every task sees all of its node's GPUs (--gpus-per-node, --gpu-bind=none) and tpbench
# picks GPU SLURM_LOCALID % visible. --gpus-per-task=1 puts each task in a cgroup with one GPU
# on sites that constrain devices, and NCCL then cannot open its peers' GPUs for P2P/NVLink:
# it falls back to shared memory or the network at a fraction of the bandwidth. CPUs: each task
# binds itself to a slice of its GPU's NUMA node (launch/bind_rank.py), room for NCCL's proxy
# thread included, so Slurm does not bind (--cpu-bind=none). srun passes the whole environment
# to every task (--export=ALL, its default), NCCL_* and UCX_* included.
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# sbatch runs a copy (SlurmdSpoolDir/job*/slurm_script): then the repository is where it was
# submitted from, e.g. `sbatch launch/srun_node.sh` from the repository root.
[ -f "$ROOT/launch/srun_node.sh" ] || ROOT=${SLURM_SUBMIT_DIR:-$ROOT}
BIN=${TPBENCH:-$ROOT/build/tpbench}
# One OS thread per rank for BLAS-free host work; CUDA counts GPUs in bus order, as
# bind_rank.py reads them from sysfs.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 CUDA_DEVICE_ORDER=PCI_BUS_ID
BIND=(python3 "$ROOT/launch/bind_rank.py" --)
# Steps 4294967290 and up are Slurm's pseudo-steps (interactive, batch, extern...): not a task.
if [[ ${SLURM_STEP_ID:-} =~ ^[0-9]+$ ]] && [ "${SLURM_STEP_ID}" -lt 4294967290 ]; then
  exec "${BIND[@]}" "$BIN" "$@"
fi
# --gpu-bind only where the job holds GPUs: a CPU-only allocation (tests/multihost) has none.
GPU_BIND=()
[[ -n ${SLURM_GPUS_ON_NODE:-}${SLURM_JOB_GPUS:-}${SLURM_GPUS_PER_NODE:-} ]] && GPU_BIND=(--gpu-bind=none)
exec "${SRUN:-srun}" --mpi=pmix --cpu-bind=none "${GPU_BIND[@]}" "${BIND[@]}" "$BIN" "$@"
