// One point, end to end. The order matters: memory is checked before anything is allocated,
// clocks are synced around the measured steps, and only plain records cross MPI.
#include "harness/drive/point_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "collectives/mpi/mpi_check.h"
#include "collectives/progress_board.h"
#include "harness/analysis/analysis.h"
#include "harness/analysis/thread_cpu.h"
#include "harness/backends/collective_factory.h"
#include "harness/backends/telemetry.h"
#include "harness/drive/graph_steps.h"
#include "harness/drive/injector.h"
#include "harness/drive/mem_contender.h"
#include "harness/drive/verify.h"
#include "harness/mpi/clock_sync.h"
#include "harness/record/point_json.h"
#include "harness/record/results_writer.h"
#include "harness/report/trace_writer.h"
#include "layers/base/host_clock.h"
#include "layers/cpu/cpu_device.h"
#include "layers/timeline.h"
#include "layers/tp_model.h"

namespace tpb {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A timed-out collective: name who never arrived, from the progress board. Every surviving
// rank times out at about the same moment; the lowest of them reports and the job is aborted
// by main(). The others give the reporter a head start, then report too in case it died.
[[noreturn]] void report_hang(const CollectiveTimeout& e, ProgressBoard& board,
                              const std::vector<int>& group, int world_rank) {
  board.mark_timed_out();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let peers mark themselves
  const int reporter = board.mark_timed_out();
  const std::string msg = std::string(e.what()) + "; " + board.describe(group);
  if (reporter != world_rank) std::this_thread::sleep_for(std::chrono::seconds(3));
  throw CollectiveTimeout(msg);
}

// Chooses the layer count: the requested one, or the model's own reduced to what fits.
struct MemoryPlan {
  int64_t layers = 0;
  double need = 0, have = 0;
  bool fits = false;
};

MemoryPlan plan_memory(const RunSpec& spec, const Device& dev, double reserve, bool reference) {
  MemoryPlan p;
  p.have = dev.caps().memory_bytes - reserve;
  CostQuery q = spec.cost_query();
  auto need_for = [&](int64_t layers) {
    q.layers = layers;
    double n = memory_need(q).total();
    if (reference) {  // --check builds the unsharded weights on group rank 0 too
      CostQuery r = q;
      r.tp = 1;
      n += memory_need(r).weights;
    }
    return n;
  };
  p.layers = spec.layers > 0 ? spec.layers : spec.shape.n_layers;
  p.need = need_for(p.layers);
  if (spec.layers == 0)
    while (p.layers > 1 && p.need > p.have) p.need = need_for(--p.layers);
  p.fits = p.need <= p.have;
  return p;
}

}  // namespace

nlohmann::ordered_json run_point(const RunSpec& spec, const World& w, Device& dev,
                                 const Peaks& peaks) {
  TpGroup group = split_tp_groups(w, spec.tp, spec.tp_groups);
  const InjectSpec inj = inject_for_rank(spec.inject, w.rank);
  // A GPU's mem_contend hog allocates its two buffers through the device: reserve them here.
  const std::size_t hog_bytes = mem_contend_buffer_bytes(dev.caps().llc_bytes);
  const bool device_hog = inj.mem_contend && dev.caps().backend == "cuda";
  const double reserve = inj.mem_reserve_gib * kGiB + (device_hog ? 2.0 * hog_bytes : 0.0);

  // Memory: a TP group is limited by its smallest budget, and every rank must agree on the
  // layer count and on whether the point runs at all.
  MemoryPlan mem = plan_memory(spec, dev, reserve, spec.check && group.group_rank == 0);
  long long layers_min = mem.layers;
  int fits = mem.fits ? 1 : 0, all_fit = 0;
  TPB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &layers_min, 1, MPI_LONG_LONG, MPI_MIN, w.comm));
  TPB_MPI_CHECK(MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, w.comm));
  double need_have[2] = {mem.need, -mem.have}, nh_max[2];
  TPB_MPI_CHECK(MPI_Allreduce(need_have, nh_max, 2, MPI_DOUBLE, MPI_MAX, w.comm));
  if (!all_fit) {
    return w.rank == 0 ? oom_point_json(spec, mem.layers, nh_max[0], -nh_max[1])
                       : nlohmann::ordered_json();
  }

  DeviceBuffer reserved;
  if (inj.mem_reserve_gib > 0) {
    reserved = dev.alloc(static_cast<std::size_t>(inj.mem_reserve_gib * kGiB));
    std::vector<float> zeros(1 << 20, 0.0f);  // touch it, so the capacity is really taken
    for (std::size_t off = 0; off + zeros.size() * 4 <= reserved.bytes(); off += zeros.size() * 4)
      dev.upload(static_cast<char*>(reserved.get()) + off, zeros.data(), zeros.size(), DType::fp32);
  }

  auto coll = make_collective(spec, group.comm.get(), dev);
  TpModelConfig mc{spec.shape, layers_min, spec.tp,      group.group_rank, spec.dtype,
                   spec.phase, spec.batch, spec.context, spec.prompt,      spec.seed};
  TpModel model(dev, mc);

  Verification ver;
  if (spec.check) ver = verify_against_reference(dev, model, mc, *coll, group.group_rank);

  // Capacity: every op plus up to two injected segments per layer, a jitter segment and the
  // step interval, for every step.
  const std::size_t per_step = static_cast<std::size_t>(layers_min) * (kOpsPerLayer + 2) + 2;
  Timeline tl(dev, per_step * static_cast<std::size_t>(spec.warmup + spec.steps));
  Injector injector(inj, dev, tl, spec.seed);
  // Telemetry (NVML on a GPU) and the --inject sm_clock lock, held for the whole point and
  // restored on every exit path.
  auto telemetry = make_telemetry(dev);
  std::optional<ScopedSmClock> clock_lock(std::in_place, *telemetry, inj.sm_clock_mhz);
  std::unique_ptr<BandwidthHog> contender;
  if (inj.mem_contend) {
    contender = dev.start_bandwidth_hog(hog_bytes);
    if (!contender) contender = std::make_unique<MemContender>(hog_bytes);
  }

  const double shift = inj.clock_offset_ms * 1e-3;
  auto rank_clock = [shift] { return now_s() + shift; };
  ClockModel clock;
  clock.start = measure_offset(w.comm, rank_clock, spec.sync_rounds);

  auto one_step = [&](int s) {
    const std::size_t i = tl.open(Op::step, 0, s);
    injector.before_step(s);
    model.step(*coll, &tl, s, &injector);
    dev.synchronize();
    tl.close(i);
  };
  GraphSteps graph(dev, tl);  // --cuda-graph
  auto capture = [&] {
    coll->barrier();  // nothing of the collective's may be in flight during capture
    dev.synchronize();
    tl.set_progress_sink(nullptr);  // capture runs nothing: publish no positions
    graph.capture([&] { model.step(*coll, &tl, 0, &injector); });
  };
  auto measured_step = [&](int s) {
    if (spec.cuda_graph)
      graph.replay_step(s, [&] { injector.before_step(s); });
    else
      one_step(s);
  };
  ProgressBoard board(w.comm);
  tl.set_progress_sink(&board);
  nlohmann::ordered_json telemetry_json;
  // What the mem_contend hog moved during the measured steps, so results show it competed.
  double hog_bytes_start = 0, hog_bytes_end = 0, hog_t0 = 0, hog_t1 = 0;
  ThreadCpu cpu0, cpu1;  // the rank's thread over the same measured interval
  try {
    for (int s = -spec.warmup; s < 0; ++s) one_step(s);
    injector.calibrate(tl.resolve(0.0));
    if (spec.cuda_graph) capture();
    coll->barrier();
    telemetry->start();
    hog_bytes_start = contender ? contender->bytes_moved() : 0.0;
    cpu0 = thread_cpu_now();
    hog_t0 = now_s();
    for (int s = 0; s < spec.steps; ++s) measured_step(s);
    dev.synchronize();
    hog_t1 = now_s();
    cpu1 = thread_cpu_now();
    hog_bytes_end = contender ? contender->bytes_moved() : 0.0;
    telemetry_json = telemetry->stop();
  } catch (const CollectiveTimeout& e) {
    report_hang(e, board, group.members, w.rank);
  }
  tl.set_progress_sink(nullptr);
  dev.synchronize();
  contender.reset();
  if (telemetry_json.value("available", false)) {
    const double u = telemetry->mean_utilization();
    telemetry_json["utilization_gpu_mean"] = u >= 0 ? nlohmann::ordered_json(u) : nullptr;
  }
  if (inj.sm_clock_mhz > 0) telemetry_json["sm_clock_lock"] = clock_lock->to_json();
  clock_lock.reset();  // restore the clock before the results travel
  clock.end = measure_offset(w.comm, rank_clock, spec.sync_rounds);

  // Onto the common clock (rank 0's), then to rank 0.
  std::vector<SegmentRecord> recs = tl.resolve(shift);
  for (auto& r : recs) {
    r.t0 = clock.to_common(r.t0);
    r.t1 = clock.to_common(r.t1);
  }
  auto rec_bytes = gather_bytes(w.comm, recs.data(), recs.size() * sizeof(SegmentRecord), 0);
  nlohmann::ordered_json info;
  info["rank"] = w.rank;
  info["host"] = w.host;
  info["device"] = dev.caps().name;
  info["group"] = group.group;
  info["group_rank"] = group.group_rank;
  info["local_rank"] = w.local_rank;
  info["layers"] = layers_min;
  info["memory"] = {{"need_bytes", mem.need}, {"have_bytes", mem.have}};
  info["inject"] = inject_to_json(inj);
  info["slowdown_extra_s_per_block"] = {injector.extra_per_block_s(0),
                                        injector.extra_per_block_s(1)};
  info["clock"] = {{"offset_start_s", clock.start.offset_s},
                   {"offset_end_s", clock.end.offset_s},
                   {"uncertainty_s", std::max(clock.start.uncertainty_s, clock.end.uncertainty_s)},
                   {"drift_ppm", clock.drift() * 1e6}};
  info["verification"] = verification_to_json(ver);
  info["is_verifier"] = spec.check && group.group_rank == 0;
  info["telemetry"] = std::move(telemetry_json);
  if (inj.mem_contend) {
    const double moved = hog_bytes_end - hog_bytes_start, secs = hog_t1 - hog_t0;
    info["mem_contend"] = {
        {"where", dev.caps().backend == "cuda" ? "copy kernel on a side stream of the rank's GPU"
                                               : "host thread (memcpy)"},
        {"buffer_bytes", hog_bytes},
        {"bytes_moved", moved},
        {"GBps", secs > 0 ? moved / secs / 1e9 : 0.0}};
  }
  {
    const double wall = hog_t1 - hog_t0, cpu = cpu1.cpu_s - cpu0.cpu_s;
    info["host_thread"] = {
        {"wall_s", wall},
        {"cpu_s", cpu},
        {"descheduled_fraction", descheduled_fraction(wall, cpu)},
        {"involuntary_switches", cpu1.involuntary_switches - cpu0.involuntary_switches}};
  }
  auto infos = gather_strings(w.comm, info.dump(), 0);
  if (w.rank != 0) return nlohmann::ordered_json();

  std::vector<RankTrace> traces;
  std::vector<nlohmann::ordered_json> rank_info;
  for (int r = 0; r < w.size; ++r) {
    auto j = nlohmann::ordered_json::parse(infos[r]);
    RankTrace t;
    t.rank = r;
    t.group = j["group"];
    t.group_rank = j["group_rank"];
    t.segs.resize(rec_bytes[r].size() / sizeof(SegmentRecord));
    std::memcpy(t.segs.data(), rec_bytes[r].data(), t.segs.size() * sizeof(SegmentRecord));
    traces.push_back(std::move(t));
    rank_info.push_back(std::move(j));
  }
  CostQuery q = spec.cost_query();
  q.layers = layers_min;
  const StepCost cost = step_cost(q);
  AnalysisInput in;
  in.ranks = std::move(traces);
  in.step_flops = cost.flops;
  in.step_bytes = cost.bytes();
  in.tokens_per_step = cost.tokens;
  in.peak_flops = peaks.flops;
  in.peak_bw = peaks.bw;
  in.occupancy_window_s = spec.occupancy_window_s;
  double unc = 0;
  for (const auto& j : rank_info) unc = std::max(unc, j["clock"]["uncertainty_s"].get<double>());
  in.clock_uncertainty_s = unc;
  const bool want_trace = !spec.trace_file.empty() && spec.trace_steps > 0;
  if (want_trace) {
    TraceOptions to;
    to.max_steps = spec.trace_steps;
    to.meta = {{"params", params_json(spec, layers_min)}, {"tool", "tpbench"}};
    write_file_atomic(spec.out + "/" + spec.trace_file, chrome_trace(in.ranks, to).dump() + "\n");
  }
  const PointAnalysis a = analyze(in);
  auto point = ok_point_json(spec, layers_min, cost, peaks, a, rank_info, dev.caps());
  if (want_trace) point["trace"] = spec.trace_file;
  return point;
}

}  // namespace tpb
