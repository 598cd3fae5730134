// A Hugging Face config.json read as users have it: the shape of the architectures whose layer
// tpbench computes, and a one-line refusal naming the architecture for every other one.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

// What a HF config states, in tpbench's terms (layers/model_shape.h maps it onto ModelShape).
// Kept apart from ModelShape so that this folder sits below layers/ (no folder cycle); the MoE
// fields of issue 55 (experts, experts per token, expert width) join here and there together.
struct HfShape {
  std::string architecture;  // architectures[0], or the one model_type names
  std::string name;          // _name_or_path where it is a hub id, else from the file's path
  int64_t hidden = 0;        // hidden_size
  int64_t n_layers = 0;      // num_hidden_layers
  int64_t n_heads = 0;       // num_attention_heads
  int64_t n_kv_heads = 0;    // num_key_value_heads (absent: = num_attention_heads)
  int64_t head_dim = 0;      // head_dim (absent: hidden_size / num_attention_heads)
  int64_t intermediate = 0;  // intermediate_size
  int64_t vocab = 0;         // vocab_size
  double rms_eps = 1e-6;     // rms_norm_eps (absent: transformers' default for these classes)
  double rope_theta = 10000.0;
  // What the config's model has that tpbench's layer does not compute (a bias, a quantisation
  // it does not read): each a line for the results' warnings.
  std::vector<std::string> notes;
};

// A JSON object with `architectures` or `model_type` is a HF config; tpbench's own format has
// neither (its parser refuses both as unknown fields).
bool is_hf_config(const nlohmann::json& j);

// Reads a HF config; `path` is the file (it names the source in messages and, without a hub id
// in _name_or_path, the model). Throws BadInput: "model '<path>': architectures
// 'X' not supported (<why>)" for an architecture tpbench does not compute, and a line naming the
// field for a field that is wrong or missing.
HfShape read_hf_config(const nlohmann::json& j, const std::string& path);

}  // namespace tpb
