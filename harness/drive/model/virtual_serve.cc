// The clock as the real loop keeps it: a step takes --host-overhead (host work before the
// launch, no device segment) plus the group's modelled step, and the virtual clock advances by
// that and jumps over idle gaps to the next arrival. The ranks' timelines run on busy time
// only, as a real run's stamps do (its wall clock does not jump), so analysis sees host gaps
// between steps and no idle ones.
#include "harness/drive/model/virtual_serve.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "harness/analysis/step_breakdown.h"
#include "harness/drive/model/engine_pricing.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "harness/drive/model/virtual_ranks.h"
#include "harness/drive/serve/serve_memory.h"
#include "harness/record/point_builder.h"
#include "harness/serve/workload.h"
#include "layers/fill_hash.h"

namespace tpb {

namespace {

// A sample of the steps' segments under a budget: at level k a step is kept when the top k
// bits of its hash are zero (about 1 in 2^k, the same steps on every run), and the level rises
// (dropping about half of the kept steps) whenever the kept segments pass the budget. A hash,
// not every 2^k-th step: a serving run is periodic (one prefill every output_len steps at
// concurrency 1), and a stride would alias with it. The kept steps are moved together, each
// with its own host gap before it, as if the dropped ones had not run: the analysis divides by
// the ranks' span of stamps (wall), which the dropped steps' time would otherwise inflate.
class SampledTimeline {
 public:
  SampledTimeline(const std::vector<int>& members, std::size_t budget)
      : kept_(identities(members)), budget_(budget) {}

  // The ranks' traces, each with its identity (world rank, group rank) and no segments.
  static std::vector<RankTrace> identities(const std::vector<int>& members) {
    std::vector<RankTrace> t(members.size());
    for (std::size_t m = 0; m < members.size(); ++m) {
      t[m].rank = members[m];
      t[m].group_rank = static_cast<int>(m);
    }
    return t;
  }

  // Step `step`, which took `duration_s` (its host gap included).
  void add(int step, double duration_s, const std::vector<RankTrace>& traces) {
    if (!keeps(step)) {
      dropped_s_ += duration_s;
      return;
    }
    steps_.push_back({step, duration_s});
    for (std::size_t m = 0; m < traces.size(); ++m) {
      for (SegmentRecord r : traces[m].segs) {
        r.t0 -= dropped_s_;
        r.t1 -= dropped_s_;
        kept_[m].segs.push_back(r);
      }
      count_ += traces[m].segs.size();
    }
    while (count_ > budget_ && steps_.size() > 1) thin();
  }

  std::vector<int> steps() const {
    std::vector<int> v;
    for (const Kept& k : steps_) v.push_back(k.step);
    return v;
  }
  std::vector<RankTrace> take() { return std::move(kept_); }

 private:
  struct Kept {
    int step;
    double duration_s;
  };

  bool keeps(int step) const {
    return level_ == 0 || mix64(static_cast<uint64_t>(step) + 1) >> (64 - level_) == 0;
  }

  // One level up: the steps that drop out give their time back to every later one.
  void thin() {
    ++level_;
    std::map<int, double> shift;  // by kept step: how much earlier it now starts
    std::vector<Kept> still;
    double removed = 0;
    for (const Kept& k : steps_) {
      if (keeps(k.step)) {
        shift[k.step] = removed;
        still.push_back(k);
      } else {
        removed += k.duration_s;
      }
    }
    dropped_s_ += removed;
    steps_ = std::move(still);
    count_ = 0;
    for (RankTrace& t : kept_) {
      std::erase_if(t.segs, [&](const SegmentRecord& r) { return !shift.contains(r.step); });
      for (SegmentRecord& r : t.segs) {
        r.t0 -= shift[r.step];
        r.t1 -= shift[r.step];
      }
      count_ += t.segs.size();
    }
  }

  std::vector<RankTrace> kept_;
  std::vector<Kept> steps_;  // the steps kept, in order
  std::size_t budget_;
  std::size_t count_ = 0;
  double dropped_s_ = 0;  // the time of every step dropped so far
  int level_ = 0;
};

std::vector<int> first_ranks(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// The group's memory: its smallest rank's room, planned as a real rank plans it.
ServeMemory model_serve_memory(const ServeSpec& spec, const SchedulerConfig& sc,
                               const std::vector<Request>& reqs) {
  double have = std::numeric_limits<double>::infinity();
  for (int r = 0; r < spec.run.world; ++r) have = std::min(have, virtual_rank_have(spec.run, r));
  return plan_serve_memory(spec, sc, reqs, have);
}

// The serving loop on one virtual TP group (world = tp: serve runs one group).
class ModelServeLoop {
 public:
  ModelServeLoop(const ServeSpec& spec, const ServeMemory& mem, const Peaks& peaks,
                 const Fabric& fabric, std::size_t max_segments)
      : spec_(spec),
        mem_(mem),
        peaks_(peaks),
        fabric_(fabric),
        members_(first_ranks(spec.run.tp)),
        shape_(virtual_group_shape(spec.run, 0)),
        group_(spec.run, members_),
        timeline_(members_, max_segments) {}

  void run(Scheduler& sched, ServeRun& out) {
    double clock = 0;
    for (int step = 0; !sched.done();) {
      StepPlan plan = plan_or_wait(sched, clock);
      if (plan.empty()) continue;
      const RunSpec& r = spec_.run;
      StepCost cost =
          mixed_step_cost(r.shape, r.tp, r.dtypes(), mem_.layers, plan.batch, spec_.lm_head);
      const double d = run_step(step, plan, cost, out);
      clock += d;
      sched.finish(plan, clock, step);
      out.steps.push_back({std::move(plan), clock, d, std::move(cost)});
      ++step;
    }
    out.timeline_steps = timeline_.steps();
    if (out.timeline_steps.size() == out.steps.size()) out.timeline_steps.clear();  // all
    out.traces = timeline_.take();
  }

 private:
  // One step: host work, then the group's step; returns its duration. Its split goes to `out`.
  double run_step(int s, const StepPlan& plan, const StepCost& cost, ServeRun& out) {
    // A step with a prompt's rows takes the profile's prefill fractions at its token count.
    const Phase phase = plan.prefill_tokens > 0 ? Phase::prefill : Phase::decode;
    // Kernel counts: the fixed-batch plan at the step's rows (the varlen kernels of a mixed
    // step are not in the launch plan's query form; an approximation).
    CostQuery q = spec_.run.cost_query();
    q.phase = Phase::decode;
    q.batch = std::max<int64_t>(1, plan.batch.tokens());
    q.lm_head = spec_.lm_head;
    const StepOpPlan ops =
        step_op_plan(spec_.run, cost, phase, plan.batch.tokens(), peaks_, fabric_, shape_,
                     model_kernel_counts(spec_.run, q), &plan.batch);
    note_pricing(out.op_pricing, ops);
    const double start = busy_;
    group_.advance_to(start + spec_.host_overhead_s);
    group_.step(s, mem_.layers, ops);
    // The group is the world: a stopped rank no collective noticed is a group of one.
    if (!group_.unnoticed_hangs().empty())
      throw_world_hang(spec_.run, {}, s, group_.unnoticed_hangs());
    busy_ = group_.latest_clock();
    const std::vector<RankTrace> traces = group_.take_traces();
    out.splits.push_back(step_breakdown(traces).front());
    timeline_.add(s, busy_ - start, traces);
    return busy_ - start;
  }

  const ServeSpec& spec_;
  const ServeMemory& mem_;
  const Peaks& peaks_;
  const Fabric& fabric_;
  std::vector<int> members_;
  ModelGroup shape_;
  VirtualGroup group_;
  SampledTimeline timeline_;
  double busy_ = 0;  // the ranks' busy time: where the next step's host work begins
};

}  // namespace

ServeResult run_model_serve_point(const ServeSpec& spec, std::size_t load_index, const Peaks& peaks,
                                  const Fabric& fabric, std::size_t max_segments) {
  const RunSpec& r = spec.run;
  const LoadSpec load = spec.load_at(load_index);
  std::vector<Request> reqs =
      load.trace_file.empty() ? make_requests(load) : read_trace(load.trace_file);
  SchedulerConfig sc = spec.scheduler_at(load_index);
  const ServeMemory mem = model_serve_memory(spec, sc, reqs);
  ServeResult res;
  if (!mem.fits) {
    res.oom = oom_point(r, mem.layers, mem.need, mem.have);
    return res;
  }
  sc.kv_blocks = mem.shape.kv.num_blocks;
  sc.max_ctx = sc.kv_blocks * sc.block_tokens;
  Scheduler sched(sc, std::move(reqs), spec.load.warmup_requests);
  ServeRun out;
  out.layers = mem.layers;
  out.sched = sc;
  ModelServeLoop(spec, mem, peaks, fabric, max_segments).run(sched, out);
  out.requests = sched.logs();
  out.preemptions = sched.preemptions();
  const DeviceCaps caps = model_device_caps(r, fabric, {true, spec.lm_head});
  for (int k = 0; k < r.world; ++k) out.samples.push_back(virtual_sample(r, caps, k, mem.need));
  apply_virtual_clocks(r, fabric, out.traces, out.samples);
  res.run = std::move(out);
  return res;
}

}  // namespace tpb
