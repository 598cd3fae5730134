// Model shapes: JSON parsing with field-naming errors, and the TP split rules (Megatron/vLLM).
// Every backend and the cost model go through shard_shape(), so a split is decided in one place.
#include "layers/model_shape.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <vector>

#include "base/config_loader.h"
#include "base/errors.h"
#include "layers/hf/hf_config.h"
#include "layers/hf/hf_shipped.h"

namespace tpb {
namespace {

std::string prefix(const std::string& where) {
  return "model '" + where + "': ";
}

// Upper bounds on counts. Far above any real model (hidden 16384, 126 layers), they keep every
// product the kernels form in int64 (hidden x intermediate < 2^48 elements) and bound the
// memory plan's search over layer counts, which counts down from n_layers.
constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 100000;  // the --layers limit

// A JSON integer in [1, max]. Floats (4096.0) are refused: a shape is a count, and silently
// truncating 4096.5 would hide a typo. Unsigned values above INT64_MAX are refused rather than
// wrapped.
int64_t positive_int(const nlohmann::json& v, const std::string& key, const std::string& where,
                     int64_t max = kMaxDim) {
  bool ok = false;
  int64_t out = 0;
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    ok = u > 0 && u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    out = v.get<int64_t>();
    ok = out > 0;
  }
  if (!ok) throw BadInput(prefix(where) + "field '" + key + "' must be a positive integer");
  if (out > max)
    throw BadInput(prefix(where) + "field '" + key + "' must be at most " + std::to_string(max) +
                   " (got " + std::to_string(out) + ")");
  return out;
}

double positive_number(const nlohmann::json& v, const std::string& key, const std::string& where) {
  // NaN and inf cannot come from a JSON parser, but a json built in code can hold them.
  if (!v.is_number() || !(v.get<double>() > 0) ||
      v.get<double>() == std::numeric_limits<double>::infinity())
    throw BadInput(prefix(where) + "field '" + key + "' must be a positive number");
  return v.get<double>();
}

// The counts every model config states, in the order they are read and written, each key
// spelled once for the reader, the writer and the unknown-field message.
struct CountField {
  const char* key;
  int64_t ModelShape::*member;
  int64_t max;
};
constexpr CountField kCounts[] = {{"hidden", &ModelShape::hidden, kMaxDim},
                                  {"n_layers", &ModelShape::n_layers, kMaxLayers},
                                  {"n_heads", &ModelShape::n_heads, kMaxDim},
                                  {"n_kv_heads", &ModelShape::n_kv_heads, kMaxDim},
                                  {"head_dim", &ModelShape::head_dim, kMaxDim},
                                  {"intermediate", &ModelShape::intermediate, kMaxDim}};

const std::vector<std::string>& required_keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> keys;
    for (const CountField& f : kCounts) keys.emplace_back(f.key);
    return keys;
  }();
  return k;
}

const std::vector<std::string>& optional_keys() {
  static const std::vector<std::string> k = {"name", "vocab", "rms_eps", "rope_theta"};
  return k;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

ShardShape shard_shape(const ModelShape& m, int tp) {
  if (tp < 1) throw BadInput("--tp: must be >= 1 (got " + std::to_string(tp) + ")");
  const std::string t = std::to_string(tp);
  // Column-parallel QKV gives each rank whole query heads, so tp must divide the head count.
  if (m.n_heads % tp != 0)
    throw BadInput("--tp: " + t + " does not divide the model's " + std::to_string(m.n_heads) +
                   " attention heads (n_heads)");
  ShardShape s;
  s.q_heads = m.n_heads / tp;
  if (m.n_kv_heads % tp == 0) {
    s.kv_heads = m.n_kv_heads / tp;
  } else if (tp % m.n_kv_heads == 0) {
    // Fewer KV heads than ranks: each rank keeps a copy of the one KV head its query heads use.
    // Because tp % n_kv == 0 and n_heads % tp == 0, a rank's n_heads/tp query heads fall inside
    // one GQA group of n_heads/n_kv heads, so one local KV head is enough.
    s.kv_heads = 1;
    s.kv_replicated = true;
  } else {
    throw BadInput("--tp: " + t + " neither divides nor is a multiple of the model's " +
                   std::to_string(m.n_kv_heads) + " KV heads (n_kv_heads)");
  }
  // Column-parallel gate/up and row-parallel down split the MLP width evenly.
  if (m.intermediate % tp != 0)
    throw BadInput("--tp: " + t + " does not divide the model's MLP width " +
                   std::to_string(m.intermediate) + " (intermediate)");
  s.inter = m.intermediate / tp;
  return s;
}

int64_t vocab_per_rank(const ModelShape& m, int tp) {
  if (tp < 1) throw BadInput("--tp: must be >= 1 (got " + std::to_string(tp) + ")");
  if (m.vocab < 1)
    throw BadInput("model " + m.name + ": vocab must be >= 1 for the LM head (got " +
                   std::to_string(m.vocab) + ")");
  if (m.vocab % tp != 0)
    throw BadInput("--tp: " + std::to_string(tp) + " does not divide the model's vocabulary of " +
                   std::to_string(m.vocab) + " (the LM head is split by vocabulary rows)");
  return m.vocab / tp;
}

int64_t first_kv_head(const ModelShape& m, int tp, int tp_rank) {
  const ShardShape s = shard_shape(m, tp);
  TPB_ASSERT(tp_rank >= 0 && tp_rank < tp, "tp_rank out of range");
  if (!s.kv_replicated) return static_cast<int64_t>(tp_rank) * s.kv_heads;
  // Rank r holds query heads [r*hq, (r+1)*hq); GQA maps query head i to KV head
  // i / (n_heads/n_kv). With hq dividing the group size that is r*hq*n_kv/n_heads = r*n_kv/tp.
  return static_cast<int64_t>(tp_rank) * m.n_kv_heads / tp;
}

ModelShape model_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw BadInput(prefix(where) + "must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    const auto& r = required_keys();
    const auto& o = optional_keys();
    if (std::find(r.begin(), r.end(), key) == r.end() &&
        std::find(o.begin(), o.end(), key) == o.end())
      throw BadInput(prefix(where) + "unknown field '" + key + "' (known: " + join(r) + ", " +
                     join(o) + ")");
  }
  for (const auto& key : required_keys()) {
    if (!j.contains(key)) throw BadInput(prefix(where) + "missing required field '" + key + "'");
  }
  ModelShape m;
  for (const CountField& f : kCounts) m.*f.member = positive_int(j[f.key], f.key, where, f.max);
  if (j.contains("name")) {
    if (!j["name"].is_string() || j["name"].get<std::string>().empty())
      throw BadInput(prefix(where) + "field 'name' must be a non-empty string");
    m.name = j["name"].get<std::string>();
  }
  if (j.contains("vocab")) m.vocab = positive_int(j["vocab"], "vocab", where);
  if (j.contains("rms_eps")) m.rms_eps = positive_number(j["rms_eps"], "rms_eps", where);
  if (j.contains("rope_theta"))
    m.rope_theta = positive_number(j["rope_theta"], "rope_theta", where);
  // GQA: every KV head serves the same number of query heads.
  if (m.n_heads % m.n_kv_heads != 0)
    throw BadInput(prefix(where) + "n_heads (" + std::to_string(m.n_heads) +
                   ") must be a multiple of n_kv_heads (" + std::to_string(m.n_kv_heads) + ")");
  return m;
}

namespace {

// Either format a model file comes in: tpbench's own, or a Hugging Face config.json.
ModelShape parse_model(const nlohmann::json& j, const std::string& where) {
  if (!is_hf_config(j)) return model_from_json(j, where);
  HfShape h = read_hf_config(j, where);
  ModelShape m;
  m.name = std::move(h.name);
  m.hidden = h.hidden;
  m.n_layers = h.n_layers;
  m.n_heads = h.n_heads;
  m.n_kv_heads = h.n_kv_heads;
  m.head_dim = h.head_dim;
  m.intermediate = h.intermediate;
  m.vocab = h.vocab;
  m.rms_eps = h.rms_eps;
  m.rope_theta = h.rope_theta;
  m.notes = std::move(h.notes);
  return m;
}

bool ends_with_json(const std::string& s) {
  return s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0;
}

}  // namespace

ModelShape load_model(const std::string& name_or_path, const std::string& config_dir) {
  namespace fs = std::filesystem;
  ConfigKind kind{"--model", "models", "model", {}};
  const auto load = [&](const std::string& n) {
    return load_named_config<ModelShape>(kind, n, config_dir, parse_model);
  };
  const bool own_name =
      name_or_path.find('/') == std::string::npos && !name_or_path.empty() &&
      fs::is_regular_file(fs::path(config_dir) / "models" / (name_or_path + ".json"));
  if (ends_with_json(name_or_path) || own_name) return load(name_or_path);
  if (fs::is_directory(name_or_path)) {
    const fs::path file = fs::path(name_or_path) / "config.json";
    if (!fs::is_regular_file(file))
      throw BadInput("--model: folder '" + name_or_path + "' holds no config.json");
    return load(file.string());
  }
  if (const ShippedHf hf = find_shipped_hf(name_or_path, config_dir); !hf.path.empty()) {
    ModelShape m = load(hf.path);
    m.name = hf.id;
    return m;
  }
  // Unknown: the error's "known:" list adds the shipped Hugging Face configs that load (a
  // refused one is refused by name, with its reason, when asked for).
  for (const ShippedHf& s : shipped_hf(config_dir)) {
    try {
      load(s.path);
      kind.builtin.push_back(s.id);
    } catch (const BadInput&) {
    }
  }
  return load(name_or_path);
}

nlohmann::ordered_json model_to_json(const ModelShape& m) {
  // Same keys as the config files, so a resolved config echoed into results loads back as-is
  // (unset optional fields are left out because the parser refuses empty/zero values).
  nlohmann::ordered_json j;
  if (!m.name.empty()) j["name"] = m.name;
  for (const CountField& f : kCounts) j[f.key] = m.*f.member;
  if (m.vocab > 0) j["vocab"] = m.vocab;
  j["rms_eps"] = m.rms_eps;
  j["rope_theta"] = m.rope_theta;
  return j;
}

}  // namespace tpb
