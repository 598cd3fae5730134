#include "harness/record/json/echo_json.h"

#include "harness/config/options/serve_options.h"
#include "harness/record/json/results_json.h"

namespace tpb {

nlohmann::ordered_json inject_to_json(const InjectSpec& s) {
  nlohmann::ordered_json j;
  j["rank"] = s.rank;
  if (s.slowdown != 1.0) j["slowdown"] = s.slowdown;
  if (s.jitter_p > 0) j["jitter"] = {{"p", s.jitter_p}, {"us", s.jitter_us}};
  if (s.host_delay_us > 0) j["host_delay_us"] = s.host_delay_us;
  if (s.mem_reserve_gib > 0) j["mem_reserve_gib"] = s.mem_reserve_gib;
  if (s.mem_contend) j["mem_contend"] = true;
  if (s.clock_offset_ms != 0) j["clock_offset_ms"] = s.clock_offset_ms;
  if (s.clock_drift_ppm != 0) j["clock_drift_ppm"] = s.clock_drift_ppm;
  if (s.hang_at_step >= 0) j["hang_at_step"] = s.hang_at_step;
  if (s.sm_clock_mhz > 0) j["sm_clock_mhz"] = s.sm_clock_mhz;
  if (s.sm_clock_prior) j["sm_clock_prior"] = gpu_lock_text(*s.sm_clock_prior);
  if (s.sm_hold_fraction > 0) j["sm_clock_emulate"] = s.sm_hold_fraction;
  if (s.slow_op != Op::count)
    j["slow_op"] = {{"op", op_name(s.slow_op)}, {"factor", s.slow_op_factor}};
  return j;
}

nlohmann::ordered_json sweep_plan_to_json(const SweepPlan& plan) {
  nlohmann::ordered_json j;
  j["order"] = plan.listed
                   ? "as listed in the config's points, each entry over the shared settings"
                   : "cartesian product, outermost first: topology, tp, dtype, phase, inject, "
                     "context, prompt, batch (batch fastest); context only for decode, prompt "
                     "only for prefill";
  nlohmann::ordered_json axes = nlohmann::ordered_json::array();
  for (const auto& a : plan.axes) axes.push_back({{"key", a.key}, {"values", axis_values_json(a)}});
  j["axes"] = axes;
  j["points"] = plan.points.size();
  return j;
}

nlohmann::ordered_json sweep_config_json(const RunSpec& first, const SweepPlan& plan) {
  nlohmann::ordered_json c = run_spec_to_json(first);
  for (const auto& a : plan.axes) c[a.key] = axis_values_json(a);
  c["sweep"] = sweep_plan_to_json(plan);
  return c;
}

nlohmann::ordered_json serve_config_json(const ServeSpec& s) {
  nlohmann::ordered_json c = run_spec_to_json(s.run);
  for (const char* k : opt::kNotServe) c.erase(k);
  c.erase(opt::cuda_graph.key);
  const nlohmann::ordered_json serve = serve_spec_to_json(s);  // items() does not own it
  for (const auto& [k, v] : serve.items()) c[k] = v;
  return c;
}

bool telemetry_available(const nlohmann::ordered_json& telemetry) {
  return telemetry.value("available", false);
}

void add_telemetry_summary(nlohmann::ordered_json& telemetry, std::optional<double> utilization,
                           const std::optional<nlohmann::ordered_json>& clock_lock) {
  if (telemetry_available(telemetry))
    telemetry["utilization_gpu_mean"] =
        utilization ? nlohmann::ordered_json(*utilization) : nlohmann::ordered_json(nullptr);
  if (clock_lock) telemetry["sm_clock_lock"] = *clock_lock;
}

// The top-level sections and the small blocks results_json.h declares beside the records.
const char* points_section() {
  return "points";
}

const char* config_section() {
  return "config";
}
const char* memory_exhaustion_section() {
  return "memory_exhaustion";
}
const char* context_section() {
  return "context";
}
const char* diagnosis_section() {
  return "diagnosis";
}

nlohmann::ordered_json memory_exhaustion_json(std::size_t point_index, const PointRecord& p) {
  const MemoryRecord m = p.memory.value_or(MemoryRecord{});
  return {{"point_index", point_index},
          {"params", to_json(p.params)},
          {"need_bytes", m.need_bytes},
          {"have_bytes", m.have_bytes},
          {"meaning",
           "first point of the sweep whose weights + KV cache + activations do not "
           "fit the TP group's smallest per-rank memory budget"}};
}

nlohmann::ordered_json trace_meta_json(const PointParams& p) {
  return {{"params", to_json(p)}, {"tool", "tpbench"}};
}

nlohmann::ordered_json params_identity_json(const PointParams& p, bool with_layers) {
  nlohmann::ordered_json id = to_json(p);
  if (!with_layers) id.erase("layers");
  return id;
}

}  // namespace tpb
