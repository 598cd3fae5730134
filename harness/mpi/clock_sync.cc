// Ping-pong offset estimation. Rank 0 talks to each rank in turn so that no two exchanges
// share rank 0's attention and inflate the round trip.
#include "harness/mpi/clock_sync.h"

#include <algorithm>
#include <cmath>

#include "base/mpi_check.h"

namespace tpb {

OffsetSample measure_offset(MPI_Comm world, const std::function<double()>& now, int rounds) {
  int rank = 0, size = 1;
  TPB_MPI_CHECK(MPI_Comm_rank(world, &rank));
  TPB_MPI_CHECK(MPI_Comm_size(world, &size));
  constexpr int kTag = 7401;
  std::vector<double> result(2 * static_cast<std::size_t>(size), 0.0);  // offset, uncertainty
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      double best_rtt = 1e30, best_off = 0;
      for (int i = 0; i < rounds; ++i) {
        double t_remote = 0;
        const double t0 = now();
        TPB_MPI_CHECK(MPI_Send(&t0, 1, MPI_DOUBLE, r, kTag, world));
        TPB_MPI_CHECK(MPI_Recv(&t_remote, 1, MPI_DOUBLE, r, kTag, world, MPI_STATUS_IGNORE));
        const double t1 = now();
        // The remote stamp lies in [t0, t1] on rank 0's clock; the midpoint is the estimate
        // and the half round trip bounds its error. The fastest exchange is the tightest.
        if (t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          best_off = t_remote - 0.5 * (t0 + t1);
        }
      }
      result[2 * r] = best_off;
      result[2 * r + 1] = 0.5 * best_rtt;
    }
  } else {
    for (int i = 0; i < rounds; ++i) {
      double t0 = 0;
      TPB_MPI_CHECK(MPI_Recv(&t0, 1, MPI_DOUBLE, 0, kTag, world, MPI_STATUS_IGNORE));
      const double t = now();
      TPB_MPI_CHECK(MPI_Send(&t, 1, MPI_DOUBLE, 0, kTag, world));
    }
  }
  TPB_MPI_CHECK(MPI_Bcast(result.data(), 2 * size, MPI_DOUBLE, 0, world));
  return OffsetSample{now(), result[2 * rank], result[2 * rank + 1]};
}

double ClockModel::drift() const {
  const double dt = end.at_s - start.at_s;
  return dt > 0 ? (end.offset_s - start.offset_s) / dt : 0.0;
}

double ClockModel::offset_at(double local_s) const {
  return start.offset_s + drift() * (local_s - start.at_s);
}

}  // namespace tpb
