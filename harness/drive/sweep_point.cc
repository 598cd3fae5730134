// Per-point failure handling for sweeps. The vote after each failed-or-not point is a
// nonblocking all-reduce with the collective timeout, whatever --mpi-mode the point measured
// with: if a rank failed while its peers are still inside the point's collectives, the peers
// time out there (CollectiveTimeout, which is not caught here, or the watchdog of a blocked
// call) and the job ends, while the failed rank's vote times out too. Only when every rank
// reaches the vote are all of them known to be in step.
#include "harness/drive/sweep_point.h"

#include <climits>
#include <string>
#include <vector>

#include "base/errors.h"
#include "base/mpi_check.h"
#include "collectives/mpi/mpi_wait.h"
#include "harness/record/point_builder.h"

namespace tpb {

std::string unsupported_reason(const RunSpec& spec, const Device& dev) {
  return dtype_refusal(spec, dev.caps());
}

std::optional<PointOutcome> run_sweep_point(const RunSpec& spec, const World& w, Device& dev,
                                            const Peaks& peaks, MPI_Comm outcome_comm) {
  std::optional<PointOutcome> point;
  std::string failure;
  try {
    point = run_point(spec, w, dev, peaks);
  } catch (const CollectiveTimeout&) {
    throw;  // a hang: peers are out of step, main() aborts the job
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "unknown failure";
  }

  // Vote: the lowest failing rank, or INT_MAX when all succeeded.
  int mine = failure.empty() ? INT_MAX : w.rank, first = INT_MAX;
  MPI_Request req;
  TPB_MPI_CHECK(MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, outcome_comm, &req));
  wait_or_timeout(req, spec.collective_timeout_s, "sweep point outcome vote");
  if (first == INT_MAX) return point;

  // Everyone is here, so the message can travel with plain blocking calls.
  int len = static_cast<int>(failure.size());
  TPB_MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT, first, outcome_comm));
  std::vector<char> text(static_cast<std::size_t>(len));
  if (w.rank == first) text.assign(failure.begin(), failure.end());
  TPB_MPI_CHECK(MPI_Bcast(text.data(), len, MPI_CHAR, first, outcome_comm));
  if (w.rank != 0) return std::nullopt;
  return PointOutcome{error_point(spec, "rank " + std::to_string(first) + ": " +
                                            std::string(text.begin(), text.end())),
                      {}};
}

}  // namespace tpb
