// Separate dtypes in the cost model (issue 32, item 3), pinned to hand-computed numbers: fp8
// weights halve the GEMM matrices' bytes and nothing else (activations, norms, the LM head and
// the all-reduce stay at bf16's 2 bytes), an fp8 KV cache halves the cache's bytes and nothing
// else, and a dtype throughout prices as it always did (test_cost_model.cc keeps its pins).
#include <gtest/gtest.h>

#include <string>

#include "layers/cost_model.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

CostQuery decode_8b(DType t, std::optional<DType> kv, int64_t batch, int tp) {
  CostQuery q;
  q.shape = load_model("llama-3.1-8b", kConfigs);
  q.phase = Phase::decode;
  q.batch = batch;
  q.context = 1024;
  q.tp = tp;
  q.dtype = t;
  q.kv_dtype = kv;
  return q;
}

TEST(DTypes, Fp8WeightsRunBf16ActivationsAndAllReduces) {
  const DTypes f(DType::fp8);
  EXPECT_EQ(f.weights, DType::fp8);
  EXPECT_EQ(f.activations, DType::bf16);
  EXPECT_EQ(f.kv, DType::bf16);  // no --kv-dtype: the activations'
  EXPECT_EQ(f.allreduce, DType::bf16);
  EXPECT_FALSE(f.uniform());
  EXPECT_EQ(DTypes(DType::fp8, DType::fp8).kv, DType::fp8);
  for (DType t : {DType::fp32, DType::bf16, DType::fp16}) {
    const DTypes u(t);
    EXPECT_TRUE(u.uniform());
    EXPECT_EQ(u.allreduce, t);
    EXPECT_EQ(DTypes(t, t), u);
  }
  EXPECT_FALSE(DTypes(DType::bf16, DType::fp8).uniform());
}

// Llama-3.1-8B decode, B 1, context 1024, TP 1 (test_cost_model.cc derives the bf16 figures).
// FP8 weights: the GEMM matrices 218,103,808 params x 1 B, the two gammas 8,192 x 2 B:
// 218,120,192 B per layer x 32 = 6,979,846,144 (bf16: 13,959,168,000). Every other byte is
// bf16's: KV 134,348,800 read and 131,072 written, activations 11,141,120.
TEST(CostModelDTypes, Fp8WeightsHalveTheGemmMatricesOnly) {
  const StepCost b = step_cost(decode_8b(DType::bf16, std::nullopt, 1, 1));
  const StepCost f = step_cost(decode_8b(DType::fp8, std::nullopt, 1, 1));
  EXPECT_DOUBLE_EQ(f.weight_bytes, 6'979'846'144.0);
  EXPECT_DOUBLE_EQ(b.weight_bytes, 13'959'168'000.0);
  EXPECT_DOUBLE_EQ(f.kv_read_bytes, 134'348'800.0);
  EXPECT_DOUBLE_EQ(f.kv_write_bytes, 131'072.0);
  EXPECT_DOUBLE_EQ(f.activation_bytes, 11'141'120.0);
  EXPECT_DOUBLE_EQ(f.activation_bytes, b.activation_bytes);
  EXPECT_DOUBLE_EQ(f.flops, b.flops);
  for (std::size_t i = 0; i < f.layer_ops.size(); ++i) {
    const OpCost &x = f.layer_ops[i], &y = b.layer_ops[i];
    SCOPED_TRACE(op_name(x.op));
    const bool gemm = x.op == Op::qkv_proj || x.op == Op::o_proj || x.op == Op::gate_up_proj ||
                      x.op == Op::down_proj;
    EXPECT_DOUBLE_EQ(x.weight_bytes, gemm ? y.weight_bytes / 2 : y.weight_bytes);
    // What a GEMM reads besides its weights, and everything it writes, is activations.
    EXPECT_DOUBLE_EQ(x.bytes_read - x.weight_bytes, y.bytes_read - y.weight_bytes);
    EXPECT_DOUBLE_EQ(x.bytes_written, y.bytes_written);
  }
  const MemoryNeed m = memory_need(decode_8b(DType::fp8, std::nullopt, 1, 1));
  EXPECT_DOUBLE_EQ(m.weights, 6'979'846'144.0);
  EXPECT_DOUBLE_EQ(m.kv_cache, 134'348'800.0);
  EXPECT_DOUBLE_EQ(m.activations, 262'144.0);
}

// TP 2, B 8: each all-reduce is T x h x 2 B = 8 x 4096 x 2 = 65,536 B under fp8 weights as under
// bf16 (it was 32,768 when fp8 meant one byte everywhere); 64 of them: 4,194,304 B.
TEST(CostModelDTypes, Fp8WeightsLeaveTheAllReduceAtTwoBytes) {
  const StepCost b = step_cost(decode_8b(DType::bf16, std::nullopt, 8, 2));
  const StepCost f = step_cost(decode_8b(DType::fp8, DType::fp8, 8, 2));
  ASSERT_EQ(f.comm.size(), 64u);
  for (const CommOp& c : f.comm) EXPECT_DOUBLE_EQ(c.bytes, 65'536.0);
  EXPECT_DOUBLE_EQ(f.comm_bytes, 4'194'304.0);
  EXPECT_DOUBLE_EQ(f.comm_bytes, b.comm_bytes);
}

// With the LM head: its weights stay at the activations' width (FP8 checkpoints leave it
// unquantised). TP 1, B 1: 128,256 x 4096 x 2 + 4096 x 2 = 1,050,681,344 B under both.
TEST(CostModelDTypes, TheLmHeadStaysAtTheActivationsWidth) {
  CostQuery b = decode_8b(DType::bf16, std::nullopt, 1, 1), f = decode_8b(DType::fp8, {}, 1, 1);
  b.lm_head = f.lm_head = true;
  const StepCost sb = step_cost(b), sf = step_cost(f);
  ASSERT_EQ(sf.tail_ops.size(), 3u);
  double head_b = 0, head_f = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    head_b += sb.tail_ops[i].weight_bytes;
    head_f += sf.tail_ops[i].weight_bytes;
    EXPECT_DOUBLE_EQ(sf.tail_ops[i].bytes_read, sb.tail_ops[i].bytes_read);
    EXPECT_DOUBLE_EQ(sf.tail_ops[i].bytes_written, sb.tail_ops[i].bytes_written);
  }
  EXPECT_DOUBLE_EQ(head_f, 1'050'681'344.0);
  EXPECT_DOUBLE_EQ(head_f, head_b);
  EXPECT_DOUBLE_EQ(memory_need(f).weights - memory_need(decode_8b(DType::fp8, {}, 1, 1)).weights,
                   1'050'681'344.0);
}

// --kv-dtype fp8 under bf16: the cache's reads 1025 x 2 x 8 x 128 x 1 x 32 = 67,174,400 B and
// writes 2 x 8 x 128 x 1 x 32 = 65,536 B, half of bf16's; kv_write still reads the fresh K and V
// at 2 B (4,096 B per layer); weights and activations are bf16's.
TEST(CostModelDTypes, AnFp8KvCacheHalvesTheCacheBytesOnly) {
  const CostQuery qb = decode_8b(DType::bf16, std::nullopt, 1, 1);
  const CostQuery qk = decode_8b(DType::bf16, DType::fp8, 1, 1);
  const StepCost b = step_cost(qb), k = step_cost(qk);
  EXPECT_DOUBLE_EQ(k.kv_read_bytes, 67'174'400.0);
  EXPECT_DOUBLE_EQ(k.kv_write_bytes, 65'536.0);
  EXPECT_DOUBLE_EQ(k.kv_read_bytes, b.kv_read_bytes / 2);
  EXPECT_DOUBLE_EQ(k.weight_bytes, b.weight_bytes);
  EXPECT_DOUBLE_EQ(k.activation_bytes, b.activation_bytes);
  EXPECT_DOUBLE_EQ(op_cost(qk, Op::kv_write).bytes_read, 4'096.0);
  EXPECT_DOUBLE_EQ(op_cost(qk, Op::kv_write).bytes_written, 2'048.0);
  EXPECT_DOUBLE_EQ(memory_need(qk).kv_cache, memory_need(qb).kv_cache / 2);
  EXPECT_DOUBLE_EQ(memory_need(qk).weights, memory_need(qb).weights);
  // A paged block's bytes per token: 2 x 8 x 128 x 1 x 32 = 65,536 (bf16: 131,072).
  const ModelShape m = qb.shape;
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, 1, DTypes(DType::bf16, DType::fp8), 0), 65'536.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, 1, DTypes(DType::bf16), 0), 131'072.0);
  // Prefill reads K and V from the cache kv_write filled: at the cache's width too.
  CostQuery pb = qb, pk = qk;
  pb.phase = pk.phase = Phase::prefill;
  pb.prompt = pk.prompt = 512;
  EXPECT_DOUBLE_EQ(op_cost(pk, Op::attention).kv_read_bytes,
                   op_cost(pb, Op::attention).kv_read_bytes / 2);
}

// The mixed step of `n` sequences of (cached, new) tokens against step_cost of `q`.
void expect_mixed_as_fixed(const CostQuery& q, int n, int64_t cached, int64_t fresh) {
  StepBatch b;
  for (int i = 0; i < n; ++i) b.seqs.push_back({cached, fresh});
  const StepCost m = mixed_step_cost(q.shape, q.tp, q.dtypes(), 0, b, false), f = step_cost(q);
  EXPECT_DOUBLE_EQ(m.bytes(), f.bytes());
  EXPECT_DOUBLE_EQ(m.weight_bytes, f.weight_bytes);
  EXPECT_DOUBLE_EQ(m.kv_read_bytes, f.kv_read_bytes);
  EXPECT_DOUBLE_EQ(m.comm_bytes, f.comm_bytes);
}

// A serving step prices every dtype as a fixed step does: a pure decode batch of 8 at context
// 1024 and a pure prefill of 3 x 517 give step_cost's figures under fp8 weights and cache.
TEST(CostModelDTypes, MixedStepsAgreeWithFixedSteps) {
  CostQuery q = decode_8b(DType::fp8, DType::fp8, 8, 2);
  expect_mixed_as_fixed(q, 8, 1024, 1);
  q.phase = Phase::prefill;
  q.batch = 3;
  q.prompt = 517;
  expect_mixed_as_fixed(q, 3, 0, 517);
}

}  // namespace
}  // namespace tpb
