// What an engine's kernels and runtime add on virtual ranks (layers/profile/engine.h): extra
// passes over the KV cache in a GQA decode step's attention (a kernel with one block per
// query head), and a fixed cost per prefill step (a runtime's first-token setup).
#include <gtest/gtest.h>

#include "base/errors.h"
#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "layers/model_shape.h"
#include "layers/profile/engine.h"
#include "tests/support/bad_input.h"
#include "tests/support/engine_file.h"

namespace tpb {
namespace {

RunSpec spec_for(const std::string& model, const std::string& phase, int tp,
                 const std::string& engine) {
  return resolve_run_spec({{"backend", "model"},
                           {"collective", "model"},
                           {"world", tp},
                           {"tp", tp},
                           {"model", model},
                           {"dtype", "bf16"},
                           {"hardware", "h100-sxm:datasheet"},
                           {"phase", phase},
                           {"batch", 16},
                           {"context", 2048},
                           {"prompt", 256},
                           {"engine", engine}},
                          1, TPB_SOURCE_DIR "/configs");
}

StepOpPlan plan_of(const RunSpec& spec) {
  const Fabric f = load_fabric(spec.topology, spec.config_dir);
  const CostQuery q = spec.cost_query();
  return step_op_plan(spec, step_cost(q), q.phase, q.batch * tokens_per_step(q), model_peaks(spec),
                      f, {spec.tp, 1}, model_kernel_counts(spec, q));
}

const PricedOp& attention_of(const StepOpPlan& p) {
  for (const PricedOp& o : p.layer)
    if (o.op == Op::attention) return o;
  throw std::runtime_error("no attention op");
}

double kv_read_bytes(const RunSpec& spec) {
  for (const OpCost& c : step_cost(spec.cost_query()).layer_ops)
    if (c.op == Op::attention) return c.kv_read_bytes;
  return 0;
}

std::string passes_engine(double passes) {
  return write_engine("tpb-engine-passes",
                      {{"gqa_decode_kv_passes", passes}, {"source", "a test"}});
}

// Llama-3.1-8B groups 4 query heads on each KV head: 3 passes read the cache 3 times, on the
// byte side of the op only (the datasheet profile: no fraction between bytes and time).
TEST(ModelEngineKernels, ExtraPassesReadTheCacheAgain) {
  const RunSpec one = spec_for("llama-3.1-8b", "decode", 1, "none");
  const RunSpec three = spec_for("llama-3.1-8b", "decode", 1, passes_engine(3));
  const PricedOp a1 = attention_of(plan_of(one)), a3 = attention_of(plan_of(three));
  const double bw = model_peaks(one).bw;
  EXPECT_NEAR(a3.byte_s - a1.byte_s, 2 * kv_read_bytes(one) / bw, 1e-12);
  EXPECT_DOUBLE_EQ(a3.flop_s, a1.flop_s);
  // Every other op is priced as before.
  const StepOpPlan p1 = plan_of(one), p3 = plan_of(three);
  for (std::size_t i = 0; i < p1.layer.size(); ++i)
    if (p1.layer[i].op != Op::attention) EXPECT_DOUBLE_EQ(p1.layer[i].s, p3.layer[i].s);
}

// No kernel reads a KV head more often than it has query heads on it: 8 passes on a group of
// 4 are 4, and a model without GQA (Llama-2-7B) is never re-read.
TEST(ModelEngineKernels, PassesStopAtTheGroup) {
  const PricedOp four =
      attention_of(plan_of(spec_for("llama-3.1-8b", "decode", 1, passes_engine(4))));
  const PricedOp eight =
      attention_of(plan_of(spec_for("llama-3.1-8b", "decode", 1, passes_engine(8))));
  EXPECT_DOUBLE_EQ(four.byte_s, eight.byte_s);
  const PricedOp mha = attention_of(plan_of(spec_for("llama-2-7b", "decode", 1, "none")));
  const PricedOp mha8 =
      attention_of(plan_of(spec_for("llama-2-7b", "decode", 1, passes_engine(8))));
  EXPECT_DOUBLE_EQ(mha.byte_s, mha8.byte_s);
}

// The group is the rank's own: Llama-3.1-8B at TP 8 holds one KV head and 4 query heads a
// rank, so the cap is still 4; a prefill step's attention is not a decode pass.
TEST(ModelEngineKernels, TheGroupIsTheRanksAndPrefillIsUntouched) {
  const RunSpec tp8 = spec_for("llama-3.1-8b", "decode", 8, passes_engine(64));
  const ShardShape sh = shard_shape(tp8.shape, 8);
  ASSERT_EQ(sh.q_heads / sh.kv_heads, 4);
  const PricedOp a = attention_of(plan_of(tp8));
  const PricedOp a1 = attention_of(plan_of(spec_for("llama-3.1-8b", "decode", 8, "none")));
  EXPECT_NEAR(a.byte_s - a1.byte_s, 3 * kv_read_bytes(tp8) / model_peaks(tp8).bw, 1e-12);
  const PricedOp p =
      attention_of(plan_of(spec_for("llama-3.1-8b", "prefill", 1, passes_engine(4))));
  const PricedOp p1 = attention_of(plan_of(spec_for("llama-3.1-8b", "prefill", 1, "none")));
  EXPECT_DOUBLE_EQ(p.s, p1.s);
}

// The second step's length on one virtual rank.
double second_step_s(const RunSpec& spec) {
  const StepOpPlan plan = plan_of(spec);
  const std::vector<int> members{0};
  VirtualGroup g(spec, members);
  g.step(0, 2, plan);
  g.step(1, 2, plan);
  const std::vector<RankTrace> traces = g.take_traces();
  for (const SegmentRecord& s : traces[0].segs)
    if (s.op == Op::step && s.step == 1) return s.t1 - s.t0;
  return 0;
}

// A runtime's first-token cost delays a prefill step's first kernel by exactly its length (the
// host waits for the step before, then works); a decode step does not pay it.
TEST(ModelEngineKernels, APrefillStepPaysTheRuntimesFixedCost) {
  const std::string f =
      write_engine("tpb-engine-prefill", {{"prefill_overhead_s", 2e-3}, {"source", "a test"}});
  EXPECT_NEAR(second_step_s(spec_for("tiny", "prefill", 1, f)) -
                  second_step_s(spec_for("tiny", "prefill", 1, "none")),
              2e-3, 1e-12);
  EXPECT_NEAR(second_step_s(spec_for("tiny", "decode", 1, f)),
              second_step_s(spec_for("tiny", "decode", 1, "none")), 1e-12);
}

double all_reduce_s(const StepOpPlan& p) {
  for (const PricedOp& o : p.layer)
    if (o.op == Op::allreduce_attn) return o.s;
  return 0;
}

// An engine without a custom all-reduce runs NCCL's where `auto` would take vLLM's one-shot
// (a 4-rank decode step's few KiB); an explicit --algo is the user's, whatever the engine.
TEST(ModelEngineKernels, AnEngineWithoutACustomAllReduceRunsNccls) {
  const std::string nccl_only =
      write_engine("tpb-engine-nccl", {{"custom_allreduce", false}, {"source", "a test"}});
  RunSpec with_custom = spec_for("llama-3.1-8b", "decode", 4, "none");
  RunSpec without = spec_for("llama-3.1-8b", "decode", 4, nccl_only);
  RunSpec asked_nccl = spec_for("llama-3.1-8b", "decode", 4, "none");
  asked_nccl.algo = "nccl";
  EXPECT_EQ(point_algo(without), ModelAlgo::nccl);
  EXPECT_EQ(point_algo(with_custom), ModelAlgo::automatic);
  EXPECT_DOUBLE_EQ(all_reduce_s(plan_of(without)), all_reduce_s(plan_of(asked_nccl)));
  EXPECT_NE(all_reduce_s(plan_of(without)), all_reduce_s(plan_of(with_custom)));
  without.algo = "oneshot";
  EXPECT_EQ(point_algo(without), ModelAlgo::oneshot);
}

TEST(ModelEngineKernels, BadValuesAreRefusedByField) {
  auto refused = [](const nlohmann::json& j, const std::string& field) {
    const std::string why = bad_input(
        [&] { load_engine(write_engine("tpb-engine-bad-kernels", j), TPB_SOURCE_DIR "/configs"); });
    EXPECT_NE(why.find(field), std::string::npos) << j.dump() << ": " << why;
  };
  refused({{"gqa_decode_kv_passes", 0.5}, {"source", "x"}}, "gqa_decode_kv_passes");
  refused({{"gqa_decode_kv_passes", 100}, {"source", "x"}}, "gqa_decode_kv_passes");
  refused({{"gqa_decode_kv_passes", "4"}, {"source", "x"}}, "gqa_decode_kv_passes");
  refused({{"prefill_overhead_s", 5}, {"source", "ms, not s"}}, "prefill_overhead_s");
  refused({{"custom_allreduce", "no"}, {"source", "x"}}, "custom_allreduce");
}

}  // namespace
}  // namespace tpb
