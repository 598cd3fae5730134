#!/usr/bin/env bash
# tpbench on Slurm: one rank per GPU, TP inside a node. Submit with sbatch or run inside an
# allocation, and it starts the ranks with srun; or give it to srun as the task, and each task
# becomes one rank (no second srun). Every argument after the script name goes to tpbench.
#
#   sbatch -N1 --gpus-per-node=8 launch/srun_node.sh run --backend cuda --model llama-3.1-70b \
#       --phase decode --batch 8 --context 4096 --dtype bf16 --tp 8 --out out/70b-d8
#   sbatch -N2 --gpus-per-node=8 launch/srun_node.sh sweep --backend cuda --tp 8 \
#       --tp-groups contiguous --batch 1..64:x2 --out out/sweep   # two TP=8 groups, one per node
#   srun -N2 --ntasks-per-node=8 --gpus-per-task=1 --mpi=pmix --cpu-bind=cores \
#       launch/srun_node.sh run --backend cuda --tp 16 ...        # as the task: TP across 2 nodes
#   launch/netns_hosts.sh srun -N2 --mpi=pmix -- launch/srun_node.sh run --model tiny ...
#       # on fake hosts (network namespaces) on one machine, CPU backend: see that script
#
# The binary is ${TPBENCH:-<repo>/build/tpbench}. Inside an srun step (SLURM_STEP_ID is a step
# number) the script execs it; elsewhere, the sbatch batch script included (it has
# SLURM_PROCID=0 but no SLURM_STEP_ID), it runs srun --mpi=pmix --cpu-bind=cores on it.
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=8
#SBATCH --exclusive
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# sbatch runs a copy (SlurmdSpoolDir/job*/slurm_script): then the repository is where it was
# submitted from, e.g. `sbatch launch/srun_node.sh` from the repository root.
[ -f "$ROOT/launch/srun_node.sh" ] || ROOT=${SLURM_SUBMIT_DIR:-$ROOT}
BIN=${TPBENCH:-$ROOT/build/tpbench}
# One OS thread per rank for BLAS-free host work; ranks bound to the cores of their GPU's NUMA
# node by Slurm's --cpu-bind; local rank -> GPU is done by tpbench (local_rank % devices).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# Steps 4294967290 and up are Slurm's pseudo-steps (interactive, batch, extern...): not a task.
if [[ ${SLURM_STEP_ID:-} =~ ^[0-9]+$ ]] && [ "${SLURM_STEP_ID}" -lt 4294967290 ]; then
  exec "$BIN" "$@"
fi
exec srun --mpi=pmix --cpu-bind=cores "$BIN" "$@"
