#include "layers/profile/engine.h"

#include <algorithm>
#include <vector>

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

const std::vector<std::string>& engine_keys() {
  static const std::vector<std::string> k = {"name",
                                             "description",
                                             "host_per_kernel_s",
                                             "step_overhead_s",
                                             "prefill_overhead_s",
                                             "syncs_per_step",
                                             "custom_allreduce",
                                             "gqa_decode_kv_passes",
                                             "tables",
                                             "decode_allreduce",
                                             "prefill_allreduce",
                                             "fused",
                                             "source"};
  return k;
}

// `fused`: {op: carrier}, both op names; that they name compute ops of a layer is checked
// where the run is resolved (check_engine_fused), as this folder sits below the op list.
std::map<std::string, std::string> parse_fused(const nlohmann::json& j, const std::string& where) {
  std::map<std::string, std::string> out;
  if (!j.contains("fused")) return out;
  if (!j["fused"].is_object())
    throw BadInput("--engine: '" + where + "': fused must map op names to op names");
  for (auto it = j["fused"].begin(); it != j["fused"].end(); ++it) {
    if (!it.value().is_string())
      throw BadInput("--engine: '" + where + "': fused." + it.key() + " must be an op name");
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

std::string allreduce_table(const nlohmann::json& j, const char* key, const char* fallback,
                            const std::string& where) {
  const std::string v = optional_string(j, key, fallback, "--engine: '" + where + "': ");
  if (v != "custom_graph" && v != "custom_eager" && v != "custom" && v != "nccl")
    throw BadInput("--engine: '" + where + "': " + key +
                   " must be custom_graph, custom_eager, custom or nccl (got '" + v + "')");
  return v;
}

EngineProfile parse_engine(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw BadInput("--engine: '" + where + "' must hold an object");
  const auto& keys = engine_keys();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
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
  e.tables = optional_string(j, "tables", "", "--engine: '" + where + "': ");
  e.decode_allreduce = allreduce_table(j, "decode_allreduce", "custom_graph", where);
  e.prefill_allreduce = allreduce_table(j, "prefill_allreduce", "custom_eager", where);
  e.fused = parse_fused(j, where);
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
  nlohmann::ordered_json fused = nlohmann::ordered_json::object();
  for (const auto& [op, into] : e.fused) fused[op] = into;
  nlohmann::ordered_json j = {{"name", e.name},
                              {"description", e.description},
                              {"host_per_kernel_s", e.host_per_kernel_s},
                              {"step_overhead_s", e.step_overhead_s},
                              {"prefill_overhead_s", e.prefill_overhead_s},
                              {"syncs_per_step", e.syncs_per_step},
                              {"gqa_decode_kv_passes", e.gqa_decode_kv_passes},
                              {"custom_allreduce", e.custom_allreduce}};
  // Written only for a table-priced engine, so older engines' records read as before.
  if (e.has_tables()) {
    j["tables"] = e.tables;
    j["decode_allreduce"] = e.decode_allreduce;
    j["prefill_allreduce"] = e.prefill_allreduce;
    j["fused"] = fused;
  }
  j["source"] = e.source;
  return j;
}

}  // namespace tpb
