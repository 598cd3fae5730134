// The CPU backend's mixed-step ops over a paged cache: attention against a double-precision
// reference written the plain way, on ragged batches (block_tokens 16 with positions crossing
// blocks, tables out of order, GQA group 2, long chunks, decodes and both side by side), and
// against the contiguous-cache ops on the batches those can express; rope and the KV write at
// each sequence's own positions; the local argmax's tie rule; the default that throws.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/errors.h"
#include "layers/cpu/cpu_device.h"
#include "tests/support/null_device.h"

namespace tpb {
namespace {

float value(int64_t i, int64_t salt) {
  const uint64_t h = (static_cast<uint64_t>(i) * 2654435761u + salt * 40503u) % 1000003u;
  return static_cast<float>(h) / 500001.5f - 1.0f;
}

// A ragged batch over a paged cache filled with values. Tables: `descending` hands blocks out
// from the top of the cache down, three apart (every run is one block); otherwise the n-th
// block handed out is n + n/2, so runs of two consecutive blocks alternate with gaps.
struct Paged {
  AttnShape a;
  KvLayout kv;
  StepBatch b;
  std::vector<float> qkv, k, v;
  int64_t row() const { return (a.q_heads + 2 * a.kv_heads) * a.head_dim; }
  int64_t kvw() const { return a.kv_heads * a.head_dim; }
  const float* k_at(const SeqSlice& s, int64_t p) const {
    return k.data() +
           (s.blocks[p / kv.block_tokens] * kv.block_tokens + p % kv.block_tokens) * kvw();
  }
  const float* v_at(const SeqSlice& s, int64_t p) const {
    return v.data() + (k_at(s, p) - k.data());
  }
};

Paged make_paged(const std::vector<std::pair<int64_t, int64_t>>& seqs, int64_t q_heads,
                 int64_t kv_heads, int64_t d, int64_t bt, bool descending) {
  Paged p;
  p.a = AttnShape{static_cast<int64_t>(seqs.size()), q_heads, kv_heads, d, 0};
  int64_t blocks = 0;
  for (const auto& s : seqs) blocks += (s.first + s.second + bt - 1) / bt;
  p.kv = KvLayout{blocks * 3, bt};
  int64_t n = 0;
  for (const auto& s : seqs) {
    SeqSlice sl{s.first, s.second, true, {}};
    for (int64_t k = 0; k < blocks_needed(sl, bt); ++k, ++n)
      sl.blocks.push_back(
          static_cast<int32_t>(descending ? p.kv.num_blocks - 1 - 3 * n : n + n / 2));
    p.b.seqs.push_back(sl);
  }
  p.qkv.resize(p.b.tokens() * p.row());
  p.k.resize(p.kv.num_blocks * bt * p.kvw());
  p.v.resize(p.k.size());
  for (std::size_t i = 0; i < p.qkv.size(); ++i) p.qkv[i] = value(i, 1);
  for (std::size_t i = 0; i < p.k.size(); ++i) p.k[i] = value(i, 2), p.v[i] = value(i, 3);
  return p;
}

// out[t, h, :] the plain way, in double: token j of sequence i sees positions [0, cached + j].
std::vector<double> reference(const Paged& p) {
  const int64_t d = p.a.head_dim, group = p.a.q_heads / p.a.kv_heads;
  std::vector<double> out(p.b.tokens() * p.a.q_heads * d);
  int64_t t = 0;
  for (const SeqSlice& s : p.b.seqs)
    for (int64_t j = 0; j < s.new_tokens; ++j, ++t)
      for (int64_t h = 0; h < p.a.q_heads; ++h) {
        const int64_t g = h / group, len = s.cached + j + 1;
        const float* q = p.qkv.data() + t * p.row() + h * d;
        std::vector<double> sc(len);
        double mx = -1e300, sum = 0;
        for (int64_t pos = 0; pos < len; ++pos) {
          double dot = 0;
          for (int64_t i = 0; i < d; ++i) dot += double(q[i]) * p.k_at(s, pos)[g * d + i];
          sc[pos] = dot / std::sqrt(double(d));
          mx = std::max(mx, sc[pos]);
        }
        for (double& x : sc) sum += (x = std::exp(x - mx));
        for (int64_t pos = 0; pos < len; ++pos)
          for (int64_t i = 0; i < d; ++i)
            out[(t * p.a.q_heads + h) * d + i] += sc[pos] / sum * p.v_at(s, pos)[g * d + i];
      }
  return out;
}

std::vector<float> run_varlen(Paged& p) {
  std::vector<float> out(p.b.tokens() * p.a.q_heads * p.a.head_dim, -7.0f), scratch;
  cpu_attention_varlen(p.qkv.data(), p.k.data(), p.v.data(), out.data(), p.b, p.kv, p.a, scratch);
  return out;
}

TEST(CpuAttentionVarlen, MatchesReferenceOnRaggedBatches) {
  using Seqs = std::vector<std::pair<int64_t, int64_t>>;  // (cached, new_tokens)
  const Seqs prefill{{0, 70}}, decode{{37, 1}, {100, 1}, {0, 1}, {16, 1}};
  const Seqs mixed{{0, 20}, {50, 1}, {17, 33}, {5, 1}, {31, 2}, {64, 65}};
  for (bool descending : {true, false})
    for (int64_t d : {64, 12})
      for (const Seqs* seqs : {&prefill, &decode, &mixed}) {
        Paged p = make_paged(*seqs, 4, 2, d, 16, descending);
        const std::vector<float> got = run_varlen(p);
        const std::vector<double> want = reference(p);
        for (std::size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-5) << "d " << d << " batch of " << seqs->size()
                                             << " seqs, descending " << descending << " at " << i;
      }
}

// The contiguous ops see the same cache through tables laid out as slots; GQA group 2.
TEST(CpuAttentionVarlen, EqualsContiguousDecodeAndPrefill) {
  const int64_t B = 3, q_heads = 4, kv_heads = 2, d = 64, bt = 16, max_ctx = 80;
  const int64_t kvw = kv_heads * d, row = (q_heads + 2 * kv_heads) * d;
  const AttnShape s{B, q_heads, kv_heads, d, max_ctx};
  std::vector<float> k(B * max_ctx * kvw), v(k.size()), scratch;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = value(i, 5), v[i] = value(i, 6);
  const KvLayout kv{B * max_ctx / bt, bt};
  struct Case {
    int64_t ctx, n;
  };
  for (const Case c : {Case{67, 1}, Case{0, 77}}) {
    const int64_t ctx = c.ctx, n = c.n;
    StepBatch b;
    for (int64_t i = 0; i < B; ++i) {
      SeqSlice sl{ctx, n, true, {}};
      for (int64_t j = 0; j < max_ctx / bt; ++j)
        sl.blocks.push_back(static_cast<int32_t>(i * max_ctx / bt + j));
      b.seqs.push_back(sl);
    }
    std::vector<float> qkv(B * n * row);
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = value(i, 7);
    std::vector<float> want(B * n * q_heads * d), got(want.size());
    if (n == 1)
      cpu_attention_decode(qkv.data(), k.data(), v.data(), want.data(), ctx + 1, s, scratch);
    else
      cpu_attention_prefill(qkv.data(), k.data(), v.data(), want.data(), n, s, scratch);
    cpu_attention_varlen(qkv.data(), k.data(), v.data(), got.data(), b, kv, s, scratch);
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5) << (n == 1 ? "decode" : "prefill") << " at " << i;
  }
}

TEST(CpuVarlen, RopeAndKvWriteAtEachSequencesPositions) {
  CpuDevice dev(DeviceOptions{});
  Paged p = make_paged({{5, 3}, {17, 1}, {0, 18}}, 4, 2, 16, 16, true);
  std::vector<float> want = p.qkv;
  int64_t t = 0;
  for (const SeqSlice& s : p.b.seqs) {
    dev.rope(want.data() + t * p.row(), s.new_tokens, s.new_tokens, s.cached, p.a, 10000.0f,
             DType::fp32);
    t += s.new_tokens;
  }
  dev.rope_varlen(p.qkv.data(), p.b, p.a, 10000.0f, DType::fp32);
  ASSERT_EQ(p.qkv, want);
  dev.kv_write_varlen(p.qkv.data(), p.k.data(), p.v.data(), p.b, p.kv, p.a, DType::fp32);
  t = 0;
  const int64_t qd = p.a.q_heads * p.a.head_dim;
  for (const SeqSlice& s : p.b.seqs)
    for (int64_t j = 0; j < s.new_tokens; ++j, ++t)
      for (int64_t i = 0; i < p.kvw(); ++i) {
        ASSERT_EQ(p.k_at(s, s.cached + j)[i], p.qkv[t * p.row() + qd + i]);
        ASSERT_EQ(p.v_at(s, s.cached + j)[i], p.qkv[t * p.row() + qd + p.kvw() + i]);
      }
}

TEST(CpuVarlen, RowArgmaxTiesGoToTheLowestColumn) {
  CpuDevice dev(DeviceOptions{});
  const std::vector<float> logits{1, 3, 3, 2, /**/ -5, -4, -4.5f, -4, /**/ 7, 7, 7, 7};
  float mx[3];
  int32_t col[3];
  dev.row_argmax(logits.data(), 3, 4, mx, col, DType::fp32);
  EXPECT_EQ(col[0], 1);
  EXPECT_EQ(col[1], 1);
  EXPECT_EQ(col[2], 0);
  EXPECT_EQ(mx[0], 3.0f);
  EXPECT_EQ(mx[1], -4.0f);
}

// A backend without the mixed ops: every one fails with the backend's name.
class NoMixedDevice final : public test::NullDevice {
 public:
  NoMixedDevice() { caps_.backend = "nomixed"; }
};

TEST(CpuVarlen, DefaultsThrowNamingTheBackend) {
  NoMixedDevice dev;
  const StepBatch b;
  const KvLayout kv;
  const AttnShape s;
  float f = 0;
  int32_t c = 0;
  const std::string want = "mixed steps are not implemented on the nomixed backend";
  auto expect = [&](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no throw";
    } catch (const BackendError& e) {
      EXPECT_EQ(e.what(), want);
    }
  };
  expect([&] { dev.rope_varlen(&f, b, s, 1.0f, DType::fp32); });
  expect([&] { dev.kv_write_varlen(&f, &f, &f, b, kv, s, DType::fp32); });
  expect([&] { dev.attention_varlen(&f, &f, &f, &f, b, kv, s, DType::fp32); });
  expect([&] { dev.row_argmax(&f, 1, 1, &f, &c, DType::fp32); });
}

}  // namespace
}  // namespace tpb
