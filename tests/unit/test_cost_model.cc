// Pins the cost model to hand-computed numbers (the derivations are in the comments), so a
// formula change must show up here as a deliberate edit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/errors.h"
#include "layers/cost_model.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

CostQuery decode(const std::string& model, int64_t batch, int64_t context, int tp) {
  CostQuery q;
  q.shape = load_model(model, kConfigs);
  q.phase = Phase::decode;
  q.batch = batch;
  q.context = context;
  q.tp = tp;
  q.dtype = DType::bf16;
  return q;
}

// Llama-3.1-8B: h 4096, 32 layers, 32 q heads, 8 KV heads, d 128, I 14336; bf16 so e = 2.
// Per-layer GEMM weights at tp=1 (params):
//   qkv  4096 * (32 + 2*8) * 128 = 4096 * 6144  =  25,165,824
//   o    32*128 * 4096                          =  16,777,216
//   gate_up 4096 * 2*14336                      = 117,440,512
//   down 14336 * 4096                           =  58,720,256
//   sum                                         = 218,103,808
// plus two RMSNorm gammas 2 * 4096 = 8,192 -> 218,112,000 params = 436,224,000 bytes per layer,
// x 32 layers = 13,959,168,000 bytes.
TEST(CostModel, Llama8BDecodeB1Ctx1024Tp1) {
  const StepCost s = step_cost(decode("llama-3.1-8b", 1, 1024, 1));
  EXPECT_DOUBLE_EQ(s.tokens, 1);
  EXPECT_DOUBLE_EQ(s.weight_bytes, 13'959'168'000.0);
  // FLOPs per layer: GEMMs 2 * T * params = 2 * 1 * 218,103,808 = 436,207,616;
  // attention 4 * B * hq * d * (ctx + 1) = 4 * 32 * 128 * 1025 = 16,793,600.
  // 453,001,216 per layer x 32 = 14,496,038,912.
  EXPECT_DOUBLE_EQ(s.flops, 14'496'038'912.0);
  // KV read per layer: B * (ctx+1) * 2 * hkv * d * e = 1025 * 2 * 8 * 128 * 2 = 4,198,400;
  // x 32 = 134,348,800. KV written: the new token's K and V, 2*8*128*2 = 4,096; x 32 = 131,072.
  EXPECT_DOUBLE_EQ(s.kv_read_bytes, 134'348'800.0);
  EXPECT_DOUBLE_EQ(s.kv_write_bytes, 131'072.0);
  // Activation reads per layer (T*h*e = 8,192): rmsnorm 2 x 8,192; qkv in 8,192; rope
  // (32+8)*128*2 = 10,240; kv_write in 4,096; q 32*128*2 = 8,192; o in 8,192; residual 2 x 16,384;
  // gate_up in 8,192; swiglu in 2*14336*2 = 57,344; down in 14336*2 = 28,672. Sum 182,272.
  // Reads = 436,224,000 + 4,198,400 + 182,272 = 440,604,672 per layer -> 14,099,349,504.
  EXPECT_DOUBLE_EQ(s.bytes_read, 14'099'349'504.0);
  // Writes per layer: rmsnorm 2 x 8,192; qkv 6144*2 = 12,288; rope 10,240; kv 4,096; attn out
  // 8,192; o 8,192; residual 2 x 8,192; gate_up 28672*2 = 57,344; swiglu 28,672; down 8,192.
  // Sum 169,984 per layer -> 5,439,488.
  EXPECT_DOUBLE_EQ(s.bytes_written, 5'439'488.0);
  EXPECT_DOUBLE_EQ(s.bytes(), 14'104'788'992.0);
  // Activations: 14,104,788,992 - 13,959,168,000 - 134,348,800 - 131,072 = 11,141,120.
  EXPECT_DOUBLE_EQ(s.activation_bytes, 11'141'120.0);
  // The article's number: batch 1 in bf16 does about 1 FLOP per byte (2B/b = 2*1/2).
  EXPECT_NEAR(s.intensity(), 1.0277, 1e-4);
  EXPECT_TRUE(s.comm.empty());  // tp = 1: no collectives at all
  EXPECT_DOUBLE_EQ(s.comm_bytes, 0);
  ASSERT_EQ(s.layer_ops.size(), static_cast<size_t>(kOpsPerLayer));
  for (size_t i = 0; i < s.layer_ops.size(); ++i) EXPECT_EQ(s.layer_ops[i].op, static_cast<Op>(i));

  const MemoryNeed m = memory_need(decode("llama-3.1-8b", 1, 1024, 1));
  EXPECT_DOUBLE_EQ(m.weights, 13'959'168'000.0);
  EXPECT_DOUBLE_EQ(m.kv_cache, 134'348'800.0);  // 32 layers x 1025 positions x 4,096 B
  // T * (4h + (hq+2hkv)d + 3I) * e * 2 = (16,384 + 6,144 + 43,008) * 2 * 2 = 262,144.
  EXPECT_DOUBLE_EQ(m.activations, 262'144.0);
}

// --check at TP > 1 builds the whole tp = 1 model on group rank 0 beside its shard: weights,
// KV cache and activations, the numbers of Llama8BDecodeB1Ctx1024Tp1 (the plan once counted
// the weights alone, 134,611,144 bytes short here). At TP 1 the host reference is the only one.
TEST(CostModel, CheckReferenceIsTheWholeUnshardedModel) {
  const MemoryNeed r = check_reference_need(decode("llama-3.1-8b", 1, 1024, 2));
  EXPECT_DOUBLE_EQ(r.weights, 13'959'168'000.0);
  EXPECT_DOUBLE_EQ(r.kv_cache, 134'348'800.0);
  EXPECT_DOUBLE_EQ(r.activations, 262'144.0);
  EXPECT_DOUBLE_EQ(r.total(), 14'093'778'944.0);
  EXPECT_DOUBLE_EQ(check_reference_need(decode("llama-3.1-8b", 1, 1024, 1)).total(), 0.0);
}

TEST(CostModel, Llama8BDecodeOpCosts) {
  const CostQuery q = decode("llama-3.1-8b", 1, 1024, 1);
  // qkv: 2 * 1 * 4096 * 6144 = 50,331,648 FLOPs; weights 4096 * 6144 * 2 = 50,331,648 B.
  const OpCost qkv = op_cost(q, Op::qkv_proj);
  EXPECT_DOUBLE_EQ(qkv.flops, 50'331'648.0);
  EXPECT_DOUBLE_EQ(qkv.weight_bytes, 50'331'648.0);
  EXPECT_DOUBLE_EQ(qkv.bytes_read, 50'331'648.0 + 8'192.0);
  EXPECT_DOUBLE_EQ(qkv.bytes_written, 12'288.0);
  const OpCost attn = op_cost(q, Op::attention);
  EXPECT_DOUBLE_EQ(attn.flops, 16'793'600.0);
  EXPECT_DOUBLE_EQ(attn.kv_read_bytes, 4'198'400.0);
  EXPECT_DOUBLE_EQ(attn.bytes_read, 4'198'400.0 + 8'192.0);
  const OpCost rms = op_cost(q, Op::rmsnorm_mlp);
  EXPECT_DOUBLE_EQ(rms.flops, 0);  // elementwise: bytes only (MFU convention)
  EXPECT_DOUBLE_EQ(rms.weight_bytes, 8'192.0);
  for (Op op : {Op::allreduce_attn, Op::allreduce_mlp}) {
    const OpCost c = op_cost(q, op);
    EXPECT_DOUBLE_EQ(c.flops + c.bytes_read + c.bytes_written, 0);
  }
}

// Prefill, S = 2048, B = 1, tp = 1, bf16: T = 2048.
TEST(CostModel, Llama8BPrefill2048) {
  CostQuery q = decode("llama-3.1-8b", 1, 0, 1);
  q.phase = Phase::prefill;
  q.prompt = 2048;
  const StepCost s = step_cost(q);
  EXPECT_DOUBLE_EQ(s.tokens, 2048);
  // GEMMs: 2 * 2048 * 218,103,808 = 893,353,197,568 per layer.
  // Causal attention: 4 * d * hq * B * S(S+1)/2 = 4 * 128 * 32 * (2048*2049/2 = 2,098,176)
  //   = 16,384 * 2,098,176 = 34,376,515,584 per layer.
  // Sum 927,729,713,152 x 32 = 29,687,350,820,864.
  EXPECT_DOUBLE_EQ(s.flops, 29'687'350'820'864.0);
  EXPECT_DOUBLE_EQ(s.weight_bytes, 13'959'168'000.0);  // weights read once, whatever T is
  // K and V read by attention: T * 2 * hkv * d * e = 2048 * 2 * 8 * 128 * 2 = 8,388,608 per
  // layer, x 32 = 268,435,456; the same amount is written into the cache.
  EXPECT_DOUBLE_EQ(s.kv_read_bytes, 268'435'456.0);
  EXPECT_DOUBLE_EQ(s.kv_write_bytes, 268'435'456.0);
  // Reads 817,905,664 and writes 348,127,232 per layer (each op's T-scaled terms as in the
  // decode test with T = 2048) -> 37,313,052,672 bytes per step.
  EXPECT_DOUBLE_EQ(s.bytes(), 37'313'052'672.0);
  // Far above any GPU's ridge (~200-300 FLOP/B): ~796 FLOP/B.
  EXPECT_NEAR(s.intensity(), 795.63, 0.01);
  const MemoryNeed m = memory_need(q);
  EXPECT_DOUBLE_EQ(m.kv_cache, 268'435'456.0);  // 32 x 2048 positions x 4,096 B
}

// tp = 2: q heads 16, KV heads 4 (split), I 7168 per rank.
TEST(CostModel, Llama8BDecodeTp2) {
  const StepCost s = step_cost(decode("llama-3.1-8b", 1, 1024, 2));
  // Local GEMM params halve: 109,051,904; gammas stay whole (each rank normalises all of h):
  // (109,051,904 + 8,192) * 2 B * 32 = 6,979,846,144.
  EXPECT_DOUBLE_EQ(s.weight_bytes, 6'979'846'144.0);
  // FLOPs: (2 * 109,051,904 + 4 * 16 * 128 * 1025) * 32 = (218,103,808 + 8,396,800) * 32.
  EXPECT_DOUBLE_EQ(s.flops, 7'248'019'456.0);
  // Two all-reduces per layer, each T * h * e = 1 * 4096 * 2 = 8,192 bytes, group 2.
  ASSERT_EQ(s.comm.size(), 64u);
  EXPECT_EQ(s.comm[0].op, Op::allreduce_attn);
  EXPECT_EQ(s.comm[1].op, Op::allreduce_mlp);
  EXPECT_EQ(s.comm[63].op, Op::allreduce_mlp);
  for (const CommOp& c : s.comm) {
    EXPECT_EQ(c.kind, "all_reduce");
    EXPECT_DOUBLE_EQ(c.bytes, 8'192.0);
    EXPECT_EQ(c.group, 2);
  }
  EXPECT_DOUBLE_EQ(s.comm_bytes, 524'288.0);  // 64 x 8,192
}

// Llama-3.1-70B: h 8192, 80 layers, 64 q heads, 8 KV heads, d 128, I 28672.
TEST(CostModel, Llama70BTp8SplitsKv) {
  const CostQuery q = decode("llama-3.1-70b", 1, 1024, 8);
  const ShardShape sh = shard_shape(q.shape, 8);
  EXPECT_EQ(sh.q_heads, 8);
  EXPECT_EQ(sh.kv_heads, 1);
  EXPECT_FALSE(sh.kv_replicated);
  EXPECT_EQ(sh.inter, 3584);
  const StepCost s = step_cost(q);
  // Local params: qkv 8192*(8+2)*128 = 10,485,760; o 8*128*8192 = 8,388,608;
  // gate_up 8192*7168 = 58,720,256; down 3584*8192 = 29,360,128; sum 106,954,752.
  // FLOPs: (2 * 106,954,752 + 4 * 8 * 128 * 1025) * 80 = (213,909,504 + 4,198,400) * 80.
  EXPECT_DOUBLE_EQ(s.flops, 17'448'632'320.0);
  // KV read: 1025 * 2 * 1 * 128 * 2 = 524,800 per layer, x 80 = 41,984,000.
  EXPECT_DOUBLE_EQ(s.kv_read_bytes, 41'984'000.0);
  EXPECT_EQ(s.comm.size(), 160u);
  EXPECT_DOUBLE_EQ(s.comm[0].bytes, 16'384.0);  // 8192 * 2
}

TEST(CostModel, Llama70BTp16ReplicatesKv) {
  const CostQuery q = decode("llama-3.1-70b", 1, 1024, 16);
  const ShardShape sh = shard_shape(q.shape, 16);
  EXPECT_EQ(sh.q_heads, 4);
  EXPECT_EQ(sh.kv_heads, 1);
  EXPECT_TRUE(sh.kv_replicated);
  EXPECT_EQ(sh.inter, 1792);
  const StepCost s = step_cost(q);
  // Local params: qkv 8192*(4+2)*128 = 6,291,456; o 4*128*8192 = 4,194,304;
  // gate_up 8192*3584 = 29,360,128; down 1792*8192 = 14,680,064; sum 54,525,952.
  // FLOPs: (2 * 54,525,952 + 4 * 4 * 128 * 1025) * 80 = (109,051,904 + 2,099,200) * 80.
  EXPECT_DOUBLE_EQ(s.flops, 8'892'088'320.0);
  // Replication: each rank still streams one whole KV head, so KV traffic does not halve
  // from tp=8 to tp=16 (41,984,000 both times) while the GEMM traffic does.
  EXPECT_DOUBLE_EQ(s.kv_read_bytes, 41'984'000.0);
}

// 2B/b FLOP per byte: intensity grows ~linearly with batch while weights dominate the bytes;
// the per-sequence KV stream makes it sublinear as the batch grows.
TEST(CostModel, DecodeIntensityGrowsWithBatch) {
  const double i1 = step_cost(decode("llama-3.1-8b", 1, 1024, 1)).intensity();
  double prev = i1;
  for (int64_t b : {2, 4, 8, 16, 32, 64}) {
    const double ib = step_cost(decode("llama-3.1-8b", b, 1024, 1)).intensity();
    EXPECT_GT(ib, prev);
    if (b <= 8) {
      EXPECT_GT(ib / (static_cast<double>(b) * i1), 0.9) << "batch " << b;
    }
    prev = ib;
  }
  // Short context: the weight term alone, intensity ~ B (bf16, b = 2).
  EXPECT_NEAR(step_cost(decode("llama-3.1-8b", 64, 0, 1)).intensity(), 64, 64 * 0.05);
}

TEST(CostModel, LayersOverrideAndFp32) {
  CostQuery q = decode("llama-3.1-8b", 1, 1024, 1);
  q.layers = 2;
  q.dtype = DType::fp32;
  const StepCost s = step_cost(q);
  EXPECT_DOUBLE_EQ(s.weight_bytes, 218'112'000.0 * 4 * 2);  // params x 4 B x 2 layers
  EXPECT_DOUBLE_EQ(s.flops, 453'001'216.0 * 2);             // FLOPs do not depend on dtype
}

TEST(CostModel, TinyIsSeveralTimesTheLlc) {
  // The point of `tiny`: at TP=2 in fp32 each rank's weights are > 4x a 32 MiB LLC.
  CostQuery q = decode("tiny", 1, 0, 2);
  q.dtype = DType::fp32;
  // Local params per layer: qkv 1024*(8+2*4)*64 = 1,048,576; o 8*64*1024 = 524,288;
  // gate_up 1024*4096 = 4,194,304; down 2048*1024 = 2,097,152; gammas 2,048 -> 7,866,368.
  // x 4 B x 8 layers = 251,723,776 bytes (240 MiB).
  EXPECT_DOUBLE_EQ(memory_need(q).weights, 251'723'776.0);
  EXPECT_GT(memory_need(q).weights, 4.0 * 33'554'432);
}

void expect_bad(const CostQuery& q, const std::string& msg) {
  try {
    step_cost(q);
    FAIL() << "expected BadInput: " << msg;
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), msg);
  }
}

TEST(CostModel, RejectsBadQueries) {
  CostQuery q = decode("llama-3.1-8b", 0, 1024, 1);
  expect_bad(q, "--batch: must be >= 1 (got 0)");
  q = decode("llama-3.1-8b", 1, -1, 1);
  expect_bad(q, "--context: must be >= 0 (got -1)");
  q = decode("llama-3.1-8b", 1, 0, 1);
  q.phase = Phase::prefill;
  q.prompt = 0;
  expect_bad(q, "--prompt: must be >= 1 (got 0)");
  q = decode("llama-3.1-8b", 1, 0, 3);
  expect_bad(q, "--tp: 3 does not divide the model's 32 attention heads (n_heads)");
  q = decode("llama-3.1-8b", 1, 0, 1);
  q.layers = -1;
  expect_bad(q, "--layers: must be >= 0 (got -1)");
  EXPECT_STREQ(phase_name(Phase::decode), "decode");
  EXPECT_STREQ(phase_name(Phase::prefill), "prefill");
}

// Each op at its own roofline: the sum of max(FLOPs / peak, bytes / bw) over the compute ops,
// never below the step's own roofline max(FLOPs / peak, bytes / bw), and equal to it when every
// op sits on one side of the ridge (decode B=1 is all bandwidth-bound).
TEST(CostModel, OpsRooflineTime) {
  const double pf = 989e12, bw = 3.35e12;  // H100 SXM bf16 dense, HBM3
  const StepCost d = step_cost(decode("llama-3.1-8b", 1, 1024, 1));
  double by_hand = 0;
  for (const OpCost& o : d.layer_ops)
    if (!op_is_collective(o.op))
      by_hand += std::max(o.flops / pf, (o.bytes_read + o.bytes_written) / bw);
  EXPECT_DOUBLE_EQ(ops_roofline_time_s(d, pf, bw), by_hand * 32);
  EXPECT_NEAR(ops_roofline_time_s(d, pf, bw), d.bytes() / bw, 1e-9 * d.bytes() / bw);

  CostQuery q = decode("llama-3.1-8b", 1, 0, 1);
  q.phase = Phase::prefill;
  q.prompt = 2048;
  const StepCost p = step_cost(q);
  const double t = ops_roofline_time_s(p, pf, bw);
  EXPECT_GT(t, std::max(p.flops / pf, p.bytes() / bw));  // norms and rope stay bandwidth-bound
  const double ceiling_ops = p.flops / pf / t;
  EXPECT_LT(ceiling_ops, 1.0);  // where min(1, intensity / ridge) says 1
  EXPECT_GT(ceiling_ops, 0.5);
  EXPECT_TRUE(std::isnan(ops_roofline_time_s(p, 0, bw)));
}

}  // namespace
}  // namespace tpb
