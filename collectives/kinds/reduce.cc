// reduce: the root ends with the elementwise reduction of all ranks' buffers.
#include "base/mpi_check.h"
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/kind_parts.h"
#include "collectives/kinds/verify_fill.h"

namespace tpb {

namespace {

float expected(const CollVerify& v, int64_t j) {
  return reduced_value(v.op, v.n, j);
}

void call_mpi(const CollMpiArgs& a, MPI_Request* req) {
  // In place, only the root passes MPI_IN_PLACE; the others send from their one buffer.
  const void* sb = a.inplace ? (a.rank == a.root ? MPI_IN_PLACE : a.recv) : a.send;
  if (req)
    TPB_MPI_CHECK(MPI_Ireduce(sb, a.recv, a.recv_count(), a.type, a.op, a.root, a.comm, req));
  else
    TPB_MPI_CHECK(MPI_Reduce(sb, a.recv, a.recv_count(), a.type, a.op, a.root, a.comm));
}

}  // namespace

constinit const CollKindInfo kReduce{
    CollKind::reduce, "reduce", whole_message, pipelined_factor,
    fill_own_input,   expected, call_mpi,      CollBuffers::root_output};

}  // namespace tpb
