// The record's fields are read by path, each failure naming it, because a record may come from
// another machine or another version of calibrate (`--from`); the live record passes the same
// checks, so a field calibrate stops writing fails its own run first.
#include "harness/measure/calibration_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "base/errors.h"
#include "harness/measure/kernel_idle.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

[[noreturn]] void bad_field(const std::string& where, const std::string& path, const char* want) {
  throw BadInput(fmt::format("{}: calibration field '{}' is missing or not {}", where, path, want));
}

const oj& object_at(const oj& j, const char* key, const std::string& path,
                    const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_object())
    bad_field(where, path, "an object");
  return j[key];
}

const oj& array_at(const oj& j, const char* key, const std::string& path,
                   const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) bad_field(where, path, "a list");
  return j[key];
}

double number_at(const oj& j, const char* key, const std::string& path, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) bad_field(where, path, "a number");
  return j[key].get<double>();
}

std::string string_at(const oj& j, const char* key, const std::string& path,
                      const std::string& where) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) bad_field(where, path, "a string");
  return j[key].get<std::string>();
}

// Rank 0's host: the live profile names the host of the rank that wrote it.
std::string record_host(const oj& ctx, const std::string& where) {
  const oj& ranks = array_at(ctx, "ranks", "context.ranks", where);
  if (ranks.empty()) bad_field(where, "context.ranks[0].host", "a string");
  return string_at(ranks[0], "host", "context.ranks[0].host", where);
}

// The GEMM table's rows raise the peaks of their dtype (see peaks_from_record).
void raise_by_shapes(const oj& shapes, const std::string& where, CalibrationPeaks& p) {
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const oj& g = shapes[i];
    const std::string at = fmt::format("gemm_shapes[{}]", i);
    const std::string dt = string_at(g, "dtype", at + ".dtype", where);
    const double fl = number_at(g, "GFLOPs", at + ".GFLOPs", where) * 1e9;
    const double bw = number_at(g, "GBps", at + ".GBps", where) * 1e9;
    const std::string what =
        fmt::format("{} {} m={} (calibrate's GEMM table)", dt,
                    string_at(g, "op", at + ".op", where), number_at(g, "m", at + ".m", where));
    double& peak = p.flops[dt];
    if (fl > peak) peak = fl, p.fl_from = what;
    if (bw > p.bw) p.bw = bw, p.bw_from = what;
  }
}

// A grid point of the op profile: the repeats of one shape share it.
struct GridKey {
  std::string phase;
  int64_t tp = 0, batch = 0, prompt = 0;
  bool operator==(const GridKey& o) const {
    return phase == o.phase && tp == o.tp && batch == o.batch && prompt == o.prompt;
  }
};

struct BestRepeat {
  GridKey key;
  const oj* rec = nullptr;  // the fastest ok repeat so far; null while none is ok
};

GridKey grid_key(const oj& r, const std::string& at, const std::string& where) {
  return {string_at(r, "phase", at + ".phase", where),
          static_cast<int64_t>(number_at(r, "tp", at + ".tp", where)),
          static_cast<int64_t>(number_at(r, "batch", at + ".batch", where)),
          static_cast<int64_t>(number_at(r, "prompt", at + ".prompt", where))};
}

// The fastest ok repeat of each grid point, in the grid's order (first appearance).
std::vector<BestRepeat> best_repeats(const oj& recs, const std::string& where) {
  std::vector<BestRepeat> best;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const std::string at = fmt::format("op_profile[{}]", i);
    const GridKey key = grid_key(recs[i], at, where);
    auto it =
        std::find_if(best.begin(), best.end(), [&](const BestRepeat& b) { return b.key == key; });
    if (it == best.end()) it = best.insert(best.end(), {key, nullptr});
    if (string_at(recs[i], "status", at + ".status", where) != "ok") continue;
    const double p50 = number_at(recs[i], "step_p50_s", at + ".step_p50_s", where);
    if (!it->rec || p50 < (*it->rec)["step_p50_s"].get<double>()) it->rec = &recs[i];
  }
  return best;
}

// The efficiency table's source, as calibrate states it for the fractions it measured.
std::string efficiency_source(const oj& cal, const OpEfficiency& e, int64_t repeats,
                              const std::string& where) {
  const oj& ctx = object_at(cal, "context", "context", where);
  const auto ranks =
      static_cast<int64_t>(number_at(ctx, "world_size", "context.world_size", where));
  // A record from before calibrate stated its dtype says "real layer steps", as it did then.
  const std::string dtype = e.dtype.empty() ? "" : e.dtype + " ";
  return fmt::format(
      "measured by tpbench calibrate on {} at {}: roofline time / measured time of each op in "
      "real {}layer steps of {} (TP 1 and {}, {} ranks at once; decode batch 1, 4, 16, 64 at "
      "context {}; prefill 128, 512; the fastest of {} repeats), against this profile's peaks",
      record_host(ctx, where), string_at(ctx, "date", "context.date", where), dtype,
      string_at(object_at(cal, "model", "model", where), "name", "model.name", where), ranks, ranks,
      e.context, repeats);
}

std::string profile_source(const oj& cal, const CalibrationPeaks& p, const std::string& where) {
  const oj& ctx = object_at(cal, "context", "context", where);
  const auto ranks =
      static_cast<int64_t>(number_at(ctx, "world_size", "context.world_size", where));
  return fmt::format(
      "measured by tpbench calibrate on {} at {} ({} ranks at once, best rank): bandwidth {}, "
      "FLOP/s {}{}",
      record_host(ctx, where), string_at(ctx, "date", "context.date", where), ranks, p.bw_from,
      p.fl_from, ranks > 1 ? ", link_bw = all-reduce busbw asymptote" : "");
}

}  // namespace

CalibrationPeaks peaks_from_record(const oj& cal, const std::string& where) {
  const oj& peaks = object_at(cal, "peaks", "peaks", where);
  const oj& ops = object_at(peaks, "device_ops", "peaks.device_ops", where);
  CalibrationPeaks p;
  for (const auto& [dt, d] : ops.items()) {
    const std::string at = "peaks.device_ops." + dt;
    p.flops[dt] = number_at(d, "gemm_GFLOPs", at + ".gemm_GFLOPs", where) * 1e9;
    p.bw = std::max(p.bw, number_at(d, "add_GBps", at + ".add_GBps", where) * 1e9);
  }
  // The start-up probe's kernels too, so a calibrated profile is never below what a run would
  // have measured for itself.
  if (peaks.contains("cpu_probe")) {
    const oj& c = object_at(peaks, "cpu_probe", "peaks.cpu_probe", where);
    const double rd = number_at(c, "read_GBps", "peaks.cpu_probe.read_GBps", where) * 1e9;
    const double ax = number_at(c, "axpy_GBps", "peaks.cpu_probe.axpy_GBps", where) * 1e9;
    const double gf = number_at(c, "sgemm_GFLOPs", "peaks.cpu_probe.sgemm_GFLOPs", where) * 1e9;
    if (std::max(rd, ax) > p.bw) p.bw = std::max(rd, ax), p.bw_from = rd > ax ? "sdot" : "saxpy";
    if (gf > p.flops["fp32"]) p.flops["fp32"] = gf, p.fl_from = "sgemm 1024^3";
  }
  raise_by_shapes(array_at(cal, "gemm_shapes", "gemm_shapes", where), where, p);
  return p;
}

void judge_gemm_shapes(oj& shapes, const CalibrationPeaks& p) {
  for (oj& g : shapes) {
    g["of_peak_flops"] =
        g["GFLOPs"].get<double>() * 1e9 / p.flops.at(g["dtype"].get<std::string>());
    g["of_peak_bw"] = g["GBps"].get<double>() * 1e9 / p.bw;
  }
}

OpEfficiency efficiency_from_record(const oj& cal, const std::string& where) {
  const oj& recs = array_at(cal, "op_profile", "op_profile", where);
  OpEfficiency e;
  int64_t repeats = 0;
  for (std::size_t i = 0; i < recs.size(); ++i) {
    const std::string at = fmt::format("op_profile[{}]", i);
    repeats = std::max(
        repeats, static_cast<int64_t>(number_at(recs[i], "repeat", at + ".repeat", where)) + 1);
    if (recs[i].value("phase", "") == "decode")
      e.context = static_cast<int64_t>(number_at(recs[i], "context", at + ".context", where));
  }
  for (const BestRepeat& b : best_repeats(recs, where)) {
    if (!b.rec) continue;
    const int64_t tokens = b.key.batch * (b.key.prompt > 0 ? b.key.prompt : 1);
    for (const oj& o : array_at(*b.rec, "ops", "op_profile[].ops", where))
      e.points.push_back({string_at(o, "op", "op_profile[].ops[].op", where), b.key.phase,
                          static_cast<int>(b.key.tp), tokens,
                          number_at(o, "fraction", "op_profile[].ops[].fraction", where)});
  }
  if (e.empty()) return e;
  // The dtype the fractions were measured in; a record from before calibrate wrote it leaves
  // it unsaid, as the profile it wrote then did (taken to hold for every dtype).
  if (cal.contains("dtype")) e.dtype = string_at(cal, "dtype", "dtype", where);
  e.source = efficiency_source(cal, e, repeats, where);
  return e;
}

oj hardware_from_calibration(const oj& cal, const std::string& name,
                             const std::string& rebuilt_from, const std::string& where,
                             const ModelShape* shape) {
  const oj& ctx = object_at(cal, "context", "context", where);
  const oj& dev = object_at(ctx, "device", "context.device", where);
  const oj& ar = object_at(cal, "all_reduce", "all_reduce", where);
  const CalibrationPeaks p = peaks_from_record(cal, where);
  oj hw;
  hw["name"] = name.empty() ? "calibrated-" + record_host(ctx, where) : name;
  hw["peak_flops"] = oj::object();
  for (const auto& [k, v] : p.flops) hw["peak_flops"][k] = v;
  hw["peak_bw"] = p.bw;
  hw["memory_bytes"] = number_at(dev, "memory_bytes", "context.device.memory_bytes", where);
  hw["llc_bytes"] = number_at(dev, "llc_bytes", "context.device.llc_bytes", where);
  // One rank measures no curve: link_bw 0, "unknown".
  hw["link_bw"] = ar.contains("busbw_GBps")
                      ? number_at(ar, "busbw_GBps", "all_reduce.busbw_GBps", where) * 1e9
                      : 0.0;
  const std::string measured = profile_source(cal, p, where);
  hw["source"] = rebuilt_from.empty() ? measured
                                      : fmt::format(
                                            "rebuilt by tpbench calibrate --from {} "
                                            "(nothing measured) from the record of: {}",
                                            rebuilt_from, measured);
  hw["measure_at_startup"] = false;
  const OpEfficiency eff = efficiency_from_record(cal, where);
  if (!eff.empty()) {
    Hardware h;
    h.efficiency = eff;
    hw["efficiency"] = hardware_to_json(h)["efficiency"];
  }
  Achievable a;
  if (shape) a.kernel = kernel_idle_from_record(cal, *shape, where);
  if (!a.empty()) hw["achievable"] = achievable_to_json(a);
  (void)hardware_from_json(hw, where);  // what --hardware will accept
  return hw;
}

}  // namespace tpb
