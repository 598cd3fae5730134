# Helpers of launch/device-check.sh (sourced): what the machine has, the layer check's nvcc
# build, and the tpbench points. Each sets or uses the caller's variables as documented.

# Sets NVCC, CUDA_HOME, ARCH (e.g. 90), HAVE_GPU (0/1), CMAKE_DEPS and CMAKE_NCCL (arrays of
# -D options: the bundle of launch/device-bundle.sh when present, NCCL and cuBLAS from the
# toolkit or else from the pip wheels a PyTorch image carries).
device_env() {
  NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  [[ -x "$NVCC" ]] || die "no nvcc (set NVCC=/path/to/nvcc)"
  command -v cmake >/dev/null || die "no cmake"
  CUDA_HOME=${CUDA_HOME:-$(cd "$(dirname "$NVCC")/.." && pwd)}
  "$NVCC" --version | tail -n 1
  HAVE_GPU=0
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    HAVE_GPU=1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  fi
  ARCH=${CUDA_ARCH:-}
  if [[ -z "$ARCH" && $HAVE_GPU == 1 ]]; then
    ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
  fi
  [[ "$ARCH" =~ ^[0-9]+$ ]] || ARCH=90
  local bundle=${TPB_DEPS_DIR:-$ROOT/device-bundle}
  CMAKE_DEPS=()
  if [[ -f "$bundle/include/nlohmann/json.hpp" ]]; then
    CMAKE_DEPS=(-DTPB_DEPS_DIR="$bundle")
    echo "dependencies: the bundle $bundle"
  elif [[ -f /usr/include/nlohmann/json.hpp ]] && pkg-config --exists openblas 2>/dev/null; then
    echo "dependencies: this system's packages"
  else
    die "no nlohmann_json/CLI11/fmt/OpenBLAS here and no bundle at $bundle: run launch/device-bundle.sh where they are installed and carry device-bundle/"
  fi
  CMAKE_NCCL=()
  wheel_libs
}

# NCCL and cuBLAS(Lt) from the pip wheels where the toolkit has none (a PyTorch image).
wheel_libs() {
  local w
  if [[ ! -f "$CUDA_HOME/include/nccl.h" ]]; then
    w=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
    if [[ -n "$w" && -f "$w/include/nccl.h" ]]; then
      CMAKE_NCCL=(-DTPB_NCCL_INCLUDE_DIR="$w/include" -DTPB_NCCL_LIBRARY="$(ls "$w"/lib/libnccl.so* | head -n 1)")
      echo "NCCL: the wheel's, $w"
    else
      echo "NCCL: none found (tpbench runs --collective mpi, a one-rank world)"
    fi
  fi
  if ! ls "$CUDA_HOME"/lib64/libcublasLt.so* >/dev/null 2>&1 &&
     ! ls "$CUDA_HOME"/targets/x86_64-linux/lib/libcublasLt.so* >/dev/null 2>&1; then
    w=$(python3 -c 'import nvidia.cublas as m; print(list(m.__path__)[0])' 2>/dev/null || true)
    [[ -n "$w" ]] || die "no cuBLAS in $CUDA_HOME and no nvidia-cublas wheel"
    CMAKE_NCCL+=(-DCUDA_cublas_LIBRARY="$(ls "$w"/lib/libcublas.so* | head -n 1)"
                 -DCUDA_cublasLt_LIBRARY="$(ls "$w"/lib/libcublasLt.so* | head -n 1)"
                 -DCMAKE_CXX_FLAGS="-I$w/include" -DCMAKE_CUDA_FLAGS="-I$w/include")
    echo "cuBLAS: the wheel's, $w"
  fi
}

# tpb_device_check (tests/gpu) into DIR with nvcc alone: CudaDevice, its kernels and cuBLASLt;
# no MPI, NCCL or JSON. Uses NVCC, CUDA_HOME, ARCH and the build's cuBLAS.
build_layer_check() {
  local dir=$1 f pids=() fail=0 lt blas
  mkdir -p "$dir/obj"
  lt=$(ls "$CUDA_HOME"/lib64/libcublasLt.so "$CUDA_HOME"/targets/x86_64-linux/lib/libcublasLt.so 2>/dev/null | head -n 1 || true)
  blas=${lt/cublasLt/cublas}
  if [[ -z "$lt" ]]; then
    local w
    w=$(python3 -c 'import nvidia.cublas as m; print(list(m.__path__)[0])')
    lt=$(ls "$w"/lib/libcublasLt.so* | head -n 1)
    blas=$(ls "$w"/lib/libcublas.so* | head -n 1)
  fi
  local inc=(-I"$ROOT" -I"$CUDA_HOME/include" -I"$(dirname "$lt")/../include")
  local cu=(attention_decode attention_prefill attention_varlen fill kv_write rmsnorm rope
            rope_kv_write row_argmax swiglu_add timer_kernels)
  # CUPTI (per-op times) where the toolkit has its headers; the stand-in says why otherwise.
  local cupti=layers/cuda/activity/cupti_activity_missing.cc
  [[ -f "$CUDA_HOME/include/cupti_activity.h" ]] && cupti=layers/cuda/activity/cupti_activity.cc
  local cc=(layers/cuda/bandwidth_hog.cc layers/cuda/cuda_clock.cc layers/cuda/cuda_device.cc
            layers/cuda/cuda_gemm.cc layers/cuda/cuda_varlen.cc layers/cuda/plan/launch_plan.cc
            layers/cuda/plan/varlen_plan.cc layers/cuda/activity/activity_join.cc "$cupti"
            layers/base/errors.cc tests/gpu/device_check.cc
            tests/gpu/layer_check.cc tests/gpu/layer_reference.cc tests/gpu/varlen_check.cc)
  for f in "${cu[@]}"; do
    "$NVCC" -std=c++20 -O3 -lineinfo -arch=sm_"$ARCH" "${inc[@]}" \
      -c "$ROOT/layers/cuda/kernels/$f.cu" -o "$dir/obj/$f.o" & pids+=($!)
  done
  for f in "${cc[@]}"; do
    "${CXX:-g++}" -std=c++20 -O2 "${inc[@]}" -c "$ROOT/$f" -o "$dir/obj/$(basename "$f" .cc).o" &
    pids+=($!)
  done
  for f in "${pids[@]}"; do wait "$f" || fail=1; done
  [[ $fail == 0 ]] || die "the layer check did not compile"
  "$NVCC" -arch=sm_"$ARCH" "$dir"/obj/*.o "$lt" "$blas" -Xlinker -rpath -Xlinker "$(dirname "$lt")" \
    -lpthread -ldl -o "$dir/tpb_device_check"
  echo "built $dir/tpb_device_check"
}

# The points: each model's decode grid eager and with --cuda-graph, and its prefill points,
# one sweep each into OUT/points-MODEL-MODE (kept whatever happens; a sweep that fails or
# passes its time is named and the check goes on). --quick: tiny and 8B at context 1k only.
run_points() {
  local tpb=$1 out=$2 quick=$3 coll=mpi
  "$tpb" info | grep -q '"nccl"' && coll=nccl
  local common=(--backend cuda --collective "$coll" --dtype bf16 --trace-steps 0)
  local models=("tiny" "llama-3.1-8b" "llama-3.1-70b:1") ctx=1024,32768
  if [[ $quick == 1 ]]; then models=("tiny" "llama-3.1-8b"); ctx=1024; fi
  local m name layers
  for m in "${models[@]}"; do
    name=${m%%:*}
    layers=()
    [[ "$m" == *:* ]] && layers=(--layers "${m##*:}")
    sweep "$tpb" "$out/points-$name-eager" "${common[@]}" --model "$name" "${layers[@]}" \
      --phase decode --batch 1,8,64,256 --context "$ctx" --steps 30 --warmup 5
    sweep "$tpb" "$out/points-$name-graph" "${common[@]}" --model "$name" "${layers[@]}" \
      --phase decode --batch 1,8,64,256 --context "$ctx" --steps 30 --warmup 5 --cuda-graph
    sweep "$tpb" "$out/points-$name-prefill" "${common[@]}" --model "$name" "${layers[@]}" \
      --phase prefill --prompt 512,4096 --steps 10 --warmup 2
  done
}

sweep() {  # tpbench OUT_DIR args...: one sweep under a time limit, its log beside its results
  local tpb=$1 dir=$2 rc
  shift 2
  set +e
  timeout 150 "$tpb" sweep "$@" --out "$dir" >"$dir.log" 2>&1
  rc=$?
  set -e
  if [[ $rc != 0 ]]; then
    echo "sweep $(basename "$dir"): exit $rc ($(tail -n 2 "$dir.log" | tr '\n' ' '))"
  else
    echo "sweep $(basename "$dir"): ok"
  fi
}
