// Side-by-side comparison of results. The metric list is one table of columns (kModelColumns /
// kCollColumns), each reading its figure off the point's record, that both the JSON and the
// console read.
#include "harness/report/compare/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "harness/record/json/results_doc_json.h"
#include "harness/record/json/results_json.h"
#include "harness/report/compare/compare_diff.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

// `key` names the figure in compare.json (its own document, not a point's field).
template <class R>
struct Column {
  const char* key;
  const char* head;
  double scale;  // console unit
  const char* fmt;
  double (*get)(const R&);
};

// An ok model point that lacks a block reads 0 for its figures, as before records.
const MetricsRecord& metrics_of(const PointRecord& p) {
  static const MetricsRecord none;
  return p.metrics ? *p.metrics : none;
}
const CollectivesRecord& collectives_of(const PointRecord& p) {
  static const CollectivesRecord none;
  return p.collectives ? *p.collectives : none;
}

// Summed over ranks against the summed wall: coll% = (wait + transfer) / wall; xfer% keeps only
// the transfer, the part the interconnect sets, since wait is the compute imbalance that
// arrives with any topology.
double rank_fraction(const PointRecord& p, bool with_wait) {
  double part = 0, wall = 0;
  for (const auto& r : p.ranks.value_or(std::vector<RankRecord>{})) {
    part += (with_wait ? r.wait_s : 0.0) + r.transfer_s;
    wall += r.wall_s;
  }
  return wall > 0 ? part / wall : 0.0;
}

// Hosts the widest TP group spans (1: inside a host); NaN for results without the field.
double group_hosts(const PointRecord& p) {
  if (!p.tp_placement) return kNoValue;
  std::size_t most = 0;
  for (const auto& g : p.tp_placement->groups) most = std::max(most, g.hosts.size());
  return static_cast<double>(most);
}

const Column<PointRecord> kModelColumns[] = {
    {"tokens_per_s", "tok/s", 1, "{:.1f}",
     [](const PointRecord& p) { return metrics_of(p).tokens_per_s; }},
    {"step_p50_s", "p50 ms", 1e3, "{:.2f}",
     [](const PointRecord& p) { return metrics_of(p).step_time_s.p50; }},
    {"step_p95_s", "p95 ms", 1e3, "{:.2f}",
     [](const PointRecord& p) { return metrics_of(p).step_time_s.p95; }},
    {"mbu", "MBU", 1, "{:.3f}", [](const PointRecord& p) { return metrics_of(p).mbu; }},
    {"mfu", "MFU", 1, "{:.4f}", [](const PointRecord& p) { return metrics_of(p).mfu; }},
    {"skew_p95_s", "skew95 us", 1e6, "{:.0f}",
     [](const PointRecord& p) { return collectives_of(p).skew_s.p95; }},
    {"wait_fraction", "wait%", 100, "{:.1f}",
     [](const PointRecord& p) { return collectives_of(p).wait_fraction; }},
    {"collective_fraction", "coll%", 100, "{:.1f}",
     [](const PointRecord& p) { return rank_fraction(p, true); }},
    {"transfer_fraction", "xfer%", 100, "{:.1f}",
     [](const PointRecord& p) { return rank_fraction(p, false); }},
    {"tp_group_hosts", "tp hosts", 1, "{:.0f}", group_hosts},
};
// A serve point's own figures (vLLM's), after the model columns in compare.json; its console row
// shows these. NaN for a latency block the point lacks (queue_s before results 1.22.0).
double stat(const std::optional<LatencyStats>& l, double LatencyStats::*q) {
  return l && l->n > 0 ? (*l).*q : kNoValue;
}
const Column<PointRecord> kServeColumns[] = {
    {"output_tokens_per_s", "out tok/s", 1, "{:.1f}",
     [](const PointRecord& p) { return metrics_of(p).output_tokens_per_s.value_or(kNoValue); }},
    {"request_throughput", "req/s", 1, "{:.2f}",
     [](const PointRecord& p) { return metrics_of(p).request_throughput.value_or(kNoValue); }},
    {"ttft_p50_s", "TTFT p50", 1e3, "{:.1f}",
     [](const PointRecord& p) { return stat(metrics_of(p).ttft_s, &LatencyStats::p50); }},
    {"ttft_p99_s", "TTFT p99", 1e3, "{:.1f}",
     [](const PointRecord& p) { return stat(metrics_of(p).ttft_s, &LatencyStats::p99); }},
    {"queue_p50_s", "queue p50", 1e3, "{:.1f}",
     [](const PointRecord& p) { return stat(metrics_of(p).queue_s, &LatencyStats::p50); }},
    {"tpot_p50_s", "TPOT p50", 1e3, "{:.2f}",
     [](const PointRecord& p) { return stat(metrics_of(p).tpot_s, &LatencyStats::p50); }},
    {"itl_p50_s", "ITL p50", 1e3, "{:.2f}",
     [](const PointRecord& p) { return stat(metrics_of(p).itl_s, &LatencyStats::p50); }},
    {"itl_p95_s", "ITL p95", 1e3, "{:.2f}",
     [](const PointRecord& p) { return stat(metrics_of(p).itl_s, &LatencyStats::p95); }},
    {"itl_p99_s", "ITL p99", 1e3, "{:.2f}",
     [](const PointRecord& p) { return stat(metrics_of(p).itl_s, &LatencyStats::p99); }},
};
// (1.25.0) A serve point with a price: its cost per million tokens, in US dollars (a second
// table under the serve one, so runs without a price keep their console rows).
double cost_of(const PointRecord& p, Nullable<double> CostPerMtok::*which) {
  const auto& c = metrics_of(p).cost_per_mtok;
  return c && (*c).*which ? *((*c).*which) : kNoValue;
}
const Column<PointRecord> kCostColumns[] = {
    {"cost_per_mtok_output_usd", "$/Mtok out", 1, "{:.4f}",
     [](const PointRecord& p) { return cost_of(p, &CostPerMtok::output_usd); }},
    {"cost_per_mtok_total_usd", "$/Mtok total", 1, "{:.4f}",
     [](const PointRecord& p) { return cost_of(p, &CostPerMtok::total_usd); }},
};
const Column<CollPointRecord> kCollColumns[] = {
    {"time_s", "time us", 1e6, "{:.1f}",
     [](const CollPointRecord& p) { return p.metrics.time_s.mean; }},
    {"time_p99_s", "p99 us", 1e6, "{:.1f}",
     [](const CollPointRecord& p) { return p.metrics.time_s.p99; }},
    {"algbw_GBps", "algbw", 1, "{:.3f}",
     [](const CollPointRecord& p) { return p.metrics.algbw_GBps; }},
    {"busbw_GBps", "busbw", 1, "{:.3f}",
     [](const CollPointRecord& p) { return p.metrics.busbw_GBps; }},
    {"skew_p95_s", "skew95 us", 1e6, "{:.1f}",
     [](const CollPointRecord& p) { return p.collectives.skew_s.p95; }},
    {"wait_fraction", "wait%", 100, "{:.1f}",
     [](const CollPointRecord& p) { return p.collectives.wait_fraction; }},
};

template <class R, std::size_t N>
CompareFigures figures_of(const Column<R> (&cols)[N], const R& r) {
  CompareFigures out;
  for (const auto& c : cols) out.emplace_back(c.key, c.get(r));  // no value: NaN (null)
  return out;
}

bool is_serve(const PointRecord& p) {
  return p.params.phase == "serve";
}

// The params with each object field (serve's) spread into dotted keys, so that runs differing
// in one serving setting (serve.max_batch) match on the rest and are labelled by it alone. A
// serve point's `steps` is what its requests took, an outcome, not a setting to match on.
oj flat_params(const oj& params) {
  oj out = oj::object();
  const bool serve = params.value("phase", "") == "serve";
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (serve && it.key() == "steps") continue;
    if (!it.value().is_object()) {
      out[it.key()] = it.value();
      continue;
    }
    for (auto jt = it.value().begin(); jt != it.value().end(); ++jt)
      out[it.key() + "." + jt.key()] = jt.value();
  }
  return out;
}

// flat_params' inverse, for a row's key as compare.json writes it.
oj nested_params(const oj& flat) {
  oj out = oj::object();
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    const std::size_t dot = it.key().find('.');
    if (dot == std::string::npos)
      out[it.key()] = it.value();
    else
      out[it.key().substr(0, dot)][it.key().substr(dot + 1)] = it.value();
  }
  return out;
}

// One point as compare reads it: what identifies it, how it ended and, when ok, its figures.
struct ComparedPoint {
  oj params;  // flat_params of the point's
  std::string status;
  std::optional<CompareFigures> metrics;  // ok points only
  const PointRecord* record = nullptr;    // a model (run, sweep, serve) point's
};

// A model or collectives point compares its own record's figures; a point that is neither
// keeps its params and status, and its figures have no value (null).
ComparedPoint compared_point(const ResultsPoint& rp) {
  const auto make = [](const auto& rec, const auto& cols) {
    const bool ok = rec.status == PointStatus::ok;
    return ComparedPoint{flat_params(to_json(rec.params)), point_status_name(rec.status),
                         ok ? std::optional(figures_of(cols, rec)) : std::nullopt};
  };
  if (rp.model) {
    ComparedPoint p = make(*rp.model, kModelColumns);
    p.record = &*rp.model;
    if (p.metrics && is_serve(*rp.model)) {
      const CompareFigures serve = figures_of(kServeColumns, *rp.model);
      p.metrics->insert(p.metrics->end(), serve.begin(), serve.end());
      if (metrics_of(*rp.model).cost_per_mtok) {
        const CompareFigures cost = figures_of(kCostColumns, *rp.model);
        p.metrics->insert(p.metrics->end(), cost.begin(), cost.end());
      }
    }
    return p;
  }
  if (rp.coll) return make(*rp.coll, kCollColumns);
  ComparedPoint p{flat_params(rp.head.params), rp.head.status, std::nullopt};
  if (p.status == "ok") {  // unreadable: every figure without a value
    p.metrics.emplace();
    for (const auto& c : kModelColumns) p.metrics->emplace_back(c.key, kNoValue);
  }
  return p;
}

using RunPoints = std::vector<std::vector<ComparedPoint>>;

RunPoints compared_points(const std::vector<CompareInput>& runs) {
  RunPoints out(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const ResultsPoint& p : runs[i].doc.points) out[i].push_back(compared_point(p));
  return out;
}

std::string value_text(const oj& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Params fields that are constant within every run but differ between runs.
std::vector<std::string> label_fields_of(const RunPoints& pts) {
  std::map<std::string, std::vector<std::set<std::string>>> seen;
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (const auto& p : pts[i])
      for (auto it = p.params.begin(); it != p.params.end(); ++it) {
        auto& v = seen[it.key()];
        v.resize(pts.size());
        v[i].insert(it.value().dump());
      }
  std::vector<std::string> label_fields;
  for (const auto& [key, per_run] : seen) {
    bool constant = true, differs = false;
    for (const auto& s : per_run) constant = constant && s.size() == 1;
    for (const auto& s : per_run) differs = differs || (constant && s != per_run[0]);
    if (constant && differs) label_fields.push_back(key);
  }
  return label_fields;
}

std::vector<CompareRun> runs_of(const std::vector<CompareInput>& runs, const RunPoints& pts,
                                const std::vector<std::string>& label_fields) {
  std::vector<CompareRun> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::string label;
    for (const auto& f : label_fields)
      label += (label.empty() ? "" : " ") + f + "=" + value_text(pts[i][0].params[f]);
    out.push_back({std::string(1, static_cast<char>('A' + i % 26)), runs[i].path,
                   label.empty() ? runs[i].path : label, static_cast<int64_t>(pts[i].size())});
  }
  return out;
}

// Each match key (the params less the label fields) with every run's first point under it,
// in the first run's order, then points only later runs have.
struct Matches {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ComparedPoint*>> by_key;
};

Matches match_points(const RunPoints& pts, const std::set<std::string>& labels) {
  Matches m;
  for (std::size_t i = 0; i < pts.size(); ++i)
    for (const auto& p : pts[i]) {
      oj key = oj::object();
      for (auto it = p.params.begin(); it != p.params.end(); ++it)
        if (!labels.count(it.key())) key[it.key()] = it.value();
      auto& slot = m.by_key[key.dump()];
      if (slot.empty()) m.order.push_back(key.dump());
      slot.resize(pts.size(), nullptr);
      if (!slot[i]) slot[i] = &p;
    }
  return m;
}

// Every run's entry for one matched point, with ratios to the first run that has it.
std::vector<CompareEntry> entries_of(const std::vector<const ComparedPoint*>& slot,
                                     const std::vector<CompareRun>& runs) {
  std::optional<CompareFigures> base;
  const ComparedPoint* first = nullptr;
  std::string first_run;
  std::vector<CompareEntry> entries;
  for (std::size_t i = 0; i < slot.size(); ++i) {
    if (!slot[i]) continue;
    const ComparedPoint& p = *slot[i];
    CompareEntry e{runs[i].run, p.status, std::nullopt, std::nullopt, std::nullopt};
    if (p.status == "ok" && p.metrics) {
      e.metrics = p.metrics;
      if (!base) base = p.metrics, first = &p, first_run = runs[i].run;
      if (first != &p && first->record && p.record)
        e.diff = compare_diff(*first->record, first_run, *p.record, runs[i].run);
      e.ratio.emplace();
      for (const auto& [k, v] : *p.metrics) {
        // No ratio (null) against a base of 0 or without a value: never a plausible 0.
        const double b = figure(*base, k);
        e.ratio->emplace_back(k, b != 0 && std::isfinite(b) ? v / b : kNoValue);
      }
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

// Milliseconds with a sign and about three significant digits, never in exponent form.
std::string ms(double s) {
  const double v = 1e3 * s, a = std::abs(v);
  return fmt::format(fmt::runtime(a >= 100 ? "{:+.0f}" : a >= 10 ? "{:+.1f}" : "{:+.2f}"), v);
}

// Where an entry's step time differs from the first entry's, per step.
std::string diff_text(const CompareDiff& d, const std::string& base, const std::string& run) {
  return fmt::format(
      "  {} vs {}: step {} ms (compute {}, transfer {}, wait {}, outside the ops {}); {}: {}\n",
      run, base, ms(d.step_s), ms(d.compute_s), ms(d.transfer_s), ms(d.wait_s), ms(d.outside_ops_s),
      d.slower, d.text);
}

// The console's columns: heading and value cells from one table.
template <class R, std::size_t N>
std::string entries_text(const Column<R> (&cols)[N], const CompareRow& row) {
  std::string head = fmt::format("  {:<4}", "run");
  for (const auto& c : cols) head += fmt::format(" {:>17}", c.head);
  std::string s = head + "\n";
  for (const CompareEntry& e : row.entries) {
    std::string line = fmt::format("  {:<4}", e.run);
    if (e.status != "ok") {
      s += line + " " + e.status + "\n";
      continue;
    }
    for (const auto& c : cols) {
      const double v = e.metrics ? figure(*e.metrics, c.key) * c.scale : kNoValue;
      const double r = e.ratio ? figure(*e.ratio, c.key) : kNoValue;
      // A figure the run lacks prints as n/a, never as "nan" or "nanx".
      line +=
          fmt::format(" {:>10} {:>6}", std::isnan(v) ? "n/a" : fmt::format(fmt::runtime(c.fmt), v),
                      std::isnan(r) ? "n/a" : fmt::format("{:.2f}x", r));
    }
    s += line + "\n";
  }
  for (const CompareEntry& e : row.entries)
    if (e.diff) s += diff_text(*e.diff, row.entries.front().run, e.run);
  return s;
}

}  // namespace

CompareInput load_compare_input(const std::string& path) {
  return CompareInput{path, load_results_doc(path, "compare")};
}

CompareRecord compare_runs(const std::vector<CompareInput>& runs) {
  const RunPoints pts = compared_points(runs);
  CompareRecord out;
  out.label_fields = label_fields_of(pts);
  const std::set<std::string> labels(out.label_fields.begin(), out.label_fields.end());
  out.runs = runs_of(runs, pts, out.label_fields);
  const Matches m = match_points(pts, labels);
  for (const auto& k : m.order) {
    const auto& slot = m.by_key.at(k);
    int present = 0;
    for (const ComparedPoint* p : slot) present += p ? 1 : 0;
    if (present < 2) continue;  // nothing to compare it with
    out.rows.push_back({nested_params(oj::parse(k)), entries_of(slot, out.runs)});
  }
  out.ratio_base = "the first run (in command-line order) that has the point";
  return out;
}

namespace {

// The match-key fields (flat_params') with more than one value over the rows that have them: a
// heading leaves out a field of param_omitted_from_heading, or a serve field, only when it is
// the same on every row, so no two rows read alike.
std::set<std::string> varying_keys(const std::vector<CompareRow>& rows) {
  std::map<std::string, std::set<std::string>> seen;
  for (const CompareRow& row : rows) {
    const oj flat = flat_params(row.key);
    for (auto it = flat.begin(); it != flat.end(); ++it) seen[it.key()].insert(it.value().dump());
  }
  std::set<std::string> out;
  for (const auto& [k, v] : seen)
    if (v.size() > 1) out.insert(k);
  return out;
}

// Whether any run of the row carries a cost (a price was given to it).
bool priced(const CompareRow& row) {
  return std::any_of(row.entries.begin(), row.entries.end(), [](const CompareEntry& e) {
    return e.metrics && std::any_of(e.metrics->begin(), e.metrics->end(),
                                    [](const auto& f) { return f.first == kCostColumns[0].key; });
  });
}

}  // namespace

std::string format_compare(const CompareRecord& cmp) {
  std::string s;
  const std::set<std::string> varying = varying_keys(cmp.rows);
  for (const CompareRun& r : cmp.runs)
    s += fmt::format("{} = {} ({}, {} points)\n", r.run, r.path, r.label, r.points);
  for (const CompareRow& row : cmp.rows) {
    std::string key;
    const oj flat = flat_params(row.key);
    for (auto it = flat.begin(); it != flat.end(); ++it)
      if (varying.count(it.key()) ||
          (!param_omitted_from_heading(it.key()) && it.key().rfind("serve.", 0) != 0))
        key += (key.empty() ? "" : " ") + it.key() + "=" + value_text(it.value());
    // A row is a collectives one when its first entry carries the collectives columns.
    const CompareEntry* first = row.entries.empty() ? nullptr : &row.entries.front();
    const bool coll = first && first->metrics &&
                      std::any_of(first->metrics->begin(), first->metrics->end(),
                                  [](const auto& f) { return f.first == kCollColumns[0].key; });
    const bool serve = row.key.contains("serve") && row.key["serve"].is_object();
    s += "\n" + key + "\n";
    s += coll    ? entries_text(kCollColumns, row)
         : serve ? entries_text(kServeColumns, row)
                 : entries_text(kModelColumns, row);
    if (serve && priced(row)) {
      CompareRow cost = row;  // its step diffs are printed once, above
      for (CompareEntry& e : cost.entries) e.diff.reset();
      s += entries_text(kCostColumns, cost);
    }
  }
  if (cmp.rows.empty()) s += "\nno points match between the runs\n";
  return s;
}

}  // namespace tpb
