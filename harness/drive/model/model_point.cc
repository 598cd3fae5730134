// Memory is planned as on a real rank (layers/cost_model.h memory_need against the budget less
// --inject mem_reserve), so oom and the memory wall land where they would; nothing is
// allocated.
#include "harness/drive/model/model_point.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/errors.h"
#include "collectives/model/collective_model.h"
#include "harness/config/inject_spec.h"
#include "harness/drive/model/table_fraction.h"
#include "harness/drive/model/virtual_group.h"
#include "harness/drive/model/virtual_ranks.h"
#include "harness/drive/point_analysis.h"
#include "harness/mpi/clock_sync.h"
#include "harness/record/json/echo_json.h"
#include "layers/cost_model.h"

namespace tpb {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

double virtual_rank_have(const RunSpec& spec, int rank) {
  const double budget =
      spec.memory_budget_bytes > 0 ? spec.memory_budget_bytes : spec.hw.memory_bytes;
  return budget - inject_for_rank(spec.inject, rank).mem_reserve_gib * kGiB;
}

RankSample virtual_sample(const RunSpec& spec, const DeviceCaps& caps, int rank, double need) {
  const VirtualPlace p = virtual_place(spec, rank);
  RankSample s;
  RankRecord& r = s.rank;
  r.rank = rank;
  r.host = "node" + std::to_string(p.node);
  r.node = static_cast<int64_t>(p.node) * spec.gpus_per_node;
  r.device = caps.name;
  r.group = p.group;
  r.group_rank = p.group_rank;
  r.memory = {need, virtual_rank_have(spec, rank)};
  r.inject = inject_to_json(inject_for_rank(spec.inject, rank));
  r.telemetry = {{"available", false}, {"reason", "a virtual rank (--backend model)"}};
  return s;
}

// --inject clock_offset / clock_drift on virtual ranks: a rank's stamps move onto its own clock
// (the real injector's ClockSkew), then a modelled ping-pong to rank 0 at the first and last
// stamp measures its offset and the real sync's ClockModel maps the stamps back. The model's
// path is symmetric, so Cristian's estimate is exact; its uncertainty, half the round trip, is
// taken as the fabric's 8-byte all-reduce between two ranks (one exchange each way).
void apply_virtual_clocks(const RunSpec& spec, const Fabric& fabric, std::vector<RankTrace>& traces,
                          std::vector<RankSample>& samples) {
  const double half_rtt =
      spec.world < 2 ? 0
      : fabric.measured
          ? fabric.measured->time_s(8)  // the curve's smallest exchange
          : model_collective(fabric, CollKind::all_reduce, 8, {2, 1}, ModelAlgo::ring).time_s;
  for (RankTrace& t : traces) {
    const InjectSpec inj = inject_for_rank(spec.inject, t.rank);
    const ClockSkew skew{inj.clock_offset_ms * 1e-3, inj.clock_drift_ppm * 1e-6, 0};
    RankClockRecord& rc = samples[static_cast<std::size_t>(t.rank)].rank.clock;
    rc.uncertainty_s = half_rtt;
    // An unskewed rank's stamps map onto themselves: no pass over its segments.
    if (t.segs.empty() || (skew.offset_s == 0 && skew.rate == 0)) continue;
    double first = t.segs.front().t0, last = first;
    for (const SegmentRecord& r : t.segs) last = std::max(last, r.t1);
    ClockModel clock;
    clock.start = {skew.apply(first), skew.apply(first) - first, half_rtt};
    clock.end = {skew.apply(last), skew.apply(last) - last, half_rtt};
    for (SegmentRecord& r : t.segs) {
      r.t0 = clock.to_common(skew.apply(r.t0));
      r.t1 = clock.to_common(skew.apply(r.t1));
    }
    rc = {clock.start.offset_s, clock.end.offset_s, half_rtt, clock.drift() * 1e6};
  }
}

// What the efficiency table leaves to assumption at this point, said in the results.
void efficiency_warnings(const RunSpec& spec, ModelUse use, std::vector<std::string>& w) {
  const OpEfficiency& e = spec.hw.efficiency;
  if (e.empty() || spec.engine_tables) return;  // the engine's tables price the point
  if (!e.applies_to(spec.dtype)) {
    w.push_back("efficiency_dtype: the profile's efficiency table was measured in " + e.dtype +
                ", this point runs " + dtype_name(spec.dtype) +
                ": its compute ops take their roofline time");
    return;
  }
  const bool decode = use.serving || spec.phase == Phase::decode;
  if (decode && e.context > 0 && (use.serving || e.context != spec.context))
    w.push_back("efficiency_context: the profile's decode fractions were measured at context " +
                std::to_string(e.context) + ", " +
                (use.serving ? std::string("a serving step's sequences run at their own lengths")
                             : "this point runs " + std::to_string(spec.context)) +
                " (attention's fraction is carried over)");
  // Outside the grid a prediction rests on carried-over fractions: say so (fixed points by
  // their tokens per step; serving steps by the TP degree alone).
  const int64_t tokens =
      use.serving ? -1 : spec.batch * (spec.phase == Phase::decode ? 1 : spec.prompt);
  for (const Phase ph : {Phase::decode, Phase::prefill}) {
    if (!use.serving && ph != spec.phase) continue;
    const std::string out =
        e.outside_grid(phase_name(ph), spec.tp, tokens, extends_by_launch_plan(spec));
    if (!out.empty()) w.push_back("efficiency_extrapolated: " + out);
  }
  if ((use.lm_head || spec.lm_head) && !e.covers(op_name(Op::lm_head), "decode"))
    w.push_back(
        "efficiency_standin: the table has no point for the step's end; final_norm, lm_head "
        "and sample take rmsnorm_mlp's, gate_up_proj's and swiglu's fractions");
}

namespace {

// What prices the point's all-reduces: --algo and whether the preset models a custom all-reduce.
std::string comm_model_text(const RunSpec& spec, const Fabric& fabric) {
  const std::string nccl = std::string("NCCL's tuning model (NCCL ") + fabric.nccl->version +
                           ") on the topology preset's fabric";
  const ModelAlgo a = point_algo(spec);
  if (a == ModelAlgo::oneshot || a == ModelAlgo::twoshot)
    return std::string("the custom all-reduce's ") + model_algo_name(a) +
           " kernel over NVLink P2P (the topology preset's custom_allreduce figures)";
  if (a == ModelAlgo::automatic && fabric.custom_ar && fabric.custom_ar->max_for(spec.tp) > 0)
    return "the serving engine's choice: vLLM's custom all-reduce over NVLink P2P (one-shot or "
           "two-shot, the preset's custom_allreduce figures) for a one-node group of 2, 4, 6 or 8 "
           "below the preset's max_bytes for its size (" +
           std::to_string(fabric.custom_ar->max_for(spec.tp)) + " bytes at TP " +
           std::to_string(spec.tp) + "), " + nccl + " otherwise";
  if (a == ModelAlgo::nccl && parse_model_algo(spec.algo, "--algo") == ModelAlgo::automatic)
    return nccl + " (engine " + spec.engine.name + ": no custom all-reduce)";
  return nccl;
}

// How the point's compute ops are priced, as virtual_group.cc's compute_op prices them: the
// efficiency table where it applies, the achievable fractions for the ops it does not cover,
// the fixed cost per kernel and the engine's per-step time whenever the profile has them.
std::string compute_model_text(const RunSpec& spec) {
  if (const EngineTables* t = spec.engine_tables.get())
    return "compute ops from " + spec.engine.name + "'s measured kernel tables for " + t->hardware +
           " (" + t->provenance().value("source", std::string()) + "; " +
           t->provenance().value("framework", std::string()) + " " +
           t->provenance().value("version", std::string()) +
           "): GEMMs by rows, n and k, attention by the step's sequences, element-wise ops by "
           "the tables' bytes rule; ops the engine fuses cost nothing beside their carrier, ops "
           "no table covers take their roofline over the profile's HBM-streaming and GEMM "
           "fractions; each op's priced_by and table_coverage say which";
  const Achievable& a = spec.hw.achievable;
  const bool table = !spec.hw.efficiency.empty() && spec.hw.efficiency.applies_to(spec.dtype);
  const bool fractions = !a.hbm_stream.empty() || !a.gemm.empty() || !a.decode_attention.empty() ||
                         !a.prefill_attention.empty();
  if (!table && !fractions && a.kernel.empty() && a.engine_step_s == 0)
    return "compute ops at their roofline time (the profile's peaks, efficiency 1, no launch "
           "overhead)";
  std::string t = "compute ops at ";
  if (table)
    t += "the fraction of their roofline time the profile's efficiency table gives by op, "
         "phase, TP degree and tokens (" +
         spec.hw.efficiency.source + ")" +
         (fractions ? "; the ops it does not cover at the profile's achievable fractions" : "");
  else if (fractions)
    t += "the fractions of their roofline time the profile's achievable block gives (HBM "
         "streaming by bytes moved, GEMMs by rows, attention by context or prompt; each "
         "fraction's source is in the profile)";
  else
    t += "their roofline time (the profile's peaks, efficiency 1)";
  const double k = a.kernel.per_kernel(spec.cuda_graph);
  t += k > 0 ? fmt::format(
                   ", plus {:.4g} us per kernel of the CUDA launch plan ({}; its source "
                   "is in the profile)",
                   k * 1e6, spec.cuda_graph ? "graph" : "eager")
             : ", no fixed cost per kernel";
  if (a.engine_step_s > 0)
    t += fmt::format(", plus the engine's {:.4g} us per step", a.engine_step_s * 1e6);
  return t;
}

}  // namespace

DeviceCaps model_device_caps(const RunSpec& spec, const Fabric& fabric, ModelUse use) {
  DeviceCaps c;
  c.backend = "model";
  c.name = "modelled " + spec.hw.name + " on " + fabric.name;
  c.dtypes = {DType::fp32, DType::bf16, DType::fp16, DType::fp8};
  c.separate_dtypes = true;  // each priced at its own width by the cost model
  c.memory_bytes = spec.hw.memory_bytes;
  c.llc_bytes = spec.hw.llc_bytes;
  c.llc_source = "hardware profile";
  c.device_memory = true;
  const std::string compute = compute_model_text(spec);
  const std::string comm =
      spec.engine_tables
          ? "all-reduces from " + spec.engine.name + "'s measured tables (decode " +
                spec.engine.decode_allreduce + ", prefill " + spec.engine.prefill_allreduce +
                ", NCCL's where that has no row for the ranks; a group across nodes by the "
                "fabric model, the tables being one node's)"
      : fabric.measured ? "all-reduces from the measured curve of '" + fabric.name + "'"
                        : "all-reduces by " + comm_model_text(spec, fabric);
  c.warnings.push_back("modelled: virtual ranks, nothing was measured in this run; " + compute +
                       ", " + comm);
  if (spec.noise_cv > 0)
    c.warnings.push_back("model_noise: every compute segment x (1 + " +
                         std::to_string(spec.noise_cv) +
                         " z), z a seeded standard normal per segment and rank (seed " +
                         std::to_string(spec.noise_seed) + ")");
  for (const InjectSpec& i : spec.inject)
    if (i.mem_contend) {
      c.warnings.push_back(
          "mem_contend_modelled: a hogged rank's byte-bound time is taken as " +
          std::to_string(static_cast<int>(kHogShare)) +
          "x (the hog assumed to take an equal share of its memory bandwidth), not measured");
      break;
    }
  efficiency_warnings(spec, use, c.warnings);
  return c;
}

Peaks model_peaks(const RunSpec& spec) {
  if (spec.hw.measure_at_startup)
    throw BadInput("--hardware: '" + spec.hw.name +
                   "' measures its peaks at start-up; the model backend needs a profile with "
                   "stated peaks (h100-sxm, h200-sxm, b200, a100-sxm-80g, or calibrate's)");
  return {spec.hw.flops_for(spec.dtype), spec.hw.peak_bw, spec.hw.source};
}

PointOutcome run_model_point(const RunSpec& spec, const Peaks& peaks, const Fabric& fabric) {
  const DeviceCaps caps = model_device_caps(spec, fabric);
  double have_min = std::numeric_limits<double>::infinity();
  for (int r = 0; r < spec.world; ++r) have_min = std::min(have_min, virtual_rank_have(spec, r));
  CostQuery q = spec.cost_query();
  auto need_for = [&](int64_t layers) {
    q.layers = layers;
    return memory_need(q).total();
  };
  int64_t layers = spec.planned_layers();
  double need = need_for(layers);
  if (spec.layers_auto)
    while (layers > 1 && need > have_min) need = need_for(--layers);
  if (need > have_min) return {oom_point(spec, layers, need, have_min), {}};
  std::vector<RankSample> samples;
  for (int r = 0; r < spec.world; ++r) samples.push_back(virtual_sample(spec, caps, r, need));
  OpPricingMap pricing;
  std::vector<RankTrace> traces = virtual_rank_traces(spec, layers, peaks, fabric, &pricing);
  apply_virtual_clocks(spec, fabric, traces, samples);
  PointOutcome out = analyze_point(spec, layers, peaks, caps, std::move(traces), samples);
  if (out.record.ops) attach_op_pricing(*out.record.ops, pricing);
  if (out.record.clock_sync)
    out.record.clock_sync->method =
        "modelled ping-pong to rank 0 at the first and last stamp (a symmetric path: the "
        "estimate is exact; uncertainty: the fabric's 8-byte all-reduce of two ranks)";
  return out;
}

}  // namespace tpb
