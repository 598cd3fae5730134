// Decode attention against a double-precision reference written the plain way (per head:
// scores, softmax, weighted sum). The --check run cannot catch a wrong kernel on its own: the
// reference and the shards call the same one. The shapes reach every path: the four-stream
// loop (head_dim % 8 == 0) with ctx_len % 4 = 0..3 positions left over, the one-position loop
// for a head_dim that is not a multiple of 8, GQA groups of 1 and 4, and batch > 1.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "layers/cpu/cpu_device.h"

namespace tpb {
namespace {

float value(int64_t i, int64_t salt) {
  const uint64_t h = (static_cast<uint64_t>(i) * 2654435761u + salt * 40503u) % 1000003u;
  return static_cast<float>(h) / 500001.5f - 1.0f;
}

TEST(CpuAttentionDecode, MatchesReference) {
  struct Case {
    int64_t batch, q_heads, kv_heads, head_dim, max_ctx, ctx_len;
  };
  const Case cases[] = {{1, 4, 2, 64, 40, 32}, {2, 4, 2, 64, 40, 33}, {1, 8, 2, 16, 20, 18},
                        {2, 2, 2, 8, 12, 11},  {1, 4, 1, 12, 9, 9},   {1, 2, 1, 64, 4, 3},
                        {1, 2, 2, 8, 1, 1}};
  for (const Case& t : cases) {
    const AttnShape s{t.batch, t.q_heads, t.kv_heads, t.head_dim, t.max_ctx};
    const int64_t d = t.head_dim, kvw = t.kv_heads * d, row = (t.q_heads + 2 * t.kv_heads) * d;
    std::vector<float> qkv(t.batch * row), k(t.batch * t.max_ctx * kvw), v(k.size());
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = value(i, 1);
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = value(i, 2), v[i] = value(i, 3);
    std::vector<float> out(t.batch * t.q_heads * d, -7.0f), scratch;
    cpu_attention_decode(qkv.data(), k.data(), v.data(), out.data(), t.ctx_len, s, scratch);

    for (int64_t b = 0; b < t.batch; ++b)
      for (int64_t h = 0; h < t.q_heads; ++h) {
        const int64_t g = h / (t.q_heads / t.kv_heads);
        const float* q = qkv.data() + b * row + h * d;
        std::vector<double> sc(t.ctx_len);
        double mx = -1e300, sum = 0;
        for (int64_t p = 0; p < t.ctx_len; ++p) {
          const float* kp = k.data() + (b * t.max_ctx + p) * kvw + g * d;
          double dot = 0;
          for (int64_t i = 0; i < d; ++i) dot += double(q[i]) * kp[i];
          sc[p] = dot / std::sqrt(double(d));
          mx = std::max(mx, sc[p]);
        }
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int64_t i = 0; i < d; ++i) {
          double want = 0;
          for (int64_t p = 0; p < t.ctx_len; ++p)
            want += sc[p] / sum * v[(b * t.max_ctx + p) * kvw + g * d + i];
          ASSERT_NEAR(out[(b * t.q_heads + h) * d + i], want, 1e-5)
              << "batch " << t.batch << " heads " << t.q_heads << "/" << t.kv_heads << " d " << d
              << " ctx " << t.ctx_len << " at b " << b << " h " << h << " i " << i;
        }
      }
  }
}

// Prefill: row i of a sequence attends to positions 0..i. The shapes take one block and
// several (kPrefillBlock = 64 rows, with a short last block), GQA groups of 1, 2 and 4 (the
// heads of a group stacked into one GEMM), head dims 8 and 64, and batch > 1.
TEST(CpuAttentionPrefill, MatchesReference) {
  struct Case {
    int64_t batch, q_heads, kv_heads, head_dim, seq;
  };
  const Case cases[] = {
      {1, 2, 2, 8, 1}, {1, 4, 2, 64, 7}, {2, 4, 1, 16, 65}, {1, 8, 2, 64, 130}, {2, 2, 1, 8, 64}};
  for (const Case& t : cases) {
    const int64_t max_ctx = t.seq + 3;
    const AttnShape s{t.batch, t.q_heads, t.kv_heads, t.head_dim, max_ctx};
    const int64_t d = t.head_dim, kvw = t.kv_heads * d, row = (t.q_heads + 2 * t.kv_heads) * d;
    const int64_t group = t.q_heads / t.kv_heads, ow = t.q_heads * d;
    std::vector<float> qkv(t.batch * t.seq * row), k(t.batch * max_ctx * kvw), v(k.size());
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = value(i, 4);
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = value(i, 5), v[i] = value(i, 6);
    std::vector<float> out(t.batch * t.seq * ow, -7.0f), scratch;
    cpu_attention_prefill(qkv.data(), k.data(), v.data(), out.data(), t.seq, s, scratch);

    for (int64_t b = 0; b < t.batch; ++b)
      for (int64_t i = 0; i < t.seq; ++i)
        for (int64_t h = 0; h < t.q_heads; ++h) {
          const float* q = qkv.data() + (b * t.seq + i) * row + h * d;
          const float* kb = k.data() + b * max_ctx * kvw + (h / group) * d;
          const float* vb = v.data() + b * max_ctx * kvw + (h / group) * d;
          std::vector<double> sc(i + 1);
          double mx = -1e300, sum = 0;
          for (int64_t p = 0; p <= i; ++p) {
            double dot = 0;
            for (int64_t c = 0; c < d; ++c) dot += double(q[c]) * kb[p * kvw + c];
            sc[p] = dot / std::sqrt(double(d));
            mx = std::max(mx, sc[p]);
          }
          for (double& x : sc) sum += (x = std::exp(x - mx));
          for (int64_t c = 0; c < d; ++c) {
            double want = 0;
            for (int64_t p = 0; p <= i; ++p) want += sc[p] / sum * vb[p * kvw + c];
            ASSERT_NEAR(out[(b * t.seq + i) * ow + h * d + c], want, 1e-5)
                << "batch " << t.batch << " heads " << t.q_heads << "/" << t.kv_heads << " d " << d
                << " seq " << t.seq << " at b " << b << " row " << i << " h " << h << " c " << c;
          }
        }
  }
}

}  // namespace
}  // namespace tpb
