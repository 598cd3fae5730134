// --dtype and --kv-dtype from the config to the model backend's prices (issue 32, item 3): the
// KV cache defaults to the activations' dtype, the CPU and CUDA backends refuse in one line
// naming the field what they cannot run, the points record the four dtypes when they differ,
// and the model backend prices an all-reduce under fp8 weights as under bf16, while a bf16 point
// on the datasheet profile keeps its pinned time.
#include <gtest/gtest.h>

#include <string>

#include "collectives/model/fabric.h"
#include "harness/config/run_spec.h"
#include "harness/drive/model/model_point.h"
#include "harness/drive/model/virtual_group.h"
#include "harness/record/json/results_json.h"
#include "harness/record/point_builder.h"
#include "layers/device.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

RunSpec model_spec(const std::string& dtype, const std::string& kv, int tp,
                   const std::string& hardware = "h100-sxm:datasheet") {
  nlohmann::json cfg = {
      {"backend", "model"}, {"world", tp},          {"tp", tp},   {"model", "llama-3.1-8b"},
      {"dtype", dtype},     {"hardware", hardware}, {"batch", 1}, {"context", 1024}};
  if (!kv.empty()) cfg["kv_dtype"] = kv;
  return resolve_run_spec(cfg, 1, kConfigs);
}

TEST(RunSpecDTypes, TheKvCacheDefaultsToTheActivations) {
  EXPECT_EQ(model_spec("bf16", "", 1).kv_dtype, DType::bf16);
  EXPECT_EQ(model_spec("fp8", "", 1).kv_dtype, DType::bf16);
  EXPECT_EQ(model_spec("fp8", "fp8", 1).kv_dtype, DType::fp8);
  EXPECT_EQ(model_spec("bf16", "fp8", 1).dtypes(), DTypes(DType::bf16, DType::fp8));
  const RunSpec s = model_spec("fp8", "", 1);
  EXPECT_EQ(s.cost_query().dtypes(), DTypes(DType::fp8));
  // Not given: echoed as "", so the recorded config resolved again at another --dtype follows
  // the activations (a rerun), and given: echoed as given.
  EXPECT_EQ(run_spec_to_json(s)["kv_dtype"], "");
  nlohmann::json again;
  for (const std::string& k : rerun_keys())
    if (run_spec_to_json(s).contains(k)) again[k] = run_spec_to_json(s)[k];
  again["dtype"] = "fp16";
  EXPECT_EQ(resolve_run_spec(again, 1, kConfigs).kv_dtype, DType::fp16);
  EXPECT_EQ(run_spec_to_json(model_spec("fp8", "fp8", 1))["kv_dtype"], "fp8");
  EXPECT_EQ(bad_input([] { model_spec("bf16", "fp64", 1); }),
            "--kv-dtype: unknown dtype 'fp64' (expected fp32|bf16|fp16|fp8)");
}

DeviceCaps caps_of(const std::string& backend, std::vector<DType> dtypes) {
  DeviceCaps c;
  c.backend = backend;
  c.dtypes = std::move(dtypes);
  return c;
}

RunSpec dtypes_spec(DType t, DType kv) {
  RunSpec s;
  s.dtype = t;
  s.kv_dtype = kv;
  return s;
}

TEST(RunSpecDTypes, CpuAndCudaRefuseWhatTheyCannotRunNamingTheField) {
  const DeviceCaps cpu = caps_of("cpu", {DType::fp32});
  const DeviceCaps cuda = caps_of("cuda", {DType::fp32, DType::bf16, DType::fp16});
  using D = DType;
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::fp32, D::fp32), cpu), "");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::fp8, D::bf16), cpu),
            "--dtype: the cpu backend has no fp8 (it runs fp32)");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::fp32, D::bf16), cpu),
            "--kv-dtype: the cpu backend has no bf16 (it runs fp32)");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::bf16, D::bf16), cuda), "");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::fp8, D::bf16), cuda),
            "--dtype: the cuda backend has no fp8 (it runs fp32|bf16|fp16)");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::bf16, D::fp8), cuda),
            "--kv-dtype: the cuda backend has no fp8 (it runs fp32|bf16|fp16)");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::bf16, D::fp16), cuda),
            "--kv-dtype: the cuda backend keeps the KV cache in the activations' dtype (bf16 at "
            "--dtype bf16); --kv-dtype fp16 needs --backend model");
  // A GPU with FP8 tensor cores runs fp8 weights between bf16 activations, cache and
  // all-reduces (issue 30, item 5), and nothing else apart; --check has no reference for it.
  DeviceCaps hopper = caps_of("cuda", {D::fp32, D::bf16, D::fp16, D::fp8});
  hopper.fp8_gemm = true;
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::fp8, D::bf16), hopper), "");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::fp8, D::fp8), hopper),
            "--kv-dtype: the cuda backend keeps the KV cache in the activations' dtype (bf16 at "
            "--dtype fp8); --kv-dtype fp8 needs --backend model");
  EXPECT_EQ(dtype_refusal(dtypes_spec(D::bf16, D::fp8), hopper),
            "--kv-dtype: the cuda backend keeps the KV cache in the activations' dtype (bf16 at "
            "--dtype bf16); --kv-dtype fp8 needs --backend model");
  RunSpec checked = dtypes_spec(D::fp8, D::bf16);
  checked.check = true;
  EXPECT_EQ(dtype_refusal(checked, hopper).rfind("--check: no host reference for fp8", 0), 0u);
  // The model backend runs each at its own width.
  const RunSpec m = model_spec("fp8", "fp8", 1);
  EXPECT_EQ(dtype_refusal(m, model_device_caps(m, load_fabric(m.topology, m.config_dir))), "");
}

TEST(RunSpecDTypes, PointsRecordTheFourDtypesWhenTheyDiffer) {
  const PointParams u = params_record(model_spec("bf16", "", 1), 32);
  EXPECT_FALSE(u.weight_dtype || u.activation_dtype || u.kv_dtype || u.allreduce_dtype);
  EXPECT_FALSE(to_json(u).contains("kv_dtype"));  // a bf16 point reads as it always did
  const nlohmann::ordered_json j = to_json(params_record(model_spec("fp8", "fp8", 1), 32));
  EXPECT_EQ(j["dtype"], "fp8");
  EXPECT_EQ(j["weight_dtype"], "fp8");
  EXPECT_EQ(j["activation_dtype"], "bf16");
  EXPECT_EQ(j["kv_dtype"], "fp8");
  EXPECT_EQ(j["allreduce_dtype"], "bf16");
}

StepOpPlan plan_of(const RunSpec& s) {
  const CostQuery q = s.cost_query();
  const Fabric f = load_fabric(s.topology, s.config_dir);
  return step_op_plan(s, step_cost(q), q.phase, q.batch, model_peaks(s), f, {s.tp, 1},
                      model_kernel_counts(s, q));
}

// TP 8 on nvlink4: the all-reduces of an fp8-weight point take bf16's time (8 KB each), while
// each compute op's byte time is the cost model's bytes over the profile's bandwidth.
TEST(ModelDTypes, Fp8WeightsPriceTheAllReduceAsBf16) {
  const RunSpec b = model_spec("bf16", "", 8), f = model_spec("fp8", "fp8", 8);
  const StepOpPlan pb = plan_of(b), pf = plan_of(f);
  const StepCost cf = step_cost(f.cost_query());
  ASSERT_EQ(pb.layer.size(), pf.layer.size());
  int reduces = 0;
  for (std::size_t i = 0; i < pf.layer.size(); ++i) {
    SCOPED_TRACE(op_name(pf.layer[i].op));
    if (op_is_collective(pf.layer[i].op)) {
      EXPECT_GT(pf.layer[i].s, 0);
      EXPECT_EQ(pf.layer[i].s, pb.layer[i].s);
      ++reduces;
      continue;
    }
    const OpCost& c = cf.layer_ops[i];
    EXPECT_DOUBLE_EQ(pf.layer[i].byte_s, (c.bytes_read + c.bytes_written) / f.hw.peak_bw);
  }
  EXPECT_EQ(reduces, 2);
  EXPECT_EQ(model_peaks(f).flops, f.hw.flops_for(DType::fp8));  // FP8 GEMMs: the fp8 peak
}

// Llama-3.1-8B bf16 decode B 1, context 1024, one layer on h200-sxm:datasheet: every op is
// bound by bandwidth, so the layer's compute is its bytes, 440,604,672 read + 169,984 written
// (test_cost_model.cc), over 4.8 TB/s: 91.8280533 us, as before the dtypes were separated.
TEST(ModelDTypes, ABf16DatasheetPointKeepsItsTime) {
  const StepOpPlan p = plan_of(model_spec("bf16", "", 1, "h200-sxm:datasheet"));
  double s = 0;
  for (const PricedOp& o : p.layer)
    if (!op_is_collective(o.op)) s += o.s;
  EXPECT_NEAR(s, 440'774'656.0 / 4.8e12, 1e-15);
}

}  // namespace
}  // namespace tpb
