// A `tpbench collectives` point (one message size) and the run's closing summary as plain data:
// coll_point_builder.h builds them, results_json.h maps them to and from JSON, and the console
// table reads their members. The schema is results/SCHEMA.md's "collectives" section.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/record/point_record.h"

namespace tpb {

// --backend model (1.6.0): what NCCL's tuning model chose for the size and why it takes
// that long; no rank measured anything.
struct CollModelRecord {
  std::string algo_asked, algo, protocol;
  int64_t nodes = 1, gpus_per_node = 1;
  double latency_s = 0, algbw_GBps = 0;
  std::string source;
};

// What identifies the size: the collective, its message, the group and the timing loop.
struct CollParamsRecord {
  std::string kind, op, dtype;
  int64_t bytes = 0, count = 0;  // count: elements in a rank's receive buffer
  int64_t ranks = 0;
  bool inplace = false;
  int64_t root = 0;
  std::string collective, backend, topology;
  int64_t iters = 0, warmup_iters = 0;
  // nccl-tests' -a (1.13.0): which time over ranks time_s.mean is; absent before: the max.
  std::optional<int64_t> average;
  // --mpi-mode with --collective mpi; absent for nccl and in results older than 1.2.0.
  std::optional<std::string> mpi_mode;
  std::optional<CollModelRecord> model;  // --backend model only
};

// Each rank's own-clock loop time, reduced over ranks the four ways nccl-tests' -a can ask for
// (1.13.0), so one run's record holds all of them whichever was printed.
struct CollOverRanksRecord {
  double rank0 = 0, avg = 0, min = 0, max = 0;
};

// nccl-tests' time (mean) beside percentiles over the per-iteration spans.
struct CollTimeRecord {
  double mean = 0, p50 = 0, p99 = 0, min = 0, max = 0, iter_mean = 0;
  int64_t n = 0;
  std::optional<CollOverRanksRecord> over_ranks;  // absent before 1.13.0
};

// The metrics' own definitions, written into every point so a reader needs no manual.
struct CollDefinitionsRecord {
  std::string time_mean, time_percentiles, algbw, busbw;
};

// With --baseline: the plain blocking MPI loop the measured collective is held against.
struct CollBaselineRecord {
  double time_s = 0, ratio = 0;
  std::string what;
};

struct CollMetricsRecord {
  CollTimeRecord time_s;
  double algbw_GBps = 0, busbw_GBps = 0, busbw_factor = 0;
  int64_t wrong = 0;  // elements off the exact expected value, summed over ranks
  CollDefinitionsRecord definitions;
  std::optional<CollBaselineRecord> baseline;
};

// The iterations as collective instances of harness/analysis. Its own record, not the model
// point's CollectivesRecord: the schema orders wait before transfer here.
struct CollCollectivesRecord {
  int64_t count = 0;
  SkewRecord skew_s;
  double wait_fraction = 0, wait_s_total = 0, transfer_s_total = 0;
};

// How far behind the first rank this rank entered each iteration.
struct CollLagRecord {
  double mean = 0, p50 = 0, p95 = 0, max = 0;
};

struct CollRankRecord {
  int64_t rank = 0;
  std::string host;
  CollLagRecord arrival_lag_s;
  double wait_s = 0, transfer_s = 0;
  int64_t arrived_last = 0, clock_condition_violations = 0;
  double time_s = 0;  // the rank's own loop time
  int64_t wrong = 0;
};

struct CollStragglerRecord {
  int64_t rank = -1;
  double arrived_last_share = 0;
};

struct CollClockSyncRecord {
  std::string method;
  double max_offset_s = 0, max_uncertainty_s = 0, drift_ppm = 0;
  int64_t clock_condition_violations = 0;
};

struct CollSamplesRecord {
  std::vector<double> iter_time_s, skew_s;  // raw, so percentiles can be recomputed
};

// One message size; every block is always there (a size either runs or is skipped unrecorded).
struct CollPointRecord {
  CollParamsRecord params;
  PointStatus status = PointStatus::ok;
  std::string reason;
  CollMetricsRecord metrics;
  CollCollectivesRecord collectives;
  std::vector<CollRankRecord> ranks;
  CollStragglerRecord straggler;
  CollClockSyncRecord clock_sync;
  CollSamplesRecord samples;
};

// nccl-tests' closing lines: wrong values over all sizes and the mean bus bandwidth.
struct CollSummaryRecord {
  int64_t sizes = 0, wrong_total = 0;
  double avg_busbw_GBps = 0;
};

}  // namespace tpb
