# Sourced by the mpirun launchers: the -x flags that carry the environment that shapes a run to
# every host. mpirun gives remote ranks only the variables -x names, and NCCL reads its knobs in
# each process: an NCCL_SOCKET_IFNAME or NCCL_IB_HCA set only on the launching host leaves the
# remote ranks on another NIC, silently. UCX_* does the same for a UCX-based MPI; CUDA_* and
# TPB_* keep the device order and tpbench's own settings alike on every host.
tpb_forward_env_flags() {
  local v
  for v in $(compgen -e); do
    case $v in
      NCCL_* | UCX_* | CUDA_* | TPB_*) printf '%s\n' -x "$v" ;;
    esac
  done
}
