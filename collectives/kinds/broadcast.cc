// broadcast: every rank ends with the root's buffer.
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

// Only the root holds input; the others' buffers stay zero until the call writes them.
void fill(const CollVerify& v, float* send, float* recv) {
  if (v.rank == v.root) fill_own_input(v, send, recv);
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

const CollKindInfo& broadcast_kind() {
  static const CollKindInfo k{.kind = CollKind::broadcast,
                              .name = "broadcast",
                              .elements = elements,
                              .bus_factor = bus_factor,
                              .fill = fill,
                              .expected = expected,
                              .mpi = call_mpi,
                              .one_buffer = true};
  return k;
}

}  // namespace tpb
