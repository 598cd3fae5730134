# Sourced by device-check.sh: the folders that hold the libraries a bundle leaves to the
# machine (the toolkit's cuBLAS(Lt), cudart and CUPTI; NCCL; the driver's libcuda and NVML).
# A GPU machine's image may carry them in the toolkit (/usr/local/cuda*), as system packages,
# or only as PyTorch's pip wheels, whose CUDA 13 layout is site-packages/nvidia/cu13/lib
# (CUDA 12 wheels: nvidia/<name>/lib). The first folder that holds each library wins.

# The library names the bundle's binaries ask for (their DT_NEEDED), less what lib/ carries,
# and cuDNN 9, which --attention cudnn loads at run time (too large to carry: PyTorch's
# nvidia-cudnn wheel has it, in nvidia/cudnn/lib).
TPB_DEVICE_LIBS=(libcublasLt.so.13 libcublas.so.13 libcudart.so.13 libcupti.so.13 libnccl.so.2
  libnvidia-ml.so.1 libcuda.so.1 libcudnn.so.9)

# Prints the folders where the nvidia wheels keep libraries (both layouts), wherever Python
# finds the nvidia package: site-packages, user site, or PYTHONPATH.
wheel_lib_dirs() {
  local p
  for p in $(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null); do
    ls -d "$p"/cu13/lib "$p"/*/lib 2>/dev/null
  done
}

# device_lib_path [EXTRA_ROOT...]: prints a colon-separated LD_LIBRARY_PATH tail, one folder
# per library found (each searched in the toolkit, the system's folders, then the wheels),
# and logs to stderr where each came from or that it is missing.
device_lib_path() {
  local system=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib
    /usr/local/cuda/extras/CUPTI/lib64 /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64
    /usr/local/nvidia/lib /usr/lib64 $(ls -d /usr/local/cuda-*/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 \
    /usr/local/cuda-*/lib 2>/dev/null))
  # TPB_SYSTEM_LIB_DIRS replaces the system's list (the rehearsal's wheels-only case).
  [[ -v TPB_SYSTEM_LIB_DIRS ]] && read -ra system <<<"$TPB_SYSTEM_LIB_DIRS"
  local dirs=("$@" "${system[@]}" $(wheel_lib_dirs))
  local lib d found path=""
  for lib in "${TPB_DEVICE_LIBS[@]}"; do
    found=""
    for d in "${dirs[@]}"; do
      if [[ -e "$d/$lib" ]]; then found=$d; break; fi
    done
    echo "lib $lib: ${found:-not found}" >&2
    [[ -n "$found" && ":$path:" != *":$found:"* ]] && path+=":$found"
  done
  printf '%s' "${path#:}"
}

# device-bundle.sh ships the libraries and binaries over 8 MiB gzipped (libopenblas: 36 MB,
# 13 MB packed; each tpbench 16 MB, 4.7 MB), as a device call carries 64 MiB in all: unpacks
# them in place, once (a second call finds none).
device_unpack() {
  local z
  for z in "$1"/*.gz "$1"/lib/*.gz; do
    if [[ -e "$z" ]]; then gunzip -f "$z" || return 1; fi
  done
  return 0
}
