// Clock synchronisation to rank 0 by ping-pong, keeping the minimum-RTT sample (Cristian's
// method, as Scalasca does). Taken at the start and the end of a point, the two offsets give
// a linear drift model; to_common() maps a rank's local time onto rank 0's clock.
#pragma once
#include <mpi.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

namespace tpb {

struct OffsetSample {
  double at_s = 0;           // local time at which it was taken
  double offset_s = 0;       // local clock - rank 0 clock
  double uncertainty_s = 0;  // half the minimum round trip
};

// Every rank gets its own offset sample. `now` is the rank's clock in seconds (including any
// injected offset). Collective over `world`.
OffsetSample measure_offset(MPI_Comm world, const std::function<double()>& now, int rounds);

struct ClockModel {
  OffsetSample start, end;
  double drift() const;  // d(offset)/dt, dimensionless
  double offset_at(double local_s) const;
  double to_common(double local_s) const { return local_s - offset_at(local_s); }
};

}  // namespace tpb
