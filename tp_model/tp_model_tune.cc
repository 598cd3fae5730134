// Kernel tuning before the measured steps (issue 54): every GEMM shape the steps will run is
// issued once inside Device::tune_gemms, whose backend times its candidates and keeps one
// choice per shape for the whole TP group, so no step times kernels and no rank runs a kernel
// of its own. Serving runs tune every row count they can meet in buckets (tuning_rows).
#include <algorithm>

#include "layers/cuda/plan/gemm_choice.h"
#include "tp_model/tp_model.h"

namespace tpb {

GroupGather group_gather(Device& dev, Collective& coll) {
  return [&dev, &coll](const std::vector<float>& mine) {
    const std::size_t n = mine.size(), ranks = static_cast<std::size_t>(coll.size());
    if (ranks == 1 || n == 0) return mine;
    // The Collective has only a sum: each rank's values in its own slot of a zeroed buffer sum
    // to every rank's, exactly (x + 0 = x), as sample() gathers its candidates.
    std::vector<float> all(n * ranks, 0.0f);
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(coll.rank() * n));
    DeviceBuffer buf = dev.alloc(all.size() * sizeof(float));
    dev.upload(buf.get(), all.data(), all.size(), DType::fp32);
    coll.all_reduce(buf.get(), all.size(), DType::fp32);
    dev.download(all.data(), buf.get(), all.size(), DType::fp32);
    return all;
  };
}

std::vector<int64_t> TpModel::tuned_rows() const {
  return serving() ? tuning_rows(tokens_) : std::vector<int64_t>{tokens_};
}

std::vector<int64_t> TpModel::tuned_sampled_rows() const {
  if (!ends_with_lm_head()) return {};
  return serving() ? tuning_rows(cfg_.serve.max_seqs) : std::vector<int64_t>{cfg_.batch};
}

void TpModel::tune_gemms(Collective& coll) {
  if (layers_.empty()) return;
  const ModelShape& m = cfg_.shape;
  const int64_t h = m.hidden, d = m.head_dim;
  // run_layers' four GEMMs and sample()'s LM head, at each row count, on layer 0's weights
  // and the step's own activations (the outputs are scratch every step rewrites).
  const int64_t qkv_w = (sh_.q_heads + 2 * sh_.kv_heads) * d;
  const LayerBuffers& b = layers_[0];
  dev_.tune_gemms(
      [&] {
        for (int64_t T : tuned_rows()) {
          matmul(xn_.get(), b.w_qkv, init_scale(h), qkv_.get(), T, qkv_w, h);
          matmul(attn_out_.get(), b.w_o, init_scale(m.n_heads * d), proj_.get(), T, h,
                 sh_.q_heads * d);
          matmul(xn_.get(), b.w_gate_up, init_scale(h), gate_up_.get(), T, 2 * sh_.inter, h);
          matmul(act_.get(), b.w_down, init_scale(m.intermediate), proj_.get(), T, h, sh_.inter);
        }
        const int64_t Vl = cfg_.shape.vocab / cfg_.tp;
        for (int64_t S : tuned_sampled_rows())
          dev_.gemm(smp_.normed.get(), smp_.w_lm.get(), smp_.logits.get(), S, Vl, h,
                    cfg_.act_dtype());
      },
      group_gather(dev_, coll));
}

}  // namespace tpb
