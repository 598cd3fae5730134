// `tpbench export`: the points of results documents as metric samples, one table that the
// OpenMetrics and CSV printers only format. Built from the point records (record/results_doc.h),
// never from the results' keys.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "harness/record/results_doc.h"

namespace tpb {

// One metric family: its exposition name, Prometheus type (gauge | summary), help line, and
// whether its samples are per rank (labelled rank and host) or per point.
struct MetricFamily {
  const char* name;
  const char* type;
  const char* help;
  bool per_rank;
};

// Every family the export writes, in the order it writes them.
const std::vector<MetricFamily>& metric_families();

using Labels = std::vector<std::pair<std::string, std::string>>;

// One sample of families()[family]: `suffix` "" or a summary's "_sum" / "_count", `quantile`
// "" or the summary's quantile ("0.5"). A figure with no value (null in the results) is no sample.
struct MetricValue {
  std::size_t family = 0;
  std::string suffix, quantile;
  double value = 0;
};

struct ExportRank {
  Labels labels;  // rank, host
  std::vector<MetricValue> values;
};

struct ExportPoint {
  Labels
      labels;  // results, point and the point's identity (model, phase, batch, ... or kind, bytes)
  std::vector<MetricValue> values;  // per-point families
  std::vector<ExportRank> ranks;    // per-rank families
};

// The ok points of one results document (`path` as given, its `results` label); a point that is
// neither a model nor a collectives point, or is not ok, gives nothing.
std::vector<ExportPoint> export_points(const std::string& path, const ResultsDoc& doc);

}  // namespace tpb
