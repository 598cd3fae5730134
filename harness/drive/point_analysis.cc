// One analysis for every point: costs from the cost model, then harness/analysis over the
// timelines, then the record.
#include "harness/drive/point_analysis.h"

#include <algorithm>

#include "harness/config/backend_traits.h"
#include "harness/record/json/results_json.h"
#include "harness/report/trace_writer.h"

namespace tpb {

AnalysisInput analysis_input(std::vector<RankTrace> traces, const StepCost& cost,
                             const Peaks& peaks, double occupancy_window_s,
                             const std::vector<RankSample>& samples) {
  AnalysisInput in;
  in.ranks = std::move(traces);
  in.step_flops = cost.flops;
  in.step_bytes = cost.bytes();
  in.tokens_per_step = cost.tokens;
  in.peak_flops = peaks.flops;
  in.peak_bw = peaks.bw;
  in.occupancy_window_s = occupancy_window_s;
  for (const auto& s : samples)
    in.clock_uncertainty_s = std::max(in.clock_uncertainty_s, s.rank.clock.uncertainty_s);
  // Each rank's stamps: its offset to rank 0's clock and its device stamps' conversion.
  for (RankTrace& t : in.ranks) {
    if (static_cast<std::size_t>(t.rank) >= samples.size()) continue;
    const RankClockRecord& c = samples[static_cast<std::size_t>(t.rank)].rank.clock;
    t.clock_uncertainty_s = c.uncertainty_s + c.device_uncertainty_s.value_or(0);
  }
  return in;
}

PointOutcome analyze_point(const RunSpec& spec, int64_t layers, const Peaks& peaks,
                           const DeviceCaps& caps, std::vector<RankTrace> traces,
                           const std::vector<RankSample>& samples) {
  CostQuery q = spec.cost_query();
  q.layers = layers;
  const StepCost cost = step_cost(q);
  const AnalysisInput in =
      analysis_input(std::move(traces), cost, peaks, spec.occupancy_window_s, samples);
  PointOutcome out;
  const bool want_trace = !spec.trace_file.empty() && spec.trace_steps > 0;
  if (want_trace) {
    TraceOptions to;
    to.max_steps = spec.trace_steps;
    // Virtual ranks can be thousands: the trace keeps the first TP group (the results keep
    // every rank).
    if (backend_traits(spec.backend).virtual_ranks) to.max_groups = 1;
    to.meta = trace_meta_json(params_record(spec, layers));
    out.trace = chrome_trace(in.ranks, to);
  }
  out.record = ok_point(spec, layers, cost, peaks, analyze(in), samples, caps);
  if (want_trace) out.record.trace = spec.trace_file;
  return out;
}

}  // namespace tpb
