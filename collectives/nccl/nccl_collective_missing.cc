// Stand-in for builds whose configure step found no NCCL: --collective nccl is then a clear
// input error rather than a build failure, and the harness needs no #ifdef for it.
#include "base/errors.h"
#include "collectives/nccl/nccl_collective.h"

namespace tpb {

std::unique_ptr<Collective> make_nccl_collective(MPI_Comm, Device&, double) {
  throw BadInput(
      "--collective nccl: this tpbench was built without NCCL (nccl.h or libnccl "
      "not found at configure time); use --collective mpi");
}

std::string nccl_version() {
  return "";
}

}  // namespace tpb
