// Each point: its trace's TP groups replayed unchanged (the replay's own error), then once per
// edit; a step's time is the longest group's, as in the analysis. Tokens per step come from
// the point's own figures (tokens/s x mean step time), so no FLOPs or bytes are recomputed.
#include "harness/record/whatif/whatif_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "harness/analysis/replay.h"
#include "harness/analysis/stats.h"
#include "harness/config/backend_traits.h"
#include "harness/record/whatif/topology_move.h"
#include "harness/record/whatif/trace_reader.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;
using Edit = std::function<ReplayGroup(ReplayGroup)>;

struct Named {
  const char* name;
  Edit edit;
  const char* modelled;
};

const std::vector<Named>& edits() {
  static const std::vector<Named> e = {
      {"no_straggler", without_straggler,
       "a rank whose compute, or whose host time (no device work in flight), exceeds the "
       "group's lower median over the steps scaled down to it (each step's noise kept); waits "
       "re-derived on the virtual clock"},
      {"no_host_gap", without_host_gap,
       "no host time (no device work in flight) inside or between steps"},
      {"no_jitter", without_jitter,
       "each rank's ops and transfers at their own median across the replayed steps"},
  };
  return e;
}

// Counterfactuals the replay cannot produce from a run's trace, and why (topology is replayed
// when asked for, fewer_kernels on a cuda result).
const std::vector<std::pair<const char*, const char*>>& not_replayed() {
  static const std::vector<std::pair<const char*, const char*>> n = {
      {"chunked_prefill", "a run or sweep point has no serving steps to re-batch"},
      {"kv_budget", "a run or sweep point has no KV admissions to replay"},
      {"max_batch", "a run or sweep point has no queue to admit from: sweep --batch instead"},
  };
  return n;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// The figures of a point whose steps took `steps` seconds each.
WhatifFigures figures(const std::vector<double>& steps, double tokens_per_step, bool decode) {
  WhatifFigures f;
  if (steps.empty()) return f;
  f.tokens_per_s = tokens_per_step / mean_of(steps);
  if (decode) {  // every step of a decode point gives each sequence its next token
    f.itl_quantiles_s = itl_quantiles(steps);
    f.itl_p50_s = percentile(steps, 50);
    f.itl_p95_s = percentile(steps, 95);
    f.itl_p99_s = percentile(steps, 99);
  } else {  // a prefill step ends with each prompt's first token
    f.ttft_p95_s = percentile(steps, 95);
  }
  return f;
}

std::string null_reason(bool decode) {
  return decode ? "ttft_p95_s, goodput: a run point has no requests (no arrivals, no SLOs)"
                : "itl_*, goodput: a prefill point has no inter-token gaps and no SLOs";
}

// Per step, the longest group's time after `edit`.
std::vector<double> replayed(const std::vector<ReplayGroup>& groups, const Edit& edit) {
  std::vector<double> out;
  for (const ReplayGroup& g : groups) {
    const std::vector<double> t = replay_step_times(edit ? edit(g) : g);
    out.resize(std::max(out.size(), t.size()), 0.0);
    for (std::size_t k = 0; k < t.size(); ++k) out[k] = std::max(out[k], t[k]);
  }
  return out;
}

// Every counterfactual null: the replayed ones for `reason`, the others for their own.
std::vector<Counterfactual> all_null(int point, const std::string& reason) {
  std::vector<Counterfactual> out;
  for (const Named& e : edits()) out.push_back({e.name, point, {}, {}, {}, {}, reason});
  for (const auto& [name, why] : not_replayed()) out.push_back({name, point, {}, {}, {}, {}, why});
  out.push_back({"fewer_kernels", point, {}, {}, {}, {}, reason});
  return out;
}

Counterfactual fewer_kernels_null(int point, const std::string& why) {
  return {"fewer_kernels", point, {}, {}, {}, {}, why};
}

// The element-wise ops' floors for with_fewer_kernels: one instance's bytes (the cost model's,
// ops[].bytes_per_step over the layers) at the point's peak bandwidth. Where the device fused
// a pair into one kernel (the fused_ops warning), the pair's row holds both ops' time, so its
// floor holds both ops' bytes.
std::map<int, double> elementwise_floors(const oj& p) {
  std::map<std::string, double> bytes;
  for (const oj& o : p.value("ops", oj::array()))
    if (o.contains("bytes_per_step") && o["bytes_per_step"].is_number())
      bytes[o.value("op", "")] = o["bytes_per_step"].get<double>();
  bool fused = false;
  for (const oj& w : p.value("warnings", oj::array()))
    fused = fused || (w.is_string() && w.get<std::string>().rfind("fused_ops", 0) == 0);
  if (fused) {
    bytes["rmsnorm_mlp"] += bytes["residual_attn"];
    bytes["rmsnorm_attn"] += bytes["residual_mlp"];
    bytes["rope"] += bytes["kv_write"];
  }
  const double layers = p.at("params").value("layers", 1.0);
  const double bw = p.at("metrics").at("peaks").value("bw", 0.0);
  std::map<int, double> floors;
  for (Op op : {Op::rmsnorm_attn, Op::rope, Op::kv_write, Op::residual_attn, Op::rmsnorm_mlp,
                Op::swiglu, Op::residual_mlp})
    if (auto it = bytes.find(op_name(op)); it != bytes.end() && bw > 0 && layers > 0)
      floors[static_cast<int>(op)] = it->second / layers / bw;
  return floors;
}

std::vector<Counterfactual> point_counterfactuals(const oj& p, int point, const std::string& dir,
                                                  const WhatifOptions& serve);

}  // namespace

std::vector<double> itl_quantiles(const std::vector<double>& v) {
  std::vector<double> q;
  if (v.empty()) return q;
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  for (int p = 0; p <= 100; p += 5) q.push_back(percentile(s, p));
  return q;
}

WhatifRecord build_whatif(const oj& results, const std::string& dir, const WhatifOptions& serve) {
  WhatifRecord w;
  int k = 0;
  for (const oj& p : results.at("points")) {
    std::vector<Counterfactual> cfs;
    try {
      cfs = point_counterfactuals(p, k, dir, serve);
    } catch (const nlohmann::json::exception& e) {
      // A point edited or cut by hand: one line naming it, not the library's bare message.
      throw BadInput(
          fmt::format("whatif: points[{}] of the results is not as tpbench writes it ({})", k,
                      json_error_text(e)));
    }
    ++k;
    // Ranked by what they buy: the largest tokens/s gain first, nulls last.
    std::stable_sort(cfs.begin(), cfs.end(), [](const Counterfactual& a, const Counterfactual& b) {
      const double ga = a.figures.tokens_per_s && a.measured.tokens_per_s
                            ? *a.figures.tokens_per_s / *a.measured.tokens_per_s
                            : -1;
      const double gb = b.figures.tokens_per_s && b.measured.tokens_per_s
                            ? *b.figures.tokens_per_s / *b.measured.tokens_per_s
                            : -1;
      return ga > gb;
    });
    for (auto& c : cfs) w.counterfactuals.push_back(std::move(c));
  }
  return w;
}

namespace {

std::vector<ReplayGroup> groups_of(const std::vector<RankTrace>& ranks,
                                   std::vector<double>& measured) {
  std::map<int, std::vector<RankTrace>> by_group;
  for (const RankTrace& r : ranks) by_group[r.group].push_back(r);
  std::vector<ReplayGroup> out;
  for (auto& [g, rs] : by_group) {
    std::sort(rs.begin(), rs.end(),
              [](const RankTrace& a, const RankTrace& b) { return a.group_rank < b.group_rank; });
    out.push_back(replay_group(rs));
    const auto m = measured_step_times(rs);
    measured.resize(std::max(measured.size(), m.size()), 0.0);
    for (std::size_t k = 0; k < m.size(); ++k) measured[k] = std::max(measured[k], m[k]);
  }
  return out;
}

// Why the trace cannot stand for the point ("" when it can): a trace keeps only the first TP
// groups of a large virtual run (trace_writer's max_groups), and a straggler in another group
// would be replayed away unseen.
std::string groups_missing(const oj& p, const std::vector<RankTrace>& traced) {
  std::set<int> in_point, in_trace;
  for (const oj& r : p.value("ranks", oj::array())) in_point.insert(r.value("group", 0));
  for (const RankTrace& r : traced) in_trace.insert(r.group);
  if (in_point.empty() || in_point == in_trace) return "";
  return "the trace holds " + std::to_string(in_trace.size()) + " of the point's " +
         std::to_string(in_point.size()) + " TP groups: the others' steps cannot be replayed";
}

double replay_error(const std::vector<double>& replay, const std::vector<double>& measured) {
  double e = 0;
  for (std::size_t k = 0; k < measured.size() && k < replay.size(); ++k)
    e += std::abs(replay[k] - measured[k]) / measured[k];
  return measured.empty() ? 0 : e / static_cast<double>(measured.size());
}

// What every counterfactual of a point shares: its tokens per step, phase, measured figures
// and the inputs they were read from.
struct PointBase {
  double tokens_per_step = 0;
  bool decode = true;
  WhatifFigures measured;
  WhatifInputs inputs;
};

// The share of the measured p99 ITL's excess over the p50 that `c` removes; a tail under 0.1%
// of the median is rounding, not a tail: its share would be noise.
Counterfactual with_excess(Counterfactual c, bool decode) {
  const WhatifFigures& m = c.measured;
  if (!decode || !m.itl_p99_s || !m.itl_p50_s || !c.figures.itl_p99_s) return c;
  const double excess = *m.itl_p99_s - *m.itl_p50_s;
  if (excess > 1e-3 * *m.itl_p50_s)
    c.p99_excess_removed = (*m.itl_p99_s - *c.figures.itl_p99_s) / excess;
  else
    c.reason += "; p99_excess_removed: the measured p99 ITL is within 0.1% of the p50 (no tail)";
  return c;
}

// Another interconnect (whatif --topology): every all-reduce of the point's message at the
// model backend's time on that fabric, the compute, host time and skew as measured.
Counterfactual topology(const oj& p, int point, const std::vector<ReplayGroup>& groups,
                        const PointBase& b, const WhatifOptions& opt) {
  if (opt.topology.empty()) return {"topology", point, {}, {}, {}, {}, kAskForTopology};
  const oj cost = p.value("cost", oj::object());
  const double n = cost.value("collectives_per_step", 0.0), comm = cost.value("comm_bytes", 0.0);
  if (!(n > 0) || !(comm > 0))
    return {"topology",
            point,
            {},
            {},
            {},
            {},
            "the point has no all-reduce message (cost.comm_bytes / cost.collectives_per_step)"};
  const int64_t bytes = static_cast<int64_t>(std::llround(comm / n));
  const int tp = p.at("params").value("tp", 1);
  const Fabric fabric = load_fabric(opt.topology, opt.config_dir);  // BadInput names --topology
  const std::optional<ModelGroup> g = contiguous_group(fabric, tp);
  if (!g) return {"topology", point, {}, {}, {}, {}, uneven_group(tp, fabric, opt.topology)};
  ModelTime t;
  try {
    t = model_collective(fabric, CollKind::all_reduce, bytes, *g, ModelAlgo::automatic);
  } catch (const BadInput& e) {
    return {"topology", point, {}, {}, {}, {}, e.what()};
  }
  const Edit edit = [&](ReplayGroup g) { return with_transfer(std::move(g), t.time_s); };
  Counterfactual c{
      "topology",           point, figures(replayed(groups, edit), b.tokens_per_step, b.decode),
      b.measured,           {},    b.inputs,
      null_reason(b.decode)};
  c.inputs.modelled = {fmt::format(
      "each of the step's {:.0f} all-reduces ({} bytes, cost.comm_bytes / "
      "cost.collectives_per_step) at the model backend's time on {} for TP {} over {} node(s): "
      "{} {}, {:.2f} us (latency {:.2f} us, {:.1f} GB/s); compute, host time and the ranks' "
      "skew as measured",
      n, bytes, opt.topology, tp, g->nodes, model_algo_name(t.algo), model_proto_name(t.proto),
      t.time_s * 1e6, t.latency_s * 1e6, t.algbw_GBps)};
  return with_excess(std::move(c), b.decode);
}

Counterfactual fewer_kernels(const oj& p, int point, const std::vector<ReplayGroup>& groups,
                             const PointBase& b) {
  const std::string backend = p.at("params").value("backend", "?");
  const BackendTraits* bt = find_backend_traits(backend);
  if (!bt || !bt->launches_kernels)
    return fewer_kernels_null(point, "backend " + backend +
                                         " launches no kernels: only a cuda result has idle at "
                                         "kernel boundaries to remove");
  const std::map<int, double> floors = elementwise_floors(p);
  const Edit edit = [&](ReplayGroup g) { return with_fewer_kernels(std::move(g), floors); };
  Counterfactual c{
      "fewer_kernels",      point, figures(replayed(groups, edit), b.tokens_per_step, b.decode),
      b.measured,           {},    b.inputs,
      null_reason(b.decode)};
  c.inputs.modelled = {
      "no idle inside a step (kernel boundaries and launches; the time between steps kept) "
      "and each element-wise op (rmsnorm, rope, kv_write, residual adds, swiglu) no slower "
      "than its cost-model bytes at metrics.peaks.bw: what fusion could buy at most"};
  if (floors.empty()) c.reason += "; no element-wise op has cost-model bytes: only idle removed";
  return c;
}

std::vector<Counterfactual> point_counterfactuals(const oj& p, int point, const std::string& dir,
                                                  const WhatifOptions& opt) {
  const oj params = p.value("params", oj::object());
  if (p.value("status", "") != "ok")
    return all_null(point, "point status " + p.value("status", "?") + ": nothing measured");
  if (params.contains("serve") && !params["serve"].is_null())
    return serve_counterfactuals(p, point, dir, opt);
  if (!p.contains("trace") || !p["trace"].is_string())
    return all_null(point,
                    "no trace for this point (trace_steps 0): the replay needs every "
                    "rank's segments");
  const std::string file = (std::filesystem::path(dir) / p["trace"].get<std::string>()).string();
  if (!std::filesystem::exists(file))
    return all_null(point, "trace " + p["trace"].get<std::string>() + " is not in the folder");
  const std::string field = "points[" + std::to_string(point) + "].trace";
  const std::vector<RankTrace> traced = read_trace(file, field);
  if (const std::string missing = groups_missing(p, traced); !missing.empty())
    return all_null(point, missing);
  std::vector<double> measured;
  std::vector<ReplayGroup> groups;
  try {
    groups = groups_of(traced, measured);
  } catch (const std::invalid_argument& e) {
    throw BadInput(field + ": " + e.what());
  }
  const oj& m = p.at("metrics");
  const double tokens_per_step =
      m.at("tokens_per_s").get<double>() * m.at("step_time_s").at("mean").get<double>();
  const bool decode = params.value("phase", "decode") == "decode";
  const WhatifFigures measured_figs = figures(measured, tokens_per_step, decode);
  WhatifInputs base;
  base.steps = static_cast<int>(measured.size());
  base.replay_error = replay_error(replayed(groups, nullptr), measured);
  base.measured = {"every rank's compute, host gaps and collective transfers per step (trace " +
                       p["trace"].get<std::string>() + ")",
                   "tokens per step (metrics.tokens_per_s x metrics.step_time_s.mean)"};
  std::vector<Counterfactual> out;
  for (const Named& e : edits()) {
    Counterfactual c{e.name,
                     point,
                     figures(replayed(groups, e.edit), tokens_per_step, decode),
                     measured_figs,
                     {},
                     base,
                     null_reason(decode)};
    c.inputs.modelled = {e.modelled};
    out.push_back(with_excess(std::move(c), decode));
  }
  for (const auto& [name, why] : not_replayed()) out.push_back({name, point, {}, {}, {}, {}, why});
  const PointBase b{tokens_per_step, decode, measured_figs, base};
  out.push_back(fewer_kernels(p, point, groups, b));
  out.push_back(topology(p, point, groups, b, opt));
  return out;
}

}  // namespace

}  // namespace tpb
