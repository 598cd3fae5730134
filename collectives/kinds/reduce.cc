// reduce: the root ends with the elementwise reduction of all ranks' buffers.
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/verify_fill.h"
#include "collectives/mpi/mpi_check.h"

namespace tpb {

namespace {

CollElements elements(int64_t count, int /*n*/) {
  return {count, count, count};
}

// Pipelined, every link carries S once -> 1.
double bus_factor(int /*n*/) {
  return 1.0;
}

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

const CollKindInfo& reduce_kind() {
  static const CollKindInfo k{.kind = CollKind::reduce,
                              .name = "reduce",
                              .elements = elements,
                              .bus_factor = bus_factor,
                              .fill = fill_own_input,
                              .expected = expected,
                              .mpi = call_mpi,
                              .output_on_root_only = true};
  return k;
}

}  // namespace tpb
