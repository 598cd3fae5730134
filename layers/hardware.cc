// Hardware profiles: JSON parsing with field-naming errors, and the peak lookup by dtype.
// Peaks are dense datasheet figures or measured ones; `source` says which, and results echo it.
#include "layers/hardware.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "base/config_loader.h"
#include "base/errors.h"

namespace tpb {
namespace {

std::string prefix(const std::string& where) {
  return "hardware '" + where + "': ";
}

// tf32 is not a DType (no tensor is stored as tf32) but it is the fp32 GEMM peak on NVIDIA
// tensor cores, so profiles may record it next to the others.
const std::vector<std::string>& peak_keys() {
  static const std::vector<std::string> k = {"fp32", "tf32", "bf16", "fp16", "fp8"};
  return k;
}

const std::vector<std::string>& known_keys() {
  static const std::vector<std::string> k = {
      "name",   "peak_flops",         "peak_bw",    "memory_bytes", "llc_bytes",  "link_bw",
      "source", "measure_at_startup", "efficiency", "sm_clock_mhz", "achievable", "price_per_hour"};
  return k;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// A finite number >= 0, or > 0 when `positive`. 0 means "unknown" or "measured at start-up".
double number(const nlohmann::json& v, const std::string& key, bool positive,
              const std::string& where) {
  const bool ok = v.is_number() && std::isfinite(v.get<double>()) &&
                  (positive ? v.get<double>() > 0 : v.get<double>() >= 0);
  if (!ok)
    throw BadInput(prefix(where) + "field '" + key + "' must be a " +
                   (positive ? "positive" : "non-negative") + " number");
  return v.get<double>();
}

// A peak below 1e6 per second is a unit slip (989 for 989 TFLOP/s, 3350 for 3350 GB/s), not a
// device: it would price a step at hours, or at inf s from 1e-300. Above these no device runs
// (B200: 4.5e15 dense fp8 FLOP/s, 8e12 B/s).
constexpr double kMinPeak = 1e6, kMaxFlops = 1e18, kMaxBytesPerS = 1e15;

double peak(const nlohmann::json& v, const std::string& key, const char* unit, double most,
            bool need, const std::string& where) {
  const double x = number(v, key, need, where);
  if ((need || x > 0) && (x < kMinPeak || x > most)) {
    const std::string u = unit;
    std::ostringstream m;  // operator<< prints 989, 1e-300 and 1e+06 as %g does
    m << prefix(where) << "field '" << key << "' is " << x << " " << u << ": a device's peak lies "
      << "between " << kMinPeak << " and " << most << " " << u << " (give " << u << ", not T" << u
      << " or G" << u << ")";
    throw BadInput(m.str());
  }
  return x;
}

const char* const kEff = "efficiency";

OpFraction parse_fraction(const nlohmann::json& p, const std::string& field,
                          const std::string& where) {
  if (!p.is_object()) throw BadInput(prefix(where) + "field '" + field + "' must be an object");
  for (const char* key : {"op", "phase", "tp", "tokens", "fraction"})
    if (!p.contains(key))
      throw BadInput(prefix(where) + "field '" + field + "." + key + "' is missing");
  OpFraction f;
  if (!p["op"].is_string() || !p["phase"].is_string() ||
      (p["phase"] != "decode" && p["phase"] != "prefill"))
    throw BadInput(prefix(where) + "field '" + field +
                   "': op must be an op name and phase decode or prefill");
  f.op = p["op"].get<std::string>();
  f.phase = p["phase"].get<std::string>();
  f.tp = static_cast<int>(number(p["tp"], field + ".tp", true, where));
  f.tokens = static_cast<int64_t>(number(p["tokens"], field + ".tokens", true, where));
  f.fraction = number(p["fraction"], field + ".fraction", true, where);
  if (f.fraction > 100)
    throw BadInput(prefix(where) + "field '" + field + ".fraction' must be in (0, 100]");
  return f;
}

OpEfficiency parse_efficiency(const nlohmann::json& e, const std::string& where) {
  if (!e.is_object() || !e.contains("points") || !e["points"].is_array() || !e.contains("source") ||
      !e["source"].is_string() || e["source"].get<std::string>().empty())
    throw BadInput(prefix(where) + "field '" + kEff +
                   "' must be an object with a source and a points list");
  OpEfficiency out;
  out.source = e["source"].get<std::string>();
  if (e.contains("context"))
    out.context = static_cast<int64_t>(number(e["context"], "efficiency.context", false, where));
  if (e.contains("dtype")) {
    const nlohmann::json& d = e["dtype"];
    const bool known = d.is_string() && std::find(kDTypeNames.begin(), kDTypeNames.end(),
                                                  d.get<std::string>()) != kDTypeNames.end();
    if (!known)
      throw BadInput(prefix(where) + "field 'efficiency.dtype' must be a dtype name (fp32, bf16, " +
                     "fp16, fp8)");
    out.dtype = d.get<std::string>();
  }
  if (e.contains("backend")) {
    if (!e["backend"].is_string())
      throw BadInput(prefix(where) + "field 'efficiency.backend' must be a backend name");
    out.backend = e["backend"].get<std::string>();
  }
  for (std::size_t i = 0; i < e["points"].size(); ++i)
    out.points.push_back(
        parse_fraction(e["points"][i], "efficiency.points[" + std::to_string(i) + "]", where));
  return out;
}

// log2 distance between TP degrees: 2 is as near to 1 as to 4.
double tp_distance(int a, int b) {
  return std::abs(std::log2(static_cast<double>(a)) - std::log2(static_cast<double>(b)));
}

}  // namespace

int OpEfficiency::nearest_tp(const std::string& op, const std::string& phase, int tp) const {
  double best_d = std::numeric_limits<double>::infinity();
  for (const OpFraction& p : points)
    if (p.op == op && p.phase == phase) best_d = std::min(best_d, tp_distance(p.tp, tp));
  // One degree even when two are equally near (TP 4 between 2 and 8): the smaller, whatever
  // the table's order, so that reordering a profile cannot change a prediction.
  int best_tp = 0;
  for (const OpFraction& p : points)
    if (p.op == op && p.phase == phase && tp_distance(p.tp, tp) == best_d &&
        (best_tp == 0 || p.tp < best_tp))
      best_tp = p.tp;
  return best_tp;
}

std::vector<std::pair<int64_t, double>> OpEfficiency::grid(const std::string& op,
                                                           const std::string& phase, int tp) const {
  const int best_tp = nearest_tp(op, phase, tp);
  std::vector<std::pair<int64_t, double>> g;
  for (const OpFraction& p : points)
    if (p.op == op && p.phase == phase && p.tp == best_tp) g.emplace_back(p.tokens, p.fraction);
  std::sort(g.begin(), g.end());
  return g;
}

double OpEfficiency::fraction(const std::string& op, const std::string& phase, int tp,
                              int64_t tokens) const {
  std::vector<std::pair<double, double>> curve;  // (log2 tokens, fraction)
  for (const auto& [t, f] : grid(op, phase, tp))
    curve.emplace_back(std::log2(static_cast<double>(t)), f);
  if (curve.empty()) return 1.0;
  const double x = std::log2(static_cast<double>(std::max<int64_t>(tokens, 1)));
  if (x <= curve.front().first) return curve.front().second;
  if (x >= curve.back().first) return curve.back().second;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    const auto [x0, f0] = curve[i - 1];
    const auto [x1, f1] = curve[i];
    if (x <= x1) return x1 > x0 ? f0 + (f1 - f0) * (x - x0) / (x1 - x0) : f1;
  }
  return curve.back().second;
}

bool OpEfficiency::covers(const std::string& op, const std::string& phase) const {
  return std::any_of(points.begin(), points.end(),
                     [&](const OpFraction& p) { return p.op == op && p.phase == phase; });
}

std::string OpEfficiency::outside_grid(const std::string& phase, int tp, int64_t tokens,
                                       bool by_launch_plan) const {
  std::set<int> used_tp;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (const OpFraction& p : points) {
    if (p.phase != phase) continue;
    const int near = nearest_tp(p.op, phase, tp);
    used_tp.insert(near);
    if (p.tp != near) continue;
    lo = std::min(lo, p.tokens);
    hi = std::max(hi, p.tokens);
  }
  if (used_tp.empty()) return "";
  std::string out;
  if (!used_tp.count(tp))
    out = "no TP " + std::to_string(tp) + " point in " + phase + ": TP " +
          std::to_string(*used_tp.begin()) + "'s fractions are used";
  if (tokens >= 0 && tokens < lo)
    out += (out.empty() ? "" : "; ") + std::to_string(tokens) + " tokens per step lie below " +
           "the grid's " + std::to_string(lo) + ".." + std::to_string(hi) +
           ": the smallest point's fractions are held";
  if (tokens >= 0 && tokens > hi)
    out += (out.empty() ? "" : "; ") + std::to_string(tokens) + " tokens per step lie above " +
           "the grid's " + std::to_string(lo) + ".." + std::to_string(hi) +
           (by_launch_plan
                ? ": each op's time is extended through its two largest points as a fixed time "
                  "per launch plus a multiple of its roofline, by the CUDA launch plan"
                : ": each op's time is extended along the line through its two largest points "
                  "(time against roofline time)");
  return out;
}

double Hardware::flops_for(DType t) const {
  auto it = peak_flops.find(dtype_name(t));
  if (it == peak_flops.end())
    throw BadInput(std::string("--dtype: hardware '") + name + "' has no peak for " +
                   dtype_name(t));
  return it->second;  // 0 for a measure_at_startup profile until the probe has run
}

namespace {

// {usd, source}: a published rental price needs its publisher, as a peak needs its datasheet.
HourlyPrice price_from_json(const nlohmann::json& p, const std::string& where) {
  if (!p.is_object() || !p.contains("usd") || !p.contains("source") || p.size() != 2 ||
      !p["source"].is_string() || p["source"].get<std::string>().empty())
    throw BadInput(prefix(where) +
                   "field 'price_per_hour' must be {\"usd\": USD per GPU-hour, \"source\": who "
                   "published it}");
  return {number(p["usd"], "price_per_hour.usd", false, where), p["source"].get<std::string>()};
}

}  // namespace

Hardware hardware_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw BadInput(prefix(where) + "must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (!contains(known_keys(), key))
      throw BadInput(prefix(where) + "unknown field '" + key + "' (known: " + join(known_keys()) +
                     ")");
  }
  for (const char* key : {"peak_flops", "peak_bw", "source"}) {
    if (!j.contains(key))
      throw BadInput(prefix(where) + "missing required field '" + std::string(key) + "'");
  }
  Hardware h;
  if (j.contains("measure_at_startup")) {
    if (!j["measure_at_startup"].is_boolean())
      throw BadInput(prefix(where) + "field 'measure_at_startup' must be true or false");
    h.measure_at_startup = j["measure_at_startup"].get<bool>();
  }
  // A datasheet profile needs real peaks; a probed one may hold 0 until start-up fills it in.
  const bool need_peaks = !h.measure_at_startup;
  if (j.contains("name")) {
    if (!j["name"].is_string() || j["name"].get<std::string>().empty())
      throw BadInput(prefix(where) + "field 'name' must be a non-empty string");
    h.name = j["name"].get<std::string>();
  }
  if (!j["source"].is_string() || j["source"].get<std::string>().empty())
    throw BadInput(prefix(where) + "field 'source' must be a non-empty string");
  h.source = j["source"].get<std::string>();

  const auto& pf = j["peak_flops"];
  if (!pf.is_object() || pf.empty())
    throw BadInput(prefix(where) + "field 'peak_flops' must be an object of FLOP/s by dtype (" +
                   join(peak_keys()) + ")");
  for (const auto& [key, value] : pf.items()) {
    if (!contains(peak_keys(), key))
      throw BadInput(prefix(where) + "unknown dtype 'peak_flops." + key +
                     "' (known: " + join(peak_keys()) + ")");
    h.peak_flops[key] = peak(value, "peak_flops." + key, "FLOP/s", kMaxFlops, need_peaks, where);
  }
  h.peak_bw = peak(j["peak_bw"], "peak_bw", "B/s", kMaxBytesPerS, need_peaks, where);
  // Capacity, cache and link are informative; 0 means unknown (memory_bytes 0 on a CPU
  // profile means "read /proc/meminfo").
  if (j.contains("memory_bytes"))
    h.memory_bytes = number(j["memory_bytes"], "memory_bytes", false, where);
  if (j.contains("llc_bytes")) h.llc_bytes = number(j["llc_bytes"], "llc_bytes", false, where);
  if (j.contains("link_bw")) h.link_bw = number(j["link_bw"], "link_bw", false, where);
  if (j.contains("sm_clock_mhz"))
    h.sm_clock_mhz = number(j["sm_clock_mhz"], "sm_clock_mhz", false, where);
  if (j.contains(kEff)) h.efficiency = parse_efficiency(j[kEff], where);
  if (j.contains("achievable")) h.achievable = achievable_from_json(j["achievable"], where);
  if (j.contains("price_per_hour")) h.price_per_hour = price_from_json(j["price_per_hour"], where);
  return h;
}

Hardware load_hardware(const std::string& name_or_path, const std::string& config_dir) {
  static const ConfigKind kind{"--hardware", "hardware", "hardware", {}};
  const std::string suffix = kDatasheetSuffix;
  const bool datasheet =
      name_or_path.size() > suffix.size() &&
      name_or_path.compare(name_or_path.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (!datasheet)
    return load_named_config<Hardware>(kind, name_or_path, config_dir, hardware_from_json);
  Hardware h =
      load_named_config<Hardware>(kind, name_or_path.substr(0, name_or_path.size() - suffix.size()),
                                  config_dir, hardware_from_json);
  h.name += suffix;
  h.source =
      "datasheet upper bound (every op at its roofline, no per-kernel or engine cost): " + h.source;
  h.efficiency = {};
  h.achievable = {};
  return h;
}

nlohmann::ordered_json hardware_to_json(const Hardware& h) {
  // Same keys as the config files; peaks in the fixed order of peak_keys(), not map order.
  nlohmann::ordered_json j;
  if (!h.name.empty()) j["name"] = h.name;
  nlohmann::ordered_json pf = nlohmann::ordered_json::object();
  for (const auto& k : peak_keys()) {
    auto it = h.peak_flops.find(k);
    if (it != h.peak_flops.end()) pf[k] = it->second;
  }
  for (const auto& [k, v] : h.peak_flops) {
    if (!contains(peak_keys(), k)) pf[k] = v;  // built in code, not parsed: keep, don't drop
  }
  j["peak_flops"] = pf;
  j["peak_bw"] = h.peak_bw;
  j["memory_bytes"] = h.memory_bytes;
  j["llc_bytes"] = h.llc_bytes;
  j["link_bw"] = h.link_bw;
  if (h.sm_clock_mhz > 0) j["sm_clock_mhz"] = h.sm_clock_mhz;
  j["source"] = h.source;
  if (h.price_per_hour)
    j["price_per_hour"] = {{"usd", h.price_per_hour->usd}, {"source", h.price_per_hour->source}};
  j["measure_at_startup"] = h.measure_at_startup;
  if (!h.efficiency.empty()) {
    nlohmann::ordered_json pts = nlohmann::ordered_json::array();
    for (const OpFraction& p : h.efficiency.points)
      pts.push_back({{"op", p.op},
                     {"phase", p.phase},
                     {"tp", p.tp},
                     {"tokens", p.tokens},
                     {"fraction", p.fraction}});
    j[kEff] = {{"source", h.efficiency.source}, {"context", h.efficiency.context}};
    if (!h.efficiency.dtype.empty()) j[kEff]["dtype"] = h.efficiency.dtype;
    if (!h.efficiency.backend.empty()) j[kEff]["backend"] = h.efficiency.backend;
    j[kEff]["points"] = pts;
  }
  if (!h.achievable.empty()) j["achievable"] = achievable_to_json(h.achievable);
  return j;
}

std::string hardware_for_device(const std::string& device_name) {
  std::string n = device_name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::toupper(c); });
  const auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  // Other form factors and memories of the same chip (PCIe, NVL, A100 40GB, Grace Hopper's
  // GH200) run at other clocks, power and bandwidth: no profile.
  if (has("PCIE") || has("NVL") || has("40GB") || has("GH200") || has("GB200")) return "";
  if (has("H200")) return "h200-sxm";
  if (has("H100")) return "h100-sxm";
  if (has("B200")) return "b200";
  if (has("A100")) return "a100-sxm-80g";
  return "";
}

}  // namespace tpb
