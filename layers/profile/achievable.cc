// Parsing and lookup of a profile's achievable fractions, kernel and engine overheads.
#include "layers/profile/achievable.h"

#include <algorithm>
#include <cmath>

#include "base/errors.h"

namespace tpb {
namespace {

const char* const kCurves[] = {"hbm_stream", "gemm", "decode_attention", "prefill_attention"};

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw BadInput("hardware '" + where + "': field 'achievable." + what);
}

double positive(const nlohmann::json& v, const std::string& where, const std::string& key,
                bool allow_zero) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      (!allow_zero && v.get<double>() == 0))
    bad(where, key + "' must be a " + (allow_zero ? "non-negative" : "positive") + " number");
  return v.get<double>();
}

std::string source_of(const nlohmann::json& j, const std::string& where, const std::string& key) {
  if (!j.contains("source") || !j["source"].is_string() || j["source"].get<std::string>().empty())
    bad(where, key + ".source' must say where the figure comes from");
  return j["source"].get<std::string>();
}

FractionCurve curve_from_json(const nlohmann::json& j, const std::string& where,
                              const std::string& key) {
  if (!j.is_object() || !j.contains("points") || !j["points"].is_array() || j["points"].empty())
    bad(where, key + "' must be an object with a points list of [x, fraction] and a source");
  FractionCurve c;
  c.source = source_of(j, where, key);
  for (const auto& p : j["points"]) {
    if (!p.is_array() || p.size() != 2) bad(where, key + ".points' entries must be [x, fraction]");
    const double x = positive(p[0], where, key + ".points[x]", false);
    const double f = positive(p[1], where, key + ".points[fraction]", false);
    if (f > 1.5) bad(where, key + ".points' fraction must be in (0, 1.5]");
    c.points.emplace_back(x, f);
  }
  std::sort(c.points.begin(), c.points.end());
  return c;
}

nlohmann::ordered_json curve_to_json(const FractionCurve& c) {
  nlohmann::ordered_json pts = nlohmann::ordered_json::array();
  for (const auto& [x, f] : c.points) pts.push_back({x, f});
  return {{"points", pts}, {"source", c.source}};
}

FractionCurve* curve_named(Achievable& a, const std::string& k) {
  if (k == "hbm_stream") return &a.hbm_stream;
  if (k == "gemm") return &a.gemm;
  if (k == "decode_attention") return &a.decode_attention;
  if (k == "prefill_attention") return &a.prefill_attention;
  return nullptr;
}

}  // namespace

double FractionCurve::at(double x) const {
  if (points.empty()) return 1.0;
  const double lx = std::log2(std::max(x, 1.0));
  auto l2 = [](double v) { return std::log2(std::max(v, 1.0)); };
  if (lx <= l2(points.front().first)) return points.front().second;
  if (lx >= l2(points.back().first)) return points.back().second;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const double x0 = l2(points[i - 1].first), x1 = l2(points[i].first);
    const double f0 = points[i - 1].second, f1 = points[i].second;
    if (lx <= x1) return x1 > x0 ? f0 + (f1 - f0) * (lx - x0) / (x1 - x0) : f1;
  }
  return points.back().second;
}

Achievable achievable_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) bad(where, "' must be an object");
  Achievable a;
  for (const auto& [key, v] : j.items()) {
    if (FractionCurve* c = curve_named(a, key)) {
      *c = curve_from_json(v, where, key);
    } else if (key == "kernel_overhead") {
      if (!v.is_object() || !v.contains("eager_s") || !v.contains("graph_s"))
        bad(where, "kernel_overhead' must hold eager_s, graph_s and a source");
      a.kernel = {positive(v["eager_s"], where, "kernel_overhead.eager_s", true),
                  positive(v["graph_s"], where, "kernel_overhead.graph_s", true),
                  source_of(v, where, "kernel_overhead")};
    } else if (key == "engine") {
      if (!v.is_object() || !v.contains("step_overhead_s"))
        bad(where, "engine' must hold step_overhead_s and a source");
      a.engine_step_s = positive(v["step_overhead_s"], where, "engine.step_overhead_s", true);
      a.engine_source = source_of(v, where, "engine");
    } else if (key != "note") {
      bad(where, key + "' is unknown (known: hbm_stream, gemm, decode_attention, " +
                     "prefill_attention, kernel_overhead, engine, note)");
    }
  }
  return a;
}

nlohmann::ordered_json achievable_to_json(const Achievable& a) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  Achievable copy = a;
  for (const char* k : kCurves)
    if (!curve_named(copy, k)->empty()) j[k] = curve_to_json(*curve_named(copy, k));
  if (!a.kernel.empty())
    j["kernel_overhead"] = {
        {"eager_s", a.kernel.eager_s}, {"graph_s", a.kernel.graph_s}, {"source", a.kernel.source}};
  if (a.engine_step_s > 0 || !a.engine_source.empty())
    j["engine"] = {{"step_overhead_s", a.engine_step_s}, {"source", a.engine_source}};
  return j;
}

}  // namespace tpb
