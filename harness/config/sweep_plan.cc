// Sweep expansion. Values stay strings here; typing and validation happen per point in
// resolve_run_spec, so a sweep and a run reject the same inputs with the same messages.
#include "harness/config/sweep_plan.h"

#include <algorithm>
#include <set>

#include "base/errors.h"
#include "harness/config/axis.h"
#include "harness/config/config_fields.h"

namespace tpb {

namespace {

bool is_integer_axis(const std::string& key) {
  return key == "tp" || key == "context" || key == "prompt" || key == "batch";
}

// The inject axis: each combination is the list of specs a point applies ([] = none).
std::vector<std::vector<std::string>> inject_combinations(const nlohmann::json& v) {
  std::vector<std::string> flags;
  if (v.is_string()) {
    flags.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_string()) throw BadInput("--inject: expected strings (got " + e.dump() + ")");
      flags.push_back(e.get<std::string>());
    }
  } else {
    throw BadInput("--inject: expected a string or a list of strings (got " + v.dump() + ")");
  }
  std::vector<std::vector<std::string>> combos{{}};
  for (const std::string& flag : flags) {
    std::vector<std::vector<std::string>> next;
    for (const std::string& alt : expand_string_axis(flag, "--inject", ';')) {
      for (const auto& c : combos) {
        auto n = c;
        if (alt != "none") n.push_back(alt);
        next.push_back(std::move(n));
      }
    }
    combos = std::move(next);
  }
  return combos;
}

std::string inject_label(const nlohmann::json& inj) {
  if (!inj.is_array() || inj.empty()) return "none";
  std::string s;
  for (const auto& e : inj) s += (s.empty() ? "" : ",") + e.get<std::string>();
  return s;
}

}  // namespace

const std::vector<std::string>& sweep_axis_keys() {
  static const std::vector<std::string> keys{"topology", "tp",      "dtype",  "phase",
                                             "inject",   "context", "prompt", "batch"};
  return keys;
}

namespace {

// A "points" list: each entry's keys over the shared ones, one point per entry, in order. Axes
// are then the keys the entries set, so labels and the config echo show what varies.
SweepPlan listed_points(const nlohmann::json& cfg) {
  const nlohmann::json& list = cfg.at("points");
  if (!list.is_array() || list.empty())
    throw BadInput("points: expected a non-empty list of objects, each one point's settings");
  nlohmann::json base = cfg;
  base.erase("points");
  for (const std::string& key : sweep_axis_keys())
    if (base.contains(key) && base[key].is_array())
      throw BadInput(field_name(key) + ": a list of values and a points list do not combine");
  SweepPlan plan;
  plan.listed = true;
  for (const auto& entry : list) {
    if (!entry.is_object() || entry.contains("points"))
      throw BadInput("points: each entry must be an object of settings (got " + entry.dump() + ")");
    nlohmann::json p = base;
    for (const auto& [k, v] : entry.items()) p[k] = v;
    if (p.contains("inject") && p["inject"].is_string()) p["inject"] = {p["inject"]};
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      const std::string& k = it.key();  // a named copy: clang lambdas cannot capture bindings
      if (std::none_of(plan.axes.begin(), plan.axes.end(),
                       [&](const SweepAxis& a) { return a.key == k; }))
        plan.axes.push_back(SweepAxis{k, {}, {}});
    }
    plan.points.push_back(std::move(p));
  }
  // Each key an entry sets is an axis, with the values it takes over all points (a point that
  // leaves it to the shared settings or to run's default shows that value or null).
  for (auto& a : plan.axes) {
    a.values.clear();
    for (const auto& p : plan.points) {
      const nlohmann::json v = p.contains(a.key) ? p[a.key] : nlohmann::json();
      if (std::find(a.typed.begin(), a.typed.end(), v) != a.typed.end()) continue;
      a.typed.push_back(v);
      a.values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  return plan;
}

}  // namespace

SweepPlan plan_sweep(const nlohmann::json& cfg) {
  if (!cfg.is_object()) throw BadInput("config: expected a JSON object at the top level");
  if (cfg.contains("points")) return listed_points(cfg);
  SweepPlan plan;
  // Axes that are absent stay absent from the point configs, so run's defaults apply.
  std::vector<std::vector<nlohmann::json>> choices;  // per axis: the values to set
  for (const std::string& key : sweep_axis_keys()) {
    if (!cfg.contains(key) || cfg.at(key).is_null()) continue;
    SweepAxis axis{key, {}};
    std::vector<nlohmann::json> vals;
    if (key == "inject") {
      for (auto& combo : inject_combinations(cfg.at(key))) {
        vals.emplace_back(combo);
        axis.values.push_back(inject_label(vals.back()));
      }
    } else {
      axis.values = axis_values(cfg.at(key), field_name(key), is_integer_axis(key));
      for (const auto& v : axis.values) vals.emplace_back(v);
    }
    plan.axes.push_back(std::move(axis));
    choices.push_back(std::move(vals));
  }

  // Odometer over the axes, last axis fastest.
  std::vector<std::size_t> idx(choices.size(), 0);
  std::set<std::string> seen;
  std::size_t total = 1;
  for (const auto& c : choices) {
    total *= c.size();
    if (total > 100000) throw BadInput("sweep: more than 100000 points; narrow an axis");
  }
  for (std::size_t n = 0; n < total; ++n) {
    nlohmann::json p = cfg;
    for (std::size_t a = 0; a < choices.size(); ++a) p[plan.axes[a].key] = choices[a][idx[a]];
    // The other phase's axis does not change the point: drop it so duplicates collapse.
    const std::string phase = p.contains("phase") ? p["phase"].get<std::string>() : "decode";
    if (phase == "decode") p.erase("prompt");
    if (phase == "prefill") p.erase("context");
    if (p.contains("inject") && p["inject"].empty()) p.erase("inject");
    if (seen.insert(p.dump()).second) plan.points.push_back(std::move(p));
    for (std::size_t a = choices.size(); a-- > 0;) {
      if (++idx[a] < choices[a].size()) break;
      idx[a] = 0;
    }
  }
  return plan;
}

std::string point_label(const nlohmann::json& point, const SweepPlan& plan) {
  std::string s;
  for (const SweepAxis& a : plan.axes) {
    if (a.key == "inject") {
      s += (s.empty() ? "" : " ") + std::string("inject=") +
           inject_label(point.contains("inject") ? point["inject"] : nlohmann::json());
      continue;
    }
    if (!point.contains(a.key)) continue;
    const auto& v = point[a.key];
    s += (s.empty() ? "" : " ") + a.key + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return s.empty() ? "(single point)" : s;
}

nlohmann::ordered_json axis_values_json(const SweepAxis& axis) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!axis.typed.empty()) {
    for (const auto& v : axis.typed) out.push_back(nlohmann::ordered_json(v));
    return out;
  }
  for (const auto& v : axis.values) {
    if (is_integer_axis(axis.key))
      out.push_back(std::stoll(v));  // expand_int_axis produced it, so it parses
    else
      out.push_back(v);
  }
  return out;
}

}  // namespace tpb
