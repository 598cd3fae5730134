// The live record and one read back pass the same builder; reading checks every field's kind
// (record/json/calibration_json.h), so what is left to check here is what the record may lack:
// a rank to name the host by, an ok repeat's median step and op times.
#include "harness/measure/calibration_profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "base/errors.h"
#include "collectives/model/fabric.h"
#include "harness/measure/kernel_idle.h"
#include "harness/record/json/calibration_json.h"

namespace tpb {

namespace {

[[noreturn]] void bad_field(const std::string& where, const std::string& path, const char* want) {
  throw BadInput(fmt::format("{}: calibration field '{}' is missing or not {}", where, path, want));
}

// Rank 0's host: the live profile names the host of the rank that wrote it.
const std::string& record_host(const RunContextRecord& ctx, const std::string& where) {
  if (ctx.ranks.empty()) bad_field(where, "context.ranks[0].host", "a string");
  return ctx.ranks[0].host;
}

// The GEMM table's rows raise the peaks of their dtype (see peaks_from_record).
void raise_by_shapes(const std::vector<GemmShapeRecord>& shapes, CalibrationPeaks& p) {
  for (const GemmShapeRecord& g : shapes) {
    const double fl = g.gflops * 1e9, bw = g.gbps * 1e9;
    const std::string what =
        fmt::format("{} {} m={} (calibrate's GEMM table)", g.dtype, g.op, static_cast<double>(g.m));
    double& peak = p.flops[g.dtype];
    if (fl > peak) peak = fl, p.fl_from = what;
    if (bw > p.bw) p.bw = bw, p.bw_from = what;
  }
}

bool same_grid_point(const OpProfilePointRecord& a, const OpProfilePointRecord& b) {
  return a.phase == b.phase && a.tp == b.tp && a.batch == b.batch && a.prompt == b.prompt;
}

// "1, 4, 16, 64" for the decode batches or "128, 512" for the prefill prompts of the grid.
std::string grid_list(const std::vector<const OpProfilePointRecord*>& grid, const char* phase) {
  std::vector<int64_t> v;
  for (const OpProfilePointRecord* r : grid)
    if (r->phase == phase && r->tp == 1) v.push_back(r->prompt > 0 ? r->prompt : r->batch);
  return fmt::format("{}", fmt::join(v, ", "));
}

// The efficiency table's source, as calibrate states it for the fractions it measured, then
// each point added from a recorded run.
std::string efficiency_source(const CalibrationRecord& cal, const OpEfficiency& e, int64_t repeats,
                              const std::string& where, const std::vector<RecordedOpPoint>& added) {
  const int64_t ranks = cal.context.world_size;
  const std::vector<const OpProfilePointRecord*> grid = fastest_repeats(cal, where);
  // A record from before calibrate stated its dtype says "real layer steps", as it did then.
  const std::string dtype = e.dtype.empty() ? "" : e.dtype + " ";
  std::string s = fmt::format(
      "measured by tpbench calibrate on {} at {}: roofline time / measured time of each op in "
      "real {}layer steps of {} (TP 1 and {}, {} ranks at once; decode batch {} at context {}; "
      "prefill {}; the fastest of {} repeats), against this profile's peaks",
      record_host(cal.context, where), cal.context.date, dtype, cal.model.name, ranks, ranks,
      grid_list(grid, "decode"), e.context, grid_list(grid, "prefill"), repeats);
  if (added.empty()) return s;
  std::vector<std::string> from;
  for (const RecordedOpPoint& a : added) from.push_back(a.source);
  return s + fmt::format(
                 "; and {} point(s) of recorded runs on the same device at shapes the grid "
                 "lacks, priced alike (calibrate --runs): {}",
                 added.size(), fmt::join(from, "; "));
}

std::string profile_source(const CalibrationRecord& cal, const CalibrationPeaks& p,
                           const std::string& where) {
  const int64_t ranks = cal.context.world_size;
  return fmt::format(
      "measured by tpbench calibrate on {} at {} ({} ranks at once, best rank): bandwidth {}, "
      "FLOP/s {}{}",
      record_host(cal.context, where), cal.context.date, ranks, p.bw_from, p.fl_from,
      ranks > 1 ? ", link_bw = all-reduce busbw asymptote" : "");
}

}  // namespace

int64_t table_tokens(const OpProfilePointRecord& r) {
  return r.batch * (r.prompt > 0 ? r.prompt : 1);
}

CalibrationPeaks peaks_from_record(const CalibrationRecord& cal) {
  CalibrationPeaks p;
  for (const auto& [dt, d] : cal.peaks.device_ops) {
    p.flops[dt] = d.gemm_GFLOPs * 1e9;
    p.bw = std::max(p.bw, d.add_GBps * 1e9);
  }
  // The start-up probe's kernels too, so a calibrated profile is never below what a run would
  // have measured for itself.
  if (const auto& c = cal.peaks.cpu_probe) {
    const double rd = c->read_GBps * 1e9, ax = c->axpy_GBps * 1e9, gf = c->sgemm_GFLOPs * 1e9;
    if (std::max(rd, ax) > p.bw) p.bw = std::max(rd, ax), p.bw_from = rd > ax ? "sdot" : "saxpy";
    if (gf > p.flops["fp32"]) p.flops["fp32"] = gf, p.fl_from = "sgemm 1024^3";
  }
  raise_by_shapes(cal.gemm_shapes, p);
  return p;
}

void judge_gemm_shapes(std::vector<GemmShapeRecord>& shapes, const CalibrationPeaks& p) {
  for (GemmShapeRecord& g : shapes) {
    g.of_peak_flops = g.gflops * 1e9 / p.flops.at(g.dtype);
    g.of_peak_bw = g.gbps * 1e9 / p.bw;
  }
}

std::vector<const OpProfilePointRecord*> fastest_repeats(const CalibrationRecord& cal,
                                                         const std::string& where) {
  struct Best {
    const OpProfilePointRecord* key;  // the grid point's first repeat
    const OpProfilePointRecord* rec;  // its fastest ok repeat so far; null while none is ok
  };
  std::vector<Best> best;
  for (std::size_t i = 0; i < cal.op_profile.size(); ++i) {
    const OpProfilePointRecord& r = cal.op_profile[i];
    auto it = std::find_if(best.begin(), best.end(),
                           [&](const Best& b) { return same_grid_point(*b.key, r); });
    if (it == best.end()) it = best.insert(best.end(), {&r, nullptr});
    if (r.status != PointStatus::ok) continue;
    const std::string at = fmt::format("op_profile[{}]", i);
    if (!r.step_p50_s) bad_field(where, at + ".step_p50_s", "a number");
    if (!r.ops) bad_field(where, at + ".ops", "a list");
    if (!it->rec || *r.step_p50_s < *it->rec->step_p50_s) it->rec = &r;
  }
  std::vector<const OpProfilePointRecord*> out;
  for (const Best& b : best)
    if (b.rec) out.push_back(b.rec);
  return out;
}

OpEfficiency efficiency_from_record(const CalibrationRecord& cal, const std::string& where,
                                    const std::vector<RecordedOpPoint>& added) {
  OpEfficiency e;
  int64_t repeats = 0;
  for (const OpProfilePointRecord& r : cal.op_profile) {
    repeats = std::max(repeats, r.repeat + 1);
    if (r.phase == "decode") e.context = r.context;
  }
  for (const OpProfilePointRecord* r : fastest_repeats(cal, where)) {
    for (const OpTimeRecord& o : *r->ops)
      e.points.push_back({o.op, r->phase, static_cast<int>(r->tp), table_tokens(*r), o.fraction});
  }
  if (e.empty()) return e;
  for (const RecordedOpPoint& a : added) {
    const OpProfilePointRecord& r = a.point;
    for (const OpTimeRecord& o : *r.ops)
      e.points.push_back({o.op, r.phase, static_cast<int>(r.tp), table_tokens(r), o.fraction});
  }
  // The dtype the fractions were measured in; a record from before calibrate wrote it leaves
  // it unsaid, as the profile it wrote then did (taken to hold for every dtype).
  e.dtype = cal.dtype.value_or("");
  e.backend = cal.context.device.backend;
  e.source = efficiency_source(cal, e, repeats, where, added);
  return e;
}

HardwareProfileRecord hardware_from_calibration(const CalibrationRecord& cal,
                                                const std::string& name,
                                                const std::string& rebuilt_from,
                                                const std::string& where, const ModelShape* shape,
                                                const std::vector<RecordedOpPoint>& added) {
  const CalibrationPeaks p = peaks_from_record(cal);
  HardwareProfileRecord hw;
  hw.name = name.empty() ? "calibrated-" + record_host(cal.context, where) : name;
  hw.peak_flops = p.flops;
  hw.peak_bw = p.bw;
  hw.memory_bytes = cal.context.device.memory_bytes;
  hw.llc_bytes = cal.context.device.llc_bytes;
  // One rank measures no curve: link_bw 0, "unknown".
  hw.link_bw = cal.all_reduce.busbw_GBps.value_or(0.0) * 1e9;
  const std::string measured = profile_source(cal, p, where);
  hw.source = rebuilt_from.empty() ? measured
                                   : fmt::format(
                                         "rebuilt by tpbench calibrate --from {} "
                                         "(nothing measured) from the record of: {}",
                                         rebuilt_from, measured);
  hw.measure_at_startup = false;
  Hardware h;  // the efficiency table and achievable block as a profile spells them
  h.efficiency = efficiency_from_record(cal, where, added);
  if (!h.efficiency.empty()) hw.efficiency = hardware_to_json(h)["efficiency"];
  if (shape) h.achievable.kernel = kernel_idle_from_record(cal, *shape, where);
  if (!h.achievable.empty()) hw.achievable = achievable_to_json(h.achievable);
  (void)hardware_from_json(to_json(hw), where);  // what --hardware will accept
  return hw;
}

MeasuredTopologyRecord measured_topology(const CalibrationRecord& cal, const std::string& where) {
  const AllReduceRecord& ar = cal.all_reduce;
  const std::string& host = record_host(cal.context, where);
  MeasuredTopologyRecord t;
  t.name = "measured-" + host;
  t.description = "The all-reduce curve tpbench calibrate measured on " + host +
                  ". Modelled only (--backend model): it sets no knob of a real run.";
  t.model.gpus_per_node = ar.ranks.value_or(0);
  MeasuredFabricRecord& m = t.model.measured;
  m.collective = ar.collective.value_or("");
  m.ranks = ar.ranks.value_or(0);
  for (const AllReducePointRecord& p : ar.points.value_or(std::vector<AllReducePointRecord>{}))
    m.all_reduce.emplace_back(p.bytes, p.time_s);
  m.source = fmt::format(
      "measured by tpbench calibrate on {} at {}: all-reduce through {} over {} ranks, slowest "
      "rank's time per call",
      host, cal.context.date, m.collective, m.ranks);
  (void)parse_fabric(fabric_section_json(t), where);  // what --topology will accept
  return t;
}

}  // namespace tpb
