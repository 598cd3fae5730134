#include "harness/measure/recorded_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "base/errors.h"
#include "harness/measure/calibration_profile.h"
#include "harness/measure/op_fractions.h"

namespace tpb {
namespace {

bool same_table_key(const OpProfilePointRecord& a, const OpProfilePointRecord& b) {
  return a.phase == b.phase && a.tp == b.tp && table_tokens(a) == table_tokens(b);
}

void check_device(const CalibrationRecord& cal, const RecordedRun& run) {
  const std::string where = "--runs '" + run.path + "'";
  if (!run.doc.context) throw BadInput(where + ": context: absent (not a results.json of tpbench)");
  const DeviceContextRecord &have = run.doc.context->device, &want = cal.context.device;
  if (have.backend != want.backend || have.name != want.name)
    throw BadInput(fmt::format(
        "{}: context.device: {} '{}' is not the calibration's {} '{}' (a table holds for one "
        "device)",
        where, have.backend, have.name, want.backend, want.name));
}

// Why the point cannot stand as a grid point of this table, or nullopt when it can.
std::optional<std::string> unfit(const PointRecord& p, const CalibrationRecord& cal,
                                 const CalibrationPeaks& peaks, int64_t table_context) {
  const PointParams& q = p.params;
  if (p.status != PointStatus::ok) return "status " + std::string(point_status_name(p.status));
  if (!p.ops || !p.metrics) return std::string("no ops[] (an op profile needs the ops' times)");
  if (q.phase != "decode" && q.phase != "prefill")
    return q.phase + " step: a mixed batch has no grid shape";
  if (cal.dtype && q.dtype != *cal.dtype)
    return "dtype " + q.dtype + ": the table's fractions are " + *cal.dtype + "'s";
  if (q.weight_dtype || q.kv_dtype) return std::string("mixed dtypes: the table holds one");
  if (!peaks.flops.count(q.dtype)) return "no calibrated " + q.dtype + " peak";
  if (q.phase == "decode" && q.context != table_context)
    return fmt::format("decode at context {}: the table's decode fractions hold at context {}",
                       q.context, table_context);
  return std::nullopt;
}

OpProfilePointRecord as_grid_point(const PointRecord& p, const CalibrationPeaks& peaks) {
  const PointParams& q = p.params;
  OpProfilePointRecord r;
  r.phase = q.phase;
  r.tp = q.tp;
  r.batch = q.batch;
  r.prompt = q.phase == "prefill" ? q.prompt : 0;
  r.context = q.phase == "decode" ? q.context : 0;
  r.step_p50_s = p.metrics->step_time_s.p50;
  r.step_mean_s = p.metrics->step_time_s.mean;
  r.ops = op_fractions(p, Peaks{peaks.flops.at(q.dtype), peaks.bw, "the calibration's"});
  return r;
}

}  // namespace

RecordedOps recorded_op_points(const CalibrationRecord& cal, const std::vector<RecordedRun>& runs) {
  const CalibrationPeaks peaks = peaks_from_record(cal);
  std::vector<OpProfilePointRecord> have;
  int64_t table_context = 0;
  for (const OpProfilePointRecord* r : fastest_repeats(cal, "the calibration")) {
    have.push_back(*r);
    if (r->phase == "decode") table_context = r->context;
  }
  RecordedOps out;
  for (const RecordedRun& run : runs) {
    check_device(cal, run);
    for (std::size_t i = 0; i < run.doc.points.size(); ++i) {
      const std::string at = fmt::format("{} points[{}]", run.path, i);
      const std::optional<PointRecord>& p = run.doc.points[i].model;
      if (!p) continue;  // a collectives size: no layer ops
      if (auto why = unfit(*p, cal, peaks, table_context)) {
        out.skipped.push_back(at + ": " + *why);
        continue;
      }
      OpProfilePointRecord g = as_grid_point(*p, peaks);
      if (std::any_of(have.begin(), have.end(),
                      [&](const OpProfilePointRecord& h) { return same_table_key(h, g); })) {
        out.skipped.push_back(fmt::format("{}: the table has {} at TP {} and {} tokens", at,
                                          g.phase, g.tp, table_tokens(g)));
        continue;
      }
      have.push_back(g);
      out.taken.push_back(
          {std::move(g),
           fmt::format("{}: {} {} batch {} {} {}", at, p->params.model, p->params.phase,
                       p->params.batch, p->params.phase == "prefill" ? "prompt" : "context",
                       p->params.phase == "prefill" ? p->params.prompt : p->params.context)});
    }
  }
  return out;
}

}  // namespace tpb
