# Sourced by device-check.sh: what the check runs, in order of value, so that a deadline cuts
# the least useful steps. Uses the caller's step(), TPB, TPBM (the MPI build), BUNDLE, R and
# MODE, and device_mpi.sh's device_mpirun_args.
# The timeouts are from the first H200 runs (shared/measured/h200-2026-12-04: nine tpbench
# steps in 110 s, torch.compile's first 8B call 25-27 s per shape) with about 2x room.
# --rehearse swaps the GPU's sizes for ones the CPU backend runs in seconds (tiny, 2 layers),
# and changes nothing else: the same steps, step runner, folders, packing and table.

TARGET_MODEL=llama-3.1-8b  # the table judges its targets on this model's points only

if [[ $MODE == gpu ]]; then
  BACKEND=(--backend cuda --dtype bf16 --hardware h200-sxm)
  BACKEND8=(--backend cuda --dtype fp8 --hardware h200-sxm)  # FP8 GEMMs (issue 30, item 5)
  M8=(--model llama-3.1-8b)
  M70=(--model llama-3.1-70b --layers 1)
  # Traces of 10 steps: what `tpbench whatif` replays (fewer_kernels: issue 30's prediction).
  DEC=(--batch 1,8,64,256 --context 1024 --steps 20 --warmup 3 --trace-steps 10)
  DEC1=(--batch 1 --context 1024 --steps 20 --warmup 3)
  DECA=(--batch 1,64 --context 1024 --steps 20 --warmup 3)
  PRE=(--prompt 512,4096 --steps 5 --warmup 1)
  CHECK=(--layers 2 --batch 4 --context 256)
  # Prompts of 992 and 32 new tokens: contexts around run's 1024, for the ITL-against-run target.
  # Warm-up requests keep first-use costs (cuDNN's graph builds) out of the metrics.
  SERVE=(--concurrency 1,8 --requests 16 --warmup-requests 4 --prompt-len 992 --output-len 32 --chunk 512)
  GRAPH=(--cuda-graph)
  ATTN=(--attention cudnn)  # cuDNN's fused SDPA (issue 30): beside the native kernels
  CAL=(--backend cuda --dtype bf16)
  TABLE_DTYPE=bf16
  PEER=()
  # Many ranks on the one GPU: a few layers, so that 4 ranks' weights and --check's host
  # reference stay small; serve short enough for its check's host reference.
  SERVE_CHECK=(--layers 2 --concurrency 2 --requests 4 --prompt-len 64 --output-len 8 --chunk 64)
  INJ=(--layers 4 --batch 1 --context 1024 --steps 20 --warmup 3)
  HOST_DELAY=2ms  # about half a 4-layer step at B=1: large against the step, small against the call
  # Each rank's share of the one GPU (4 x 24 GiB of its ~139): a rank that reads the device's
  # free memory as its own would plan with what its peers are about to take.
  RANK_BUDGET=(--memory-budget 24G)
else
  BACKEND=(--backend cpu --dtype fp32)
  BACKEND8=("${BACKEND[@]}")  # the CPU has no fp8: the step reruns fp32
  M8=(--model tiny --layers 2)
  M70=(--model tiny --layers 1)
  DEC=(--batch 1,4 --context 64 --steps 3 --warmup 1 --trace-steps 3)
  DEC1=(--batch 1 --context 64 --steps 3 --warmup 1)
  DECA=(--batch 1,4 --context 64 --steps 3 --warmup 1)
  PRE=(--prompt 32,64 --steps 2 --warmup 1)
  CHECK=(--batch 2 --context 32)  # M8 has its 2 layers
  SERVE=(--concurrency 1,2 --requests 4 --prompt-len 16 --output-len 4 --chunk 16)
  GRAPH=()
  ATTN=()  # the CPU backend has its own attention only: the steps rerun the native one
  CAL=(--backend cpu --dtype fp32 --reps 1 --max-bytes 64K)
  TABLE_DTYPE=fp32
  PEER=(--small)
  SERVE_CHECK=(--concurrency 2 --requests 4 --prompt-len 16 --output-len 4 --chunk 16)
  INJ=(--batch 1 --context 64 --steps 10 --warmup 1)
  HOST_DELAY=2ms
  RANK_BUDGET=()
fi

# The collective the build really linked: NCCL, as engines run, where info lists it.
pick_collective() {
  "$TPB" info 2>/dev/null | python3 -c 'import json, sys; print("nccl" if "nccl" in json.load(sys.stdin).get("collectives", []) else "mpi")' 2>/dev/null || echo mpi
}

plan_facts() {
  echo "bundle: $(cat "$BUNDLE/bundle.json" 2>/dev/null)"
  if [[ $MODE == gpu ]]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
  else
    echo "rehearsal: no GPU; the GPU steps run on the CPU backend at tiny sizes"
  fi
  echo "host: $(getconf _NPROCESSORS_ONLN) cores; collective: $COLL"
  sed -n 's/^lib //p' "$R/libs.txt" | tr '\n' ';'
  echo
  "$TPB" info | tr -d '\n' | tr -s ' ' | cut -c1-500
  echo
}

# Seconds a step is expected to take, for the steps that the first call's steps.tsv
# (measured/h200-2026-12-04-device-check) did not time or that have changed since: the budget
# test (tests/tools/test_device_plan_budget.py) replays the plan with these and that file's
# times, and fails when peer-compile would start with under 110 s of the deadline left.
declare -A STEP_ESTIMATE_S=(
  [layer-check]=12  # sections [4] cuDNN and [5] FP8 added: cuDNN graph builds, a few s each
  [prefill-cudnn]=8 [decode-cudnn]=6 [serve-cudnn]=24 [decode-fp8]=6 [slow-op]=3
  # Many ranks on the one GPU: mpirun, 2-4 CUDA contexts and their GEMM tuning, the host
  # reference of --check (2 layers of the 8B on one core each: ~1 s on the first call).
  [tp2-check]=20 [tp4-check]=25 [tp2-serve-check]=25 [tp2-slowdown]=15 [tp2-host-delay]=15
)

plan_steps() {
  # Traces off, but for the decode sweeps (DEC names their --trace-steps).
  local C0=("${BACKEND[@]}" --collective "$COLL")
  local C=("${C0[@]}" --trace-steps 0)
  # What the first call ran, in its order (its steps.tsv times them), and then torch.compile,
  # which needs ~107 s: before every step that no call has timed yet, so that a new step that
  # runs to its limit cannot cut it.
  step decode-first 40 "$TPB" run "${C[@]}" "${M8[@]}" --phase decode "${DEC1[@]}" --out "$R/decode-first"
  step decode-eager 45 "$TPB" sweep "${C0[@]}" "${M8[@]}" --phase decode "${DEC[@]}" --out "$R/decode-eager"
  step decode-graph 45 "$TPB" sweep "${C0[@]}" "${M8[@]}" --phase decode "${DEC[@]}" "${GRAPH[@]}" --out "$R/decode-graph"
  step prefill 40 "$TPB" sweep "${C[@]}" "${M8[@]}" --phase prefill "${PRE[@]}" --out "$R/prefill"
  step check 40 "$TPB" run "${C[@]}" "${M8[@]}" --phase decode "${CHECK[@]}" --steps 3 --check --out "$R/check"
  step peer 60 python3 "$BUNDLE/peer_torch.py" --modes eager,graph "${PEER[@]}" --out "$R/peer.jsonl"
  step serve 45 "$TPB" serve "${C[@]}" "${M8[@]}" "${SERVE[@]}" --out "$R/serve"
  step calibrate 45 "$TPB" calibrate "${CAL[@]}" --collective "$COLL" --model "${M8[1]}" --op-profile off --out "$R/calibrate"
  step layer-check 45 "$BUNDLE/tpb_device_check" --quick
  step 70b-layer 30 "$TPB" sweep "${C[@]}" "${M70[@]}" --phase decode --batch 1,64 --context 4096 --steps 10 --warmup 2 --out "$R/70b-layer"
  step peer-compile 120 python3 "$BUNDLE/peer_torch.py" --modes compile "${PEER[@]}" --out "$R/peer.jsonl"
  plan_ranks_steps
  step prefill-cudnn 40 "$TPB" sweep "${C[@]}" "${M8[@]}" --phase prefill "${PRE[@]}" "${ATTN[@]}" --out "$R/prefill-cudnn"
  step decode-cudnn 45 "$TPB" sweep "${C[@]}" "${M8[@]}" --phase decode "${DECA[@]}" "${ATTN[@]}" --out "$R/decode-cudnn"
  step serve-cudnn 45 "$TPB" serve "${C[@]}" "${M8[@]}" "${SERVE[@]}" "${ATTN[@]}" --out "$R/serve-cudnn"
  step decode-fp8 45 "$TPB" sweep "${BACKEND8[@]}" --collective "$COLL" --trace-steps 0 "${M8[@]}" --phase decode "${DECA[@]}" --out "$R/decode-fp8"
  # --inject slow_op's device-stream path (the op's warm-up median spun inside its own events):
  # the table sets attention's time per step against decode-first's.
  step slow-op 40 "$TPB" run "${C[@]}" "${M8[@]}" --phase decode "${DEC1[@]}" --inject rank=0:slow_op=attention@2 --out "$R/slow-op"
}

# Many ranks sharing the one GPU (issue 54): the bundle's MPI build under its own Open MPI
# (device_mpi.sh), --collective mpi (NCCL refuses ranks that share a GPU). The table judges
# --check, equal kernel choices within each group, the injected straggler recovered from the
# device stamps, and the clock conversion error between ranks that read one globaltimer.
plan_ranks_steps() {
  local M=("${BACKEND[@]}" --collective mpi --trace-steps 0 "${RANK_BUDGET[@]}" "${M8[@]}")
  local R2 R4
  read -ra R2 <<<"$(device_mpirun_args 2)"
  read -ra R4 <<<"$(device_mpirun_args 4)"
  step tp2-check 60 mpirun "${R2[@]}" "$TPBM" run "${M[@]}" --tp 2 --phase decode "${CHECK[@]}" --steps 3 --check --out "$R/tp2-check"
  step tp4-check 60 mpirun "${R4[@]}" "$TPBM" run "${M[@]}" --tp 4 --phase decode "${CHECK[@]}" --steps 3 --check --out "$R/tp4-check"
  step tp2-serve-check 60 mpirun "${R2[@]}" "$TPBM" serve "${M[@]}" --tp 2 "${SERVE_CHECK[@]}" --check --out "$R/tp2-serve-check"
  step tp2-slowdown 45 mpirun "${R2[@]}" "$TPBM" run "${M[@]}" --tp 2 --phase decode "${INJ[@]}" --inject rank=1:slowdown=1.3 --out "$R/tp2-slowdown"
  step tp2-host-delay 45 mpirun "${R2[@]}" "$TPBM" run "${M[@]}" --tp 2 --phase decode "${INJ[@]}" --inject "rank=1:host_delay=$HOST_DELAY" --out "$R/tp2-host-delay"
}

COLL=mpi  # the CPU backend's transport, in the rehearsal
[[ $MODE == gpu ]] && COLL=$(pick_collective)
