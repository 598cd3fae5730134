// Host reference ops for the GPU device check: slow, obvious loops.
#include "tests/gpu/layer_reference.h"

#include <algorithm>
#include <cmath>
#include <thread>

namespace tpb::ref {

void gemm(const Vec& x, const Vec& w, Vec& y, int64_t m, int64_t n, int64_t k) {
  y.assign(static_cast<std::size_t>(m * n), 0.f);
  const int64_t nt = std::max(1u, std::thread::hardware_concurrency());
  auto work = [&](int64_t t) {
    // Columns are split (m is often 1 in decode), each dot in double.
    for (int64_t j = t; j < n; j += nt)
      for (int64_t i = 0; i < m; ++i) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(x[i * k + p]) * w[j * k + p];
        y[i * n + j] = static_cast<float>(acc);
      }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < nt; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
}

void rmsnorm(const Vec& x, const Vec& gamma, Vec& y, int64_t rows, int64_t dim, float eps) {
  y.resize(static_cast<std::size_t>(rows * dim));
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i)
      y[r * dim + i] = static_cast<float>(x[r * dim + i] * inv * gamma[i]);
  }
}

void rope(Vec& qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0, const AttnShape& s,
          float theta) {
  const int64_t d = s.head_dim, half = d / 2;
  const int64_t stride = (s.q_heads + 2 * s.kv_heads) * d;
  for (int64_t t = 0; t < tokens; ++t) {
    const double pos = static_cast<double>(pos0 + t % tokens_per_seq);
    for (int64_t h = 0; h < s.q_heads + s.kv_heads; ++h) {  // q heads, then k heads
      float* v = &qkv[t * stride + h * d];
      for (int64_t i = 0; i < half; ++i) {
        const double ang = pos * std::pow(static_cast<double>(theta), -2.0 * i / d);
        const double c = std::cos(ang), sn = std::sin(ang);
        const double x0 = v[i], x1 = v[i + half];
        v[i] = static_cast<float>(x0 * c - x1 * sn);
        v[i + half] = static_cast<float>(x1 * c + x0 * sn);
      }
    }
  }
}

void kv_write(const Vec& qkv, Vec& k_cache, Vec& v_cache, int64_t tokens_per_seq, int64_t pos0,
              const AttnShape& s) {
  const int64_t d = s.head_dim, w = s.kv_heads * d;
  const int64_t stride = (s.q_heads + 2 * s.kv_heads) * d;
  for (int64_t t = 0; t < s.batch * tokens_per_seq; ++t) {
    const int64_t b = t / tokens_per_seq, pos = pos0 + t % tokens_per_seq;
    for (int64_t e = 0; e < w; ++e) {
      k_cache[(b * s.max_ctx + pos) * w + e] = qkv[t * stride + s.q_heads * d + e];
      v_cache[(b * s.max_ctx + pos) * w + e] = qkv[t * stride + (s.q_heads + s.kv_heads) * d + e];
    }
  }
}

namespace {

// softmax(q . K[0..n) / sqrt(d)) V for one query row and one head.
void attend(const float* q, const Vec& kc, const Vec& vc, int64_t b, int64_t kh, int64_t n,
            const AttnShape& s, float* out) {
  const int64_t d = s.head_dim, w = s.kv_heads * d;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> p(static_cast<std::size_t>(n));
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const float* k = &kc[(b * s.max_ctx + j) * w + kh * d];
    double dot = 0;
    for (int64_t e = 0; e < d; ++e) dot += static_cast<double>(q[e]) * k[e];
    p[j] = dot * scale;
    mx = std::max(mx, p[j]);
  }
  double sum = 0;
  for (auto& v : p) sum += (v = std::exp(v - mx));
  for (int64_t e = 0; e < d; ++e) {
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) acc += p[j] * vc[(b * s.max_ctx + j) * w + kh * d + e];
    out[e] = static_cast<float>(acc / sum);
  }
}

}  // namespace

void attention_decode(const Vec& qkv, const Vec& k_cache, const Vec& v_cache, Vec& out,
                      int64_t ctx_len, const AttnShape& s) {
  const int64_t d = s.head_dim, stride = (s.q_heads + 2 * s.kv_heads) * d;
  const int64_t group = s.q_heads / s.kv_heads;
  out.assign(static_cast<std::size_t>(s.batch * s.q_heads * d), 0.f);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.q_heads; ++h)
      attend(&qkv[b * stride + h * d], k_cache, v_cache, b, h / group, ctx_len, s,
             &out[(b * s.q_heads + h) * d]);
}

void attention_prefill(const Vec& qkv, const Vec& k_cache, const Vec& v_cache, Vec& out,
                       int64_t seq, const AttnShape& s) {
  const int64_t d = s.head_dim, stride = (s.q_heads + 2 * s.kv_heads) * d;
  const int64_t group = s.q_heads / s.kv_heads;
  out.assign(static_cast<std::size_t>(s.batch * seq * s.q_heads * d), 0.f);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t h = 0; h < s.q_heads; ++h)
        attend(&qkv[(b * seq + i) * stride + h * d], k_cache, v_cache, b, h / group, i + 1, s,
               &out[((b * seq + i) * s.q_heads + h) * d]);
}

void swiglu(const Vec& gate_up, Vec& out, int64_t rows, int64_t inter) {
  out.resize(static_cast<std::size_t>(rows * inter));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < inter; ++i) {
      const double g = gate_up[r * 2 * inter + i], u = gate_up[r * 2 * inter + inter + i];
      out[r * inter + i] = static_cast<float>(g / (1.0 + std::exp(-g)) * u);
    }
}

void add(Vec& x, const Vec& y) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

double normalized_max_error(const Vec& got, const Vec& want) {
  double err = 0, scale = 1e-6;
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  if (got.size() != want.size()) return INFINITY;
  return err / scale;
}

}  // namespace tpb::ref
