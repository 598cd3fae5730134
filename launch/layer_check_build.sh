# Sourced by launch/device-bundle.sh: the layer check (tests/gpu's tpb_device_check) built with
# nvcc alone, as the bundle carries it. Needs the caller's ROOT, NVCC, CUDA_HOME, ARCH and die.

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
            layers/cuda/plan/varlen_plan.cc layers/cuda/plan/sdpa_plan.cc
            layers/cuda/activity/activity_join.cc "$cupti"
            base/errors.cc tests/gpu/device_check.cc
            tests/gpu/layer_check.cc layers/reference/ref_ops.cc tests/gpu/varlen_check.cc)
  # cuDNN's attention where launch/deps.sh fetched cudnn-frontend (cuDNN is loaded at run time).
  local fe="$ROOT/.deps/cudnn-frontend/include" sdpa=(layers/cuda/cudnn/cudnn_sdpa_none.cc)
  local sdpa_flags=()
  if [[ -f "$fe/cudnn_frontend.h" && -f "$CUDA_HOME/include/cudnn.h" ]]; then
    sdpa=(layers/cuda/cudnn/cudnn_sdpa.cc)
    sdpa_flags=(-isystem "$fe" -DNV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING)
  fi
  local cache=()  # ccache where it is installed: CI builds this on every run
  command -v ccache >/dev/null && cache=(ccache)
  for f in "${cu[@]}"; do
    "${cache[@]}" "$NVCC" -std=c++20 -O3 -lineinfo -arch=sm_"$ARCH" "${inc[@]}" \
      -c "$ROOT/layers/cuda/kernels/$f.cu" -o "$dir/obj/$f.o" & pids+=($!)
  done
  for f in "${cc[@]}"; do
    "${cache[@]}" "${CXX:-g++}" -std=c++20 -O2 "${inc[@]}" -c "$ROOT/$f" -o "$dir/obj/$(basename "$f" .cc).o" &
    pids+=($!)
  done
  "${cache[@]}" "${CXX:-g++}" -std=c++20 -O2 "${inc[@]}" "${sdpa_flags[@]}" -c "$ROOT/${sdpa[0]}" \
    -o "$dir/obj/cudnn_sdpa.o" &
  pids+=($!)
  for f in "${pids[@]}"; do wait "$f" || fail=1; done
  [[ $fail == 0 ]] || die "the layer check did not compile"
  "$NVCC" -arch=sm_"$ARCH" "$dir"/obj/*.o "$lt" "$blas" -Xlinker -rpath -Xlinker "$(dirname "$lt")" \
    -lpthread -ldl -o "$dir/tpb_device_check"
  echo "built $dir/tpb_device_check"
}
