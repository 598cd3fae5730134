// A serving step's end (TpModel::step_mixed, and TpModel::step with run --lm-head): the final
// RMSNorm, the vocab-parallel LM head (Megatron's VocabParallelEmbedding layout, as vLLM's
// ParallelLMHead: rank r holds vocab rows [r V/tp, (r+1) V/tp) of the full [V, h] matrix) and
// greedy sampling, on the last row of each sequence that samples.
#include <algorithm>
#include <cmath>
#include <string>

#include "base/errors.h"
#include "layers/timeline.h"
#include "tp_model/tp_model.h"

namespace tpb {

namespace {

// Tensor ids of the step's end, above tp_model.cc's per-layer ones and below seed_of's layer
// stride (64), with layer 0: one final gamma and one LM head for the whole stack.
constexpr int kFinalGamma = 32;
constexpr int kLmHead = 33;

// Candidates travel as floats; a column is exact in fp32 below 2^24.
constexpr int64_t kMaxVocab = int64_t{1} << 24;

}  // namespace

void TpModel::alloc_sampling() {
  const int64_t V = cfg_.shape.vocab, h = cfg_.shape.hidden, tp = cfg_.tp;
  const int64_t Vl = vocab_per_rank(cfg_.shape, cfg_.tp);
  const int64_t S = serving() ? cfg_.serve.max_seqs : cfg_.batch;  // rows that sample, at most
  if (V >= kMaxVocab)
    throw BadInput("model " + cfg_.shape.name + ": vocab must be below 2^24 for the LM head (got " +
                   std::to_string(V) + ")");
  const std::size_t e = dtype_bytes(cfg_.act_dtype());
  smp_.gamma_final = dev_.alloc(h * e);
  smp_.w_lm = dev_.alloc(Vl * h * e);
  smp_.normed = dev_.alloc(S * h * e);
  smp_.logits = dev_.alloc(S * Vl * e);
  smp_.gather = dev_.alloc(S * tp * 2 * sizeof(float));  // fp32 whatever the model's dtype
  smp_.max_host.resize(S);
  smp_.col_host.resize(S);
  smp_.gather_host.resize(S * tp * 2);
  dev_.fill(smp_.gamma_final.get(), cfg_.act_dtype(),
            whole_tensor_fill(seed_of(0, kFinalGamma), 1.0f, 1, h));
  // Unit-variance logits (a = sqrt(3/h), see tp_model.cc's init_scale).
  const float scale = std::sqrt(3.0f / static_cast<float>(h));
  dev_.fill(smp_.w_lm.get(), cfg_.act_dtype(),
            FillSpec{seed_of(0, kLmHead), scale, h, cfg_.tp_rank * Vl, Vl, 0, h, h, 0});
}

std::vector<float> TpModel::sampled_logits(int64_t rows) const {
  const int64_t Vl = cfg_.shape.vocab / cfg_.tp;
  std::vector<float> out(static_cast<std::size_t>(rows * Vl));
  if (out.empty()) return out;
  dev_.synchronize();
  dev_.download(out.data(), smp_.logits.get(), out.size(), cfg_.act_dtype());
  return out;
}

// The last row of each sampling sequence, normalised into consecutive rows of `normed`.
// Consecutive sampled rows (decodes side by side) go as one rmsnorm call.
void TpModel::norm_sampled_rows(const StepBatch& b) {
  const int64_t h = cfg_.shape.hidden;
  const std::size_t row_bytes = static_cast<std::size_t>(h) * dtype_bytes(cfg_.act_dtype());
  const float eps = static_cast<float>(cfg_.shape.rms_eps);
  auto norm = [&](int64_t src, int64_t dst, int64_t n) {
    if (n == 0) return;
    dev_.rmsnorm(static_cast<char*>(x_.get()) + src * row_bytes, smp_.gamma_final.get(),
                 static_cast<char*>(smp_.normed.get()) + dst * row_bytes, n, h, eps,
                 cfg_.act_dtype());
  };
  int64_t row = 0, dst = 0, run_src = 0, run_dst = 0, run_n = 0;
  for (const SeqSlice& s : b.seqs) {
    const int64_t last = row + s.new_tokens - 1;
    row += s.new_tokens;
    if (!s.samples) continue;
    if (run_n > 0 && run_src + run_n == last) {
      ++run_n;
    } else {
      norm(run_src, run_dst, run_n);
      run_src = last, run_dst = dst, run_n = 1;
    }
    ++dst;
  }
  norm(run_src, run_dst, run_n);
}

// Greedy sampling split by vocabulary: each rank's argmax over its columns, then the best of
// the tp candidates. The Collective has only a sum, so the candidates are all-gathered through
// an all-reduce: a [S, tp, 2] buffer that is zero except this rank's (max, global column)
// pair sums to every rank's pairs, exactly (x + 0 = x), so every rank picks the same ids.
std::vector<int32_t> TpModel::sample(Collective& coll, Timeline* tl, int step_index,
                                     StepHooks* hooks, const StepBatch& b) {
  const int64_t S = b.sampled(), tp = cfg_.tp, h = cfg_.shape.hidden;
  const int64_t Vl = cfg_.shape.vocab / tp, col0 = cfg_.tp_rank * Vl;
  const int L = static_cast<int>(cfg_.layers);
  std::vector<int32_t> ids(static_cast<std::size_t>(S));
  if (S == 0) return ids;
  const std::size_t n = static_cast<std::size_t>(S * tp * 2);
  float* g = smp_.gather_host.data();
  hooked(tl, hooks, Op::final_norm, L, step_index, [&] { norm_sampled_rows(b); });
  hooked(tl, hooks, Op::lm_head, L, step_index, [&] {
    dev_.gemm(smp_.normed.get(), smp_.w_lm.get(), smp_.logits.get(), S, Vl, h, cfg_.act_dtype());
  });
  hooked(tl, hooks, Op::sample, L, step_index, [&] {
    dev_.row_argmax(smp_.logits.get(), S, Vl, smp_.max_host.data(), smp_.col_host.data(),
                    cfg_.act_dtype());
    std::fill_n(g, n, 0.0f);
    for (int64_t r = 0; r < S; ++r) {
      g[(r * tp + cfg_.tp_rank) * 2] = smp_.max_host[r];
      g[(r * tp + cfg_.tp_rank) * 2 + 1] = static_cast<float>(col0 + smp_.col_host[r]);
    }
    dev_.upload(smp_.gather.get(), g, n, DType::fp32);
  });
  // The step's end is compute like a layer's blocks: --inject slowdown stretches it too (as the
  // block after the last layer), before the collective that waits for it.
  if (hooks) hooks->after_block(L, 1, step_index);
  stamped(tl, Op::sample_gather, L, step_index,
          [&] { coll.all_reduce(smp_.gather.get(), n, DType::fp32); });
  hooked(tl, hooks, Op::sample, L, step_index, [&] {
    dev_.download(g, smp_.gather.get(), n, DType::fp32);
    for (int64_t r = 0; r < S; ++r) {
      // Ranks hold increasing columns, so a strict > keeps the lowest column on a tie.
      int64_t best = 0;
      for (int64_t k = 1; k < tp; ++k)
        if (g[(r * tp + k) * 2] > g[(r * tp + best) * 2]) best = k;
      ids[r] = static_cast<int32_t>(g[(r * tp + best) * 2 + 1]);
    }
  });
  return ids;
}

}  // namespace tpb
