// The launch plan's fused layer (layers/cuda/plan, LayerDims.fused) against what TpModel really
// asks of a device that fuses (caps().fused_elementwise, as CudaDevice): the model backend
// charges a fixed cost per kernel of that plan, so its list must be the step's list of calls.
// Checked on the CPU with a device that records each call and computes nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/self_collective.h"
#include "layers/cuda/plan/launch_plan_query.h"
#include "tests/support/null_device.h"
#include "tp_model/tp_model.h"

namespace tpb {
namespace {

// Each call one entry, named by the plan's op family; fused pairs are one call (one kernel).
class RecordingDevice final : public test::HeapDevice {
 public:
  RecordingDevice() {
    caps_.backend = "recording";
    caps_.fused_elementwise = true;
  }
  void gemm(const void*, const void*, void*, int64_t, int64_t, int64_t, DType) override {
    calls.push_back("gemm");
  }
  void rmsnorm(const void*, const void*, void*, int64_t, int64_t, float, DType) override {
    calls.push_back("norm");
  }
  void add_rmsnorm(void*, const void*, const void*, void*, int64_t, int64_t, float,
                   DType) override {
    calls.push_back("norm");
  }
  void rope(void*, int64_t, int64_t, int64_t, const AttnShape&, float, DType) override {
    calls.push_back("rope");
  }
  void kv_write(const void*, void*, void*, int64_t, int64_t, const AttnShape&, DType) override {
    calls.push_back("kv_write");
  }
  void rope_kv_write(void*, void*, void*, int64_t, int64_t, int64_t, const AttnShape&, float,
                     DType) override {
    calls.push_back("rope");
  }
  void attention_decode(const void*, const void*, const void*, void*, int64_t, const AttnShape&,
                        DType) override {
    calls.push_back("attention");
  }
  void attention_prefill(const void*, const void*, const void*, void*, int64_t, const AttnShape&,
                         DType) override {
    calls.push_back("attention");
  }
  void swiglu(const void*, void*, int64_t, int64_t, DType) override { calls.push_back("swiglu"); }
  void add(void*, const void*, std::size_t, DType) override { calls.push_back("add"); }
  std::vector<std::string> calls;
};

// The plan's records as the same families; one Device::attention_* call launches every
// attention record of its layer (decode: the split kernel and its combine).
std::vector<std::string> plan_calls(const std::vector<KernelLaunch>& plan) {
  std::vector<std::string> out;
  for (const KernelLaunch& k : plan) {
    std::string f;
    switch (k.op) {
      case Op::rmsnorm_attn:
      case Op::rmsnorm_mlp:
        f = "norm";
        break;
      case Op::qkv_proj:
      case Op::o_proj:
      case Op::gate_up_proj:
      case Op::down_proj:
        f = "gemm";
        break;
      case Op::attention:
        f = "attention";
        break;
      case Op::residual_attn:
      case Op::residual_mlp:
        f = "add";
        break;
      default:
        f = op_name(k.op);
    }
    if (op_is_collective(k.op) || (f == "attention" && !out.empty() && out.back() == f)) continue;
    out.push_back(f);
  }
  return out;
}

ModelShape small_model() {
  ModelShape m;
  m.name = "launch-list-test";
  m.hidden = 128;
  m.n_layers = 3;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim = 32;
  m.intermediate = 256;
  m.vocab = 256;
  return m;
}

void expect_same_list(Phase phase) {
  TpModelConfig cfg;
  cfg.shape = small_model();
  cfg.layers = 3;
  cfg.dtype = DType::bf16;
  cfg.phase = phase;
  cfg.batch = 2;
  cfg.context = 40;
  cfg.prompt = 24;
  RecordingDevice dev;
  TpModel model(dev, cfg);
  dev.calls.clear();  // set-up fills and uploads are not the step
  SelfCollective self;
  model.step(self, nullptr, 0, nullptr);

  CostQuery q;
  q.shape = cfg.shape;
  q.phase = phase;
  q.batch = cfg.batch;
  q.context = cfg.context;
  q.prompt = cfg.prompt;
  q.dtype = cfg.dtype;
  q.layers = cfg.layers;
  EXPECT_EQ(dev.calls, plan_calls(step_launch_plan(q, kDefaultSmCount, true)));
}

TEST(LaunchList, FusedDecodeStepIsTheCallsTpModelMakes) {
  expect_same_list(Phase::decode);
}

TEST(LaunchList, FusedPrefillStepIsTheCallsTpModelMakes) {
  expect_same_list(Phase::prefill);
}

}  // namespace
}  // namespace tpb
