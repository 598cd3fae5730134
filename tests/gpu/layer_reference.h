// Plain fp32 host reference of the Device ops (double accumulation), written from the
// semantics in layers/device.h, for the GPU device check. Shapes as in AttnShape.
#pragma once
#include <cstdint>
#include <vector>

#include "layers/device.h"

namespace tpb::ref {

using Vec = std::vector<float>;

// y[m,n] = x[m,k] w[n,k]^T, rows split over the host's threads.
void gemm(const Vec& x, const Vec& w, Vec& y, int64_t m, int64_t n, int64_t k);
void rmsnorm(const Vec& x, const Vec& gamma, Vec& y, int64_t rows, int64_t dim, float eps);
void rope(Vec& qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0, const AttnShape& s,
          float theta);
void kv_write(const Vec& qkv, Vec& k_cache, Vec& v_cache, int64_t tokens_per_seq, int64_t pos0,
              const AttnShape& s);
void attention_decode(const Vec& qkv, const Vec& k_cache, const Vec& v_cache, Vec& out,
                      int64_t ctx_len, const AttnShape& s);
void attention_prefill(const Vec& qkv, const Vec& k_cache, const Vec& v_cache, Vec& out,
                       int64_t seq, const AttnShape& s);
void swiglu(const Vec& gate_up, Vec& out, int64_t rows, int64_t inter);
void add(Vec& x, const Vec& y);

// max |a - b| / max(max |b|, 1e-6): the error relative to the reference's scale.
double normalized_max_error(const Vec& got, const Vec& want);

}  // namespace tpb::ref
