// --check's independent reference: one fixed-mode step of the whole layer stack (and, with the
// LM head, the logits of each sequence's last row) on the host, every activation in double,
// from the same seeded weights, KV cache and input rows that TpModel fills. It does not use
// TpModel, a Device or any backend kernel: only ref_ops.h and model_fill.h. One layer at a time,
// one projection's weights at a time, so memory stays under one layer's fp32 weights (plus
// the fp64 activations and that layer's KV cache).
#pragma once
#include <cstdint>
#include <vector>

#include "layers/tp_model_config.h"

namespace tpb::ref {

struct StackResult {
  std::vector<double> x;       // [tokens, hidden]: the residual stream after the last layer
  std::vector<double> logits;  // with cfg.lm_head: [batch, vocab], each sequence's last row
  int64_t vocab = 0;
};

// The step TpModel(cfg).step() computes (fixed mode; cfg.tp and cfg.tp_rank are ignored: the
// reference is unsharded). Throws BadInput in serving mode or for a dtype with no host
// rounding (fp8). `threads` 0 means the host's.
StackResult reference_step(const TpModelConfig& cfg, int threads);

}  // namespace tpb::ref
