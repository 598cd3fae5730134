// One point, end to end. The order matters: memory is checked before anything is allocated,
// clocks are synced around the measured steps, and only plain records cross MPI. Nothing
// here writes a file: the trace comes back with the record for the results writer.
#include "harness/drive/point_runner.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "base/host_clock.h"
#include "base/mpi_check.h"
#include "harness/analysis/analysis.h"
#include "harness/analysis/thread_cpu.h"
#include "harness/backends/telemetry.h"
#include "harness/drive/graph_steps.h"
#include "harness/drive/mem_contender.h"
#include "harness/drive/point_analysis.h"
#include "harness/drive/rank_gather.h"
#include "harness/drive/session/injector.h"
#include "harness/drive/session/rank_session.h"
#include "harness/drive/verify.h"
#include "harness/mpi/agreement.h"
#include "harness/mpi/clock_sync.h"
#include "harness/record/json/echo_json.h"
#include "harness/record/json/results_json.h"
#include "harness/record/point_builder.h"
#include "harness/report/trace_writer.h"
#include "layers/cpu/cpu_device.h"
#include "layers/timeline.h"
#include "layers/tp_model_config.h"
#include "tp_model/tp_model.h"

namespace tpb {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

RankRecord rank_identity(const World& w, const Device& dev, const TpGroup& group,
                         const InjectSpec& inj, const MemoryRecord& memory,
                         const ClockModel& clock) {
  RankRecord r;
  r.rank = w.rank;
  r.host = w.host;
  r.node = w.node;
  r.device = dev.caps().name;
  r.group = group.group;
  r.group_rank = group.group_rank;
  r.memory = memory;
  r.inject = inject_to_json(inj);
  r.clock = {clock.start.offset_s, clock.end.offset_s,
             std::max(clock.start.uncertainty_s, clock.end.uncertainty_s), clock.drift() * 1e6,
             dev.mark_uncertainty_s()};
  return r;
}

void set_check(RankSample& s, bool verifier, double max_abs_err, double tolerance, bool passed) {
  s.is_verifier = verifier;
  s.max_abs_err = std::isfinite(max_abs_err) ? max_abs_err : 1e300;
  s.tolerance = tolerance;
  s.passed = passed;
}

DeviceBuffer reserve_capacity(Device& dev, double gib) {
  DeviceBuffer reserved;
  if (gib <= 0) return reserved;
  reserved = dev.alloc(static_cast<std::size_t>(gib * kGiB));
  std::vector<float> zeros(1 << 20, 0.0f);  // touch it, so the capacity is really taken
  for (std::size_t off = 0; off + zeros.size() * 4 <= reserved.bytes(); off += zeros.size() * 4)
    dev.upload(static_cast<char*>(reserved.get()) + off, zeros.data(), zeros.size(), DType::fp32);
  return reserved;
}

namespace {

// Chooses the layer count: --layers N or the model's own; with --layers auto, the model's
// own reduced to what fits. `reference`: this rank also builds --check's unsharded model.
struct MemoryPlan {
  int64_t layers = 0;
  double need = 0, have = 0;
  double check = 0;  // of `need`: what --check's unsharded reference adds here
  bool fits = false;
};

MemoryPlan plan_memory(const RunSpec& spec, const Device& dev, double reserve, bool reference) {
  MemoryPlan p;
  p.have = dev.caps().memory_bytes - reserve;
  CostQuery q = spec.cost_query();
  auto plan_for = [&](int64_t layers) {
    q.layers = layers;
    p.layers = layers;
    p.check = reference ? check_reference_need(q).total() : 0.0;
    p.need = memory_need(q).total() + p.check;
  };
  plan_for(spec.planned_layers());
  if (spec.layers_auto)
    while (p.layers > 1 && p.need > p.have) plan_for(p.layers - 1);
  p.fits = p.need <= p.have;
  return p;
}

// Memory: a TP group is limited by its smallest budget, and every rank must agree on the
// layer count and on whether the point runs at all.
struct AgreedMemory {
  MemoryPlan mine;
  int64_t layers = 0;  // the smallest layer count any rank can hold
  bool fits = false;   // on every rank
  double need_max = 0, have_min = 0;
  // Where the point fits on every rank without --check: the reference's bytes (the largest),
  // so the oom says that the reference is what did not fit; 0 otherwise.
  double check_blame = 0;
};

AgreedMemory agree_memory(const RunSpec& spec, const World& w, const Device& dev, double reserve,
                          bool reference) {
  AgreedMemory m;
  m.mine = plan_memory(spec, dev, reserve, reference);
  long long layers_min = m.mine.layers;
  const bool plain_fits = m.mine.need - m.mine.check <= m.mine.have;
  int fit[2] = {m.mine.fits ? 1 : 0, plain_fits ? 1 : 0}, all_fit[2] = {0, 0};
  TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &layers_min, 1, MPI_LONG_LONG, MPI_MIN, w.comm));
  TPB_MPI_CHECK(MPI_Allreduce(fit, all_fit, 2, MPI_INT, MPI_MIN, w.comm));
  double need_have[3] = {m.mine.need, -m.mine.have, m.mine.check}, nh_max[3];
  TPB_MPI_CHECK(MPI_Allreduce(need_have, nh_max, 3, MPI_DOUBLE, MPI_MAX, w.comm));
  m.layers = layers_min;
  m.fits = all_fit[0] != 0;
  m.need_max = nh_max[0];
  m.have_min = -nh_max[1];
  if (!m.fits && all_fit[1] != 0) m.check_blame = nh_max[2];
  return m;
}

// What the measured interval left besides the timeline.
struct StepWindow {
  double t0 = 0, t1 = 0;  // host clock around the measured steps
  double hog_moved = 0;   // bytes the mem_contend hog moved in them
  ThreadCpu cpu0, cpu1;   // the rank's thread over the same interval
  nlohmann::ordered_json telemetry;
};

// The parts one rank steps with.
struct StepParts {
  const RunSpec& spec;
  Device& dev;
  TpModel& model;
  Collective& coll;
  Timeline& tl;
  Injector& injector;
};

// Warm-up, the optional graph capture, then the measured steps; the hog, the telemetry and
// the thread's CPU time are read around exactly the measured ones.
StepWindow timed_steps(const StepParts& p, MPI_Comm world, TelemetrySampler& telemetry,
                       BandwidthHog* contender) {
  auto one_step = [&](int s) {
    const std::size_t i = p.tl.open(Op::step, 0, s);
    p.injector.before_step(s);
    p.model.step(p.coll, &p.tl, s, &p.injector);
    p.dev.synchronize();
    p.tl.close(i);
  };
  GraphSteps graph(p.dev, p.tl);  // --cuda-graph
  auto capture = [&] {
    p.coll.barrier();  // nothing of the collective's may be in flight during capture
    p.dev.synchronize();
    graph.capture([&] { p.model.step(p.coll, &p.tl, 0, &p.injector); });
  };
  auto measured_step = [&](int s) {
    if (p.spec.cuda_graph)
      graph.replay_step(s, [&] { p.injector.before_step(s); });
    else
      one_step(s);
  };
  StepWindow win;
  // The first steps grow workspaces and make NCCL allocate its buffers: an allocation that
  // fails there fails alike on every rank, which agree on it, and the point is oom.
  agree_oom(world, [&] {
    for (int s = -p.spec.warmup; s < 0; ++s) one_step(s);
  });
  p.injector.calibrate(p.tl.resolve());
  if (p.spec.cuda_graph) capture();
  p.coll.barrier();
  telemetry.start();
  const double hog_start = contender ? contender->bytes_moved() : 0.0;
  win.cpu0 = thread_cpu_now();
  win.t0 = now_s();
  p.dev.profiler_capture(true);  // the measured steps alone, for nsys's cudaProfilerApi range
  for (int s = 0; s < p.spec.steps; ++s) measured_step(s);
  p.dev.synchronize();
  p.dev.profiler_capture(false);
  win.t1 = now_s();
  win.cpu1 = thread_cpu_now();
  win.hog_moved = (contender ? contender->bytes_moved() : 0.0) - hog_start;
  win.telemetry = telemetry.stop();
  return win;
}

// What one rank ran and measured, before anything travels.
struct RankRun {
  std::vector<SegmentRecord> segs;  // on the common clock (rank 0's)
  ClockModel clock;
  Verification ver;
  StepWindow window;
};

// The point's instruments besides the timeline, held for the whole point and released on
// every exit path: telemetry (NVML on a GPU), the --inject sm_clock lock and the mem_contend hog.
struct Instruments {
  std::unique_ptr<TelemetrySampler> telemetry;
  std::optional<ScopedSmClock> clock_lock;
  std::unique_ptr<BandwidthHog> contender;
};

// In place: the clock lock cannot move.
void start_instruments(Instruments& in, const World& w, Device& dev, const InjectSpec& inj,
                       std::size_t hog_bytes) {
  in.telemetry = make_telemetry(dev);
  in.clock_lock.emplace(*in.telemetry, dev, inj);
  // Told at once, not only in the results: the point goes on unthrottled.
  if (!in.clock_lock->applied() && !in.clock_lock->reason().empty())
    std::cerr << "tpbench: warning on rank " << w.rank
              << ": --inject sm_clock: " << in.clock_lock->reason() << std::endl;
  if (inj.mem_contend) {
    // A thread beside the MPI calls: main asked for FUNNELED from the same config.
    TPB_ASSERT(w.thread_level >= MPI_THREAD_FUNNELED,
               "the mem_contend hog under MPI_THREAD_SINGLE");
    in.contender = dev.start_bandwidth_hog(hog_bytes);
    if (!in.contender) in.contender = std::make_unique<MemContender>(hog_bytes);
  }
}

// After the steps: the hog stopped, the utilisation and the lock into the rank's telemetry,
// and the clock restored before the results travel.
void stop_instruments(Instruments& in, nlohmann::ordered_json& tj) {
  in.contender.reset();
  in.clock_lock->release();  // first, so the record says whether the prior state came back
  const double u = in.telemetry->mean_utilization();
  const nlohmann::ordered_json lock = in.clock_lock->to_json();
  add_telemetry_summary(tj, u >= 0 ? std::optional<double>(u) : std::nullopt,
                        lock.is_null() ? std::nullopt : std::optional(lock));
  in.clock_lock.reset();
}

// The reference on group rank 0 (--check): its allocations, agreed like the model's, and the
// others' wait for it, with the reference's own allowance: a slow fp64 reference is not a
// hang (a deadline of the timeout alone ended such jobs with exit 3 in the clock sync after).
Verification run_check(const RunSpec& spec, const World& w, Device& dev, RankSession& s,
                       const TpModelConfig& mc, int group_rank) {
  Verification v;
  CostQuery q = spec.cost_query();
  q.layers = mc.layers;
  const double t = spec.collective_timeout_s;
  MpiWatch reference_watch(t > 0 ? t + reference_allowance_s(q) : 0);
  reference_watch.run("the wait for --check's reference on group rank 0", [&] {
    agree_oom(w.comm,
              [&] { v = verify_against_reference(dev, s.model(), mc, s.coll(), group_rank); });
  });
  return v;
}

RankRun run_rank(const RunSpec& spec, const World& w, Device& dev, RankSession& s,
                 const TpGroup& group, const InjectSpec& inj, int64_t layers,
                 std::size_t hog_bytes) {
  RankRun run;
  const TpModelConfig mc = spec.model_config(layers, group.group_rank);
  agree_oom(w.comm, [&] { s.open_model(mc); });
  // One kernel per GEMM shape for the group, before --check too. Outside agree_oom: the tuning
  // gathers over the group, which a rank that failed to open would never reach.
  s.model().tune_gemms(s.coll());
  if (spec.check) run.ver = run_check(spec, w, dev, s, mc, group.group_rank);
  // Capacity: every op plus up to two injected segments per layer, a jitter segment and the
  // step interval, for every step.
  // With the LM head: final_norm, lm_head, two sample segments, sample_gather and one injected.
  const std::size_t per_step =
      static_cast<std::size_t>(layers) * (kOpsPerLayer + 2) + 2 + (spec.lm_head ? 6 : 0);
  s.open_timeline(per_step * static_cast<std::size_t>(spec.warmup + spec.steps));
  Instruments in;
  start_instruments(in, w, dev, inj, hog_bytes);
  s.sync_start();
  s.watched([&] {
    const StepParts parts{spec, dev, s.model(), s.coll(), s.timeline(), s.injector()};
    run.window = timed_steps(parts, w.comm, *in.telemetry, in.contender.get());
  });
  dev.synchronize();
  stop_instruments(in, run.window.telemetry);
  run.clock = s.sync_end();
  run.segs = s.resolve();
  s.to_common(run.segs);
  return run;
}

// The point's first collectives, before its plan: NCCL (2.22 on) allocates a protocol's
// buffers at the first all-reduce that uses it, outside the device's budget, so all-reduces of
// the step's payload and of a small one (the sampled ids' gather) run now, and the device
// re-reads what is left (Device::refresh_budget). Their values are never read: the buffer is
// summed as allocated.
void first_collectives(const RunSpec& spec, const World& w, Device& dev, Collective& coll) {
  const CostQuery q = spec.cost_query();
  const DType t = q.dtypes().allreduce;
  const auto count = static_cast<std::size_t>(q.batch * tokens_per_step(q) * q.shape.hidden);
  agree_oom(w.comm, [&] {
    DeviceBuffer buf = dev.alloc(count * dtype_bytes(t));
    coll.all_reduce(buf.get(), count, t);
    coll.all_reduce(buf.get(), std::min<std::size_t>(count, 256), t);
    dev.synchronize();
  });
  dev.refresh_budget();
}

// This rank's own part of its RankRecord (the analysis adds the metrics on rank 0).
RankSample rank_sample(const RunSpec& spec, const World& w, const Device& dev, const TpGroup& group,
                       const InjectSpec& inj, const MemoryPlan& mem, const RankRun& run,
                       std::size_t hog_bytes) {
  RankSample s;
  RankRecord& r = s.rank;
  r = rank_identity(w, dev, group, inj, {mem.need, mem.have}, run.clock);
  r.telemetry = run.window.telemetry;
  if (std::vector<std::string> k = dev.kernel_choices(); !k.empty())
    r.kernel_choices = std::move(k);
  const StepWindow& win = run.window;
  const double secs = win.t1 - win.t0;
  if (inj.mem_contend)
    r.mem_contend =
        MemContendRecord{dev.caps().device_memory ? "copy kernel on a side stream of the rank's GPU"
                                                  : "host thread (memcpy)",
                         static_cast<int64_t>(hog_bytes), win.hog_moved,
                         secs > 0 ? win.hog_moved / secs / 1e9 : 0.0};
  const double cpu = win.cpu1.cpu_s - win.cpu0.cpu_s;
  r.host_thread = HostThreadRecord{secs, cpu, descheduled_fraction(secs, cpu),
                                   win.cpu1.involuntary_switches - win.cpu0.involuntary_switches};
  set_check(s, spec.check && group.group_rank == 0, run.ver.max_abs_err, run.ver.tolerance,
            run.ver.passed);
  s.tokens_match = run.ver.tokens_match;
  s.verify = run.ver.detail;
  return s;
}

}  // namespace

std::optional<PointOutcome> run_point(const RunSpec& spec, const World& w, Device& dev,
                                      const Peaks& peaks) {
  MpiWatch watch(spec.collective_timeout_s);
  TpGroup group =
      watch.run("the TP group split", [&] { return split_tp_groups(w, spec.tp, spec.tp_groups); });
  const InjectSpec inj = inject_for_rank(spec.inject, w.rank);
  // A GPU's mem_contend hog allocates its two buffers through the device: reserve them here.
  const std::size_t hog_bytes = mem_contend_buffer_bytes(dev.caps().llc_bytes);
  const bool device_hog = inj.mem_contend && dev.caps().device_memory;
  const double reserve = inj.mem_reserve_gib * kGiB + (device_hog ? 2.0 * hog_bytes : 0.0);

  RankSession session(spec, w, dev, group, inj, watch);
  std::optional<AgreedMemory> agreed;
  try {
    watch.run("the first collectives", [&] { first_collectives(spec, w, dev, session.coll()); });
    agreed = watch.run("the memory agreement", [&] {
      return agree_memory(spec, w, dev, reserve, spec.check && group.group_rank == 0);
    });
  } catch (const AgreedOom& e) {  // not even the first all-reduce's buffer fit
    if (w.rank != 0) return std::nullopt;
    PointRecord r = oom_point(spec, spec.planned_layers(), 0, dev.caps().memory_bytes - reserve);
    r.reason = std::string("before the plan: ") + e.what();
    return PointOutcome{std::move(r), {}};
  }
  const AgreedMemory& mem = *agreed;
  if (!mem.fits) {
    if (w.rank != 0) return std::nullopt;
    return PointOutcome{
        oom_point(spec, mem.mine.layers, mem.need_max, mem.have_min, mem.check_blame), {}};
  }
  const DeviceBuffer reserved = reserve_capacity(dev, inj.mem_reserve_gib);
  RankRun run;
  try {
    run = run_rank(spec, w, dev, session, group, inj, mem.layers, hog_bytes);
  } catch (const AgreedOom& e) {  // the plan fit; an allocation after it did not
    if (w.rank != 0) return std::nullopt;
    PointRecord r = oom_point(spec, mem.layers, mem.need_max, mem.have_min);
    r.reason = "an allocation failed although the plan fit (" + r.reason + "): " + e.what();
    return PointOutcome{std::move(r), {}};
  }
  const RankSample mine = rank_sample(spec, w, dev, group, inj, mem.mine, run, hog_bytes);
  std::vector<RankSample> samples = watch.run("the gather of the ranks' records",
                                              [&] { return gather_rank_samples(w.comm, mine, 0); });
  std::vector<RankTrace> traces = watch.run("the gather of the ranks' timelines", [&] {
    return gather_rank_traces(w.comm, run.segs, samples, 0);
  });
  if (w.rank != 0) return std::nullopt;
  return analyze_point(spec, mem.layers, peaks, dev.caps(), std::move(traces), samples);
}

}  // namespace tpb
