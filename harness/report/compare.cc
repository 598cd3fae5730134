// Side-by-side comparison of results. The metric list is one table (kModelMetrics /
// kCollMetrics) that both the JSON and the console read.
#include "harness/report/compare.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>

#include "harness/record/json_number.h"
#include "harness/record/results_reader.h"
#include "layers/base/errors.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

struct MetricDef {
  const char* key;
  const char* head;
  double scale;  // console unit
  const char* fmt;
};

const MetricDef kModelMetrics[] = {
    {"tokens_per_s", "tok/s", 1, "{:.1f}"},
    {"step_p50_s", "p50 ms", 1e3, "{:.2f}"},
    {"step_p95_s", "p95 ms", 1e3, "{:.2f}"},
    {"mbu", "MBU", 1, "{:.3f}"},
    {"mfu", "MFU", 1, "{:.4f}"},
    {"skew_p95_s", "skew95 us", 1e6, "{:.0f}"},
    {"wait_fraction", "wait%", 100, "{:.1f}"},
    {"collective_fraction", "coll%", 100, "{:.1f}"},
    {"transfer_fraction", "xfer%", 100, "{:.1f}"},
};
const MetricDef kCollMetrics[] = {
    {"time_s", "time us", 1e6, "{:.1f}"},       {"time_p99_s", "p99 us", 1e6, "{:.1f}"},
    {"algbw_GBps", "algbw", 1, "{:.3f}"},       {"busbw_GBps", "busbw", 1, "{:.3f}"},
    {"skew_p95_s", "skew95 us", 1e6, "{:.1f}"}, {"wait_fraction", "wait%", 100, "{:.1f}"},
};

bool is_coll_point(const oj& p) {
  return p.contains("metrics") && p["metrics"].contains("busbw_GBps");
}

// The figures a row compares, taken from one point record.
oj point_metrics(const oj& p) {
  const auto& m = p["metrics"];
  const auto& c = p["collectives"];
  if (is_coll_point(p))
    return {{"time_s", json_number(m["time_s"], "mean")},
            {"time_p99_s", json_number(m["time_s"], "p99")},
            {"algbw_GBps", json_number(m, "algbw_GBps")},
            {"busbw_GBps", json_number(m, "busbw_GBps")},
            {"skew_p95_s", json_number(c["skew_s"], "p95")},
            {"wait_fraction", json_number(c, "wait_fraction")}};
  // coll% = (wait + transfer) / wall; xfer% keeps only the transfer, the part the interconnect
  // sets, since wait is the compute imbalance that arrives with any topology.
  double coll = 0, xfer = 0, wall = 0;
  for (const auto& r : p["ranks"]) {
    coll += json_number(r, "wait_s") + json_number(r, "transfer_s");
    xfer += json_number(r, "transfer_s");
    wall += json_number(r, "wall_s");
  }
  return {{"tokens_per_s", json_number(m, "tokens_per_s")},
          {"step_p50_s", json_number(m["step_time_s"], "p50")},
          {"step_p95_s", json_number(m["step_time_s"], "p95")},
          {"mbu", json_number(m, "mbu")},
          {"mfu", json_number(m, "mfu")},
          {"skew_p95_s", json_number(c["skew_s"], "p95")},
          {"wait_fraction", json_number(c, "wait_fraction")},
          {"collective_fraction", wall > 0 ? coll / wall : 0.0},
          {"transfer_fraction", wall > 0 ? xfer / wall : 0.0}};
}

std::string value_text(const oj& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

CompareInput load_compare_input(const std::string& path) {
  return CompareInput{path, load_results(path, "compare")};
}

oj compare_runs(const std::vector<CompareInput>& runs) {
  // Values each params field takes in each run.
  std::map<std::string, std::vector<std::set<std::string>>> seen;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& p : runs[i].results["points"])
      for (auto it = p["params"].begin(); it != p["params"].end(); ++it) {
        auto& v = seen[it.key()];
        v.resize(runs.size());
        v[i].insert(it.value().dump());
      }
  std::vector<std::string> label_fields;
  for (const auto& [key, per_run] : seen) {
    bool constant = true, differs = false;
    for (const auto& s : per_run) constant = constant && s.size() == 1;
    for (const auto& s : per_run) differs = differs || (constant && s != per_run[0]);
    if (constant && differs) label_fields.push_back(key);
  }
  const std::set<std::string> labels(label_fields.begin(), label_fields.end());

  oj out;
  out["label_fields"] = label_fields;
  oj jr = oj::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::string label;
    const auto& pts = runs[i].results["points"];
    for (const auto& f : label_fields)
      label += (label.empty() ? "" : " ") + f + "=" + value_text(pts[0]["params"][f]);
    jr.push_back({{"run", std::string(1, static_cast<char>('A' + i % 26))},
                  {"path", runs[i].path},
                  {"label", label.empty() ? runs[i].path : label},
                  {"points", pts.size()}});
  }
  out["runs"] = jr;

  // Rows in the first run's order, then points only later runs have.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const oj*>> by_key;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& p : runs[i].results["points"]) {
      oj key = oj::object();
      for (auto it = p["params"].begin(); it != p["params"].end(); ++it)
        if (!labels.count(it.key())) key[it.key()] = it.value();
      auto& slot = by_key[key.dump()];
      if (slot.empty()) order.push_back(key.dump());
      slot.resize(runs.size(), nullptr);
      if (!slot[i]) slot[i] = &p;
    }
  oj rows = oj::array();
  for (const auto& k : order) {
    const auto& slot = by_key[k];
    int present = 0;
    for (const oj* p : slot) present += p ? 1 : 0;
    if (present < 2) continue;  // nothing to compare it with
    oj row;
    row["key"] = oj::parse(k);
    oj base, entries = oj::array();
    for (std::size_t i = 0; i < slot.size(); ++i) {
      if (!slot[i]) continue;
      const oj& p = *slot[i];
      oj e{{"run", jr[i]["run"]}, {"status", p.value("status", "?")}};
      if (e["status"] == "ok") {
        e["metrics"] = point_metrics(p);
        if (base.is_null()) base = e["metrics"];
        oj ratio;
        for (auto it = e["metrics"].begin(); it != e["metrics"].end(); ++it) {
          const double b = base[it.key()].get<double>();
          ratio[it.key()] = b != 0 ? it.value().get<double>() / b : 0.0;
        }
        e["ratio"] = ratio;
      }
      entries.push_back(e);
    }
    row["entries"] = entries;
    rows.push_back(row);
  }
  out["rows"] = rows;
  out["ratio_base"] = "the first run (in command-line order) that has the point";
  return out;
}

std::string format_compare(const oj& cmp) {
  std::string s;
  for (const auto& r : cmp["runs"])
    s += fmt::format("{} = {} ({}, {} points)\n", r["run"].get<std::string>(),
                     r["path"].get<std::string>(), r["label"].get<std::string>(),
                     r["points"].get<std::size_t>());
  for (const auto& row : cmp["rows"]) {
    std::string key;
    for (auto it = row["key"].begin(); it != row["key"].end(); ++it)
      if (it.key() != "model" && it.key() != "steps" && it.key() != "warmup" &&
          it.key() != "iters" && it.key() != "warmup_iters")
        key += (key.empty() ? "" : " ") + it.key() + "=" + value_text(it.value());
    const bool coll = !row["entries"].empty() && row["entries"][0].contains("metrics") &&
                      row["entries"][0]["metrics"].contains("busbw_GBps");
    s += "\n" + key + "\n";
    std::string head = fmt::format("  {:<4}", "run");
    const auto* defs = coll ? kCollMetrics : kModelMetrics;
    const std::size_t nd = coll ? std::size(kCollMetrics) : std::size(kModelMetrics);
    for (std::size_t d = 0; d < nd; ++d) head += fmt::format(" {:>17}", defs[d].head);
    s += head + "\n";
    for (const auto& e : row["entries"]) {
      std::string line = fmt::format("  {:<4}", e["run"].get<std::string>());
      if (e["status"] != "ok") {
        s += line + " " + e["status"].get<std::string>() + "\n";
        continue;
      }
      for (std::size_t d = 0; d < nd; ++d) {
        const double v = e["metrics"][defs[d].key].get<double>() * defs[d].scale;
        const double r = e["ratio"][defs[d].key].get<double>();
        line += fmt::format(" {:>10} {:>6}", fmt::format(fmt::runtime(defs[d].fmt), v),
                            fmt::format("{:.2f}x", r));
      }
      s += line + "\n";
    }
  }
  if (cmp["rows"].empty()) s += "\nno points match between the runs\n";
  return s;
}

}  // namespace tpb
