// `tpbench compare`: puts runs side by side. Pure functions over loaded results documents'
// records; compare.json is compare's own document.
//
// Matching: a params field whose value is constant within every run but differs between runs
// (topology, inject, backend, dtype, ...) labels the runs and is left out of the match key;
// every other params field must be equal for two points to match. So two sweeps over the same
// batches, one with --topology shm and one with tcp, match batch for batch, and a field that
// varies inside a run (an inject axis) still matches like with like.
#pragma once
#include <string>
#include <vector>

#include "harness/record/compare_record.h"
#include "harness/record/results_doc.h"

namespace tpb {

struct CompareInput {
  std::string path;  // as given on the command line
  ResultsDoc doc;
};

// Loads DIR/results.json (or a results.json path). Throws BadInput naming the path.
CompareInput load_compare_input(const std::string& path);

// The comparison: runs with their labels, label fields, and one row per
// matched point with every run's metrics and ratios to the first run that has the point.
// Model points compare tokens/s, step p50/p95, MBU, MFU, skew p95, wait fraction and
// collective fraction = sum_r (wait_s + transfer_s) / sum_r wall_s; collective-sweep points
// (metrics with busbw) compare time, algbw, busbw, skew p95 and wait fraction.
CompareRecord compare_runs(const std::vector<CompareInput>& runs);

std::string format_compare(const CompareRecord& cmp);

}  // namespace tpb
