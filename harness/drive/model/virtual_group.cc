// Compute ops run at max(flops / peak flops, bytes / peak bandwidth) divided by the fraction of
// that roofline the profile's efficiency table gives the op at this phase, TP degree and token
// count (1 without a table: the fastest the profile allows; results say which); an
// all-reduce's wait is what the group's late arrival leaves, its transfer the fabric's time.
#include "harness/drive/model/virtual_group.h"

#include <algorithm>

#include "base/errors.h"
#include "harness/drive/model/engine_pricing.h"
#include "harness/drive/model/table_fraction.h"
#include "harness/serve/serve_random.h"
#include "layers/cuda/plan/launch_plan_query.h"
#include "layers/model_shape.h"

namespace tpb {

namespace {

// The step's end has no point in calibrate's table (it times the layer's ops): each of its ops
// takes the fraction of the layer op most like it, rather than the roofline itself.
const char* efficiency_name(const OpEfficiency& e, Op op, const char* phase) {
  const char* own = op_name(op);
  if (e.covers(own, phase)) return own;
  switch (op) {
    case Op::final_norm:
      return op_name(Op::rmsnorm_mlp);
    case Op::lm_head:  // a column-parallel GEMM over the sampled rows
      return op_name(Op::gate_up_proj);
    case Op::sample:  // one pass over the logits
      return op_name(Op::swiglu);
    default:
      return own;
  }
}

bool is_gemm(Op op) {
  return op == Op::qkv_proj || op == Op::o_proj || op == Op::gate_up_proj || op == Op::down_proj ||
         op == Op::lm_head;
}

// The achievable fractions (flop side, byte side) of an op the efficiency table does not price:
// GEMMs by their rows, decode attention by context, prefill attention by prompt, the rest
// (and every op's byte side) by the bytes the op moves per layer.
std::pair<double, double> achievable_fractions(const RunSpec& spec, const OpCost& c, Phase phase,
                                               int64_t tokens) {
  const Achievable& a = spec.hw.achievable;
  const double bytes = c.bytes_read + c.bytes_written;
  double ff = 1, fb = a.hbm_stream.at(bytes);
  if (is_gemm(c.op)) ff = a.gemm.at(static_cast<double>(tokens));
  if (c.op == Op::attention && phase == Phase::decode && !a.decode_attention.empty())
    fb = a.decode_attention.at(static_cast<double>(spec.context));
  if (c.op == Op::attention && phase == Phase::prefill)
    ff = a.prefill_attention.at(static_cast<double>(spec.prompt));
  return {ff, fb};
}

// The bytes an op's kernels move: the model's, plus the engine's extra passes over the KV cache
// in a decode step's attention (EngineProfile::gqa_decode_kv_passes), at most one per query
// head of a group.
double moved_bytes(const RunSpec& spec, const OpCost& c, Phase phase) {
  const double bytes = c.bytes_read + c.bytes_written;
  if (c.op != Op::attention || phase != Phase::decode || spec.engine.gqa_decode_kv_passes <= 1)
    return bytes;
  // The rank's own group: a KV head replicated across ranks (n_kv_heads < tp) serves fewer.
  const ShardShape sh = shard_shape(spec.shape, spec.tp);
  const double group = static_cast<double>(sh.q_heads) / static_cast<double>(sh.kv_heads);
  const double passes = std::min(spec.engine.gqa_decode_kv_passes, std::max(1.0, group));
  return bytes + (passes - 1) * c.kv_read_bytes;
}

PricedOp compute_op(const RunSpec& spec, const OpCost& c, Phase phase, int64_t tokens,
                    const Peaks& peaks, double kernels) {
  const OpEfficiency& e = spec.hw.efficiency;
  const char* ph = phase_name(phase);
  // A table measured in another dtype prices nothing here (the efficiency_dtype warning).
  // The table prices the ops it covers (directly or by a stand-in); the rest take the
  // profile's achievable fractions.
  const char* name = efficiency_name(e, c.op, ph);
  const bool table = e.applies_to(spec.dtype) && e.covers(name, ph);
  const double f = table ? table_fraction(spec, name, c.op, phase, tokens, peaks) : 1;
  const auto [ff, fb] =
      table ? std::pair<double, double>{1, 1} : achievable_fractions(spec, c, phase, tokens);
  PricedOp p{c.op,
             0,
             c.flops / peaks.flops / (f * ff),
             moved_bytes(spec, c, phase) / peaks.bw / (f * fb),
             kernels * spec.hw.achievable.kernel.per_kernel(spec.cuda_graph),
             kernels};
  p.s = std::max(p.flop_s, p.byte_s) + p.fixed_s;
  return p;
}

double comm_bytes(const StepCost& cost, Op op) {
  for (const CommOp& c : cost.comm)
    if (c.op == op) return c.bytes;
  return 0;
}

}  // namespace

KernelCounts model_kernel_counts(const RunSpec& spec, const CostQuery& q) {
  KernelCounts n{};
  try {
    n = kernels_per_layer_op(q, spec.stamps != StampLevel::ops);
  } catch (const BadInput&) {
    for (int i = 0; i < kOpsPerLayer; ++i)
      if (!op_is_collective(static_cast<Op>(i))) n[static_cast<std::size_t>(i)] = 1;
  }
  for (Op op : {Op::final_norm, Op::lm_head, Op::sample}) n[static_cast<std::size_t>(op)] = 1;
  return n;
}

ModelAlgo point_algo(const RunSpec& spec) {
  const ModelAlgo a = parse_model_algo(spec.algo, "--algo");
  return a == ModelAlgo::automatic && !spec.engine.custom_allreduce ? ModelAlgo::nccl : a;
}

StepOpPlan step_op_plan(const RunSpec& spec, const StepCost& cost, Phase phase, int64_t tokens,
                        const Peaks& peaks, const Fabric& fabric, ModelGroup g,
                        const KernelCounts& kernels, const StepBatch* rows) {
  const ModelAlgo algo = point_algo(spec);
  const EngineTables* tables = spec.engine_tables.get();
  const StepBatch uniform = tables && !rows ? uniform_rows(spec) : StepBatch{};
  auto price = [&](const OpCost& c) {
    if (!op_is_collective(c.op)) {
      if (tables) return engine_compute_op(spec, *tables, cost, c, rows ? *rows : uniform, peaks);
      return compute_op(spec, c, phase, tokens, peaks, kernels[static_cast<std::size_t>(c.op)]);
    }
    const double bytes = comm_bytes(cost, c.op);
    if (tables)
      if (auto p = engine_collective(spec, *tables, c.op, bytes, phase, g)) return *p;
    PricedOp p{
        c.op,
        model_collective(fabric, CollKind::all_reduce, static_cast<int64_t>(bytes), g, algo).time_s,
        0,
        0,
        0,
        1};
    if (tables) p.table = p.coverage = "fabric";
    return p;
  };
  StepOpPlan plan;
  plan.host_s = phase == Phase::prefill ? spec.engine.prefill_overhead_s : 0;
  for (const OpCost& c : cost.layer_ops) plan.layer.push_back(price(c));
  // The real step's end: the local argmax (sample) comes before the gather that picks among
  // the ranks' candidates (in comm alone, tp > 1); the pick is host work on S x tp pairs and
  // is not priced.
  for (const OpCost& c : cost.tail_ops) plan.tail.push_back(price(c));
  for (const CommOp& c : cost.comm)
    if (c.op == Op::sample_gather) plan.tail.push_back(price(OpCost{c.op}));
  return plan;
}

VirtualGroup::VirtualGroup(const RunSpec& spec, const std::vector<int>& members)
    : spec_(spec),
      members_(members),
      t_(members.size(), 0.0),
      host_(members.size(), 0.0),
      block_(members.size(), 0.0) {
  for (int r : members) {
    inj_.push_back(inject_for_rank(spec.inject, r));
    const int mhz = inj_.back().sm_clock_mhz;
    const double held = inj_.back().sm_hold_fraction;  // sm_clock=emulate@F: 1 - F of the SMs left
    flop_stretch_.push_back(mhz > 0 ? spec.hw.sm_clock_mhz / mhz : 1.0 / (1.0 - held));
    // --inject mem_contend: a hog streaming beside the rank takes an equal share of its
    // memory bandwidth (two streams, one each), so the byte side takes twice as long.
    byte_stretch_.push_back(inj_.back().mem_contend ? kHogShare : 1.0);
    rng_.emplace_back(spec.seed * 1000003ULL + static_cast<uint64_t>(r));
    noise_.emplace_back(spec.noise_seed * 1000003ULL + static_cast<uint64_t>(r) +
                        0x9e3779b97f4a7c15ULL);  // apart from the jitter draws
    watch_ = watch_ || inj_.back().hang_at_step >= 0;
  }
  traces_.resize(members.size());
  pos_.resize(members.size());
  stopped_.assign(members.size(), 0);
}

void VirtualGroup::seg(std::size_t m, Op op, int layer, int step, double dur, bool coll) {
  traces_[m].segs.push_back({t_[m], t_[m] + dur, step, static_cast<int16_t>(layer), op,
                             static_cast<uint8_t>(coll ? 1 : 0)});
  t_[m] += dur;
}

void VirtualGroup::step(int s, int64_t layers, const StepOpPlan& plan) {
  std::vector<double> start = t_;
  for (std::size_t m = 0; m < members_.size(); ++m) {
    const InjectSpec& i = inj_[m];
    if (!stopped(m) && i.hang_at_step >= 0 && s >= i.hang_at_step) {
      stopped_[m] = 1;  // alive and silent from here on, as the real injector's before_step
      hung_.push_back({members_[m], s, pos_[m]});
    }
    if (stopped(m)) continue;
    t_[m] += i.host_delay_us * 1e-6;  // host work: no segment, a host gap
    // tpbench's own loop's host work per step (an engine with tables brings its own).
    if (!spec_.engine_tables) t_[m] += spec_.hw.achievable.engine_step_s;
    // An engine that samples on the host waits for the step before it to issue this one; one
    // that does not issues on from where it stopped, ahead of the device.
    if (spec_.engine.syncs_per_step) host_[m] = std::max(host_[m], t_[m]);
    host_[m] += spec_.engine.step_overhead_s + plan.host_s;
    t_[m] = std::max(t_[m], host_[m]);
    if (i.jitter_p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_[m]) < i.jitter_p)
      seg(m, Op::injected, 0, s, i.jitter_us * 1e-6);
  }
  for (int64_t L = 0; L < layers; ++L) run_ops(plan.layer, static_cast<int>(L), s);
  run_ops(plan.tail, static_cast<int>(layers), s);
  // The compute after the step's last collective is slowed before the step ends, so a slowed
  // rank computes exactly F times its own work in every step.
  slow_down(static_cast<int>(plan.tail.empty() ? layers - 1 : layers), s);
  for (std::size_t m = 0; m < members_.size(); ++m)
    if (!stopped(m)) traces_[m].segs.push_back({start[m], t_[m], s, 0, Op::step, 0});
}

void VirtualGroup::advance_to(double t) {
  for (double& x : t_) x = std::max(x, t);
}

double VirtualGroup::latest_clock() const {
  return *std::max_element(t_.begin(), t_.end());
}

std::vector<RankTrace> VirtualGroup::take_traces() {
  std::vector<RankTrace> out(traces_.size());
  std::swap(out, traces_);
  for (std::size_t m = 0; m < out.size(); ++m) {
    out[m].rank = members_[m];
    out[m].group_rank = static_cast<int>(m);
  }
  return out;
}

// A slowed rank's extra work for the compute since its last collective (as the real injector's
// after_block), as one injected segment.
void VirtualGroup::slow_down(int L, int s) {
  for (std::size_t m = 0; m < members_.size(); ++m) {
    if (inj_[m].slowdown != 1.0 && block_[m] > 0)
      seg(m, Op::injected, L, s, (inj_[m].slowdown - 1) * block_[m]);
    block_[m] = 0;
  }
}

// --model-noise: the segment's time x (1 + CV z), at least 5% of it.
double VirtualGroup::noisy(std::size_t m, double dur) {
  if (spec_.noise_cv <= 0) return dur;
  return dur * std::max(0.05, 1.0 + spec_.noise_cv * draw_normal(noise_[m]));
}

// The host issues an op's kernels one after another; the op cannot start before the last is
// issued (the device idles: a host gap, no segment), as an eager engine's small-batch step.
void VirtualGroup::issue(std::size_t m, double kernels) {
  if (!spec_.engine.host_bound()) return;
  host_[m] += kernels * spec_.engine.host_per_kernel_s;
  t_[m] = std::max(t_[m], host_[m]);
}

void VirtualGroup::run_ops(const std::vector<PricedOp>& ops, int L, int s) {
  for (const PricedOp& p : ops) {
    for (std::size_t m = 0; m < members_.size(); ++m)
      if (!stopped(m)) issue(m, p.kernels);
    if (!op_is_collective(p.op)) {
      for (std::size_t m = 0; m < members_.size(); ++m) {
        if (stopped(m)) continue;
        const double k = flop_stretch_[m], b = byte_stretch_[m];
        const double slow = p.op == inj_[m].slow_op ? inj_[m].slow_op_factor : 1.0;
        const double d =
            slow *
            noisy(m, k == 1.0 && b == 1.0 ? p.s : std::max(p.flop_s * k, p.byte_s * b) + p.fixed_s);
        seg(m, p.op, L, s, d);
        block_[m] += d;
      }
      continue;
    }
    collective(p, L, s);
  }
}

void VirtualGroup::collective(const PricedOp& p, int L, int s) {
  slow_down(L, s);  // the extra work lands before the collective, as on a real rank
  if (watch_) {
    for (std::size_t m = 0; m < members_.size(); ++m)
      if (!stopped(m)) pos_[m] = {pos_[m].seq + 1, s, L, static_cast<int32_t>(p.op), 1};
    // Every member stopped: nobody in the group enters, so nobody here waits.
    if (!hung_.empty() && hung_.size() < members_.size()) {
      std::size_t first = 0;
      while (stopped(first)) ++first;
      throw_group_hang(spec_, members_[first], pos_[first], hung_);
    }
    for (BoardPosition& q : pos_) q.inside = 0;
  }
  const double last = latest_clock();
  for (std::size_t m = 0; m < members_.size(); ++m)
    if (!stopped(m)) seg(m, p.op, L, s, last + p.s - t_[m], true);
}

}  // namespace tpb
