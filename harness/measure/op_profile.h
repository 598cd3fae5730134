// calibrate's op profile: the real TP layer step (the code `run` times) at a grid of shapes,
// every compute op's time set against its roofline from the calibrated peaks. The model backend
// then prices an op at a shape between the grid's by that fraction (layers/hardware.h
// OpEfficiency), as Vidur prices operators from a profile of them.
#pragma once
#include <mpi.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/world.h"
#include "harness/record/calibration_record.h"
#include "harness/record/point_record.h"

namespace tpb {

struct OpProfileSpec {
  std::string backend, collective, model, config_dir;
  DType dtype = DType::fp32;  // the run's: the table's fractions hold for this dtype only
  int tp = 1;                 // the widest TP degree profiled (the world); 1 is profiled too
  int64_t context = 1024;     // decode points' cached context
  int blas_threads = 1;
  double collective_timeout_s = 600;
  int repeats = 3;  // each grid point this many times, spread over the profile; the fastest kept
};

// Runs one grid point as a sweep runs a point (drive/sweep_point.h run_sweep_point, which this
// folder does not include): collective over the world, with `outcome_comm` the world's duplicate
// kept for the outcome vote; the point's record on world rank 0, nothing elsewhere.
using GridPointRunner = std::function<std::optional<PointRecord>(
    const RunSpec& spec, const Peaks& peaks, MPI_Comm outcome_comm)>;

// Collective over the world: every rank runs every grid point. Each point is judged against
// the calibrated peaks: `flops` by dtype name and `bw`, the figures hardware.json states.
// Returns every repeat of every point with its ops' fractions, on rank 0 (empty elsewhere);
// the efficiency table is built from them (harness/measure/calibration_profile.h), as
// `calibrate --from` builds it from a recorded calibration.json.
std::vector<OpProfilePointRecord> measure_op_profile(const World& w, const OpProfileSpec& s,
                                                     const std::map<std::string, double>& flops,
                                                     double bw, const GridPointRunner& run_point);

}  // namespace tpb
