// Collective registry. The CUDA variants exist only in CUDA builds; the check lives here,
// in one implementation file, not in the interfaces.
#include "harness/backends/collective_factory.h"

#include "collectives/mpi/mpi_collective.h"
#include "collectives/topology.h"
#include "layers/base/errors.h"
#if defined(TPB_HAVE_CUDA)
#include "collectives/mpi/cuda_mpi_collective.h"
#include "collectives/nccl/nccl_collective.h"
#endif

namespace tpb {

namespace {

// More ranks on this host than online CPUs: waiting ranks must yield their core.
bool oversubscribed() {
  MPI_Comm local;
  int n = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) ==
      MPI_SUCCESS) {
    MPI_Comm_size(local, &n);
    MPI_Comm_free(&local);
  }
  return n > online_cpus();
}

}  // namespace

std::unique_ptr<Collective> make_collective(const RunSpec& spec, MPI_Comm tp_comm, Device& dev) {
  const bool on_gpu = dev.caps().backend == "cuda";
  if (spec.collective == "mpi" && !on_gpu)
    return make_mpi_collective(tp_comm, spec.collective_timeout_s, oversubscribed());
#if defined(TPB_HAVE_CUDA)
  if (spec.collective == "mpi")
    return make_cuda_mpi_collective(tp_comm, dev, spec.collective_timeout_s);
  if (spec.collective == "nccl")
    return make_nccl_collective(tp_comm, dev, spec.collective_timeout_s);
#endif
  throw BadInput("--collective: '" + spec.collective + "' is not available with --backend " +
                 spec.backend + " in this build");
}

}  // namespace tpb
