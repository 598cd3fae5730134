// MPI all-reduce and barrier with a deadline.
#include "collectives/mpi/mpi_collective.h"

#include <sched.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "collectives/mpi/mpi_check.h"
#include "layers/base/errors.h"

namespace tpb {

MPI_Datatype mpi_type(DType t) {
  if (t != DType::fp32)
    throw BadInput(std::string("--collective mpi: host buffers must be fp32 (got ") +
                   dtype_name(t) + ")");
  return MPI_FLOAT;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

void wait_or_timeout(MPI_Request& req, double timeout_s, const char* what, bool yield) {
  // Poll instead of MPI_Wait: a hung peer must not hang us. Polling is also what NCCL's
  // kernels do while they wait, so a waiting rank stays busy in both backends.
  // timeout_s <= 0: no deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int done = 0;
  for (unsigned spins = 0;; ++spins) {
    TPB_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    // Oversubscribed (more ranks than cores): a spinning waiter would steal the core the
    // late rank needs, inflating the very imbalance being measured. Yield instead.
    if (yield) sched_yield();
    if (timeout_s > 0 && (spins & 255u) == 0 && std::chrono::steady_clock::now() > deadline)
      throw CollectiveTimeout(std::string(what) + " did not complete within " +
                              seconds_text(timeout_s) + " s");
  }
}

namespace {

class MpiCollective final : public Collective {
 public:
  MpiCollective(MPI_Comm comm, double timeout_s, bool yield)
      : comm_(comm), timeout_s_(timeout_s), yield_(yield) {
    TPB_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    TPB_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void all_reduce(void* buf, std::size_t count, DType t) override {
    if (size_ == 1) return;  // a one-rank group has nothing to reduce (Megatron short-circuit)
    MPI_Request req;
    TPB_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count), mpi_type(t), MPI_SUM,
                                 comm_, &req));
    wait_or_timeout(req, timeout_s_, "MPI all_reduce", yield_);
  }

  void barrier() override {
    MPI_Request req;
    TPB_MPI_CHECK(MPI_Ibarrier(comm_, &req));
    wait_or_timeout(req, timeout_s_, "MPI barrier", yield_);
  }

 private:
  MPI_Comm comm_;
  double timeout_s_;
  bool yield_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Collective> make_mpi_collective(MPI_Comm comm, double timeout_s,
                                                bool yield_while_waiting) {
  return std::make_unique<MpiCollective>(comm, timeout_s, yield_while_waiting);
}

}  // namespace tpb
