// `tpbench collectives`: one message size of a nccl-tests style sweep, measured on every rank
// with per-iteration enter/exit stamps, so that beyond nccl-tests' mean time it reports
// per-iteration percentiles, arrival skew and Scalasca wait per rank.
//
// Definitions (documented in results/SCHEMA.md terms):
//  - time_s.mean: nccl-tests' figure: each rank's (last exit - first enter) / iters on its own
//    clock, then the maximum over ranks (the slowest rank bounds the collective).
//  - iteration time t(i) = max_r x(r,i) - min_r e(r,i) on the synced clock: from the first
//    rank entering to the last rank leaving. p50/p99 are over iterations. Iterations run back
//    to back, so consecutive spans may overlap; their mean can exceed time_s.mean.
//  - algbw = S / time_s.mean, busbw = algbw * bus_factor(kind, n) (collectives/bus_bandwidth).
//  - skew, wait, transfer, arrived_last: harness/analysis.h over the iterations as instances.
//  - wrong: elements that differ from the exact expected value after one verification call
//    on freshly filled buffers, summed over ranks.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "collectives/bus_bandwidth.h"
#include "collectives/collective.h"
#include "harness/timeline.h"
#include "harness/world.h"
#include "layers/device.h"

namespace tpb {

struct CollSweepSpec {
  CollKind kind = CollKind::all_reduce;
  std::string op = "sum";  // sum | max | min
  DType dtype = DType::fp32;
  std::string collective = "mpi";
  std::string backend = "cpu";
  std::string topology = "default";
  bool inplace = false;
  bool baseline = false;  // also time a plain blocking MPI loop
  int root = 0;
  std::vector<int64_t> sizes;  // requested bytes, ascending
  int warmup = 5, iters = 20;
  double timeout_s = 600;
  int sync_rounds = 32;
  std::string out, config_dir;
};

// Validates the flat config; throws BadInput naming the flag.
CollSweepSpec resolve_coll_spec(const nlohmann::json& cfg, int world,
                                const std::string& default_config_dir);
nlohmann::ordered_json coll_spec_to_json(const CollSweepSpec& s);

// Elements per rank buffer for `bytes` of `kind` on n ranks: nccl-tests' rounding (down to a
// multiple of n elements for the scatter/gather kinds). 0 = too small to run.
struct CollCounts {
  int64_t send = 0, recv = 0;  // elements in this rank's send and receive buffers
  int64_t bytes = 0;           // the size S reported and used for algbw
};
CollCounts coll_counts(CollKind kind, int64_t bytes, DType t, int n);

// What one rank measured for one size; plain data, gathered to rank 0.
struct CollRankResult {
  std::vector<SegmentRecord> iters;  // one per timed iteration, on the synced clock
  double loop_s = 0;                 // (last exit - first enter) / iters, own clock
  double baseline_s = 0;             // plain loop mean, own clock (0 when not asked)
  int64_t wrong = 0;
  double offset_s = 0, uncertainty_s = 0, drift_ppm = 0;
};

// The Collective the sweep measures through, made once (an NCCL communicator is expensive), or
// null for the direct MPI path on host buffers. Collective over `w`.
std::unique_ptr<Collective> make_sweep_collective(const CollSweepSpec& s, const World& w,
                                                  Device& dev);

// Collective over `w`: measures one size. `dev` holds the buffers; `coll` is
// make_sweep_collective's result.
CollRankResult measure_collective(const CollSweepSpec& s, const CollCounts& c, const World& w,
                                  Device& dev, Collective* coll);

}  // namespace tpb
