// The serving loop. Every rank runs its own copy of the scheduler on the same requests; the
// only input that differs between ranks, how long a step took, is agreed by an all-reduce
// (max) after each step, so every copy plans the same next step. The virtual clock advances by
// that agreed duration and jumps over idle gaps to the next arrival: a CPU run says what the
// schedule would do at this step speed (results: serve.clock "virtual").
#include "harness/drive/serve/serve_runner.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <memory>
#include <set>

#include "base/host_clock.h"
#include "base/mpi_check.h"
#include "harness/drive/point_runner.h"
#include "harness/drive/rank_gather.h"
#include "harness/drive/serve/serve_memory.h"
#include "harness/drive/session/injector.h"
#include "harness/drive/session/rank_session.h"
#include "harness/mpi/clock_sync.h"
#include "harness/serve/simulate.h"
#include "harness/serve/workload.h"
#include "layers/timeline.h"
#include "layers/tp_model_config.h"
#include "tp_model/mixed_check.h"
#include "tp_model/tp_model.h"

namespace tpb {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// Steps between timeline flushes: the timeline is preallocated, a serving run's step count is
// not known in advance, so segments are resolved and set aside between steps.
constexpr std::size_t kFlushSteps = 256;

// The group holds what its smallest rank holds.
ServeMemory agree_serve_memory(MPI_Comm comm, ServeMemory m) {
  long long blocks = m.shape.kv.num_blocks;
  // Whether each rank fits, and whether it fits but for serve --check's reference.
  int fits[2] = {m.fits ? 1 : 0, m.fits || m.check_blame ? 1 : 0};
  double nh[3] = {m.need, -m.have, m.check};
  TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &blocks, 1, MPI_LONG_LONG, MPI_MIN, comm));
  TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, fits, 2, MPI_INT, MPI_MIN, comm));
  TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, nh, 3, MPI_DOUBLE, MPI_MAX, comm));
  m.shape.kv.num_blocks = blocks;
  m.fits = fits[0] != 0;
  m.check_blame = !m.fits && fits[1] != 0;
  m.need = nh[0];
  m.have = -nh[1];
  m.check = nh[2];
  return m;
}

// A real host spin (tokenisation, sampling logic, schema checks): time with no device work.
void spin_host(double seconds) {
  if (seconds <= 0) return;
  const double end = now_s() + seconds;
  while (now_s() < end) {
  }
}

// Warm-up: one-token sequences in their own blocks, the decode path of every op.
StepBatch warmup_batch(const ServeShape& s) {
  StepBatch b;
  const int64_t n = std::min({s.max_seqs, s.kv.num_blocks, s.max_tokens});
  for (int64_t i = 0; i < n; ++i) b.seqs.push_back({0, 1, true, {static_cast<int32_t>(i)}});
  return b;
}

// --check: a short script of mixed steps (a whole prompt, a prompt in two chunks, decodes and a
// one-token prompt, over block tables that cross blocks) on a small sharded model of its own,
// against the unsharded reference on group rank 0; both are freed before serving starts.
MixedCheck run_mixed_check(const ServeSpec& spec, int64_t layers, Device& dev, Collective& coll,
                           int group_rank) {
  const std::vector<StepBatch> script = serve_check_script();
  TpModelConfig mc = spec.model_config(layers, group_rank);
  mc.serve = serve_shape_for(script, kServeCheckKv, spec.lm_head);
  TpModel model(dev, mc);
  return check_mixed_against_reference(dev, model, mc, coll, script);
}

// The parts one rank serves with.
struct ServeParts {
  const ServeSpec& spec;
  const World& w;
  Device& dev;
  RankSession& session;
  std::vector<SegmentRecord>& segs;  // flushed segments, on the rank's clock
};

void flush_timeline(ServeParts& p) {
  p.dev.synchronize();
  const auto part = p.session.resolve();
  p.segs.insert(p.segs.end(), part.begin(), part.end());
  p.session.timeline().clear();
}

// The warm-up steps, whose stamps calibrate the injector and are then dropped. Returns their
// mean wall time, the step time warm_planned_shapes assumes.
double warm_up(ServeParts& p, const StepBatch& warm) {
  RankSession& s = p.session;
  const double t0 = now_s();
  for (int i = -p.spec.run.warmup; i < 0; ++i)
    s.model().step_mixed(s.coll(), &s.timeline(), i, &s.injector(), warm);
  flush_timeline(p);
  const double step_s = (now_s() - t0) / std::max(1, p.spec.run.warmup);
  s.injector().calibrate(p.segs);
  p.segs.clear();
  return step_s;
}

// A step's attention shape as cuDNN's paged graph buckets it (sdpa_paged_plan.h): its
// sequences, and its most new tokens and most blocks of one sequence rounded up to powers of
// two (the sequences exact: a superset of the buckets a padded batch makes).
std::array<int64_t, 3> attention_bucket(const StepBatch& b, int64_t block_tokens) {
  int64_t s_q = 1, pages = 1;
  for (const SeqSlice& q : b.seqs) {
    s_q = std::max(s_q, q.new_tokens);
    pages = std::max(pages, (q.cached + q.new_tokens + block_tokens - 1) / block_tokens);
  }
  return {static_cast<int64_t>(b.seqs.size()),
          static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(s_q))),
          static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(pages)))};
}

// Under --attention cudnn, one unmeasured step of each attention shape the run will plan:
// cuDNN builds a shape's paged graph (seconds) in its first step, which would otherwise fall
// inside a measured one. The steps come from a replay of the run's scheduler with the agreed
// warm-up step time, so every rank runs the same ones and their all-reduces pair. A closed loop
// (--concurrency) plans the same steps whatever they take; under --rate the real steps' times
// may plan a shape the replay missed, and kernel_choices counts its build.
void warm_planned_shapes(ServeParts& p, const SchedulerConfig& sc, const std::vector<Request>& reqs,
                         double step_s) {
  if (p.spec.run.attention != "cudnn") return;
  TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &step_s, 1, MPI_DOUBLE, MPI_MAX, p.w.comm));
  Scheduler replay(sc, reqs, p.spec.load.warmup_requests);
  std::set<std::array<int64_t, 3>> seen;
  RankSession& s = p.session;
  int index = -p.spec.run.warmup;  // below the warm-up steps' own indices
  for (const StepPlan& plan : simulate(replay, [&](const StepPlan&) { return step_s; }).steps)
    if (seen.insert(attention_bucket(plan.batch, sc.block_tokens)).second)
      s.model().step_mixed(s.coll(), nullptr, --index, nullptr, plan.batch);
  p.dev.synchronize();
}

// One iteration: plan, host work, the step, the agreed duration. False when nothing could be
// planned (the clock then jumps to the next arrival).
bool serve_iteration(ServeParts& p, Scheduler& sched, double& clock, int step,
                     std::vector<ServeStep>& out, int64_t layers) {
  const double t0 = now_s();
  StepPlan plan = plan_or_wait(sched, clock);
  if (plan.empty()) return false;
  spin_host(p.spec.host_overhead_s);
  RankSession& s = p.session;
  const std::size_t i = s.timeline().open(Op::step, 0, step);
  s.injector().before_step(step);
  s.model().step_mixed(s.coll(), &s.timeline(), step, &s.injector(), plan.batch);
  p.dev.synchronize();
  s.timeline().close(i);
  double d = now_s() - t0;
  TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_DOUBLE, MPI_MAX, p.w.comm));
  clock += d;
  sched.finish(plan, clock, step);
  const RunSpec& r = p.spec.run;
  StepCost cost = mixed_step_cost(r.shape, r.tp, r.dtypes(), layers, plan.batch, p.spec.lm_head);
  out.push_back({std::move(plan), clock, d, std::move(cost)});
  return true;
}

struct RankServe {
  std::vector<ServeStep> steps;
  std::vector<RequestLog> requests;
  int64_t preemptions = 0;
  std::vector<SegmentRecord> segs;  // common clock
  ClockModel clock;
  MixedCheck check;  // with --check
};

RankServe serve_rank(const ServeSpec& spec, const World& w, Device& dev, const TpGroup& group,
                     const InjectSpec& inj, const ServeMemory& mem, SchedulerConfig sc,
                     std::vector<Request> reqs, MpiWatch& watch) {
  RankSession s(spec.run, w, dev, group, inj, watch);
  RankServe out;
  if (spec.run.check)
    out.check = run_mixed_check(spec, mem.layers, dev, s.coll(), group.group_rank);
  TpModelConfig mc = spec.model_config(mem.layers, group.group_rank);
  mc.serve = mem.shape;
  // Every row count a step can have, tuned for the group now: no step times kernels.
  s.open_model(mc).tune_gemms(s.coll());
  const std::size_t per_step = static_cast<std::size_t>(mem.layers) * (kOpsPerLayer + 2) + 8;
  s.open_timeline(per_step * kFlushSteps);
  ServeParts p{spec, w, dev, s, out.segs};
  warm_planned_shapes(p, sc, reqs, warm_up(p, warmup_batch(mem.shape)));
  s.sync_start();
  Scheduler sched(sc, std::move(reqs), spec.load.warmup_requests);
  s.watched([&] {
    double clock = 0;
    for (int step = 0; !sched.done();) {
      if (s.timeline().size() + per_step > per_step * kFlushSteps) flush_timeline(p);
      if (serve_iteration(p, sched, clock, step, out.steps, mem.layers)) ++step;
    }
  });
  flush_timeline(p);
  out.clock = s.sync_end();
  s.to_common(out.segs);
  out.requests = sched.logs();
  out.preemptions = sched.preemptions();
  return out;
}

RankSample serve_sample(const World& w, const Device& dev, const TpGroup& group,
                        const InjectSpec& inj, const ServeMemory& mem, const RankServe& run) {
  RankSample s;
  s.rank = rank_identity(w, dev, group, inj, {mem.need, mem.have}, run.clock);
  set_check(s, run.check.checked, run.check.max_abs_err, run.check.tolerance, run.check.passed);
  // The kernels this point's steps ran (a paged graph cuDNN refused runs natively, and says so).
  if (std::vector<std::string> k = dev.kernel_choices(); !k.empty())
    s.rank.kernel_choices = std::move(k);
  return s;
}

}  // namespace

StepPlan plan_or_wait(Scheduler& sched, double& clock) {
  StepPlan plan = sched.plan(clock);
  if (plan.empty()) {
    const double next = sched.next_ready_s(clock);
    TPB_ASSERT(next > clock || sched.done(), "serve: nothing planned and nothing to wait for");
    clock = std::max(clock, next);
  }
  return plan;
}

ServeResult run_serve_point(const ServeSpec& spec, std::size_t load_index, const World& w,
                            Device& dev) {
  const RunSpec& r = spec.run;
  MpiWatch watch(r.collective_timeout_s);
  TpGroup group =
      watch.run("the TP group split", [&] { return split_tp_groups(w, r.tp, r.tp_groups); });
  const InjectSpec inj = inject_for_rank(r.inject, w.rank);
  const LoadSpec load = spec.load_at(load_index);
  std::vector<Request> reqs =
      load.trace_file.empty() ? make_requests(load) : read_trace(load.trace_file);
  SchedulerConfig sc = spec.scheduler_at(load_index);
  const double budget = r.memory_budget_bytes > 0 ? r.memory_budget_bytes : dev.caps().memory_bytes;
  const ServeMemory plan = plan_serve_memory(spec, sc, reqs, budget - inj.mem_reserve_gib * kGiB,
                                             r.check && group.group_rank == 0);
  const ServeMemory mem =
      watch.run("the memory agreement", [&] { return agree_serve_memory(w.comm, plan); });
  ServeResult res;
  if (!mem.fits) {
    if (w.rank == 0)
      res.oom = mem.check_blame ? oom_point(r, mem.layers, mem.check, mem.have, mem.check)
                                : oom_point(r, mem.layers, mem.need, mem.have);
    return res;
  }
  sc.kv_blocks = mem.shape.kv.num_blocks;
  sc.max_ctx = sc.kv_blocks * sc.block_tokens;
  const DeviceBuffer reserved = reserve_capacity(dev, inj.mem_reserve_gib);
  RankServe run = serve_rank(spec, w, dev, group, inj, mem, sc, std::move(reqs), watch);
  const RankSample mine = serve_sample(w, dev, group, inj, mem, run);
  std::vector<RankSample> samples = watch.run("the gather of the ranks' records",
                                              [&] { return gather_rank_samples(w.comm, mine, 0); });
  std::vector<RankTrace> traces = watch.run("the gather of the ranks' timelines", [&] {
    return gather_rank_traces(w.comm, run.segs, samples, 0);
  });
  if (w.rank != 0) return res;
  ServeRun out;
  out.layers = mem.layers;
  out.sched = sc;
  out.steps = std::move(run.steps);
  out.requests = std::move(run.requests);
  out.preemptions = run.preemptions;
  out.splits = step_breakdown(traces);
  out.traces = std::move(traces);
  out.samples = std::move(samples);
  res.run = std::move(out);
  return res;
}

}  // namespace tpb
