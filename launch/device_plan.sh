# Sourced by device-check.sh: what the check runs, in order of value, so that a deadline cuts
# the least useful steps. Uses the caller's step(), TPB, BUNDLE, R and MODE.
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

plan_steps() {
  # Traces off, but for the decode sweeps (DEC names their --trace-steps).
  local C0=("${BACKEND[@]}" --collective "$COLL")
  local C=("${C0[@]}" --trace-steps 0)
  step decode-first 40 "$TPB" run "${C[@]}" "${M8[@]}" --phase decode "${DEC1[@]}" --out "$R/decode-first"
  step decode-eager 45 "$TPB" sweep "${C0[@]}" "${M8[@]}" --phase decode "${DEC[@]}" --out "$R/decode-eager"
  step decode-graph 45 "$TPB" sweep "${C0[@]}" "${M8[@]}" --phase decode "${DEC[@]}" "${GRAPH[@]}" --out "$R/decode-graph"
  step prefill 40 "$TPB" sweep "${C[@]}" "${M8[@]}" --phase prefill "${PRE[@]}" --out "$R/prefill"
  step prefill-cudnn 40 "$TPB" sweep "${C[@]}" "${M8[@]}" --phase prefill "${PRE[@]}" "${ATTN[@]}" --out "$R/prefill-cudnn"
  step decode-cudnn 45 "$TPB" sweep "${C[@]}" "${M8[@]}" --phase decode "${DECA[@]}" "${ATTN[@]}" --out "$R/decode-cudnn"
  step check 40 "$TPB" run "${C[@]}" "${M8[@]}" --phase decode "${CHECK[@]}" --steps 3 --check --out "$R/check"
  step peer 60 python3 "$BUNDLE/peer_torch.py" --modes eager,graph "${PEER[@]}" --out "$R/peer.jsonl"
  step serve 45 "$TPB" serve "${C[@]}" "${M8[@]}" "${SERVE[@]}" --out "$R/serve"
  step serve-cudnn 45 "$TPB" serve "${C[@]}" "${M8[@]}" "${SERVE[@]}" "${ATTN[@]}" --out "$R/serve-cudnn"
  step calibrate 45 "$TPB" calibrate "${CAL[@]}" --collective "$COLL" --model "${M8[1]}" --op-profile off --out "$R/calibrate"
  step layer-check 45 "$BUNDLE/tpb_device_check" --quick
  step 70b-layer 30 "$TPB" sweep "${C[@]}" "${M70[@]}" --phase decode --batch 1,64 --context 4096 --steps 10 --warmup 2 --out "$R/70b-layer"
  step decode-fp8 45 "$TPB" sweep "${BACKEND8[@]}" --collective "$COLL" --trace-steps 0 "${M8[@]}" --phase decode "${DECA[@]}" --out "$R/decode-fp8"
  # --inject slow_op's device-stream path (the op's warm-up median spun inside its own events):
  # the table sets attention's time per step against decode-first's.
  step slow-op 40 "$TPB" run "${C[@]}" "${M8[@]}" --phase decode "${DEC1[@]}" --inject rank=0:slow_op=attention@2 --out "$R/slow-op"
  step peer-compile 120 python3 "$BUNDLE/peer_torch.py" --modes compile "${PEER[@]}" --out "$R/peer.jsonl"
}

COLL=mpi  # the CPU backend's transport, in the rehearsal
[[ $MODE == gpu ]] && COLL=$(pick_collective)
