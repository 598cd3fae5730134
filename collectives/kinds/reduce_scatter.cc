// reduce_scatter: rank r ends with block r of the elementwise reduction of all ranks' buffers.
#include "base/mpi_check.h"
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/kind_parts.h"
#include "collectives/kinds/verify_fill.h"

namespace tpb {

namespace {

// S is the input total, split into n equal blocks: round down to a multiple of n.
CollElements elements(int64_t count, int n) {
  const int64_t total = whole_blocks(count, n);
  return {total, total / n, total};
}

float expected(const CollVerify& v, int64_t j) {
  return reduced_value(v.op, v.n, v.rank * v.counts.recv + j);
}

void call_mpi(const CollMpiArgs& a, MPI_Request* req) {
  if (req)
    TPB_MPI_CHECK(MPI_Ireduce_scatter_block(a.send_or_in_place(), a.recv, a.recv_count(), a.type,
                                            a.op, a.comm, req));
  else
    TPB_MPI_CHECK(MPI_Reduce_scatter_block(a.send_or_in_place(), a.recv, a.recv_count(), a.type,
                                           a.op, a.comm));
}

}  // namespace

constinit const CollKindInfo kReduceScatter{
    CollKind::reduce_scatter, "reduce_scatter", elements, ring_block_factor,
    fill_own_input,           expected,         call_mpi};

}  // namespace tpb
