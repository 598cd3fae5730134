// An engine's measured tables pricing a step (harness/drive/model/engine_pricing.h): each op reads
// the cell of its own shape, read here from the shipped file by hand; the fused add + RMSNorm
// by a hand count of its bytes; attention by the step's sequences; all-reduces by the step kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/engine_pricing.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "tests/support/bad_input.h"
#include "tests/support/engine_file.h"

namespace tpb {
namespace {

const char* kConfigs = TPB_SOURCE_DIR "/configs";

RunSpec spec_for(const std::string& phase, int batch, const std::string& engine = "vllm-0.24",
                 const std::string& hardware = "h200-sxm") {
  return resolve_run_spec({{"backend", "model"},
                           {"collective", "model"},
                           {"world", 8},
                           {"tp", 8},
                           {"model", "llama-3.1-8b"},
                           {"dtype", "bf16"},
                           {"hardware", hardware},
                           {"phase", phase},
                           {"batch", batch},
                           {"context", 1024},
                           {"prompt", 1024},
                           {"engine", engine}},
                          1, kConfigs);
}

StepOpPlan plan_of(const RunSpec& spec, ModelGroup g = {8, 1}, const StepBatch* rows = nullptr) {
  const Fabric f = load_fabric(spec.topology, spec.config_dir);
  const CostQuery q = spec.cost_query();
  return step_op_plan(spec, step_cost(q), q.phase, q.batch * tokens_per_step(q), model_peaks(spec),
                      f, g, model_kernel_counts(spec, q), rows);
}

PricedOp op_of(const StepOpPlan& p, Op op) {
  for (const PricedOp& o : p.layer)
    if (o.op == op) return o;
  throw std::runtime_error(std::string("no op ") + op_name(op));
}

nlohmann::json table_file() {
  std::ifstream in(std::string(kConfigs) + "/engine_tables/vllm-0.24/h200-sxm.json");
  return nlohmann::json::parse(in);
}

std::size_t index_of(const nlohmann::json& axis, double v) {
  const auto a = axis.get<std::vector<double>>();
  const auto it = std::find(a.begin(), a.end(), v);
  if (it == a.end()) throw std::runtime_error("not on the axis");
  return static_cast<std::size_t>(it - a.begin());
}

// The GEMM cell at (m, n, k) as the file holds it.
double gemm_cell(const nlohmann::json& t, double m, double n, double k) {
  const auto& g = t["gemm"]["bf16"];
  return g["s"][index_of(g["m"], m)][index_of(g["n"], n)][index_of(g["k"], k)].get<double>();
}

// Llama-3.1-8B at TP 8 holds 4 query heads, 1 KV head, 14336 / 8 = 1792 MLP columns: QKV is
// (4 + 2) x 128 = 768 wide, O projects 512 onto 4096, gate/up is 3584 wide.
TEST(EnginePricing, GemmsReadTheirOwnShapesCell) {
  const nlohmann::json t = table_file();
  const StepOpPlan p = plan_of(spec_for("decode", 64));
  EXPECT_DOUBLE_EQ(op_of(p, Op::qkv_proj).s, gemm_cell(t, 64, 768, 4096));
  EXPECT_DOUBLE_EQ(op_of(p, Op::o_proj).s, gemm_cell(t, 64, 4096, 512));
  EXPECT_DOUBLE_EQ(op_of(p, Op::gate_up_proj).s, gemm_cell(t, 64, 3584, 4096));
  EXPECT_EQ(op_of(p, Op::qkv_proj).table, "gemm.bf16");
  EXPECT_EQ(op_of(p, Op::qkv_proj).coverage, "exact");
  // k = 1792 lies between the grid's 1536 and 2048: a quarter of the way, linearly.
  const double lo = gemm_cell(t, 64, 4096, 1536), hi = gemm_cell(t, 64, 4096, 2048);
  EXPECT_NEAR(op_of(p, Op::down_proj).s, lo + 0.5 * (hi - lo), 1e-12);
  EXPECT_EQ(op_of(p, Op::down_proj).coverage, "interpolated");
}

// vLLM's fused add + RMSNorm reads x and the residual and writes both: 4 x 4096 x 2 bytes a row
// (plus the 8 KiB gamma), at the tables' 0.8 of 4.8 TB/s plus 3 us; the residual add it
// carries costs nothing of its own.
TEST(EnginePricing, FusedAddNormPaysOneKernelForBoth) {
  const StepOpPlan p = plan_of(spec_for("decode", 64));
  const double bytes = 64.0 * 4 * 4096 * 2 + 4096 * 2;
  EXPECT_NEAR(op_of(p, Op::rmsnorm_mlp).s, bytes / (4.8e12 * 0.8) + 3e-6, 2e-9);
  EXPECT_EQ(op_of(p, Op::residual_attn).s, 0);
  EXPECT_EQ(op_of(p, Op::residual_attn).table, "in rmsnorm_mlp");
  EXPECT_EQ(op_of(p, Op::rope).s, 0);  // inside the attention table's time
  EXPECT_EQ(op_of(p, Op::kv_write).coverage, "fused");
}

// Decode attention at the tables' context, tokens cached before the step: 1024 lies between
// the grid's 1023 and 2047.
TEST(EnginePricing, DecodeAttentionAtTheCachedLength) {
  const nlohmann::json t = table_file();
  const nlohmann::json* e = nullptr;
  for (const auto& x : t["decode_attention"]["bf16"])
    if (x["q_heads"] == 4 && x["kv_heads"] == 1 && x["head_dim"] == 128) e = &x;
  ASSERT_NE(e, nullptr);
  const std::size_t b = index_of((*e)["batch"], 64);
  const std::size_t c = index_of((*e)["context"], 1023);
  ASSERT_EQ((*e)["context"][c + 1].get<double>(), 2047);
  const double lo = (*e)["s"][b][c].get<double>(), hi = (*e)["s"][b][c + 1].get<double>();
  const PricedOp a = op_of(plan_of(spec_for("decode", 64)), Op::attention);
  EXPECT_NEAR(a.s, lo + (hi - lo) / 1024, 1e-12);
  EXPECT_EQ(a.table, "decode_attention.bf16");
}

// A chunk after a cached prefix does more causal work than the same chunk alone, which the
// tables (no prefix) do not hold: 512 new tokens after 512 cached do 512 x (512 + 256.5) pairs
// against 512 x 513 / 2 alone, 3x; said as extrapolated.
TEST(EnginePricing, ChunkAfterAPrefixScalesByItsWork) {
  const RunSpec spec = spec_for("prefill", 1);
  StepBatch alone, after;
  alone.seqs.push_back({0, 512, true, {}});
  after.seqs.push_back({512, 512, true, {}});
  const PricedOp a = op_of(plan_of(spec, {8, 1}, &alone), Op::attention);
  const PricedOp b = op_of(plan_of(spec, {8, 1}, &after), Op::attention);
  EXPECT_NEAR(b.s / a.s, 512.0 * (512 + 256.5) / (512.0 * 513 / 2), 1e-9);
  EXPECT_EQ(b.coverage, "extrapolated");
  EXPECT_NE(a.coverage, "extrapolated");
}

// Decode's all-reduce is the custom one captured in a graph (64 rows x 4096 x 2 bytes: the
// file's row at 524288 bytes); an engine that runs prefill's eager gets the eager table there;
// a group over two nodes leaves the tables (one node's) for the fabric model.
TEST(EnginePricing, AllReducesByStepKindAndPlace) {
  const nlohmann::json t = table_file();
  const auto& g = t["collectives"]["all_reduce"]["custom_graph"]["8"];
  const PricedOp d = op_of(plan_of(spec_for("decode", 64)), Op::allreduce_attn);
  EXPECT_DOUBLE_EQ(d.s, g["s"][index_of(g["bytes"], 524288)].get<double>());
  EXPECT_EQ(d.table, "all_reduce.custom_graph");
  nlohmann::json eager;
  std::ifstream(std::string(kConfigs) + "/engines/vllm-0.24.json") >> eager;
  eager["prefill_allreduce"] = "custom_eager";
  const std::string e = write_engine("tpb-engine-eager", eager);
  EXPECT_EQ(op_of(plan_of(spec_for("prefill", 1, e)), Op::allreduce_mlp).table,
            "all_reduce.custom_eager");
  EXPECT_EQ(op_of(plan_of(spec_for("decode", 1, e)), Op::allreduce_mlp).table,
            "all_reduce.custom_graph");
  RunSpec two_nodes = spec_for("decode", 64);
  two_nodes.topology = "ib-ndr";
  EXPECT_EQ(op_of(plan_of(two_nodes, {8, 2}), Op::allreduce_attn).table, "fabric");
}

TEST(EnginePricing, RefusesWhatItCannotPrice) {
  // No tables for this GPU: one line saying how to make them.
  const std::string m = bad_input([] { spec_for("decode", 1, "vllm-0.24", "a100-sxm-80g"); });
  EXPECT_NE(m.find("--engine: vllm-0.24 has no measured tables for --hardware a100-sxm-80g"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("calibrate --from-aiconfigurator"), std::string::npos) << m;
  // A fused op carried by a collective, or by an op that is itself fused.
  const std::string coll = write_engine(
      "tpb-engine-fused", {{"fused", {{"rope", "allreduce_attn"}}}, {"source", "a test"}});
  EXPECT_NE(bad_input([&] { spec_for("decode", 1, coll); }).find("fused.rope"), std::string::npos);
  const std::string chain =
      write_engine("tpb-engine-chain",
                   {{"fused", {{"rope", "kv_write"}, {"kv_write", "attention"}}}, {"source", "x"}});
  EXPECT_NE(bad_input([&] { spec_for("decode", 1, chain); }).find("is itself fused"),
            std::string::npos);
}

// Without tables the profile prices the ops as before, and says nothing of tables.
TEST(EnginePricing, NoTablesNoPricedBy) {
  const StepOpPlan p = plan_of(spec_for("decode", 64, "tpbench-cuda"));
  for (const PricedOp& o : p.layer) EXPECT_TRUE(o.table.empty()) << op_name(o.op);
  EXPECT_GT(op_of(p, Op::residual_attn).s, 0);
}

}  // namespace
}  // namespace tpb
