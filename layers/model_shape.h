// Transformer shapes (configs/models/*.json) and the TP split rules shared by every backend.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpb {

struct ModelShape {
  std::string name;
  int64_t hidden = 0;  // h
  int64_t n_layers = 0;
  int64_t n_heads = 0;       // query heads
  int64_t n_kv_heads = 0;    // GQA key/value heads
  int64_t head_dim = 0;      // d
  int64_t intermediate = 0;  // MLP width I (SwiGLU: gate and up are each I wide)
  int64_t vocab = 0;         // recorded only: the layer stack has no embedding or LM head
  double rms_eps = 1e-5;
  double rope_theta = 10000.0;
  // What the source config's model has that the layer does not compute (read from a Hugging
  // Face config: layers/hf/hf_config.h): lines for every point's warnings. Not echoed back by
  // model_to_json, whose keys are the config file's.
  std::vector<std::string> notes;
};

// Per-rank view of a shape under tensor parallelism `tp` (Megatron/vLLM rules):
// query heads and MLP width are split; KV heads are split when divisible and replicated
// (one per rank) when n_kv_heads < tp.
struct ShardShape {
  int64_t q_heads = 0;   // local query heads = n_heads / tp
  int64_t kv_heads = 0;  // local KV heads = n_kv_heads / tp, or 1 when replicated
  int64_t inter = 0;     // local MLP width = intermediate / tp
  bool kv_replicated = false;
};

// Throws BadInput naming the field when tp does not divide the shape.
ShardShape shard_shape(const ModelShape& m, int tp);

// Vocabulary rows per rank of the vocab-parallel LM head (Megatron/vLLM VocabParallel: rank r
// holds rows [r V/tp, (r+1) V/tp)). Throws BadInput naming --tp when tp does not divide it, or
// the model when it has no vocabulary.
int64_t vocab_per_rank(const ModelShape& m, int tp);

// Index of the first global KV head this rank holds (replicated case: the one its q heads use).
int64_t first_kv_head(const ModelShape& m, int tp, int tp_rank);

// Parses and validates a model JSON object; `where` names the source in messages.
ModelShape model_from_json(const nlohmann::json& j, const std::string& where);

// Resolves, first found: a path ending in .json (tpbench's format, or a Hugging Face config.json:
// one with `architectures` or `model_type`); NAME of configs/models/NAME.json under `config_dir`;
// a folder holding a config.json (a checkpoint as transformers takes it); a shipped Hugging Face
// config by hub id ORG/NAME or by NAME (configs/models/hf/ORG/NAME.json).
ModelShape load_model(const std::string& name_or_path, const std::string& config_dir);

nlohmann::ordered_json model_to_json(const ModelShape& m);

}  // namespace tpb
