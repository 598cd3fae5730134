// The mixed-step cost model (tpbench serve): it must give step_cost's numbers for the batches
// step_cost can express, and hand-counted ones for a ragged batch and the LM head.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "base/errors.h"
#include "layers/cost_model.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

StepBatch uniform(int64_t batch, int64_t cached, int64_t n) {
  StepBatch b;
  for (int64_t i = 0; i < batch; ++i) b.seqs.push_back(SeqSlice{cached, n, true, {}});
  return b;
}

void expect_same(const StepCost& a, const StepCost& b) {
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.bytes_read, b.bytes_read);
  EXPECT_EQ(a.bytes_written, b.bytes_written);
  EXPECT_EQ(a.weight_bytes, b.weight_bytes);
  EXPECT_EQ(a.kv_read_bytes, b.kv_read_bytes);
  EXPECT_EQ(a.kv_write_bytes, b.kv_write_bytes);
  EXPECT_EQ(a.activation_bytes, b.activation_bytes);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.comm_bytes, b.comm_bytes);
  EXPECT_EQ(a.comm.size(), b.comm.size());
  ASSERT_EQ(a.layer_ops.size(), b.layer_ops.size());
  for (std::size_t i = 0; i < a.layer_ops.size(); ++i) {
    EXPECT_EQ(a.layer_ops[i].op, b.layer_ops[i].op);
    EXPECT_EQ(a.layer_ops[i].flops, b.layer_ops[i].flops) << op_name(a.layer_ops[i].op);
    EXPECT_EQ(a.layer_ops[i].bytes_read, b.layer_ops[i].bytes_read) << op_name(a.layer_ops[i].op);
  }
  EXPECT_TRUE(a.tail_ops.empty());
}

// Exactly (the terms are integers far below 2^53), for decode and prefill, tp 1 and 2.
TEST(MixedCost, ReducesToStepCost) {
  for (const char* model : {"llama-3.1-8b", "tiny"})
    for (int tp : {1, 2})
      for (DType t : {DType::bf16, DType::fp32}) {
        CostQuery q;
        q.shape = load_model(model, kConfigs);
        q.tp = tp;
        q.dtype = t;
        q.batch = 8;
        q.phase = Phase::decode;
        q.context = 1000;
        expect_same(mixed_step_cost(q.shape, tp, DTypes(t), 0, uniform(8, 1000, 1), false),
                    step_cost(q));
        q.phase = Phase::prefill;
        q.batch = 3;
        q.prompt = 517;
        expect_same(mixed_step_cost(q.shape, tp, DTypes(t), 0, uniform(3, 0, 517), false),
                    step_cost(q));
      }
}

// run --lm-head ends a fixed step as serve ends a mixed one: the same tail ops and the same
// candidate all-reduce, for one sampled row per sequence.
TEST(MixedCost, FixedStepWithLmHeadIsTheMixedOne) {
  for (int tp : {1, 2}) {
    CostQuery q;
    q.shape = load_model("tiny", kConfigs);
    q.tp = tp;
    q.dtype = DType::bf16;
    q.lm_head = true;
    q.batch = 8;
    q.context = 100;
    const StepCost d = step_cost(q),
                   dm = mixed_step_cost(q.shape, tp, q.dtypes(), 0, uniform(8, 100, 1), true);
    q.phase = Phase::prefill;
    q.batch = 3;
    q.prompt = 64;
    const StepCost p = step_cost(q),
                   pm = mixed_step_cost(q.shape, tp, q.dtypes(), 0, uniform(3, 0, 64), true);
    for (const auto& [a, b] : {std::pair{&d, &dm}, std::pair{&p, &pm}}) {
      EXPECT_EQ(a->flops, b->flops);
      EXPECT_EQ(a->bytes_read, b->bytes_read);
      EXPECT_EQ(a->weight_bytes, b->weight_bytes);
      EXPECT_EQ(a->comm_bytes, b->comm_bytes);
      ASSERT_EQ(a->tail_ops.size(), 3u);
      ASSERT_EQ(a->tail_ops.size(), b->tail_ops.size());
      for (std::size_t i = 0; i < a->tail_ops.size(); ++i)
        EXPECT_EQ(a->tail_ops[i].flops, b->tail_ops[i].flops);
    }
    // The LM head GEMM on the rows that sample: 2 * S * h * V/tp.
    EXPECT_EQ(d.tail_ops[1].flops, 2.0 * 8 * 1024 * (32000 / tp));
    EXPECT_EQ(p.tail_ops[1].flops, 2.0 * 3 * 1024 * (32000 / tp));
    q.lm_head = false;
    EXPECT_TRUE(step_cost(q).tail_ops.empty());
    // Memory: the LM head shard and the final gamma, bf16.
    q.lm_head = true;
    const MemoryNeed with = memory_need(q);
    q.lm_head = false;
    EXPECT_EQ(with.weights - memory_need(q).weights, (32000.0 / tp * 1024 + 1024) * 2);
  }
}

// tiny (h 1024, 16 q / 8 KV heads of d 64, I 4096, vocab 32000) at tp 2 in bf16, one layer:
// local hq 8, hkv 4, I 2048, V' = 16000; e = 2. The batch: a decode (c 10, n 1, samples), a
// first chunk (c 0, n 5, does not sample) and a later chunk (c 16, n 4, samples): T = 10, S = 2.
//   Attention pairs P = n*c + n(n+1)/2: 10 + 1 = 11, 0 + 15 = 15, 64 + 10 = 74; sum 100.
//     FLOPs 4 * hq * d * P = 4 * 8 * 64 * 100 = 204,800.
//     KV read (c + n) * 2 * hkv * d * e = (11 + 5 + 20) * 1,024 = 36,864; Q in T*hq*d*e = 10,240.
//   GEMM params per layer: qkv 1024*(8+2*4)*64 = 1,048,576; o 8*64*1024 = 524,288;
//     gate_up 1024*4096 = 4,194,304; down 2048*1024 = 2,097,152; sum 7,864,320;
//     FLOPs 2 * T * 7,864,320 = 157,286,400.
//   LM head: 2 * S * h * V' = 2 * 2 * 1024 * 16000 = 65,536,000 FLOPs; weights
//     16000 * 1024 * 2 = 32,768,000 B.
//   Weights: (7,864,320 + 2 gammas * 1024) * 2 = 15,732,736, + 32,768,000 + final gamma 2,048
//     = 48,502,784.
//   Comm: two all-reduces of T*h*e = 20,480 B, and the candidates S * tp * 8 = 32 B.
TEST(MixedCost, HandCountedRaggedBatchWithLmHead) {
  const ModelShape m = load_model("tiny", kConfigs);
  StepBatch b;
  b.seqs = {SeqSlice{10, 1, true, {}}, SeqSlice{0, 5, false, {}}, SeqSlice{16, 4, true, {}}};
  const StepCost s = mixed_step_cost(m, 2, DTypes(DType::bf16), 1, b, true);
  EXPECT_EQ(s.tokens, 10);
  const OpCost& attn = s.layer_ops[static_cast<int>(Op::attention)];
  EXPECT_EQ(attn.flops, 204'800.0);
  EXPECT_EQ(attn.kv_read_bytes, 36'864.0);
  EXPECT_EQ(attn.bytes_read, 36'864.0 + 10'240.0);
  EXPECT_EQ(attn.bytes_written, 10'240.0);
  EXPECT_EQ(s.flops, 157'286'400.0 + 204'800.0 + 65'536'000.0);
  EXPECT_EQ(s.weight_bytes, 48'502'784.0);
  EXPECT_EQ(s.kv_read_bytes, 36'864.0);
  EXPECT_EQ(s.kv_write_bytes, 10'240.0);  // T * 2 * hkv * d * e
  ASSERT_EQ(s.comm.size(), 3u);
  EXPECT_EQ(s.comm[2].op, Op::sample_gather);
  EXPECT_EQ(s.comm[2].bytes, 32.0);
  EXPECT_EQ(s.comm_bytes, 2 * 20'480.0 + 32.0);

  // The step's end, S = 2 rows:
  //   final_norm reads 2*1024*2 + gamma 2,048 = 6,144 B, writes 4,096;
  //   lm_head reads 32,768,000 + 4,096 B and writes S * V' * e = 64,000;
  //   sample reads the logits 64,000 and the 2 * 2 pairs of 8 B = 32, writes 2 * 8 + 2 * 4 = 24.
  ASSERT_EQ(s.tail_ops.size(), 3u);
  EXPECT_EQ(s.tail_ops[0].op, Op::final_norm);
  EXPECT_EQ(s.tail_ops[0].bytes_read, 6'144.0);
  EXPECT_EQ(s.tail_ops[0].bytes_written, 4'096.0);
  EXPECT_EQ(s.tail_ops[0].weight_bytes, 2'048.0);
  EXPECT_EQ(s.tail_ops[1].op, Op::lm_head);
  EXPECT_EQ(s.tail_ops[1].flops, 65'536'000.0);
  EXPECT_EQ(s.tail_ops[1].weight_bytes, 32'768'000.0);
  EXPECT_EQ(s.tail_ops[1].bytes_read, 32'772'096.0);
  EXPECT_EQ(s.tail_ops[1].bytes_written, 64'000.0);
  EXPECT_EQ(s.tail_ops[2].op, Op::sample);
  EXPECT_EQ(s.tail_ops[2].bytes_read, 64'032.0);
  EXPECT_EQ(s.tail_ops[2].bytes_written, 24.0);

  // Without the LM head, or with nothing to sample, the step ends after the layers.
  const StepCost no_head = mixed_step_cost(m, 2, DTypes(DType::bf16), 1, b, false);
  EXPECT_EQ(no_head.flops, 157'286'400.0 + 204'800.0);
  EXPECT_TRUE(no_head.tail_ops.empty());
  EXPECT_EQ(no_head.comm.size(), 2u);
}

// tiny at tp 2 in bf16, all 8 layers, 1000 blocks of 16, 256 tokens, 16 sequences:
//   KV per token 2 * hkv * d * e * layers = 2 * 4 * 64 * 2 * 8 = 8,192 B; 16,000 positions
//     -> 131,072,000 B.
//   Weights (memory_need) 7,866,368 params * 2 B * 8 = 125,861,888, plus the LM head shard
//     and the final gamma (16000 * 1024 + 1024) * 2 = 32,770,048 -> 158,631,936.
//   Activations 256 * (4*1024 + 16*64 + 3*2048) * 2 * 2 = 11,534,336, plus per sampled row
//     (1024 + 16000) * 2 and 2 * 8 of candidates: 16 * 34,064 = 545,024 -> 12,079,360.
TEST(MixedCost, ServeMemoryNeed) {
  const ModelShape m = load_model("tiny", kConfigs);
  EXPECT_EQ(kv_bytes_per_token(m, 2, DTypes(DType::bf16), 0), 8'192.0);
  EXPECT_EQ(kv_bytes_per_token(m, 2, DTypes(DType::bf16), 1), 1'024.0);
  ServeShape s;
  s.max_tokens = 256;
  s.max_seqs = 16;
  s.kv = KvLayout{1000, 16};
  const MemoryNeed n = serve_memory_need(m, 2, DTypes(DType::bf16), 0, s);
  EXPECT_EQ(n.kv_cache, 131'072'000.0);
  EXPECT_EQ(n.weights, 158'631'936.0);
  EXPECT_EQ(n.activations, 12'079'360.0);
  s.lm_head = false;
  EXPECT_EQ(serve_memory_need(m, 2, DTypes(DType::bf16), 0, s).weights, 125'861'888.0);
}

TEST(MixedCost, RejectsBadBatchesAndSplits) {
  const ModelShape m = load_model("tiny", kConfigs);
  EXPECT_THROW(mixed_step_cost(m, 1, DTypes(DType::bf16), 0, StepBatch{}, false), BadInput);
  EXPECT_THROW(mixed_step_cost(m, 1, DTypes(DType::bf16), 0, uniform(1, 0, 0), false), BadInput);
  ModelShape odd = m;
  odd.vocab = 32001;
  EXPECT_THROW(mixed_step_cost(odd, 2, DTypes(DType::bf16), 0, uniform(1, 0, 4), true), BadInput);
  EXPECT_NO_THROW(mixed_step_cost(odd, 2, DTypes(DType::bf16), 0, uniform(1, 0, 4), false));
}

}  // namespace
}  // namespace tpb
