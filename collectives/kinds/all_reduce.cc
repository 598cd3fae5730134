// all_reduce: every rank ends with the elementwise reduction of all ranks' buffers.
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/verify_fill.h"
#include "collectives/mpi/mpi_check.h"

namespace tpb {

namespace {

// Each rank sends and receives all of S.
CollElements elements(int64_t count, int /*n*/) {
  return {count, count, count};
}

// Reduce-scatter then all-gather on a ring: 2(n-1) chunks of S/n per rank -> 2(n-1)/n.
double bus_factor(int n) {
  const double d = static_cast<double>(n);
  return 2.0 * (d - 1.0) / d;
}

float expected(const CollVerify& v, int64_t j) {
  return reduced_value(v.op, v.n, j);
}

void call_mpi(const CollMpiArgs& a, MPI_Request* req) {
  if (req)
    TPB_MPI_CHECK(
        MPI_Iallreduce(a.send_or_in_place(), a.recv, a.recv_count(), a.type, a.op, a.comm, req));
  else
    TPB_MPI_CHECK(
        MPI_Allreduce(a.send_or_in_place(), a.recv, a.recv_count(), a.type, a.op, a.comm));
}

}  // namespace

const CollKindInfo& all_reduce_kind() {
  static const CollKindInfo k{.kind = CollKind::all_reduce,
                              .name = "all_reduce",
                              .elements = elements,
                              .bus_factor = bus_factor,
                              .fill = fill_own_input,
                              .expected = expected,
                              .mpi = call_mpi};
  return k;
}

}  // namespace tpb
