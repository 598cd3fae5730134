// `tpbench compare`'s result as plain data: the runs with their labels, and one row per point
// the runs share with every run's figures and their ratios to the first run that has it.
// report/compare/compare.h builds it; record/json/compare_json.h writes it as compare.json.
#pragma once
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpb {

// A point's figures by compare's own names for them (its column table), in column order; NaN
// where there is no value (written null).
using CompareFigures = std::vector<std::pair<std::string, double>>;

// Where an entry's step time differs from the first ok entry's (report/compare/compare_diff.h): per
// measured step, means over ranks, this entry's minus the first's; then, for the slower of the
// two, where its extra time goes (straggler_cause's verdict with the faster run as the group).
struct CompareDiff {
  double step_s = 0, compute_s = 0, transfer_s = 0, wait_s = 0, outside_ops_s = 0;
  std::string slower;  // the slower entry's run letter
  std::string kind, text;
  // (1.21.0) kind "wait": the slower point's own late rank (straggler.costliest_rank) and why
  // it is late (its straggler.cause kind), where that cause is one; else absent.
  std::optional<int64_t> late_rank;
  std::optional<std::string> late_kind;
};

struct CompareEntry {
  std::string run;     // "A", "B", ...: the run's letter
  std::string status;  // the point's
  // Ok points only: the figures, and each over the first ok entry's (NaN against 0 or none).
  std::optional<CompareFigures> metrics, ratio;
  std::optional<CompareDiff> diff;  // run and sweep points after the first ok entry
};

struct CompareRow {
  nlohmann::ordered_json key;  // the params the matched points share, as written
  std::vector<CompareEntry> entries;
};

struct CompareRun {
  std::string run, path;  // its letter; the path as given
  std::string label;      // its label fields' values, or the path when there are none
  int64_t points = 0;
};

struct CompareRecord {
  std::vector<std::string> label_fields;  // params constant in each run, differing between runs
  std::vector<CompareRun> runs;
  std::vector<CompareRow> rows;
  std::string ratio_base;  // what each ratio is against, in words
};

// The figure named `key` (NaN when the figures have none).
inline double figure(const CompareFigures& f, const std::string& key) {
  for (const auto& [k, v] : f)
    if (k == key) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace tpb
