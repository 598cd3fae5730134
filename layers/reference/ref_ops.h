// Plain host reference of the Device ops, written from their semantics in layers/device.h:
// obvious loops, every sum and every transcendental in double. T is the activations' type:
// float for the GPU layer check (tests/gpu: each op's output rounded to fp32, as a device
// stores it), double for --check's whole-stack reference (stack_reference.h). Weights and
// gammas are float: fill_hash values, and their bf16/fp16 roundings, are exact in fp32.
// Shapes as in AttnShape. `threads` 0 means the host's (parallel_rows.h).
#pragma once
#include <cstdint>
#include <vector>

#include "layers/device.h"

namespace tpb::ref {

using Vec = std::vector<float>;

// y[m,n] = x[m,k] w[n,k]^T; the weight rows are split over the threads (m is often 1).
template <class T>
void gemm(const std::vector<T>& x, const Vec& w, std::vector<T>& y, int64_t m, int64_t n, int64_t k,
          int threads = 0);
template <class T>
void rmsnorm(const std::vector<T>& x, const Vec& gamma, std::vector<T>& y, int64_t rows,
             int64_t dim, float eps, int threads = 0);
template <class T>
void rope(std::vector<T>& qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0,
          const AttnShape& s, float theta, int threads = 0);
template <class T>
void kv_write(const std::vector<T>& qkv, std::vector<T>& k_cache, std::vector<T>& v_cache,
              int64_t tokens_per_seq, int64_t pos0, const AttnShape& s);
template <class T>
void attention_decode(const std::vector<T>& qkv, const std::vector<T>& k_cache,
                      const std::vector<T>& v_cache, std::vector<T>& out, int64_t ctx_len,
                      const AttnShape& s, int threads = 0);
template <class T>
void attention_prefill(const std::vector<T>& qkv, const std::vector<T>& k_cache,
                       const std::vector<T>& v_cache, std::vector<T>& out, int64_t seq,
                       const AttnShape& s, int threads = 0);
template <class T>
void swiglu(const std::vector<T>& gate_up, std::vector<T>& out, int64_t rows, int64_t inter,
            int threads = 0);
template <class T>
void add(std::vector<T>& x, const std::vector<T>& y);

// max |a - b| / max(max |b|, 1e-6): the error relative to the reference's scale.
double normalized_max_error(const Vec& got, const Vec& want);

}  // namespace tpb::ref
