// Grids and per-kernel work of the CUDA backend. Each function mirrors the loop bounds of its
// kernel in layers/cuda/*.cu; a change to a kernel's indexing changes the function beside it.
#include "layers/cuda/plan/launch_plan.h"

#include <algorithm>
#include <string>

#include "layers/base/errors.h"

namespace tpb {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

// Grid-per-element kernels: one thread per output element (or pair), 256 threads a block.
KernelLaunch elementwise(const char* name, int64_t threads) {
  KernelLaunch k;
  k.kernel = name;
  k.block.x = kElementwiseThreads;
  k.grid.x = ceil_div(threads, kElementwiseThreads);
  return k;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw BadInput(what);
}

}  // namespace

KernelLaunch plan_fill(int64_t rows, int64_t cols, DType t) {
  KernelLaunch k = elementwise("fill_kernel", rows * cols);
  k.bytes_written = static_cast<double>(rows * cols) * dtype_bytes(t);
  return k;
}

KernelLaunch plan_rmsnorm(int64_t rows, int64_t dim, DType t) {
  // One block per row; each row reads x and gamma and writes y (gamma counted once: it is
  // the same `dim` elements for every row).
  KernelLaunch k;
  k.kernel = "rmsnorm_kernel";
  k.grid.x = rows;
  k.block.x = kRmsnormThreads;
  const double b = dtype_bytes(t);
  k.bytes_read = (static_cast<double>(rows) * dim + dim) * b;
  k.bytes_written = static_cast<double>(rows) * dim * b;
  return k;
}

KernelLaunch plan_gemm(int64_t m, int64_t n, int64_t k_dim, DType t) {
  // cuBLASLt picks its own grid; the work is y[m,n] = x[m,k] w[n,k]^T: 2mnk FLOPs, x and w
  // read once, y written once.
  KernelLaunch k;
  k.kernel = "cublasLt_matmul";
  k.grid.x = 0;
  k.block.x = 0;
  const double b = dtype_bytes(t);
  k.flops = 2.0 * m * n * k_dim;
  k.bytes_read = (static_cast<double>(m) * k_dim + static_cast<double>(n) * k_dim) * b;
  k.bytes_written = static_cast<double>(m) * n * b;
  return k;
}

KernelLaunch plan_rope(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                       DType t) {
  require(head_dim % 2 == 0, "rope: head_dim must be even (got " + std::to_string(head_dim) + ")");
  // One thread per rotated pair (i, i + d/2) of every q and k head, in place.
  const int64_t pairs = tokens * (q_heads + kv_heads) * (head_dim / 2);
  KernelLaunch k = elementwise("rope_kernel", pairs);
  const double bytes = 2.0 * pairs * dtype_bytes(t);
  k.bytes_read = bytes;
  k.bytes_written = bytes;
  return k;
}

KernelLaunch plan_kv_write(int64_t tokens, int64_t kv_heads, int64_t head_dim, DType t) {
  // One thread per (token, kv element) copies both k and v.
  const int64_t n = tokens * kv_heads * head_dim;
  KernelLaunch k = elementwise("kv_write_kernel", n);
  k.bytes_read = 2.0 * n * dtype_bytes(t);
  k.bytes_written = 2.0 * n * dtype_bytes(t);
  return k;
}

KernelLaunch plan_swiglu(int64_t rows, int64_t inter, DType t) {
  const int64_t n = rows * inter;
  KernelLaunch k = elementwise("swiglu_kernel", n);
  k.bytes_read = 2.0 * n * dtype_bytes(t);  // gate and up
  k.bytes_written = static_cast<double>(n) * dtype_bytes(t);
  return k;
}

KernelLaunch plan_add(int64_t count, DType t) {
  KernelLaunch k = elementwise("add_kernel", count);
  k.bytes_read = 2.0 * count * dtype_bytes(t);
  k.bytes_written = static_cast<double>(count) * dtype_bytes(t);
  return k;
}

DecodePlan plan_attention_decode(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                 int64_t ctx_len, DType t, int sm_count) {
  require(kv_heads > 0 && q_heads % kv_heads == 0,
          "attention: q_heads (" + std::to_string(q_heads) + ") must be a multiple of kv_heads (" +
              std::to_string(kv_heads) + ")");
  const int64_t g = q_heads / kv_heads;
  require(g <= kDecodeMaxGroup, "attention: the cuda decode kernel supports at most " +
                                    std::to_string(kDecodeMaxGroup) +
                                    " query heads per KV head (got " + std::to_string(g) + ")");
  require(head_dim % 32 == 0 && head_dim <= 256,
          "attention: the cuda kernels need head_dim a multiple of 32 up to 256 (got " +
              std::to_string(head_dim) + ")");
  require(ctx_len >= 1, "attention: decode needs at least one cached position");

  // Enough splits to give every SM two blocks, but no chunk under kDecodeMinChunk positions
  // (the combine pass would cost more than it saves) and no more scores than fit the shared
  // memory (kDecodeScoreFloats).
  const int64_t max_chunk = std::max<int64_t>(32, (kDecodeScoreFloats / g) / 32 * 32);
  const int64_t base = batch * kv_heads;
  const int64_t want_splits = std::max<int64_t>(1, ceil_div(2LL * std::max(sm_count, 1), base));
  int64_t chunk = ceil_div(ctx_len, want_splits);
  chunk = round_up(std::max<int64_t>(chunk, kDecodeMinChunk), 32);
  chunk = std::min({chunk, max_chunk, round_up(ctx_len, 32)});

  DecodePlan p;
  p.chunk = chunk;
  p.splits = ceil_div(ctx_len, chunk);
  const double b = dtype_bytes(t);
  const double out_bytes = static_cast<double>(batch) * q_heads * head_dim * b;

  KernelLaunch& k = p.main;
  k.kernel = "attention_decode_kernel";
  k.grid = Dim3i{p.splits, kv_heads, batch};
  k.block.x = kDecodeThreads;
  k.smem_bytes = static_cast<int64_t>(sizeof(float)) * (g * head_dim + g * chunk + 2 * g);
  // QK^T and PV: 2 FLOPs per multiply-add, each over head_dim, for every (query head, position).
  k.flops = 4.0 * batch * q_heads * ctx_len * head_dim;
  k.bytes_read = static_cast<double>(batch) * q_heads * head_dim * b +
                 2.0 * batch * ctx_len * kv_heads * head_dim * b;
  if (p.splits == 1) {
    k.bytes_written = out_bytes;
    return p;
  }
  // Partial state per (sequence, query head, split): head_dim accumulators, max and sum.
  p.workspace_bytes = static_cast<double>(batch) * q_heads * p.splits * (head_dim + 2) * 4;
  k.scratch_bytes = p.workspace_bytes;
  KernelLaunch& c = p.combine;
  c.op = Op::attention;
  c.kernel = "attention_decode_combine_kernel";
  c.grid.x = batch * q_heads;
  c.block.x = head_dim;
  c.bytes_written = out_bytes;
  c.scratch_bytes = p.workspace_bytes;
  return p;
}

KernelLaunch plan_attention_prefill(int64_t batch, int64_t q_heads, int64_t kv_heads,
                                    int64_t head_dim, int64_t seq, DType t) {
  require(kv_heads > 0 && q_heads % kv_heads == 0,
          "attention: q_heads (" + std::to_string(q_heads) + ") must be a multiple of kv_heads (" +
              std::to_string(kv_heads) + ")");
  require(head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256,
          "attention: the cuda prefill kernel supports head_dim 32, 64, 128 or 256 (got " +
              std::to_string(head_dim) + ")");
  KernelLaunch k;
  k.kernel = "attention_prefill_kernel";
  k.grid = Dim3i{ceil_div(seq, kPrefillQueries), q_heads, batch};
  k.block.x = head_dim;  // head_dim/32 threads per query, 32 queries
  k.smem_bytes = static_cast<int64_t>(sizeof(float)) * 2 * kPrefillKeys * head_dim;
  const double b = dtype_bytes(t);
  // Query i attends to keys 0..i: S(S+1)/2 pairs per (sequence, head), 4*d FLOPs each.
  const double pairs = static_cast<double>(seq) * (seq + 1) / 2.0;
  k.flops = 4.0 * batch * q_heads * head_dim * pairs;
  const double q_bytes = static_cast<double>(batch) * seq * q_heads * head_dim * b;
  k.bytes_read = q_bytes + 2.0 * batch * seq * kv_heads * head_dim * b;
  k.bytes_written = q_bytes;
  return k;
}

std::vector<KernelLaunch> layer_launch_plan(const LayerDims& d) {
  const int64_t tokens = d.batch * d.tokens_per_seq;
  const int64_t qkv_width = (d.q_heads + 2 * d.kv_heads) * d.head_dim;
  std::vector<KernelLaunch> plan;
  auto add = [&](Op op, KernelLaunch k) {
    k.op = op;
    plan.push_back(k);
  };
  auto all_reduce = [&](Op op) {
    if (d.tp <= 1) return;  // a single-rank group short-circuits
    KernelLaunch k;
    k.op = op;
    k.kernel = "ncclAllReduce";
    k.grid.x = 0;
    k.block.x = 0;
    k.comm_bytes = static_cast<double>(tokens) * d.hidden * dtype_bytes(d.dtype);
    plan.push_back(k);
  };

  add(Op::rmsnorm_attn, plan_rmsnorm(tokens, d.hidden, d.dtype));
  add(Op::qkv_proj, plan_gemm(tokens, qkv_width, d.hidden, d.dtype));
  add(Op::rope, plan_rope(tokens, d.q_heads, d.kv_heads, d.head_dim, d.dtype));
  add(Op::kv_write, plan_kv_write(tokens, d.kv_heads, d.head_dim, d.dtype));
  if (d.prefill) {
    add(Op::attention,
        plan_attention_prefill(d.batch, d.q_heads, d.kv_heads, d.head_dim, d.ctx_len, d.dtype));
  } else {
    const DecodePlan p = plan_attention_decode(d.batch, d.q_heads, d.kv_heads, d.head_dim,
                                               d.ctx_len, d.dtype, d.sm_count);
    add(Op::attention, p.main);
    if (p.splits > 1) add(Op::attention, p.combine);
  }
  add(Op::o_proj, plan_gemm(tokens, d.hidden, d.q_heads * d.head_dim, d.dtype));
  all_reduce(Op::allreduce_attn);
  add(Op::residual_attn, plan_add(tokens * d.hidden, d.dtype));
  add(Op::rmsnorm_mlp, plan_rmsnorm(tokens, d.hidden, d.dtype));
  add(Op::gate_up_proj, plan_gemm(tokens, 2 * d.inter, d.hidden, d.dtype));
  add(Op::swiglu, plan_swiglu(tokens, d.inter, d.dtype));
  add(Op::down_proj, plan_gemm(tokens, d.hidden, d.inter, d.dtype));
  all_reduce(Op::allreduce_mlp);
  add(Op::residual_mlp, plan_add(tokens * d.hidden, d.dtype));
  return plan;
}

PlanTotals plan_totals(const std::vector<KernelLaunch>& plan) {
  PlanTotals t;
  for (const KernelLaunch& k : plan) {
    t.flops += k.flops;
    t.bytes_read += k.bytes_read;
    t.bytes_written += k.bytes_written;
    t.scratch_bytes += k.scratch_bytes;
    t.comm_bytes += k.comm_bytes;
    if (!op_is_collective(k.op)) ++t.launches;
  }
  return t;
}

}  // namespace tpb
