// World description and TP group construction.
#include "harness/mpi/world.h"

#include <unistd.h>

#include <exception>

#include "base/mpi_check.h"
#include "harness/mpi/gather_plan.h"

namespace tpb {

CommHandle::~CommHandle() {
  // Freeing a communicator is collective; never do it while unwinding from a failed peer.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (c_ != MPI_COMM_NULL && !finalized && std::uncaught_exceptions() == 0) MPI_Comm_free(&c_);
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "single";
    case MPI_THREAD_FUNNELED:
      return "funneled";
    case MPI_THREAD_SERIALIZED:
      return "serialized";
    default:
      return "multiple";
  }
}

World describe_world(MPI_Comm comm) {
  World w;
  w.comm = comm;
  TPB_MPI_CHECK(MPI_Comm_rank(comm, &w.rank));
  TPB_MPI_CHECK(MPI_Comm_size(comm, &w.size));
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  w.host = name;
  TPB_MPI_CHECK(MPI_Query_thread(&w.thread_level));
  MPI_Comm local;
  TPB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &local));
  TPB_MPI_CHECK(MPI_Comm_rank(local, &w.local_rank));
  TPB_MPI_CHECK(MPI_Comm_size(local, &w.local_size));
  TPB_MPI_CHECK(MPI_Allreduce(&w.rank, &w.node, 1, MPI_INT, MPI_MIN, local));
  MPI_Comm_free(&local);
  const int first = w.local_rank == 0 ? 1 : 0;
  TPB_MPI_CHECK(MPI_Allreduce(&first, &w.nodes, 1, MPI_INT, MPI_SUM, comm));
  return w;
}

std::vector<std::string> allgather_host_strings(MPI_Comm comm, const std::string& mine) {
  int rank = 0;
  TPB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm local;
  TPB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local));
  const CommHandle owned(local);
  int n = 1;
  TPB_MPI_CHECK(MPI_Comm_size(local, &n));
  // Short strings (bus ids): a fixed width keeps this one call.
  constexpr int kWidth = 64;
  std::vector<char> all(static_cast<std::size_t>(n) * kWidth, '\0');
  std::vector<char> buf(kWidth, '\0');
  mine.copy(buf.data(), kWidth - 1);
  TPB_MPI_CHECK(MPI_Allgather(buf.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, local));
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.emplace_back(all.data() + static_cast<std::size_t>(i) * kWidth);
  return out;
}

TpGroup split_tp_groups(const World& w, int tp, const std::string& layout) {
  TpGroup g;
  g.groups = w.size / tp;
  g.group = layout == "strided" ? w.rank % g.groups : w.rank / tp;
  MPI_Comm c;
  TPB_MPI_CHECK(MPI_Comm_split(w.comm, g.group, w.rank, &c));
  g.comm = CommHandle(c);
  TPB_MPI_CHECK(MPI_Comm_rank(c, &g.group_rank));
  int size = 1;
  TPB_MPI_CHECK(MPI_Comm_size(c, &size));
  g.members.resize(size);
  TPB_MPI_CHECK(MPI_Allgather(&w.rank, 1, MPI_INT, g.members.data(), 1, MPI_INT, c));
  return g;
}

std::vector<std::vector<char>> gather_bytes(MPI_Comm comm, const void* data, std::size_t n,
                                            int root, long long window) {
  int rank = 0, size = 1;
  TPB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  TPB_MPI_CHECK(MPI_Comm_size(comm, &size));
  // Every rank plans the same rounds from every rank's 64-bit size (a trace passes 2 GiB in
  // all: about 8k steps of a TP 8 serve of an 80-layer model).
  long long mine = static_cast<long long>(n);
  std::vector<long long> sizes(size);
  TPB_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, comm));
  const GatherPlan plan = plan_gather(sizes, window);
  std::vector<char> all(rank == root ? static_cast<std::size_t>(plan.total) : 0);
  const char* src = static_cast<const char*>(data);
  for (const GatherPlan::Window& w : plan.windows) {
    const long long from = w.first + w.displs[rank] - plan.starts[rank];
    TPB_MPI_CHECK(MPI_Gatherv(src + (w.counts[rank] > 0 ? from : 0), w.counts[rank], MPI_CHAR,
                              rank == root ? all.data() + w.first : nullptr, w.counts.data(),
                              w.displs.data(), MPI_CHAR, root, comm));
  }
  std::vector<std::vector<char>> out;
  if (rank == root)
    for (int r = 0; r < size; ++r) {
      const auto at = all.begin() + plan.starts[r];
      out.emplace_back(at, at + sizes[r]);
    }
  return out;
}

std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine, int root) {
  std::vector<std::string> out;
  for (auto& b : gather_bytes(comm, mine.data(), mine.size(), root))
    out.emplace_back(b.begin(), b.end());
  return out;
}

}  // namespace tpb
