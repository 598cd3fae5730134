// Console output of a sweep: the progress line rank 0 prints before each point, and the
// summary table at the end (one row per point record). Formatting only.
#pragma once
#include <string>
#include <vector>

#include "harness/record/point_record.h"

namespace tpb {

struct SweepProgress {
  std::size_t k = 0, n = 0;       // point k of n (1-based), counting resumed points
  std::size_t resumed = 0;        // points taken from the ledger
  std::string label;              // the point's axis values
  double last_tokens_per_s = -1;  // < 0: no point finished in this launch yet
  std::string last_status;
  double elapsed_s = 0;
  double eta_s = -1;  // < 0: unknown until a point has run
};

std::string format_progress(const SweepProgress& p);

// ETA from the points run in this launch: their mean time times the points left. Resumed and
// skipped points cost nothing and are not counted in the mean.
double sweep_eta_s(double elapsed_run_s, std::size_t points_run, std::size_t points_left);

std::string format_sweep_table(const std::vector<PointRecord>& points);

}  // namespace tpb
