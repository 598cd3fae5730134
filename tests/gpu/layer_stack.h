// The Llama-3.1-8B-shaped layer stack the device check times (roofline, cuDNN side by side):
// L layers of distinct weights and caches run op by op as the step driver runs them, with the
// median step time and a per-op breakdown from mark() stamps.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "layers/cuda/cuda_device.h"
#include "tests/gpu/layer_check.h"

namespace tpb {

inline constexpr int kComputeOps = 12;  // a TP=1 layer: no all-reduces

// L layers of weights and KV caches plus one set of activations, run as the step driver does.
class Stack {
 public:
  Stack(CudaDevice& dev, const CheckShape& s, int layers, DType t, int64_t max_tokens)
      : dev_(dev), s_(s), t_(t), layers_(layers) {
    const int64_t h = s.hidden, qd = s.q_heads * s.head_dim, I = s.inter;
    qkvw_ = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
    for (int l = 0; l < layers; ++l) {
      // Distinct weights per layer: the stack's weights (GBs) stream from HBM, not L2.
      w_.push_back(make(qkvw_, h, 0.02f));
      w_.push_back(make(h, qd, 0.02f));
      w_.push_back(make(2 * I, h, 0.02f));
      w_.push_back(make(h, I, 0.02f));
      w_.push_back(make(2, h, 1.0f));  // the two gammas
    }
    x_ = make(max_tokens, h, 1.0f);
    xn_ = make(max_tokens, h, 0);
    qkv_ = make(max_tokens, qkvw_, 0);
    att_ = make(max_tokens, qd, 0);
    o_ = make(max_tokens, h, 0);
    gu_ = make(max_tokens, 2 * I, 0);
    act_ = make(max_tokens, I, 0);
  }

  // K and V caches [batch, max_ctx, kv_heads, head_dim] per layer, replacing the old ones.
  void caches(int64_t batch, int64_t max_ctx) {
    kv_.clear();
    kv_bufs_.clear();  // freed before the new ones are counted against the budget
    for (int l = 0; l < 2 * layers_; ++l)
      kv_.push_back(make(batch * max_ctx, s_.kv_heads * s_.head_dim, 1.0f, &kv_bufs_));
    max_ctx_ = max_ctx;
  }

  // One step; with `slot`, each op is bracketed by marks (2 per op) from *slot on.
  void step(bool prefill, int64_t batch, int64_t n, std::size_t* slot) {
    const int64_t tps = prefill ? n : 1, pos0 = prefill ? 0 : n, ctx = prefill ? n : n + 1;
    const int64_t T = batch * tps, h = s_.hidden, I = s_.inter, qd = s_.q_heads * s_.head_dim;
    const AttnShape a{batch, s_.q_heads, s_.kv_heads, s_.head_dim, max_ctx_};
    auto op = [&](auto&& f) {
      if (slot) dev_.mark((*slot)++);
      f();
      if (slot) dev_.mark((*slot)++);
    };
    for (int l = 0; l < layers_; ++l) {
      void* const* w = &w_[static_cast<std::size_t>(5 * l)];
      const char* g = static_cast<const char*>(w[4]);
      void* kc = kv_[static_cast<std::size_t>(2 * l)];
      void* vc = kv_[static_cast<std::size_t>(2 * l + 1)];
      const std::size_t gsz = static_cast<std::size_t>(h) * dtype_bytes(t_);
      op([&] { dev_.rmsnorm(x_, g, xn_, T, h, 1e-5f, t_); });
      op([&] { dev_.gemm(xn_, w[0], qkv_, T, qkvw_, h, t_); });
      op([&] { dev_.rope(qkv_, T, tps, pos0, a, 500000.0f, t_); });
      op([&] { dev_.kv_write(qkv_, kc, vc, tps, pos0, a, t_); });
      op([&] {
        if (prefill)
          dev_.attention_prefill(qkv_, kc, vc, att_, n, a, t_);
        else
          dev_.attention_decode(qkv_, kc, vc, att_, ctx, a, t_);
      });
      op([&] { dev_.gemm(att_, w[1], o_, T, h, qd, t_); });
      op([&] { dev_.add(x_, o_, static_cast<std::size_t>(T * h), t_); });
      op([&] { dev_.rmsnorm(x_, g + gsz, xn_, T, h, 1e-5f, t_); });
      op([&] { dev_.gemm(xn_, w[2], gu_, T, 2 * I, h, t_); });
      op([&] { dev_.swiglu(gu_, act_, T, I, t_); });
      op([&] { dev_.gemm(act_, w[3], o_, T, h, I, t_); });
      op([&] { dev_.add(x_, o_, static_cast<std::size_t>(T * h), t_); });
    }
  }

 private:
  void* make(int64_t rows, int64_t cols, float scale, std::vector<DeviceBuffer>* into = nullptr) {
    if (!into) into = &bufs_;
    into->push_back(dev_.alloc(static_cast<std::size_t>(rows * cols) * dtype_bytes(t_)));
    const FillSpec f = whole_tensor_fill(seed_++, scale, rows, cols);
    dev_.fill(into->back().get(), t_, f);
    return into->back().get();
  }

  CudaDevice& dev_;
  CheckShape s_;
  DType t_;
  int layers_;
  int64_t qkvw_ = 0, max_ctx_ = 0;
  uint64_t seed_ = 1;
  std::vector<DeviceBuffer> bufs_, kv_bufs_;
  std::vector<void*> w_, kv_;
  void *x_, *xn_, *qkv_, *att_, *o_, *gu_, *act_;
};

// Step time of `steps` steps (median), bracketed by one mark pair each.
double time_steps(CudaDevice& dev, Stack& st, bool prefill, int64_t batch, int64_t n, int steps);
// One step with every op stamped: per-op device time (kComputeOps entries, summed over the
// layers), and the stamped step's time in *stamped_step_s.
std::vector<double> op_breakdown(CudaDevice& dev, Stack& st, bool prefill, int64_t batch, int64_t n,
                                 int layers, double* stamped_step_s);

}  // namespace tpb
