#!/usr/bin/env bash
# Regenerates every committed engine table (configs/engine_tables/) from AIConfigurator 0.12.0's
# measured kernel tables, byte for byte: a fresh venv, the pinned package, the one list below.
# usage: launch/regen_engine_tables.sh [VENV_DIR]   (default: a temporary folder; needs PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.12.0
# SYSTEM FRAMEWORK VERSION, one table each (writes configs/engine_tables/ENGINE/HARDWARE.json).
TABLES=(
  "h100_sxm vllm 0.24.0"
  "h200_sxm vllm 0.24.0"
  "b200_sxm vllm 0.24.0"
  "h100_sxm sglang 0.5.14"
  "h200_sxm sglang 0.5.14"
  "h100_sxm trtllm 1.3.0rc20"
  "h200_sxm trtllm 1.3.0rc20"
)
venv="${1:-$(mktemp -d)/aicenv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "aiconfigurator==$VERSION"
fi
for t in "${TABLES[@]}"; do
  # shellcheck disable=SC2086  # each entry is three words on purpose
  "$venv/bin/python" results/aiconfigurator_import.py $t --out configs/engine_tables
done
git status --short configs/engine_tables
