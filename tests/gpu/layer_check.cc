// Per-op correctness of one TP=1 layer on the GPU against layers/reference/ref_ops, with the
// fused pairs (add_rmsnorm, rope_kv_write) checked on copies of the same inputs.
#include "tests/gpu/layer_check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "layers/reference/ref_ops.h"

namespace tpb {
namespace {

using ref::Vec;

float round_to(float v, DType t) {
  switch (t) {
    case DType::bf16:
      return __bfloat162float(__float2bfloat16_rn(v));
    case DType::fp16:
      return __half2float(__float2half_rn(v));
    default:
      return v;
  }
}

struct Tensor {
  DeviceBuffer buf;
  int64_t rows = 0, cols = 0;
  int64_t size() const { return rows * cols; }
};

Vec download(CudaDevice& dev, const void* src, int64_t n, DType t) {
  Vec v(static_cast<std::size_t>(n));
  dev.download(v.data(), src, v.size(), t);
  return v;
}

// A device copy through the host: every value is representable in t, so the copy is exact.
DeviceBuffer clone(CudaDevice& dev, const Vec& host, DType t) {
  DeviceBuffer b = dev.alloc(host.size() * dtype_bytes(t));
  dev.upload(b.get(), host.data(), host.size(), t);
  return b;
}

void round_all(Vec& v, DType t) {
  for (float& e : v) e = round_to(e, t);
}

struct Compared {
  const char* op;
  Vec got, want;
};

// add_rmsnorm on copies of x (rows x dim) and the given y, gamma: x against ref::add, xn
// against ref::rmsnorm of that sum rounded to t, as the op stores x before normalizing it.
std::vector<Compared> check_add_rmsnorm(CudaDevice& dev, const void* x, const void* y,
                                        const void* gamma, int64_t rows, int64_t dim, float eps,
                                        DType t) {
  const int64_t n = rows * dim;
  Vec want_x = download(dev, x, n, t), want_xn;
  const Vec in_y = download(dev, y, n, t), in_g = download(dev, gamma, dim, t);
  DeviceBuffer gx = clone(dev, want_x, t), gxn = clone(dev, Vec(want_x.size(), 0.f), t);
  dev.add_rmsnorm(gx.get(), y, gamma, gxn.get(), rows, dim, eps, t);
  ref::add(want_x, in_y);
  round_all(want_x, t);
  ref::rmsnorm(want_x, in_g, want_xn, rows, dim, eps);
  return {{"add_rmsnorm (x)", download(dev, gx.get(), n, t), want_x},
          {"add_rmsnorm (xn)", download(dev, gxn.get(), n, t), want_xn}};
}

// rope_kv_write on copies of qkv and the caches: qkv against ref::rope, the caches against
// ref::kv_write of the rotated rows rounded to t (what the op writes to qkv, then caches).
std::vector<Compared> check_rope_kv_write(CudaDevice& dev, const void* qkv, const void* k_cache,
                                          const void* v_cache, int64_t tokens, int64_t tps,
                                          int64_t pos0, const AttnShape& a, float theta, DType t) {
  const int64_t qkv_n = tokens * (a.q_heads + 2 * a.kv_heads) * a.head_dim;
  const int64_t cache_n = a.batch * a.max_ctx * a.kv_heads * a.head_dim;
  Vec want_qkv = download(dev, qkv, qkv_n, t);
  Vec want_k = download(dev, k_cache, cache_n, t), want_v = download(dev, v_cache, cache_n, t);
  DeviceBuffer gq = clone(dev, want_qkv, t), gk = clone(dev, want_k, t), gv = clone(dev, want_v, t);
  dev.rope_kv_write(gq.get(), gk.get(), gv.get(), tokens, tps, pos0, a, theta, t);
  ref::rope(want_qkv, tokens, tps, pos0, a, theta);
  Vec rotated = want_qkv;
  round_all(rotated, t);
  ref::kv_write(rotated, want_k, want_v, tps, pos0, a);
  return {{"rope_kv_write (qkv)", download(dev, gq.get(), qkv_n, t), want_qkv},
          {"rope_kv_write (k)", download(dev, gk.get(), cache_n, t), want_k},
          {"rope_kv_write (v)", download(dev, gv.get(), cache_n, t), want_v}};
}

}  // namespace

double check_tolerance(DType t) {
  switch (t) {
    case DType::fp32:
      return 5e-4;
    case DType::fp16:
      return 5e-3;
    default:
      return 1.5e-2;
  }
}

int64_t check_fill(CudaDevice& dev, DType t) {
  // A [4 x 10] block at (3, 5) of a [100 x 50] tensor, into a buffer with ld 12 at offset 7.
  FillSpec f{.seed = 42,
             .scale = 0.5f,
             .full_cols = 50,
             .row0 = 3,
             .rows = 4,
             .col0 = 5,
             .cols = 10,
             .dst_ld = 12,
             .dst_offset = 7};
  const int64_t n = 7 + 4 * 12;
  DeviceBuffer b = dev.alloc(static_cast<std::size_t>(n) * dtype_bytes(t));
  Vec sentinel(static_cast<std::size_t>(n), -7.0f);
  dev.upload(b.get(), sentinel.data(), sentinel.size(), t);
  dev.fill(b.get(), t, f);
  Vec got(static_cast<std::size_t>(n));
  dev.download(got.data(), b.get(), got.size(), t);
  int64_t bad = 0;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 12; ++j) {
      const float want = j < 10 ? round_to(fill_value(f, i, j), t) : -7.0f;  // padding untouched
      const float g = got[static_cast<std::size_t>(7 + i * 12 + j)];
      if (std::memcmp(&g, &want, sizeof(float)) != 0) ++bad;
    }
  return bad;
}

int check_layer(CudaDevice& dev, const CheckShape& s, bool prefill, int64_t batch, int64_t n,
                DType t) {
  const int64_t tps = prefill ? n : 1;
  const int64_t pos0 = prefill ? 0 : n;
  const int64_t ctx_len = prefill ? n : n + 1;
  const int64_t max_ctx = ctx_len + 5;  // slack so the cache stride differs from ctx_len
  const int64_t tokens = batch * tps;
  const int64_t h = s.hidden, I = s.inter, qd = s.q_heads * s.head_dim;
  const int64_t qkvw = (s.q_heads + 2 * s.kv_heads) * s.head_dim;
  const AttnShape a{batch, s.q_heads, s.kv_heads, s.head_dim, max_ctx};
  const float eps = 1e-5f, theta = 500000.0f;

  uint64_t seed = 1000;
  auto make = [&](int64_t rows, int64_t cols, float scale) {
    Tensor x{dev.alloc(static_cast<std::size_t>(rows * cols) * dtype_bytes(t)), rows, cols};
    const FillSpec f = whole_tensor_fill(seed++, scale, rows, cols);
    dev.fill(x.buf.get(), t, f);
    return x;
  };
  auto down = [&](const Tensor& x) {
    Vec v(static_cast<std::size_t>(x.size()));
    dev.download(v.data(), x.buf.get(), v.size(), t);
    return v;
  };
  // Weights scaled 1/sqrt(fan-in) keep activations O(1) through the layer.
  Tensor x = make(tokens, h, 1.0f), g1 = make(1, h, 1.0f), g2 = make(1, h, 1.0f);
  Tensor wqkv = make(qkvw, h, 1.0f / std::sqrt(float(h))),
         wo = make(h, qd, 1.0f / std::sqrt(float(qd)));
  Tensor wgu = make(2 * I, h, 1.0f / std::sqrt(float(h))),
         wd = make(h, I, 1.0f / std::sqrt(float(I)));
  Tensor kc = make(batch * max_ctx, s.kv_heads * s.head_dim, 1.0f);
  Tensor vc = make(batch * max_ctx, s.kv_heads * s.head_dim, 1.0f);
  Tensor xn = make(tokens, h, 0), qkv = make(tokens, qkvw, 0), att = make(tokens, qd, 0);
  Tensor o = make(tokens, h, 0), gu = make(tokens, 2 * I, 0), act = make(tokens, I, 0);

  int failed = 0;
  const double tol = check_tolerance(t);
  auto report = [&](const char* op, const Vec& got, const Vec& want) {
    const double e = ref::normalized_max_error(got, want);
    const bool ok = e <= tol;
    failed += ok ? 0 : 1;
    std::printf("    %-18s err %.2e (tol %.0e) %s\n", op, e, tol, ok ? "ok" : "FAIL");
  };
  Vec want, in0, in1, in2;

  in0 = down(x), in1 = down(g1);
  dev.rmsnorm(x.buf.get(), g1.buf.get(), xn.buf.get(), tokens, h, eps, t);
  ref::rmsnorm(in0, in1, want, tokens, h, eps);
  report("rmsnorm_attn", down(xn), want);

  in0 = down(xn), in1 = down(wqkv);
  dev.gemm(xn.buf.get(), wqkv.buf.get(), qkv.buf.get(), tokens, qkvw, h, t);
  ref::gemm(in0, in1, want, tokens, qkvw, h);
  report("qkv_proj", down(qkv), want);

  // The fused pairs run on copies of the unfused ops' inputs, so the unfused flow is unchanged.
  for (const Compared& c : check_rope_kv_write(dev, qkv.buf.get(), kc.buf.get(), vc.buf.get(),
                                               tokens, tps, pos0, a, theta, t))
    report(c.op, c.got, c.want);

  want = down(qkv);
  dev.rope(qkv.buf.get(), tokens, tps, pos0, a, theta, t);
  ref::rope(want, tokens, tps, pos0, a, theta);
  report("rope", down(qkv), want);

  in0 = down(qkv), in1 = down(kc), in2 = down(vc);
  dev.kv_write(qkv.buf.get(), kc.buf.get(), vc.buf.get(), tps, pos0, a, t);
  ref::kv_write(in0, in1, in2, tps, pos0, a);
  report("kv_write (k)", down(kc), in1);
  report("kv_write (v)", down(vc), in2);

  in0 = down(qkv), in1 = down(kc), in2 = down(vc);
  if (prefill) {
    dev.attention_prefill(qkv.buf.get(), kc.buf.get(), vc.buf.get(), att.buf.get(), n, a, t);
    ref::attention_prefill(in0, in1, in2, want, n, a);
  } else {
    dev.attention_decode(qkv.buf.get(), kc.buf.get(), vc.buf.get(), att.buf.get(), ctx_len, a, t);
    ref::attention_decode(in0, in1, in2, want, ctx_len, a);
  }
  report(prefill ? "attention_prefill" : "attention_decode", down(att), want);

  in0 = down(att), in1 = down(wo);
  dev.gemm(att.buf.get(), wo.buf.get(), o.buf.get(), tokens, h, qd, t);
  ref::gemm(in0, in1, want, tokens, h, qd);
  report("o_proj", down(o), want);

  for (const Compared& c :
       check_add_rmsnorm(dev, x.buf.get(), o.buf.get(), g2.buf.get(), tokens, h, eps, t))
    report(c.op, c.got, c.want);

  want = down(x), in1 = down(o);
  dev.add(x.buf.get(), o.buf.get(), static_cast<std::size_t>(tokens * h), t);
  ref::add(want, in1);
  report("residual_attn", down(x), want);

  in0 = down(x), in1 = down(g2);
  dev.rmsnorm(x.buf.get(), g2.buf.get(), xn.buf.get(), tokens, h, eps, t);
  ref::rmsnorm(in0, in1, want, tokens, h, eps);
  report("rmsnorm_mlp", down(xn), want);

  in0 = down(xn), in1 = down(wgu);
  dev.gemm(xn.buf.get(), wgu.buf.get(), gu.buf.get(), tokens, 2 * I, h, t);
  ref::gemm(in0, in1, want, tokens, 2 * I, h);
  report("gate_up_proj", down(gu), want);

  in0 = down(gu);
  dev.swiglu(gu.buf.get(), act.buf.get(), tokens, I, t);
  ref::swiglu(in0, want, tokens, I);
  report("swiglu", down(act), want);

  in0 = down(act), in1 = down(wd);
  dev.gemm(act.buf.get(), wd.buf.get(), o.buf.get(), tokens, h, I, t);
  ref::gemm(in0, in1, want, tokens, h, I);
  report("down_proj", down(o), want);

  want = down(x), in1 = down(o);
  dev.add(x.buf.get(), o.buf.get(), static_cast<std::size_t>(tokens * h), t);
  ref::add(want, in1);
  report("residual_mlp", down(x), want);

  dev.synchronize();
  return failed;
}

}  // namespace tpb
