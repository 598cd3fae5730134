// all_reduce: every rank ends with the elementwise reduction of all ranks' buffers.
#include "base/mpi_check.h"
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/kind_parts.h"
#include "collectives/kinds/verify_fill.h"

namespace tpb {

namespace {

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

constinit const CollKindInfo kAllReduce{
    CollKind::all_reduce, "all_reduce", whole_message, bus_factor,
    fill_own_input,       expected,     call_mpi};

}  // namespace tpb
