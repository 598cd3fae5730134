// MPI all-reduce and barrier on host buffers, through the all_reduce kind's MPI call.
#include "collectives/mpi/mpi_collective.h"

#include <climits>
#include <string>

#include "base/errors.h"
#include "base/mpi_check.h"
#include "collectives/kinds/coll_kind.h"

namespace tpb {

MPI_Datatype mpi_type(DType t) {
  if (t != DType::fp32)
    throw BadInput(std::string("--collective mpi: host buffers must be fp32 (got ") +
                   dtype_name(t) + ")");
  return MPI_FLOAT;
}

namespace {

class MpiCollective final : public Collective {
 public:
  MpiCollective(MPI_Comm comm, const MpiWait& wait) : comm_(comm), caller_(wait) {
    TPB_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    TPB_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void all_reduce(void* buf, std::size_t count, DType t) override {
    if (size_ == 1) return;  // a one-rank group has nothing to reduce (Megatron short-circuit)
    TPB_ASSERT(count <= static_cast<std::size_t>(INT_MAX), "all_reduce count exceeds MPI int");
    const auto n = static_cast<int64_t>(count);
    const CollMpiArgs args{
        .recv = buf,
        .counts = {.send = n, .recv = n, .bytes = n * static_cast<int64_t>(dtype_bytes(t))},
        .type = mpi_type(t),
        .op = MPI_SUM,
        .rank = rank_,
        .inplace = true,
        .comm = comm_};
    caller_.run("MPI all_reduce", [&](MPI_Request* req) { kAllReduce.mpi(args, req); });
  }

  void barrier() override { caller_.barrier(comm_, "MPI barrier"); }

 private:
  MPI_Comm comm_;
  MpiCaller caller_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Collective> make_mpi_collective(MPI_Comm comm, const MpiWait& wait) {
  return std::make_unique<MpiCollective>(comm, wait);
}

}  // namespace tpb
