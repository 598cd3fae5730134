// The cost model: FLOPs, bytes and all-reduce volume of one TP transformer layer step per rank.
// Reporters (MBU/MFU/ceilings), the model backend's virtual clock and tests all read these numbers.
//
// Notation (all per rank, all doubles so that large shapes cannot overflow int64):
//   B  batch (sequences)             S  tokens per sequence this step (1 decode, prompt prefill)
//   T  = B*S tokens in the step      C  context: cached tokens a decode token attends to
//   h  hidden   d  head_dim
//   ew, ea, ekv, ear  bytes of an element of the weights, the activations, the KV cache and the
//                     all-reduce payload (base/dtype.h DTypes: at --dtype fp8, ew = 1 and the
//                     others 2 unless --kv-dtype says otherwise; at any other dtype all equal)
//   hq, hkv, I  local query heads, local KV heads, local MLP width (shard_shape)
// A GEMM [T x K] x [K x N] costs 2*T*K*N FLOPs (one multiply + one add per MAC), reads its
// K*N weights once (ew each) and T*K activations once, and writes T*N outputs (ea each).
#include "layers/cost_model.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "base/errors.h"

namespace tpb {
namespace {

struct Dims {
  double B = 0, S = 0, T = 0, C = 0;
  double h = 0, d = 0;
  double ew = 0, ea = 0, ekv = 0, ear = 0;
  double hq = 0, hkv = 0, I = 0;
  double layers = 0;
  int tp = 1;
};

// Validates the query (BadInput naming the CLI field) and resolves it into doubles.
Dims resolve(const CostQuery& q) {
  if (q.batch < 1) throw BadInput("--batch: must be >= 1 (got " + std::to_string(q.batch) + ")");
  if (q.phase == Phase::decode && q.context < 0)
    throw BadInput("--context: must be >= 0 (got " + std::to_string(q.context) + ")");
  if (q.phase == Phase::prefill && q.prompt < 1)
    throw BadInput("--prompt: must be >= 1 (got " + std::to_string(q.prompt) + ")");
  if (q.layers < 0) throw BadInput("--layers: must be >= 0 (got " + std::to_string(q.layers) + ")");
  const ShardShape s = shard_shape(q.shape, q.tp);
  Dims x;
  x.B = static_cast<double>(q.batch);
  x.S = static_cast<double>(tokens_per_step(q));
  x.T = x.B * x.S;
  x.C = q.phase == Phase::decode ? static_cast<double>(q.context) : 0.0;
  x.h = static_cast<double>(q.shape.hidden);
  x.d = static_cast<double>(q.shape.head_dim);
  const DTypes t = q.dtypes();
  x.ew = static_cast<double>(dtype_bytes(t.weights));
  x.ea = static_cast<double>(dtype_bytes(t.activations));
  x.ekv = static_cast<double>(dtype_bytes(t.kv));
  x.ear = static_cast<double>(dtype_bytes(t.allreduce));
  x.hq = static_cast<double>(s.q_heads);
  x.hkv = static_cast<double>(s.kv_heads);
  x.I = static_cast<double>(s.inter);
  x.layers = static_cast<double>(q.layers == 0 ? q.shape.n_layers : q.layers);
  x.tp = q.tp;
  return x;
}

// A GEMM of T tokens from width k to width n: 2*T*k*n FLOPs, k*n weights, T*k in, T*n out.
OpCost gemm(Op op, const Dims& x, double k, double n) {
  OpCost c;
  c.op = op;
  c.flops = 2 * x.T * k * n;
  c.weight_bytes = k * n * x.ew;
  c.bytes_read = c.weight_bytes + x.T * k * x.ea;
  c.bytes_written = x.T * n * x.ea;
  return c;
}

// Elementwise op: no FLOPs by the MFU convention (see cost_model.h), bytes only.
OpCost elementwise(Op op, double read, double written) {
  OpCost c;
  c.op = op;
  c.bytes_read = read;
  c.bytes_written = written;
  return c;
}

OpCost attention(const CostQuery& q, const Dims& x) {
  OpCost c;
  c.op = Op::attention;
  const double qkv_row = x.d * x.ea;  // one head of one token: Q and the output
  const double kv_row = x.d * x.ekv;  // one head of one token in the cache
  if (q.phase == Phase::decode) {
    // Each of the B new tokens has hq query heads; each head attends to P = C + 1 positions
    // (C cached + its own K/V, written by kv_write just before). Per (head, position):
    // q.k is d MACs and p*v is d MACs -> 2d MACs = 4d FLOPs. Total 4 * B * hq * d * P.
    const double P = x.C + 1;
    c.flops = 4 * x.B * x.hq * x.d * P;
    // The whole cached K and V for the local KV heads are streamed once per sequence (GQA heads
    // sharing a KV head reuse it from on-chip memory): B * P * 2 * hkv * d * ekv.
    c.kv_read_bytes = x.B * P * 2 * x.hkv * kv_row;
    c.bytes_read = c.kv_read_bytes + x.B * x.hq * qkv_row;  // + the new queries
    c.bytes_written = x.B * x.hq * qkv_row;                 // one output row per query head
  } else {
    // Causal prefill over S tokens: query i sees positions 0..i, so the pairs per sequence and
    // head are sum_{i=1..S} i = S(S+1)/2, each 4d FLOPs as above (no masked-out work counted).
    c.flops = 4 * x.d * x.hq * x.B * x.S * (x.S + 1) / 2;
    // Flash-style: Q, K, V each read once, output written once, and the S x S score matrix
    // never reaches device memory. K and V are read from the cache kv_write just filled (as
    // the CPU and CUDA backends do), so they are KV-cache reads at ekv.
    c.kv_read_bytes = x.T * 2 * x.hkv * kv_row;
    c.bytes_read = c.kv_read_bytes + x.T * x.hq * qkv_row;
    c.bytes_written = x.T * x.hq * qkv_row;
  }
  return c;
}

}  // namespace

const char* phase_name(Phase p) {
  static constexpr std::array<const char*, 2> kNames{"decode", "prefill"};
  return enum_name(kNames, p);
}

int64_t tokens_per_step(const CostQuery& q) {
  return q.phase == Phase::decode ? 1 : q.prompt;
}

OpCost op_cost(const CostQuery& q, Op op) {
  const Dims x = resolve(q);
  const double act = x.T * x.h * x.ea;  // one hidden-wide activation tensor [T x h]
  switch (op) {
    case Op::rmsnorm_attn:
    case Op::rmsnorm_mlp: {
      // Read x and the h-wide gamma (a weight, kept at ea: FP8 checkpoints quantise only the
      // GEMM matrices), write the normalised x.
      OpCost c = elementwise(op, act + x.h * x.ea, act);
      c.weight_bytes = x.h * x.ea;
      return c;
    }
    case Op::qkv_proj:
      // Column-parallel: h -> (hq + 2*hkv) * d local outputs (Q, then K and V).
      return gemm(op, x, x.h, (x.hq + 2 * x.hkv) * x.d);
    case Op::rope: {
      // Rotates the local q and k heads in place: read and write T * (hq + hkv) * d.
      const double qk = x.T * (x.hq + x.hkv) * x.d * x.ea;
      return elementwise(op, qk, qk);
    }
    case Op::kv_write: {
      // Copies this step's T tokens of K and V (hkv heads each) from the QKV output (ea) into
      // the cache (ekv: an fp8 cache is written quantised).
      const double kv = x.T * 2 * x.hkv * x.d;
      OpCost c = elementwise(op, kv * x.ea, kv * x.ekv);
      c.kv_write_bytes = c.bytes_written;
      return c;
    }
    case Op::attention:
      return attention(q, x);
    case Op::o_proj:
      // Row-parallel: the local hq * d slice -> a partial h-wide sum, completed by all-reduce.
      return gemm(op, x, x.hq * x.d, x.h);
    case Op::allreduce_attn:
    case Op::allreduce_mlp: {
      // Priced as communication in StepCost::comm, not as device compute or memory traffic.
      OpCost c;
      c.op = op;
      return c;
    }
    case Op::residual_attn:
    case Op::residual_mlp:
      // x + y: read two [T x h], write one.
      return elementwise(op, 2 * act, act);
    case Op::gate_up_proj:
      // Column-parallel, gate and up fused: h -> 2I local outputs.
      return gemm(op, x, x.h, 2 * x.I);
    case Op::swiglu:
      // silu(gate) * up: read [T x 2I], write [T x I].
      return elementwise(op, x.T * 2 * x.I * x.ea, x.T * x.I * x.ea);
    case Op::down_proj:
      // Row-parallel: I -> a partial h-wide sum, completed by all-reduce.
      return gemm(op, x, x.I, x.h);
    case Op::final_norm:
    case Op::lm_head:
    case Op::sample_gather:
    case Op::sample:
    case Op::compute:
    case Op::injected:
    case Op::step:
    case Op::count:
      break;
  }
  // Not layer ops: a serving step's end is priced by mixed_step_cost (its rows are the sampled
  // ones, which a CostQuery does not know); injected work and step bounds declare no work.
  OpCost c;
  c.op = op;
  return c;
}

namespace {

// Adds one op's cost `times` over: the layers for a layer op, once for a tail op.
void accumulate(StepCost& s, const OpCost& c, double times) {
  s.flops += c.flops * times;
  s.bytes_read += c.bytes_read * times;
  s.bytes_written += c.bytes_written * times;
  s.weight_bytes += c.weight_bytes * times;
  s.kv_read_bytes += c.kv_read_bytes * times;
  s.kv_write_bytes += c.kv_write_bytes * times;
}

// The layers' ops, given one layer's, and their all-reduces. Two per layer (after o_proj and
// after down_proj), each summing the partial [T x h] outputs of the tp ranks: T * h * ear bytes
// (bf16 under fp8 weights, as FP8 serving engines reduce). A group of one needs no collective
// (Megatron short-circuit).
StepCost layer_stack(const Dims& x, std::vector<OpCost> layer_ops) {
  StepCost s;
  s.tokens = x.T;
  s.layers = x.layers;
  for (const OpCost& c : layer_ops) accumulate(s, c, x.layers);
  s.layer_ops = std::move(layer_ops);
  if (x.tp > 1) {
    const double payload = x.T * x.h * x.ear;
    const auto n = static_cast<int64_t>(x.layers);
    for (int64_t l = 0; l < n; ++l) {
      s.comm.push_back(CommOp{"all_reduce", Op::allreduce_attn, payload, x.tp});
      s.comm.push_back(CommOp{"all_reduce", Op::allreduce_mlp, payload, x.tp});
      s.comm_bytes += 2 * payload;
    }
  }
  return s;
}

void finish(StepCost& s) {
  s.activation_bytes =
      s.bytes_read + s.bytes_written - s.weight_bytes - s.kv_read_bytes - s.kv_write_bytes;
}

}  // namespace

namespace {

// A mixed step's per-token ops depend on T alone, so a prefill query of one sequence of T
// tokens prices them; attention is priced per sequence instead (mixed_attention).
CostQuery mixed_query(const ModelShape& m, int tp, const DTypes& t, int64_t layers,
                      const StepBatch& b) {
  if (b.seqs.empty()) throw BadInput("step batch: no sequences");
  for (std::size_t i = 0; i < b.seqs.size(); ++i)
    if (b.seqs[i].new_tokens < 1 || b.seqs[i].cached < 0)
      throw BadInput("step batch: sequence " + std::to_string(i) +
                     " needs new_tokens >= 1 and cached >= 0");
  CostQuery q;
  q.shape = m;
  q.phase = Phase::prefill;
  q.batch = 1;
  q.prompt = b.tokens();
  q.tp = tp;
  q.dtype = t.weights;
  q.kv_dtype = t.kv;
  q.layers = layers;
  return q;
}

// Attention of a mixed step, sequence by sequence. A sequence with c cached positions and n
// new tokens: new token j (0-based) attends to c + j + 1 positions, so a query head sees
//   P = sum_{j=0..n-1} (c + j + 1) = n*c + n(n+1)/2 pairs,
// each 4d FLOPs as in decode and prefill (n = 1 gives decode's C + 1; c = 0 prefill's
// S(S+1)/2). K and V of the sequence's c + n positions are read once per sequence (GQA heads
// share them; a chunk's fresh K and V count as cache reads, as in prefill):
// (c + n) * 2 * hkv * d * ekv. Q is read and the output written once per token and head (ea).
OpCost mixed_attention(const Dims& x, const StepBatch& b) {
  OpCost a;
  a.op = Op::attention;
  const double qkv_row = x.d * x.ea, kv_row = x.d * x.ekv;
  for (const SeqSlice& s : b.seqs) {
    const double c = static_cast<double>(s.cached), n = static_cast<double>(s.new_tokens);
    const double P = n * c + n * (n + 1) / 2;
    a.flops += 4 * x.hq * x.d * P;
    a.kv_read_bytes += (c + n) * 2 * x.hkv * kv_row;
  }
  a.bytes_read = a.kv_read_bytes + x.T * x.hq * qkv_row;
  a.bytes_written = x.T * x.hq * qkv_row;
  return a;
}

// The step's end on the S sampled rows with V' = vocab / tp local vocabulary rows, all at the
// activations' width e = ea (FP8 checkpoints leave the LM head unquantised):
//   final_norm  gather + RMSNorm: read S*h*e and the gamma h*e (a weight), write S*h*e
//   lm_head     GEMM S x h -> V': 2*S*h*V' FLOPs, weights h*V'*e, reads S*h*e, writes S*V'*e
//   sample      the local argmax reads the logits S*V'*e and writes each row's (max, column)
//               pair (2 fp32 = 8 B); the pick reads the gathered S*tp pairs, writes S int32 ids
//   sample_gather  an all-reduce of the [S, tp, 2] fp32 candidates (an all-gather through a
//               sum): S*tp*8 bytes per rank, in comm (tp > 1 only, like the layers' all-reduces)
void add_sampling(StepCost& s, const Dims& x, double S, double V) {
  const double Vl = V / x.tp, rows = S * x.h * x.ea;
  OpCost norm = elementwise(Op::final_norm, rows + x.h * x.ea, rows);
  norm.weight_bytes = x.h * x.ea;
  Dims head = x;
  head.T = S;
  head.ew = x.ea;
  const OpCost lm = gemm(Op::lm_head, head, x.h, Vl);
  const double pairs = S * x.tp * 8;
  const OpCost pick = elementwise(Op::sample, S * Vl * x.ea + pairs, S * 8 + S * 4);
  for (const OpCost& c : {norm, lm, pick}) {
    s.tail_ops.push_back(c);
    accumulate(s, c, 1);
  }
  if (x.tp > 1) {
    s.comm.push_back(CommOp{"all_reduce", Op::sample_gather, pairs, x.tp});
    s.comm_bytes += pairs;
  }
}

}  // namespace

StepCost step_cost(const CostQuery& q) {
  const Dims x = resolve(q);
  std::vector<OpCost> ops;
  for (int i = 0; i < kOpsPerLayer; ++i) ops.push_back(op_cost(q, static_cast<Op>(i)));
  StepCost s = layer_stack(x, std::move(ops));
  // One sampled row per sequence: the decode token, or a prompt's last.
  if (q.lm_head)
    add_sampling(s, x, static_cast<double>(q.batch),
                 static_cast<double>(vocab_per_rank(q.shape, q.tp) * q.tp));
  finish(s);
  return s;
}

StepCost mixed_step_cost(const ModelShape& m, int tp, const DTypes& t, int64_t layers,
                         const StepBatch& b, bool lm_head) {
  const CostQuery q = mixed_query(m, tp, t, layers, b);
  const Dims x = resolve(q);
  std::vector<OpCost> ops;
  for (int i = 0; i < kOpsPerLayer; ++i) {
    const Op op = static_cast<Op>(i);
    ops.push_back(op == Op::attention ? mixed_attention(x, b) : op_cost(q, op));
  }
  StepCost s = layer_stack(x, std::move(ops));
  if (lm_head && b.sampled() > 0)
    add_sampling(s, x, static_cast<double>(b.sampled()),
                 static_cast<double>(vocab_per_rank(m, tp) * tp));
  finish(s);
  return s;
}

double ops_roofline_time_s(const StepCost& c, double peak_flops, double peak_bw) {
  if (!(peak_flops > 0) || !(peak_bw > 0)) return std::numeric_limits<double>::quiet_NaN();
  double t = 0;
  for (const OpCost& o : c.layer_ops)
    if (!op_is_collective(o.op))
      t += std::max(o.flops / peak_flops, (o.bytes_read + o.bytes_written) / peak_bw);
  double tail = 0;
  for (const OpCost& o : c.tail_ops)
    if (!op_is_collective(o.op))
      tail += std::max(o.flops / peak_flops, (o.bytes_read + o.bytes_written) / peak_bw);
  return t * c.layers + tail;
}

void add_lm_head_memory(MemoryNeed& need, const ModelShape& m, int tp, const DTypes& t,
                        double rows) {
  // The LM head shard [V/tp, h] and the final gamma h; per sampled row its normalised h-wide
  // input and its V/tp logits, and the (max, column) candidates of every rank (fp32). All at
  // the activations' width, as add_sampling prices them.
  const double e = static_cast<double>(dtype_bytes(t.activations));
  const double h = static_cast<double>(m.hidden);
  const double Vl = static_cast<double>(vocab_per_rank(m, tp));
  need.weights += (Vl * h + h) * e;
  need.activations += rows * (h + Vl) * e + rows * tp * 8;
}

MemoryNeed memory_need(const CostQuery& q) {
  const Dims x = resolve(q);
  MemoryNeed m;
  // Weights: the four local GEMM matrices (ew) plus the two h-wide RMSNorm gammas (ea), per
  // layer: (h*(hq+2hkv)*d + hq*d*h + h*2I + I*h) * ew + 2h * ea bytes.
  const double gemms =
      x.h * (x.hq + 2 * x.hkv) * x.d + x.hq * x.d * x.h + x.h * 2 * x.I + x.I * x.h;
  m.weights = (gemms * x.ew + 2 * x.h * x.ea) * x.layers;
  // KV cache sized for the longest position this point reaches: C + 1 in decode (the cached
  // context plus the new token), the prompt in prefill. K and V, hkv local heads, every layer.
  const double max_ctx = q.phase == Phase::decode ? x.C + 1 : x.S;
  m.kv_cache = x.layers * x.B * max_ctx * 2 * x.hkv * x.d * x.ekv;
  // Activations (an estimate, not a measurement): inference keeps one layer's tensors live at
  // a time, so this does not scale with layers. Live at the peak: four h-wide tensors (residual
  // x, normalised x, attention output (hq*d <= h), the partial sum fed to the all-reduce), the
  // QKV output (hq+2hkv)*d, and the MLP's gate/up output 2I plus the SwiGLU output I. The
  // factor 2 is headroom for GEMM workspaces and collective staging buffers.
  m.activations = x.T * (4 * x.h + (x.hq + 2 * x.hkv) * x.d + 3 * x.I) * x.ea * 2;
  if (q.lm_head) add_lm_head_memory(m, q.shape, q.tp, q.dtypes(), static_cast<double>(q.batch));
  return m;
}

MemoryNeed check_reference_need(const CostQuery& q) {
  if (q.tp <= 1) return {};
  CostQuery one = q;
  one.tp = 1;
  return memory_need(one);
}

}  // namespace tpb

namespace tpb {

MemoryNeed serve_memory_need(const ModelShape& m, int tp, const DTypes& t, int64_t layers,
                             const ServeShape& s) {
  if (s.max_tokens < 1 || s.max_seqs < 1)
    throw BadInput("serve: max_tokens and max_seqs must be >= 1 (got " +
                   std::to_string(s.max_tokens) + ", " + std::to_string(s.max_seqs) + ")");
  CostQuery q;
  q.shape = m;
  q.phase = Phase::prefill;
  q.prompt = s.max_tokens;
  q.tp = tp;
  q.dtype = t.weights;
  q.kv_dtype = t.kv;
  q.layers = layers;
  // Weights and the layers' activations as for a step of max_tokens rows (memory_need).
  MemoryNeed need = memory_need(q);
  need.kv_cache = static_cast<double>(s.kv.num_blocks * s.kv.block_tokens) *
                  kv_bytes_per_token(m, tp, t, layers);
  if (s.lm_head) add_lm_head_memory(need, m, tp, t, static_cast<double>(s.max_seqs));
  return need;
}

double kv_bytes_per_token(const ModelShape& m, int tp, const DTypes& t, int64_t layers) {
  if (layers < 0) throw BadInput("--layers: must be >= 0 (got " + std::to_string(layers) + ")");
  const ShardShape s = shard_shape(m, tp);
  const double L = static_cast<double>(layers == 0 ? m.n_layers : layers);
  return 2.0 * static_cast<double>(s.kv_heads * m.head_dim) *
         static_cast<double>(dtype_bytes(t.kv)) * L;
}

}  // namespace tpb
