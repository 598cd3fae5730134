// A serving step's all-reduces carry its own tokens: the point's cost holds the mean message
// over the steps (cost.comm_bytes / cost.collectives_per_step at cost.tokens tokens), so a step
// of k tokens sends k / cost.tokens of it in each. The step's end (the LM head's collective)
// is priced the same way: a step's messages are taken as proportional to its tokens.
#include "harness/record/whatif/topology_move.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "harness/analysis/stats.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

// The steps' measured transfer (the ranks' mean). A step the log gives no ranks for (a model
// run's timeline keeps a sample of its steps) takes the median of the measured steps of its
// kind (with or without prefill rows); `missing` counts them.
std::vector<double> measured_transfer(const ServeReplayBase& b, int& missing) {
  std::vector<double> kind[2];
  for (const MeasuredStep& s : b.steps)
    if (!s.rank_transfer_s.empty())
      kind[s.prefill_tokens > 0].push_back(min_mean_max(s.rank_transfer_s).mean);
  for (auto& k : kind)
    if (k.empty()) k = kind[0].empty() ? kind[1] : kind[0];
  std::vector<double> out;
  missing = 0;
  for (const MeasuredStep& s : b.steps) {
    if (!s.rank_transfer_s.empty()) {
      out.push_back(min_mean_max(s.rank_transfer_s).mean);
      continue;
    }
    ++missing;
    out.push_back(percentile(kind[s.prefill_tokens > 0], 50));
  }
  return out;
}

}  // namespace

std::string uneven_group(int tp, const Fabric& f, const std::string& topology) {
  return fmt::format(
      "a TP group of {} placed in order on {}'s nodes of {} would leave its last node part-filled; "
      "the model prices a group split evenly over whole nodes",
      tp, topology, f.gpus_per_node);
}

std::string serve_on_topology(const oj& point, const ServeReplayBase& b, const WhatifOptions& opt,
                              ServeOnTopology& out) {
  if (opt.topology.empty()) return kAskForTopology;
  const oj cost = point.value("cost", oj::object());
  const double n = cost.value("collectives_per_step", 0.0), comm = cost.value("comm_bytes", 0.0);
  const double tokens = cost.value("tokens", 0.0);
  if (!(n > 0) || !(comm > 0) || !(tokens > 0))
    return "the point has no all-reduce message (cost.comm_bytes, cost.collectives_per_step, "
           "cost.tokens)";
  const bool any = std::any_of(b.steps.begin(), b.steps.end(),
                               [](const MeasuredStep& s) { return !s.rank_transfer_s.empty(); });
  if (!any) return "the step log gives no step's per-rank transfer_s: no measured transfer to move";
  const int tp = point.at("params").value("tp", 1);
  const Fabric fabric = load_fabric(opt.topology, opt.config_dir);  // BadInput names --topology
  const std::optional<ModelGroup> g = contiguous_group(fabric, tp);
  if (!g) return uneven_group(tp, fabric, opt.topology);
  const double per_token = comm / n / tokens;
  int missing = 0;
  const std::vector<double> was = measured_transfer(b, missing);
  std::vector<double> bytes_seen;
  for (std::size_t k = 0; k < b.steps.size(); ++k) {
    const MeasuredStep& s = b.steps[k];
    const double step_tokens = static_cast<double>(s.prefill_tokens + s.decode_tokens);
    const auto bytes = std::max<int64_t>(1, std::llround(per_token * step_tokens));
    ModelTime t;
    try {
      t = model_collective(fabric, CollKind::all_reduce, bytes, *g, ModelAlgo::automatic);
    } catch (const BadInput& e) {
      return e.what();
    }
    bytes_seen.push_back(static_cast<double>(bytes));
    out.step_s.push_back(std::max(1e-9, s.duration_s - was[k] + n * t.time_s));
  }
  out.modelled = fmt::format(
      "each step's {:.0f} all-reduces at the model backend's time on {} for TP {} over {} "
      "node(s) (the engine's choice of algorithm), each carrying the step's tokens x {:.0f} bytes "
      "(cost.comm_bytes / cost.collectives_per_step / cost.tokens; {:.0f} bytes at the median "
      "step), in place of the step's measured transfer (the ranks' mean{}); compute, host time "
      "and the ranks' skew as measured",
      n, opt.topology, tp, g->nodes, per_token, percentile(bytes_seen, 50),
      missing > 0 ? fmt::format("; {} of {} steps without a per-rank split took the median of "
                                "the measured steps of their kind",
                                missing, b.steps.size())
                  : "");
  return "";
}

}  // namespace tpb
