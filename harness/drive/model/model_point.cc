// Memory is planned as on a real rank (layers/cost_model.h memory_need against the budget less
// --inject mem_reserve), so oom and the memory wall land where they would; nothing is
// allocated.
#include "harness/drive/model/model_point.h"

#include <algorithm>
#include <limits>

#include "harness/config/inject_spec.h"
#include "harness/drive/model/virtual_ranks.h"
#include "harness/drive/point_analysis.h"
#include "layers/base/errors.h"
#include "layers/cost_model.h"

namespace tpb {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double rank_have(const RunSpec& spec, int rank) {
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
  r.memory = {need, rank_have(spec, rank)};
  r.inject = inject_to_json(inject_for_rank(spec.inject, rank));
  r.telemetry = {{"available", false}, {"reason", "a virtual rank (--backend model)"}};
  return s;
}

}  // namespace

DeviceCaps model_device_caps(const RunSpec& spec, const Fabric& fabric) {
  DeviceCaps c;
  c.backend = "model";
  c.name = "modelled " + spec.hw.name + " on " + fabric.name;
  c.dtypes = {DType::fp32, DType::bf16, DType::fp16, DType::fp8};
  c.memory_bytes = spec.hw.memory_bytes;
  c.llc_bytes = spec.hw.llc_bytes;
  c.llc_source = "hardware profile";
  c.device_memory = true;
  const std::string compute =
      spec.hw.efficiency.empty()
          ? "compute ops at their roofline time (the profile's peaks, efficiency 1, no launch "
            "overhead)"
          : "compute ops at the fraction of their roofline time the profile's efficiency table "
            "gives by op, phase, TP degree and tokens (" +
                spec.hw.efficiency.source + ")";
  const std::string comm = fabric.measured
                               ? "all-reduces from the measured curve of '" + fabric.name + "'"
                               : "all-reduces by NCCL's tuning model on the topology preset's "
                                 "fabric";
  c.warnings.push_back("modelled: virtual ranks, nothing was measured in this run; " + compute +
                       ", " + comm);
  if (spec.noise_cv > 0)
    c.warnings.push_back("model_noise: every compute segment x (1 + " +
                         std::to_string(spec.noise_cv) +
                         " z), z a seeded standard normal per segment and rank (seed " +
                         std::to_string(spec.noise_seed) + ")");
  const OpEfficiency& e = spec.hw.efficiency;
  if (!e.empty() && spec.phase == Phase::decode && e.context > 0 && e.context != spec.context)
    c.warnings.push_back(
        "efficiency_context: the profile's decode fractions were measured at "
        "context " +
        std::to_string(e.context) + ", this point runs " + std::to_string(spec.context) +
        " (attention's is carried over)");
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
  for (int r = 0; r < spec.world; ++r) have_min = std::min(have_min, rank_have(spec, r));
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
  return analyze_point(spec, layers, peaks, caps, virtual_rank_traces(spec, layers, peaks, fabric),
                       samples);
}

}  // namespace tpb
