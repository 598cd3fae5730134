// Grids and per-kernel work of the CUDA backend. Each function mirrors the loop bounds of its
// kernel in layers/cuda/*.cu; a change to a kernel's indexing changes the function beside it.
#include "layers/cuda/plan/launch_plan.h"

#include <algorithm>
#include <string>

#include "base/errors.h"
#include "layers/cuda/plan/sdpa_plan.h"

namespace tpb {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

// Grid-per-thread kernels: `threads` threads (an element, or a 16-byte chunk), 256 a block.
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

// Chunks of vector_elems(t) elements (16 bytes) in a row of n: the last may be partial.
int64_t chunks(int64_t n, DType t) {
  return ceil_div(n, vector_elems(t));
}

// The grid of rmsnorm_kernel and add_rmsnorm_kernel (rmsnorm.cu): threads per row (block.x)
// double from a warp until each keeps at most kRmsnormChunks chunks in registers. A warp per
// row packs kRmsnormThreads / 32 rows a block (block.y), so prefill's many short rows fill
// the GPU; a longer row gets a block, so B=1 decode is one block of a few warps.
KernelLaunch norm_launch(const char* name, int64_t rows, int64_t dim, DType t) {
  const int64_t c = chunks(dim, t);
  int64_t per_row = 32;
  while (per_row < kRmsnormMaxThreads && per_row * kRmsnormChunks < c) per_row *= 2;
  KernelLaunch k;
  k.kernel = name;
  k.block.x = per_row;
  k.block.y = per_row == 32 ? kRmsnormThreads / 32 : 1;
  k.grid.x = ceil_div(rows, k.block.y);
  return k;
}

void require_even_head_dim(int64_t head_dim) {
  require(head_dim % 2 == 0, "rope: head_dim must be even (got " + std::to_string(head_dim) + ")");
}

}  // namespace

KernelLaunch plan_fill(int64_t rows, int64_t cols, DType t) {
  KernelLaunch k = elementwise("fill_kernel", rows * cols);
  k.bytes_written = static_cast<double>(rows * cols) * dtype_bytes(t);
  return k;
}

KernelLaunch plan_rmsnorm(int64_t rows, int64_t dim, DType t) {
  // Each row reads x and gamma and writes y (gamma counted once: it is the same `dim`
  // elements for every row).
  KernelLaunch k = norm_launch("rmsnorm_kernel", rows, dim, t);
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

std::array<KernelLaunch, 3> plan_gemm_fp8(int64_t m, int64_t n, int64_t k_dim, DType act,
                                          int sm_count) {
  require(act == DType::bf16 || act == DType::fp16,
          std::string("--dtype: fp8 GEMMs take bf16 or fp16 inputs, not ") + dtype_name(act));
  const int64_t elems = m * k_dim, v = vector_elems(act);
  require(elems % v == 0 && k_dim % 16 == 0,
          "gemm_fp8: k must be a multiple of 16 (cuBLASLt's FP8 operands; got " +
              std::to_string(k_dim) + ")");
  const double xb = static_cast<double>(elems) * dtype_bytes(act), xq = static_cast<double>(elems);
  const int64_t grid = std::max<int64_t>(
      1, std::min<int64_t>(ceil_div(elems / v, kElementwiseThreads),
                           static_cast<int64_t>(sm_count) * kFp8QuantBlocksPerSm));
  KernelLaunch amax = elementwise("fp8_amax_kernel", 0);
  amax.grid.x = grid;
  amax.scratch_bytes = xb;  // a second read of x
  KernelLaunch quant = elementwise("fp8_quant_kernel", 0);
  quant.grid.x = grid;
  quant.bytes_read = xb;
  quant.scratch_bytes = xq;  // the e4m3 copy written
  KernelLaunch mm = plan_gemm(m, n, k_dim, DType::fp8);
  mm.kernel = "cublasLt_matmul_fp8";
  mm.bytes_read = static_cast<double>(n) * k_dim;  // the weights; x's read is the quant's
  mm.bytes_written = static_cast<double>(m) * n * dtype_bytes(act);
  mm.scratch_bytes = xq;  // the e4m3 copy read back
  return {amax, quant, mm};
}

KernelLaunch plan_rope(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                       DType t) {
  require_even_head_dim(head_dim);
  // One thread per chunk of a head's first half: it rotates those pairs (i, i + d/2) of every
  // q and k head in place.
  const int64_t pairs = tokens * (q_heads + kv_heads) * (head_dim / 2);
  KernelLaunch k =
      elementwise("rope_kernel", tokens * (q_heads + kv_heads) * chunks(head_dim / 2, t));
  const double bytes = 2.0 * pairs * dtype_bytes(t);
  k.bytes_read = bytes;
  k.bytes_written = bytes;
  return k;
}

KernelLaunch plan_kv_write(int64_t tokens, int64_t kv_heads, int64_t head_dim, DType t) {
  // One thread per (token, chunk of its kv_heads * head_dim) copies that chunk of k and of v.
  const int64_t n = tokens * kv_heads * head_dim;
  KernelLaunch k = elementwise("kv_write_kernel", tokens * chunks(kv_heads * head_dim, t));
  k.bytes_read = 2.0 * n * dtype_bytes(t);
  k.bytes_written = 2.0 * n * dtype_bytes(t);
  return k;
}

KernelLaunch plan_swiglu(int64_t rows, int64_t inter, DType t) {
  // One thread per (row, chunk of inter): a chunk of gate, the same chunk of up.
  const int64_t n = rows * inter;
  KernelLaunch k = elementwise("swiglu_kernel", rows * chunks(inter, t));
  k.bytes_read = 2.0 * n * dtype_bytes(t);  // gate and up
  k.bytes_written = static_cast<double>(n) * dtype_bytes(t);
  return k;
}

KernelLaunch plan_add(int64_t count, DType t) {
  KernelLaunch k = elementwise("add_kernel", chunks(count, t));
  k.bytes_read = 2.0 * count * dtype_bytes(t);
  k.bytes_written = static_cast<double>(count) * dtype_bytes(t);
  return k;
}

KernelLaunch plan_add_rmsnorm(int64_t rows, int64_t dim, DType t) {
  // add then rmsnorm would read x twice (the add's read, then the norm's read of its result);
  // the fused kernel keeps the sum in registers: x and y read once, gamma once, x and xn
  // written. Against plan_add + plan_rmsnorm: rows * dim elements fewer read, writes equal.
  KernelLaunch k = norm_launch("add_rmsnorm_kernel", rows, dim, t);
  const double b = dtype_bytes(t), n = static_cast<double>(rows) * dim;
  k.bytes_read = (2.0 * n + dim) * b;
  k.bytes_written = 2.0 * n * b;
  return k;
}

KernelLaunch plan_rope_kv_write(int64_t tokens, int64_t q_heads, int64_t kv_heads, int64_t head_dim,
                                DType t) {
  require_even_head_dim(head_dim);
  // One thread per chunk of a head's first half, over all q_heads + 2 kv_heads heads of a qkv
  // row: a q head's chunk pair is rotated in place; a k head's is rotated in place and written
  // to the k cache; a v head's is copied to the v cache. Every qkv element is read once
  // (rope + kv_write read k twice: rope's read and kv_write's read of the rotated k); writes
  // are rope's q and k plus kv_write's k and v, as unfused.
  const int64_t heads = q_heads + 2 * kv_heads;
  KernelLaunch k = elementwise("rope_kv_write_kernel", tokens * heads * chunks(head_dim / 2, t));
  const double b = dtype_bytes(t), row = static_cast<double>(tokens) * head_dim;
  k.bytes_read = row * heads * b;
  k.bytes_written = row * (q_heads + 3 * kv_heads) * b;
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

  // Enough splits to give every SM kDecodeBlocksPerSm blocks, but no chunk under
  // kDecodeMinChunk positions (the combine pass would cost more than it saves) and no more
  // scores than fit the shared memory (kDecodeScoreFloats).
  const int64_t max_chunk = std::max<int64_t>(32, (kDecodeScoreFloats / g) / 32 * 32);
  const int64_t base = batch * kv_heads;
  const int64_t want_splits = std::max<int64_t>(
      1, ceil_div(static_cast<int64_t>(kDecodeBlocksPerSm) * std::max(sm_count, 1), base));
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
  p.combine = plan_attention_combine(batch * q_heads, p.splits, head_dim, t);
  return p;
}

KernelLaunch plan_attention_combine(int64_t rows_x_heads, int64_t splits, int64_t head_dim,
                                    DType t) {
  KernelLaunch c;
  c.op = Op::attention;
  c.kernel = "attention_combine_kernel";
  c.grid.x = rows_x_heads;
  c.block.x = head_dim;
  c.bytes_written = static_cast<double>(rows_x_heads) * head_dim * dtype_bytes(t);
  c.scratch_bytes = static_cast<double>(rows_x_heads) * splits * (head_dim + 2) * 4;
  return c;
}

namespace {

// The largest query tile (halving from kPrefillQueryTile) whose fp32 scores fit
// kPrefillScoreBytes, all heads of a sequence per softmax pass if they fit, else one GEMM
// batch of heads per pass. Sets query_tile, heads_per_pass and workspace_bytes.
void choose_prefill_tile(PrefillPlan& p, int64_t q_heads, int64_t seq) {
  const double ld = static_cast<double>(prefill_score_ld(seq));  // the last tile's keys
  for (int64_t tq = kPrefillQueryTile; tq >= kPrefillMinQueryTile; tq /= 2) {
    for (int64_t heads : {q_heads, p.gemm_batch}) {
      const double bytes = static_cast<double>(heads * std::min(tq, seq)) * ld * 4;
      if (bytes > kPrefillScoreBytes) continue;
      p.query_tile = tq;
      p.heads_per_pass = heads;
      p.workspace_bytes = bytes;
      return;
    }
  }
  throw BadInput("attention: prefill of " + std::to_string(seq) + " tokens needs more than " +
                 std::to_string(static_cast<int64_t>(kPrefillScoreBytes)) +
                 " bytes of scores for " + std::to_string(kPrefillMinQueryTile) + " queries of " +
                 std::to_string(p.gemm_batch) + " heads");
}

// Query-key pairs per (sequence, head): the causal ones the cost model counts, and those the
// tiles compute, rows x q1 per tile. The excess is each tile's masked triangle rows(rows-1)/2.
struct PrefillPairs {
  double causal = 0, computed = 0;
};
PrefillPairs prefill_pairs(int64_t seq, int64_t tile) {
  PrefillPairs n;
  n.causal = static_cast<double>(seq) * (seq + 1) / 2.0;
  for (int64_t q0 = 0; q0 < seq; q0 += tile) {
    const int64_t q1 = std::min(seq, q0 + tile);
    n.computed += static_cast<double>(q1 - q0) * q1;
  }
  return n;
}

}  // namespace

PrefillPlan plan_attention_prefill(int64_t batch, int64_t q_heads, int64_t kv_heads,
                                   int64_t head_dim, int64_t seq, DType t) {
  require(kv_heads > 0 && q_heads % kv_heads == 0,
          "attention: q_heads (" + std::to_string(q_heads) + ") must be a multiple of kv_heads (" +
              std::to_string(kv_heads) + ")");
  require(head_dim > 0 && head_dim % 8 == 0,
          "attention: the cuda prefill needs head_dim a multiple of 8 (16-byte head rows; got " +
              std::to_string(head_dim) + ")");
  require(seq >= 1, "attention: prefill needs at least one token");
  PrefillPlan p;
  const int64_t g = q_heads / kv_heads;
  p.batch_over_group = g >= kv_heads;
  p.gemm_batch = p.batch_over_group ? g : kv_heads;
  choose_prefill_tile(p, q_heads, seq);
  p.tiles = ceil_div(seq, p.query_tile);

  const double b = dtype_bytes(t), heads = static_cast<double>(batch * q_heads);
  const PrefillPairs n = prefill_pairs(seq, p.query_tile);
  const double launches = static_cast<double>(batch * p.tiles);
  const double row = static_cast<double>(batch * seq) * head_dim * b;  // one head of every token
  // Per GEMM: 2d FLOPs per (head, pair). Q, K, V are each read once and the output written
  // once (DRAM-ideal, as the cost model counts); re-reads of K/V per tile are L2 traffic.
  KernelLaunch& s = p.scores;
  s.kernel = "cublasGemmStridedBatchedEx(QK^T)";
  s.grid.x = s.block.x = 0;  // cuBLAS picks its own grid
  s.launches = static_cast<int64_t>(launches) * (q_heads / p.gemm_batch);
  s.flops = 2.0 * head_dim * n.causal * heads;
  s.wasted_flops = 2.0 * head_dim * (n.computed - n.causal) * heads;
  s.bytes_read = row * (q_heads + kv_heads);
  s.scratch_bytes = n.computed * heads * 4;  // fp32 scores written
  KernelLaunch& m = p.softmax;
  m.kernel = "attention_prefill_softmax_kernel";
  m.grid = Dim3i{std::min<int64_t>(p.query_tile, seq), p.heads_per_pass, 1};  // a full tile
  m.block.x = kPrefillSoftmaxThreads;
  m.launches = static_cast<int64_t>(launches) * (q_heads / p.heads_per_pass);
  m.scratch_bytes = n.causal * heads * 4 + n.computed * heads * b;  // reads S, writes P over it
  KernelLaunch& v = p.values;
  v.kernel = "cublasGemmStridedBatchedEx(PV)";
  v.grid.x = v.block.x = 0;
  v.launches = s.launches;
  v.flops = s.flops;
  v.wasted_flops = s.wasted_flops;
  v.bytes_read = row * kv_heads;
  v.bytes_written = row * q_heads;
  v.scratch_bytes = n.computed * heads * b;  // P read
  return p;
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

  // Fused: layer 0's rmsnorm_attn is a plain rmsnorm and later layers' an add_rmsnorm; one
  // kernel either way, so the layer's plan takes the add_rmsnorm.
  add(Op::rmsnorm_attn, d.fused ? plan_add_rmsnorm(tokens, d.hidden, d.dtype)
                                : plan_rmsnorm(tokens, d.hidden, d.dtype));
  add(Op::qkv_proj, plan_gemm(tokens, qkv_width, d.hidden, d.dtype));
  if (d.fused) {
    add(Op::rope, plan_rope_kv_write(tokens, d.q_heads, d.kv_heads, d.head_dim, d.dtype));
  } else {
    add(Op::rope, plan_rope(tokens, d.q_heads, d.kv_heads, d.head_dim, d.dtype));
    add(Op::kv_write, plan_kv_write(tokens, d.kv_heads, d.head_dim, d.dtype));
  }
  if (sdpa_runs(d.attention, d.dtype)) {
    const int64_t cap = std::max(d.max_ctx, d.ctx_len);
    add(Op::attention,
        plan_attention_sdpa(
            d.prefill
                ? sdpa_prefill_layout(d.batch, d.q_heads, d.kv_heads, d.head_dim, cap, d.ctx_len)
                : sdpa_decode_layout(d.batch, d.q_heads, d.kv_heads, d.head_dim, cap, d.ctx_len),
            d.dtype));
  } else if (d.prefill) {
    const PrefillPlan p =
        plan_attention_prefill(d.batch, d.q_heads, d.kv_heads, d.head_dim, d.ctx_len, d.dtype);
    add(Op::attention, p.scores);
    add(Op::attention, p.softmax);
    add(Op::attention, p.values);
  } else {
    const DecodePlan p = plan_attention_decode(d.batch, d.q_heads, d.kv_heads, d.head_dim,
                                               d.ctx_len, d.dtype, d.sm_count);
    add(Op::attention, p.main);
    if (p.splits > 1) add(Op::attention, p.combine);
  }
  add(Op::o_proj, plan_gemm(tokens, d.hidden, d.q_heads * d.head_dim, d.dtype));
  all_reduce(Op::allreduce_attn);
  if (d.fused) {
    add(Op::rmsnorm_mlp, plan_add_rmsnorm(tokens, d.hidden, d.dtype));
  } else {
    add(Op::residual_attn, plan_add(tokens * d.hidden, d.dtype));
    add(Op::rmsnorm_mlp, plan_rmsnorm(tokens, d.hidden, d.dtype));
  }
  add(Op::gate_up_proj, plan_gemm(tokens, 2 * d.inter, d.hidden, d.dtype));
  add(Op::swiglu, plan_swiglu(tokens, d.inter, d.dtype));
  add(Op::down_proj, plan_gemm(tokens, d.hidden, d.inter, d.dtype));
  all_reduce(Op::allreduce_mlp);
  if (!d.fused) add(Op::residual_mlp, plan_add(tokens * d.hidden, d.dtype));
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
    t.wasted_flops += k.wasted_flops;
    if (!op_is_collective(k.op)) t.launches += k.launches;
  }
  return t;
}

}  // namespace tpb
