// Hugging Face config.json -> HfShape. tpbench computes one layer: pre-norm GQA attention with
// rotary and a SwiGLU MLP (Llama's). An architecture is read only when that is its layer; every
// other one is refused by name, with the issue that will bring its layer.
#include "layers/hf/hf_config.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "base/errors.h"

namespace tpb {
namespace {

using nlohmann::json;

constexpr const char* kMoe = "mixture of experts: issue 55";
constexpr const char* kLinear = "linear attention: issue 56";
constexpr const char* kLinearMoe = "linear attention: issue 56, and mixture of experts: issue 55";
constexpr const char* kMla =
    "mixture of experts: issue 55, and multi-head latent attention, which is not modelled";

// The architectures tpbench knows by name. `refusal` is null where the layer is the one tpbench
// computes. Issue 55 turns the MoE rows into readers of their expert fields.
struct Architecture {
  const char* name;        // as `architectures` spells it
  const char* model_type;  // as `model_type` spells it, for a config without `architectures`
  const char* refusal;
};
constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", nullptr},
    {"MistralForCausalLM", "mistral", nullptr},
    {"Qwen2ForCausalLM", "qwen2", nullptr},
    {"Qwen3ForCausalLM", "qwen3", "per-head q/k RMSNorm not modelled"},
    {"Qwen2MoeForCausalLM", "qwen2_moe", kMoe},
    {"Qwen3MoeForCausalLM", "qwen3_moe", kMoe},
    {"MixtralForCausalLM", "mixtral", kMoe},
    {"GptOssForCausalLM", "gpt_oss", kMoe},
    {"Llama4ForConditionalGeneration", "llama4", kMoe},
    {"Llama4ForCausalLM", "llama4_text", kMoe},
    {"DeepseekV2ForCausalLM", "deepseek_v2", kMla},
    {"DeepseekV3ForCausalLM", "deepseek_v3", kMla},
    {"DeepseekV32ForCausalLM", "deepseek_v32", kMla},
    {"NemotronHForCausalLM", "nemotron_h",
     "Mamba-2 layers, not modelled, and mixture of experts: issue 55"},
    {"Qwen3NextForCausalLM", "qwen3_next", kLinearMoe},
    {"Qwen3_5ForCausalLM", "qwen3_5_text", kLinear},
    {"Qwen3_5ForConditionalGeneration", "qwen3_5", kLinear},
    {"Qwen3_5MoeForCausalLM", "qwen3_5_moe_text", kLinearMoe},
    {"Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe", kLinearMoe},
};

// The bounds of layers/model_shape.cc (int64 products in the kernels, a finite memory plan).
constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 100000;

std::string prefix(const std::string& path) {
  return "model '" + path + "': ";
}

// j[key] unless absent or null: HF configs write null for "not set" (head_dim, sliding_window).
const json* present(const json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

int64_t count(const json& j, const char* key, const std::string& path, int64_t max = kMaxDim) {
  const json* v = present(j, key);
  if (v == nullptr) throw BadInput(prefix(path) + "missing required field '" + key + "'");
  // Integers only: 4096.0 or "4096" is a damaged file, not a shape to round.
  const bool ok = (v->is_number_unsigned() && v->get<uint64_t>() > 0 &&
                   v->get<uint64_t>() <= static_cast<uint64_t>(max)) ||
                  (v->is_number_integer() && v->get<int64_t>() > 0 && v->get<int64_t>() <= max);
  if (!ok)
    throw BadInput(prefix(path) + "field '" + key + "' must be an integer in [1, " +
                   std::to_string(max) + "] (got " + v->dump() + ")");
  return v->get<int64_t>();
}

double positive_number(const json& v, const std::string& key, const std::string& path) {
  if (!v.is_number() || !(v.get<double>() > 0) ||
      v.get<double>() == std::numeric_limits<double>::infinity())
    throw BadInput(prefix(path) + "field '" + key + "' must be a positive number (got " + v.dump() +
                   ")");
  return v.get<double>();
}

// Top level in transformers 4.x; inside rope_parameters in 5.x (and rope_scaling in a few
// files written between them). Absent everywhere: the classes' default, 10000.
double rope_theta(const json& j, const std::string& path) {
  if (const json* v = present(j, "rope_theta")) return positive_number(*v, "rope_theta", path);
  for (const char* block : {"rope_parameters", "rope_scaling"}) {
    const json* b = present(j, block);
    if (b == nullptr || !b->is_object()) continue;
    if (const json* v = present(*b, "rope_theta"))
      return positive_number(*v, std::string(block) + ".rope_theta", path);
  }
  return 10000.0;
}

bool has_experts(const json& j) {
  for (const char* k : {"num_experts", "num_local_experts", "n_routed_experts"})
    if (present(j, k)) return true;
  const json* text = present(j, "text_config");  // a multimodal wrapper's language model
  return text != nullptr && text->is_object() && has_experts(*text);
}

// The architecture, or a BadInput naming it and why tpbench does not run it.
std::string architecture(const json& j, const std::string& path) {
  std::string field = "architectures", value;
  if (const json* a = present(j, "architectures")) {
    if (!a->is_array() || a->empty() || !(*a)[0].is_string())
      throw BadInput(prefix(path) + "field 'architectures' must be a non-empty list of strings");
    value = (*a)[0].get<std::string>();
  } else {
    const json* t = present(j, "model_type");
    if (t == nullptr || !t->is_string())
      throw BadInput(prefix(path) + "field 'model_type' must be a string");
    field = "model_type";
    value = t->get<std::string>();
  }
  const auto known = std::find_if(std::begin(kArchitectures), std::end(kArchitectures),
                                  [&](const Architecture& a) {
                                    return value == (field == "model_type" ? a.model_type : a.name);
                                  });
  std::string why = has_experts(j) ? kMoe
                                   : "tpbench computes the Llama layer of LlamaForCausalLM, "
                                     "MistralForCausalLM and Qwen2ForCausalLM only";
  if (known != std::end(kArchitectures)) {
    if (known->refusal == nullptr) return known->name;
    why = known->refusal;
  }
  throw BadInput(prefix(path) + field + " '" + value + "' not supported (" + why + ")");
}

// Mistral v0.1 attends over its last 4096 tokens only; Qwen2 has a window field that applies
// only under use_sliding_window (transformers' Qwen2Attention). A window at least the longest
// position never binds, so the layer is full attention.
void refuse_sliding_window(const json& j, const std::string& path) {
  if (present(j, "sliding_window") == nullptr) return;
  const json* use = present(j, "use_sliding_window");
  if (use != nullptr && use->is_boolean() && !use->get<bool>()) return;
  const int64_t window = count(j, "sliding_window", path);
  const json* max_pos = present(j, "max_position_embeddings");
  const int64_t longest = max_pos ? count(j, "max_position_embeddings", path) : 0;
  if (longest > 0 && window >= longest) return;
  throw BadInput(prefix(path) + "field 'sliding_window' is " + std::to_string(window) +
                 (longest > 0 ? " (below max_position_embeddings " + std::to_string(longest) + ")"
                              : " (and no max_position_embeddings)") +
                 ": windowed attention is not modelled; null, or a window >= "
                 "max_position_embeddings, runs as full attention");
}

bool is_true(const json& j, const char* key) {
  const json* v = present(j, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::vector<std::string> notes(const json& j, const std::string& arch) {
  std::vector<std::string> n;
  if (arch == "Qwen2ForCausalLM" || is_true(j, "attention_bias"))
    n.push_back("hf_config: " + arch +
                "'s q/k/v projection biases are not modelled (one add of (n_heads + 2 n_kv_heads) "
                "x head_dim per token and layer, no GEMM)");
  if (is_true(j, "mlp_bias"))
    n.push_back("hf_config: " + arch + "'s MLP biases (mlp_bias) are not modelled");
  if (const json* q = present(j, "quantization_config")) {
    const std::string method =
        q->is_object() && q->contains("quant_method") && (*q)["quant_method"].is_string()
            ? (*q)["quant_method"].get<std::string>()
            : "?";
    n.push_back("hf_config: quantization_config (quant_method " + method +
                ") is not read; weights and activations are in --dtype");
  }
  return n;
}

// A hub id (ORG/NAME, or NAME) names the model; a local path (/ckpt/llama/) does not.
bool is_hub_id(const std::string& s) {
  return !s.empty() && s[0] != '/' && s[0] != '.' && s[0] != '~' &&
         std::count(s.begin(), s.end(), '/') <= 1 && s.back() != '/';
}

std::string model_name(const json& j, const std::string& path) {
  if (const json* n = present(j, "_name_or_path"); n && n->is_string() && is_hub_id(*n))
    return n->get<std::string>();
  namespace fs = std::filesystem;
  const fs::path p(path);
  // huggingface_hub's cache: .../models--ORG--NAME/snapshots/<revision>/config.json
  for (const fs::path& part : p) {
    std::string s = part.string();
    if (s.rfind("models--", 0) != 0) continue;
    s = s.substr(8);
    if (const auto at = s.find("--"); at != std::string::npos) s.replace(at, 2, "/");
    return s;
  }
  if (p.stem() != "config") return p.stem().string();
  const std::string folder = p.parent_path().filename().string();
  return folder.empty() || folder == "." ? "config" : folder;
}

}  // namespace

bool is_hf_config(const nlohmann::json& j) {
  return j.is_object() && (j.contains("architectures") || j.contains("model_type"));
}

HfShape read_hf_config(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) throw BadInput(prefix(path) + "must be a JSON object");
  HfShape s;
  s.architecture = architecture(j, path);
  s.name = model_name(j, path);
  s.hidden = count(j, "hidden_size", path);
  s.n_layers = count(j, "num_hidden_layers", path, kMaxLayers);
  s.n_heads = count(j, "num_attention_heads", path);
  s.n_kv_heads = present(j, "num_key_value_heads") ? count(j, "num_key_value_heads", path)
                                                   : s.n_heads;  // absent: multi-head attention
  if (present(j, "head_dim")) {
    s.head_dim = count(j, "head_dim", path);
  } else if (s.hidden % s.n_heads != 0) {
    throw BadInput(prefix(path) + "field 'head_dim' is absent and hidden_size " +
                   std::to_string(s.hidden) + " is not a multiple of num_attention_heads " +
                   std::to_string(s.n_heads));
  } else {
    s.head_dim = s.hidden / s.n_heads;
  }
  if (s.n_heads % s.n_kv_heads != 0)
    throw BadInput(prefix(path) + "field 'num_key_value_heads' (" + std::to_string(s.n_kv_heads) +
                   ") must divide num_attention_heads (" + std::to_string(s.n_heads) + ")");
  s.intermediate = count(j, "intermediate_size", path);
  s.vocab = count(j, "vocab_size", path);
  if (const json* v = present(j, "rms_norm_eps"))
    s.rms_eps = positive_number(*v, "rms_norm_eps", path);
  s.rope_theta = rope_theta(j, path);
  // tpbench's MLP is SwiGLU: gate and up, SiLU on the gate.
  if (const json* act = present(j, "hidden_act"); act && *act != "silu")
    throw BadInput(prefix(path) + "field 'hidden_act' is " + act->dump() +
                   ": tpbench's MLP is SwiGLU with silu");
  refuse_sliding_window(j, path);
  s.notes = notes(j, s.architecture);
  return s;
}

}  // namespace tpb
