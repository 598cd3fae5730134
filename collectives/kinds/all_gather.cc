// all_gather: every rank ends with all ranks' blocks, rank q's block at position q.
#include "base/mpi_check.h"
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/kind_parts.h"
#include "collectives/kinds/verify_fill.h"

namespace tpb {

namespace {

// S is the gathered total, joined from n equal blocks: round down to a multiple of n.
CollElements elements(int64_t count, int n) {
  const int64_t total = whole_blocks(count, n);
  return {total / n, total, total};
}

// In place, MPI_Allgather takes each rank's block from its own slot of the receive buffer.
void fill(const CollVerify& v, float* send, float* recv) {
  fill_rank_values(v.rank, v.counts.send, v.inplace ? recv + v.rank * v.counts.send : send);
}

float expected(const CollVerify& v, int64_t j) {
  const int64_t block = v.counts.recv / v.n;
  return fill_value(static_cast<int>(j / block), j % block);
}

void call_mpi(const CollMpiArgs& a, MPI_Request* req) {
  const int sc = a.send_count();
  if (req)
    TPB_MPI_CHECK(
        MPI_Iallgather(a.send_or_in_place(), sc, a.type, a.recv, sc, a.type, a.comm, req));
  else
    TPB_MPI_CHECK(MPI_Allgather(a.send_or_in_place(), sc, a.type, a.recv, sc, a.type, a.comm));
}

}  // namespace

constinit const CollKindInfo kAllGather{
    CollKind::all_gather, "all_gather", elements, ring_block_factor, fill, expected, call_mpi};

}  // namespace tpb
