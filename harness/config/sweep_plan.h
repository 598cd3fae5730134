// The points of a sweep: the cartesian product of the axes in a flat config, each point a
// config object that `resolve_run_spec` reads exactly as it reads `tpbench run`'s.
//
// Axis order, outermost first (batch varies fastest):
//   topology, tp, dtype, phase, inject, context, prompt, batch
// Process-wide settings sit outside, so neighbouring points differ in one cheap knob; batch is
// innermost, so a run of growing batches ends at the memory-exhaustion point. `context` only
// applies to decode and `prompt` only to prefill: the other phase's axis is dropped from its
// points, and the duplicates that leaves are removed (first occurrence kept).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tpb {

struct SweepAxis {
  std::string key;                    // config key, e.g. "batch"
  std::vector<std::string> values;    // as a single-point config would hold them
  std::vector<nlohmann::json> typed;  // a points list's values as the entries gave them
};

struct SweepPlan {
  std::vector<SweepAxis> axes;         // in product order, outermost first
  std::vector<nlohmann::json> points;  // one flat config per point, in sweep order
  bool listed = false;                 // from a "points" list, not a product of axes
};

// Keys that take lists in a sweep, outermost first.
const std::vector<std::string>& sweep_axis_keys();

// Expands `cfg` (CLI options, --config file, --set; any axis key may hold a list, a range or
// a JSON array). `inject` is special: each --inject value is a ';'-separated list of
// alternatives ("none" = no injection), and repeated --inject flags combine as in `run`, so the
// inject axis is the product of the flags' alternatives. A config with a "points" list instead
// runs exactly those points, each entry's keys over the shared ones. Throws BadInput naming
// the field.
SweepPlan plan_sweep(const nlohmann::json& cfg);

// A one-line label of a point's axis values, e.g. "decode tp=2 batch=4 inject=rank=1:...".
std::string point_label(const nlohmann::json& point, const SweepPlan& plan);

// An axis' values for results: numbers for the integer axes, strings otherwise.
nlohmann::ordered_json axis_values_json(const SweepAxis& axis);

}  // namespace tpb
