#include "layers/profile/engine.h"

#include "base/config_loader.h"
#include "base/errors.h"

namespace tpb {

namespace {

const ConfigKind& engine_kind() {
  static const ConfigKind kind{"--engine", "engines", "engine", {"none"}};
  return kind;
}

double seconds(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return 0;
  const nlohmann::json& v = j[key];
  // 1 s per kernel or per step is no engine anyone serves with: a unit slip (ms, us).
  if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1)
    throw BadInput("--engine: '" + where + "': " + key + " must be seconds in [0, 1]");
  return v.get<double>();
}

// No GQA model groups more than 64 query heads on one KV head; a pass below 1 would read less
// than the cache.
double kv_passes(const nlohmann::json& j, const std::string& where) {
  if (!j.contains("gqa_decode_kv_passes")) return 1;
  const nlohmann::json& v = j["gqa_decode_kv_passes"];
  if (!v.is_number() || v.get<double>() < 1 || v.get<double>() > 64)
    throw BadInput("--engine: '" + where + "': gqa_decode_kv_passes must be a number in [1, 64]");
  return v.get<double>();
}

EngineProfile parse_engine(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw BadInput("--engine: '" + where + "' must hold an object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "name" && it.key() != "description" && it.key() != "host_per_kernel_s" &&
        it.key() != "step_overhead_s" && it.key() != "prefill_overhead_s" &&
        it.key() != "syncs_per_step" && it.key() != "custom_allreduce" &&
        it.key() != "gqa_decode_kv_passes" && it.key() != "source")
      throw BadInput("--engine: '" + where + "': unknown field '" + it.key() + "'");
  EngineProfile e;
  e.name = optional_string(j, "name", "", "--engine: '" + where + "': ");
  e.description = optional_string(j, "description", "", "--engine: '" + where + "': ");
  e.host_per_kernel_s = seconds(j, "host_per_kernel_s", where);
  e.step_overhead_s = seconds(j, "step_overhead_s", where);
  e.prefill_overhead_s = seconds(j, "prefill_overhead_s", where);
  if (j.contains("syncs_per_step") && !j["syncs_per_step"].is_boolean())
    throw BadInput("--engine: '" + where + "': syncs_per_step must be true or false");
  e.syncs_per_step = j.value("syncs_per_step", true);
  e.gqa_decode_kv_passes = kv_passes(j, where);
  if (j.contains("custom_allreduce") && !j["custom_allreduce"].is_boolean())
    throw BadInput("--engine: '" + where + "': custom_allreduce must be true or false");
  e.custom_allreduce = j.value("custom_allreduce", true);
  if (!j.contains("source") || !j["source"].is_string() || j["source"].get<std::string>().empty())
    throw BadInput("--engine: '" + where + "': source must say what the figures come from");
  e.source = j["source"].get<std::string>();
  return e;
}

}  // namespace

EngineProfile load_engine(const std::string& name_or_path, const std::string& config_dir) {
  if (name_or_path == "none") {
    EngineProfile e;
    e.description = "tpbench's own loop: the host enqueues while the device works";
    e.source =
        "tpbench's CUDA steps on an H200 (shared/measured/h200-2026-12-04): the host gap is "
        "inside the step and priced by the profile's kernel_overhead, not by the engine";
    return e;
  }
  return load_named_config<EngineProfile>(engine_kind(), name_or_path, config_dir, parse_engine);
}

nlohmann::ordered_json engine_to_json(const EngineProfile& e) {
  return {{"name", e.name},
          {"description", e.description},
          {"host_per_kernel_s", e.host_per_kernel_s},
          {"step_overhead_s", e.step_overhead_s},
          {"prefill_overhead_s", e.prefill_overhead_s},
          {"syncs_per_step", e.syncs_per_step},
          {"gqa_decode_kv_passes", e.gqa_decode_kv_passes},
          {"custom_allreduce", e.custom_allreduce},
          {"source", e.source}};
}

}  // namespace tpb
