// Host reference ops: slow, obvious loops (moved here from tests/gpu so that the GPU layer check
// and --check share one reference). Only parallel_rows makes them faster.
#include "layers/reference/ref_ops.h"

#include <algorithm>
#include <cmath>

#include "layers/reference/max_error.h"
#include "layers/reference/parallel_rows.h"

namespace tpb::ref {

namespace {

// Rows [i0, i0 + R) of y's column j. Each dot keeps four partial sums in double (lane q takes
// terms p = q mod 4, then (s0 + s1) + (s2 + s3)), so the result does not depend on R; R rows
// at once read each weight once for R dots.
template <int R, class T>
void dot_rows(const T* x, const float* wj, T* y, int64_t n, int64_t k) {
  double acc[R][4] = {};
  int64_t p = 0;
  for (; p + 4 <= k; p += 4)
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < 4; ++q) acc[r][q] += static_cast<double>(x[r * k + p + q]) * wj[p + q];
  for (; p < k; ++p)
    for (int r = 0; r < R; ++r) acc[r][p % 4] += static_cast<double>(x[r * k + p]) * wj[p];
  for (int r = 0; r < R; ++r)
    y[r * n] = static_cast<T>((acc[r][0] + acc[r][1]) + (acc[r][2] + acc[r][3]));
}

}  // namespace

template <class T>
void gemm(const std::vector<T>& x, const Vec& w, std::vector<T>& y, int64_t m, int64_t n, int64_t k,
          int threads) {
  y.assign(static_cast<std::size_t>(m * n), T{0});
  parallel_rows(n, threads, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      int64_t i = 0;
      for (; i + 4 <= m; i += 4) dot_rows<4>(&x[i * k], &w[j * k], &y[i * n + j], n, k);
      for (; i < m; ++i) dot_rows<1>(&x[i * k], &w[j * k], &y[i * n + j], n, k);
    }
  });
}

template <class T>
void rmsnorm(const std::vector<T>& x, const Vec& gamma, std::vector<T>& y, int64_t rows,
             int64_t dim, float eps, int threads) {
  y.resize(static_cast<std::size_t>(rows * dim));
  parallel_rows(rows, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
      const double inv = 1.0 / std::sqrt(ss / dim + eps);
      for (int64_t i = 0; i < dim; ++i)
        y[r * dim + i] = static_cast<T>(x[r * dim + i] * inv * gamma[i]);
    }
  });
}

// Rotate-half RoPE (the NeoX/Llama layout): pair (i, i + d/2) of each q and k head turns by
// pos * theta^(-2i/d); v is not rotated.
template <class T>
void rope(std::vector<T>& qkv, int64_t tokens, int64_t tokens_per_seq, int64_t pos0,
          const AttnShape& s, float theta, int threads) {
  const int64_t d = s.head_dim, half = d / 2;
  const int64_t stride = (s.q_heads + 2 * s.kv_heads) * d;
  parallel_rows(tokens, threads, [&](int64_t t0, int64_t t1) {
    std::vector<double> c(static_cast<std::size_t>(half)), sn(c.size());
    for (int64_t t = t0; t < t1; ++t) {
      const double pos = static_cast<double>(pos0 + t % tokens_per_seq);
      for (int64_t i = 0; i < half; ++i) {
        const double ang = pos * std::pow(static_cast<double>(theta), -2.0 * i / d);
        c[i] = std::cos(ang);
        sn[i] = std::sin(ang);
      }
      for (int64_t h = 0; h < s.q_heads + s.kv_heads; ++h) {  // q heads, then k heads
        T* v = &qkv[t * stride + h * d];
        for (int64_t i = 0; i < half; ++i) {
          const double x0 = v[i], x1 = v[i + half];
          v[i] = static_cast<T>(x0 * c[i] - x1 * sn[i]);
          v[i + half] = static_cast<T>(x1 * c[i] + x0 * sn[i]);
        }
      }
    }
  });
}

template <class T>
void kv_write(const std::vector<T>& qkv, std::vector<T>& k_cache, std::vector<T>& v_cache,
              int64_t tokens_per_seq, int64_t pos0, const AttnShape& s) {
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

// softmax(q . K[0..n) / sqrt(d)) V for one query row and one head; p is scratch.
template <class T>
void attend(const T* q, const std::vector<T>& kc, const std::vector<T>& vc, int64_t b, int64_t kh,
            int64_t n, const AttnShape& s, T* out, std::vector<double>& p) {
  const int64_t d = s.head_dim, w = s.kv_heads * d;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  p.resize(static_cast<std::size_t>(n));
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    const T* k = &kc[(b * s.max_ctx + j) * w + kh * d];
    double dot = 0;
    for (int64_t e = 0; e < d; ++e) dot += static_cast<double>(q[e]) * k[e];
    p[j] = dot * scale;
    mx = std::max(mx, p[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (p[j] = std::exp(p[j] - mx));
  for (int64_t e = 0; e < d; ++e) {
    double acc = 0;
    for (int64_t j = 0; j < n; ++j) acc += p[j] * vc[(b * s.max_ctx + j) * w + kh * d + e];
    out[e] = static_cast<T>(acc / sum);
  }
}

// Attention of `per_seq` query rows per sequence, one work item per (row, query head); GQA:
// query head h reads KV head h / group. Row i of a sequence sees cache positions [0, seen(i)):
// decode's one row all ctx_len of them, prefill's token i those up to itself.
template <class T, class Seen>
void attention_rows(const std::vector<T>& qkv, const std::vector<T>& k_cache,
                    const std::vector<T>& v_cache, std::vector<T>& out, int64_t per_seq,
                    const AttnShape& s, int threads, Seen seen) {
  const int64_t d = s.head_dim, stride = (s.q_heads + 2 * s.kv_heads) * d;
  const int64_t group = s.q_heads / s.kv_heads;
  out.assign(static_cast<std::size_t>(s.batch * per_seq * s.q_heads * d), T{0});
  parallel_rows(s.batch * per_seq * s.q_heads, threads, [&](int64_t i0, int64_t i1) {
    std::vector<double> p;
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t row = it / s.q_heads, h = it % s.q_heads;
      const int64_t b = row / per_seq, i = row % per_seq;
      attend(&qkv[row * stride + h * d], k_cache, v_cache, b, h / group, seen(i), s,
             &out[(row * s.q_heads + h) * d], p);
    }
  });
}

}  // namespace

template <class T>
void attention_decode(const std::vector<T>& qkv, const std::vector<T>& k_cache,
                      const std::vector<T>& v_cache, std::vector<T>& out, int64_t ctx_len,
                      const AttnShape& s, int threads) {
  attention_rows(qkv, k_cache, v_cache, out, 1, s, threads, [=](int64_t) { return ctx_len; });
}

template <class T>
void attention_prefill(const std::vector<T>& qkv, const std::vector<T>& k_cache,
                       const std::vector<T>& v_cache, std::vector<T>& out, int64_t seq,
                       const AttnShape& s, int threads) {
  attention_rows(qkv, k_cache, v_cache, out, seq, s, threads, [](int64_t i) { return i + 1; });
}

template <class T>
void swiglu(const std::vector<T>& gate_up, std::vector<T>& out, int64_t rows, int64_t inter,
            int threads) {
  out.resize(static_cast<std::size_t>(rows * inter));
  parallel_rows(rows, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < inter; ++i) {
        const double g = gate_up[r * 2 * inter + i], u = gate_up[r * 2 * inter + inter + i];
        out[r * inter + i] = static_cast<T>(g / (1.0 + std::exp(-g)) * u);
      }
  });
}

template <class T>
void add(std::vector<T>& x, const std::vector<T>& y) {
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

double normalized_max_error(const Vec& got, const Vec& want) {
  double err = 0, scale = 1e-6;
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) {
    err = worse_error(err, got[i], want[i]);
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  if (got.size() != want.size()) return INFINITY;
  return err / scale;
}

// The two activation types: fp32 (the GPU layer check) and fp64 (--check's stack reference).
#define TPB_REF_OPS(T)                                                                          \
  template void gemm(const std::vector<T>&, const Vec&, std::vector<T>&, int64_t, int64_t,      \
                     int64_t, int);                                                             \
  template void rmsnorm(const std::vector<T>&, const Vec&, std::vector<T>&, int64_t, int64_t,   \
                        float, int);                                                            \
  template void rope(std::vector<T>&, int64_t, int64_t, int64_t, const AttnShape&, float, int); \
  template void kv_write(const std::vector<T>&, std::vector<T>&, std::vector<T>&, int64_t,      \
                         int64_t, const AttnShape&);                                            \
  template void attention_decode(const std::vector<T>&, const std::vector<T>&,                  \
                                 const std::vector<T>&, std::vector<T>&, int64_t,               \
                                 const AttnShape&, int);                                        \
  template void attention_prefill(const std::vector<T>&, const std::vector<T>&,                 \
                                  const std::vector<T>&, std::vector<T>&, int64_t,              \
                                  const AttnShape&, int);                                       \
  template void swiglu(const std::vector<T>&, std::vector<T>&, int64_t, int64_t, int);          \
  template void add(std::vector<T>&, const std::vector<T>&);
TPB_REF_OPS(float)
TPB_REF_OPS(double)
#undef TPB_REF_OPS

}  // namespace tpb::ref
