// The figures are an object keyed by compare's column names, in column order; a figure with
// no value (NaN) writes null, as every ratio without a base does.
#include "harness/record/json/compare_json.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

oj figures_json(const CompareFigures& f) {
  oj out;
  for (const auto& [k, v] : f) out[k] = v;
  return out;
}

oj entry_json(const CompareEntry& e) {
  oj out{{"run", e.run}, {"status", e.status}};
  if (e.metrics) out["metrics"] = figures_json(*e.metrics);
  if (e.ratio) out["ratio"] = figures_json(*e.ratio);
  if (e.diff)
    out["diff"] = {{"step_s", e.diff->step_s},
                   {"compute_s", e.diff->compute_s},
                   {"transfer_s", e.diff->transfer_s},
                   {"wait_s", e.diff->wait_s},
                   {"outside_ops_s", e.diff->outside_ops_s},
                   {"slower", e.diff->slower},
                   {"kind", e.diff->kind},
                   {"text", e.diff->text}};
  if (e.diff && e.diff->late_rank) {
    out["diff"]["late_rank"] = *e.diff->late_rank;
    out["diff"]["late_kind"] = *e.diff->late_kind;
  }
  return out;
}

}  // namespace

oj to_json(const CompareRecord& c) {
  oj out;
  out["label_fields"] = c.label_fields;
  oj runs = oj::array();
  for (const CompareRun& r : c.runs)
    runs.push_back({{"run", r.run}, {"path", r.path}, {"label", r.label}, {"points", r.points}});
  out["runs"] = runs;
  oj rows = oj::array();
  for (const CompareRow& row : c.rows) {
    oj entries = oj::array();
    for (const CompareEntry& e : row.entries) entries.push_back(entry_json(e));
    rows.push_back({{"key", row.key}, {"entries", entries}});
  }
  out["rows"] = rows;
  out["ratio_base"] = c.ratio_base;
  return out;
}

}  // namespace tpb
