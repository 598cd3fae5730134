// broadcast: every rank ends with the root's buffer.
#include "base/mpi_check.h"
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/kind_parts.h"
#include "collectives/kinds/verify_fill.h"

namespace tpb {

namespace {

// Only the root holds input; the others' buffers stay zero until the call writes them.
void fill(const CollVerify& v, float* send, float* recv) {
  // The root's every value, whatever the op (a sum's sparse inputs are for sums alone).
  if (v.rank == v.root) fill_rank_values(v.rank, v.counts.send, v.inplace ? recv : send);
}

float expected(const CollVerify& v, int64_t j) {
  return fill_value(v.root, j);
}

void call_mpi(const CollMpiArgs& a, MPI_Request* req) {
  if (req)
    TPB_MPI_CHECK(MPI_Ibcast(a.recv, a.recv_count(), a.type, a.root, a.comm, req));
  else
    TPB_MPI_CHECK(MPI_Bcast(a.recv, a.recv_count(), a.type, a.root, a.comm));
}

}  // namespace

constinit const CollKindInfo kBroadcast{
    CollKind::broadcast,    "broadcast", whole_message, pipelined_factor, fill, expected, call_mpi,
    CollBuffers::one_buffer};

}  // namespace tpb
