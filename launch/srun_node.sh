#!/usr/bin/env bash
# tpbench on Slurm: one rank per GPU, TP inside a node. Submit with sbatch or run inside an
# allocation. Every argument after the script name goes to tpbench.
#
#   sbatch -N1 --gpus-per-node=8 launch/srun_node.sh run --backend cuda --model llama-3.1-70b \
#       --phase decode --batch 8 --context 4096 --dtype bf16 --tp 8 --out out/70b-d8
#   sbatch -N2 --gpus-per-node=8 launch/srun_node.sh sweep --backend cuda --tp 8 \
#       --tp-groups contiguous --batch 1..64:x2 --out out/sweep   # two TP=8 groups, one per node
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=8
#SBATCH --exclusive
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# One OS thread per rank for BLAS-free host work; ranks bound to the cores of their GPU's NUMA
# node by Slurm's --cpu-bind; local rank -> GPU is done by tpbench (local_rank % devices).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec srun --mpi=pmix --cpu-bind=cores "$ROOT/build/tpbench" "$@"
