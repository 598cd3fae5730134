// Table pricing follows how the engine launches a step: the same cost model counts the bytes and
// FLOPs (layers/cost_model.h), the tables give the time of the kernel the engine runs for them.
#include "harness/drive/model/engine_pricing.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "layers/model_shape.h"

namespace tpb {

namespace {

bool is_gemm_op(Op op) {
  return op == Op::qkv_proj || op == Op::o_proj || op == Op::gate_up_proj || op == Op::down_proj ||
         op == Op::lm_head;
}

int64_t sampled_rows(const StepBatch& rows) {
  return std::max<int64_t>(1, rows.sampled());
}

// The GEMM's (n, k) on one rank (vLLM's column- and row-parallel linears), m its rows.
struct GemmDims {
  int64_t m = 0, n = 0, k = 0;
};
GemmDims gemm_dims(const RunSpec& spec, Op op, const StepBatch& rows) {
  const ModelShape& s = spec.shape;
  const ShardShape sh = shard_shape(s, spec.tp);
  const int64_t d = s.head_dim, m = rows.tokens();
  switch (op) {
    case Op::qkv_proj:
      return {m, (sh.q_heads + 2 * sh.kv_heads) * d, s.hidden};
    case Op::o_proj:
      return {m, s.hidden, sh.q_heads * d};
    case Op::gate_up_proj:
      return {m, 2 * sh.inter, s.hidden};
    case Op::down_proj:
      return {m, s.hidden, sh.inter};
    default:  // lm_head: the sampled rows against the rank's vocabulary shard
      return {sampled_rows(rows), vocab_per_rank(s, spec.tp), s.hidden};
  }
}

TableCoverage worse(TableCoverage a, TableCoverage b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

// Decode rows (one new token) at their mean cached length (the tables' context: tokens in the
// cache before the step); prefill rows at their mean new
// tokens, scaled by the causal work they really do (a cached prefix, unequal chunks), which
// the tables (no prefix, one length per batch) do not hold.
std::optional<TablePrice> attention_price(const RunSpec& spec, const EngineTables& t,
                                          const StepBatch& rows) {
  const ShardShape sh = shard_shape(spec.shape, spec.tp);
  const DType kv = spec.dtypes().kv;
  double n_dec = 0, ctx = 0, n_pre = 0, news = 0, work = 0;
  for (const SeqSlice& q : rows.seqs) {
    if (q.new_tokens == 1) {
      n_dec += 1;
      ctx += static_cast<double>(std::max<int64_t>(1, q.cached));
      continue;
    }
    const double n = static_cast<double>(q.new_tokens);
    n_pre += 1;
    news += n;
    work += n * (static_cast<double>(q.cached) + (n + 1) / 2);
  }
  TablePrice out{0, TableCoverage::exact, ""};
  if (n_dec > 0) {
    const auto p = t.decode_attention(kv, static_cast<int64_t>(n_dec), std::llround(ctx / n_dec),
                                      sh.q_heads, sh.kv_heads, spec.shape.head_dim);
    if (!p) return std::nullopt;
    out = *p;
  }
  if (n_pre > 0) {
    const int64_t len = std::llround(news / n_pre);
    const auto p = t.prefill_attention(kv, static_cast<int64_t>(n_pre), len, sh.q_heads,
                                       sh.kv_heads, spec.shape.head_dim);
    if (!p) return std::nullopt;
    const double base = n_pre * static_cast<double>(len) * static_cast<double>(len + 1) / 2;
    const double scale = base > 0 ? work / base : 1;
    out.s += p->s * scale;
    out.coverage =
        worse(out.coverage, std::abs(scale - 1) > 1e-9 ? TableCoverage::extrapolated : p->coverage);
    out.table = out.table.empty() ? p->table : out.table + "+" + p->table;
  }
  return out;
}

// The bytes of an element-wise kernel: the op's own, plus each op fused into it less what the
// carrier no longer reads back (the fused op's output, which it still writes): the fused op's
// reads. vLLM's fused add + RMSNorm reads x and the residual and writes both, 4h per row.
double fused_bytes(const RunSpec& spec, const StepCost& cost, const OpCost& c) {
  double b = c.bytes_read + c.bytes_written;
  for (const OpCost& f : cost.layer_ops)
    if (f.op != c.op && spec.engine.carrier(op_name(f.op)) == op_name(c.op)) b += f.bytes_read;
  return b;
}

// Split a table's time into the roofline's two sides, so a rank at another SM clock or under a
// memory hog stretches the side that binds (VirtualGroup::run_ops).
PricedOp priced(const OpCost& c, double s, double bytes, const Peaks& peaks, std::string table,
                TableCoverage cov) {
  const double fr = c.flops / peaks.flops, br = bytes / peaks.bw;
  PricedOp p{c.op, s, s, s, 0, 1};
  if (fr >= br && fr > 0) p.byte_s = s * br / fr;
  if (br > fr && br > 0) p.flop_s = s * fr / br;
  p.table = std::move(table);
  p.coverage = coverage_name(cov);
  return p;
}

// No table for the op: its roofline over the profile's HBM-streaming and GEMM fractions (what
// the hardware streams and multiplies, not how tpbench's own kernels fare).
PricedOp roofline_op(const RunSpec& spec, const OpCost& c, double bytes, int64_t rows,
                     const Peaks& peaks) {
  const Achievable& a = spec.hw.achievable;
  const double ff = is_gemm_op(c.op) ? a.gemm.at(static_cast<double>(rows)) : 1;
  const double fb = a.hbm_stream.at(bytes);
  PricedOp p{c.op, 0, c.flops / peaks.flops / ff, bytes / peaks.bw / fb, 0, 1};
  p.s = std::max(p.flop_s, p.byte_s);
  p.table = "roofline";
  p.coverage = "roofline";
  return p;
}

// How far a price rests on measurement: a measured row, then between rows, then past them,
// then no row of the engine at all.
int coverage_rank(const std::string& c) {
  if (c == "interpolated") return 1;
  if (c == "extrapolated") return 2;
  if (c == "roofline" || c == "fabric") return 3;
  return 0;  // exact, rule, fused
}

// A step's attention may take two tables ("decode_attention.bf16+prefill_attention.bf16"); an
// op's tables over the run are the union of its steps', sorted, joined by "+".
std::string union_of(const std::string& a, const std::string& b) {
  std::set<std::string> names;
  for (const std::string* s : {&a, &b})
    for (std::size_t i = 0; i <= s->size();) {
      const std::size_t j = std::min(s->find('+', i), s->size());
      if (j > i) names.insert(s->substr(i, j - i));
      i = j + 1;
    }
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

void note_op(OpPricingMap& m, const PricedOp& p) {
  if (p.table.empty()) return;
  auto [it, fresh] = m.try_emplace(op_name(p.op), OpPricing{p.table, p.coverage});
  if (fresh) return;
  OpPricing& o = it->second;
  o.table = union_of(o.table, p.table);
  if (coverage_rank(p.coverage) > coverage_rank(o.coverage)) o.coverage = p.coverage;
}

}  // namespace

void note_pricing(OpPricingMap& m, const StepOpPlan& plan) {
  for (const PricedOp& p : plan.layer) note_op(m, p);
  for (const PricedOp& p : plan.tail) note_op(m, p);
}

const char* coverage_name(TableCoverage c) {
  switch (c) {
    case TableCoverage::exact:
      return "exact";
    case TableCoverage::interpolated:
      return "interpolated";
    default:
      return "extrapolated";
  }
}

StepBatch uniform_rows(const RunSpec& spec) {
  StepBatch b;
  const bool decode = spec.phase == Phase::decode;
  for (int64_t i = 0; i < spec.batch; ++i)
    b.seqs.push_back({decode ? spec.context : 0, decode ? 1 : spec.prompt, true, {}});
  return b;
}

PricedOp engine_compute_op(const RunSpec& spec, const EngineTables& t, const StepCost& cost,
                           const OpCost& c, const StepBatch& rows, const Peaks& peaks) {
  const double own = c.bytes_read + c.bytes_written;
  if (const std::string into = spec.engine.carrier(op_name(c.op)); into != op_name(c.op)) {
    PricedOp p{c.op, 0, 0, 0, 0, 0};
    p.table = "in " + into;
    p.coverage = "fused";
    return p;
  }
  if (is_gemm_op(c.op)) {
    const GemmDims g = gemm_dims(spec, c.op, rows);
    if (const auto p = t.gemm(spec.dtype, g.m, g.n, g.k))
      return priced(c, p->s, own, peaks, p->table, p->coverage);
    return roofline_op(spec, c, own, g.m, peaks);
  }
  if (c.op == Op::attention) {
    if (const auto p = attention_price(spec, t, rows))
      return priced(c, p->s, own, peaks, p->table, p->coverage);
    return roofline_op(spec, c, own, rows.tokens(), peaks);
  }
  const double bytes = fused_bytes(spec, cost, c);
  PricedOp p = priced(c, t.elementwise_s(bytes, peaks.bw), bytes, peaks, "elementwise",
                      TableCoverage::exact);
  p.coverage = "rule";
  return p;
}

std::optional<PricedOp> engine_collective(const RunSpec& spec, const EngineTables& t, Op op,
                                          double bytes, Phase phase, ModelGroup g) {
  if (g.ranks <= 1) return PricedOp{op, 0, 0, 0, 0, 1, "none (one rank)", "exact"};
  if (g.nodes > 1) return std::nullopt;  // the tables were measured inside one node
  std::optional<TablePrice> p;
  if (op == Op::sample_gather) {
    p = t.collective("all_gather", "nccl", g.ranks, bytes);
  } else {
    const std::string& impl =
        phase == Phase::decode ? spec.engine.decode_allreduce : spec.engine.prefill_allreduce;
    p = t.collective("all_reduce", impl, g.ranks, bytes);
    if (!p && impl != "nccl") p = t.collective("all_reduce", "nccl", g.ranks, bytes);
  }
  if (!p) return std::nullopt;
  return PricedOp{op, p->s, 0, 0, 0, 1, p->table, coverage_name(p->coverage)};
}

}  // namespace tpb
