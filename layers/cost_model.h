// The cost model: the single source of truth for FLOPs, bytes and collective volume.
// Reporters, the model backend and the CUDA launch-plan test all read these functions.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "layers/model_shape.h"
#include "layers/ops.h"
#include "layers/step_batch.h"

namespace tpb {

enum class Phase { decode, prefill };
const char* phase_name(Phase p);

struct CostQuery {
  ModelShape shape;
  Phase phase = Phase::decode;
  int64_t batch = 1;    // sequences
  int64_t context = 0;  // decode: cached tokens each new token attends to (plus itself)
  int64_t prompt = 0;   // prefill: tokens per sequence, causal
  int tp = 1;
  DType dtype = DType::fp32;      // --dtype: the weights' (base/dtype.h DTypes)
  std::optional<DType> kv_dtype;  // --kv-dtype; empty: the activations'
  int64_t layers = 0;             // 0 = shape.n_layers
  // The step ends with the final RMSNorm, the vocab-parallel LM head and greedy sampling on
  // the last row of every sequence (run --lm-head): tail_ops, and sample_gather in comm.
  bool lm_head = false;

  // Weights, activations, KV cache and all-reduce payload, each priced at its own width.
  DTypes dtypes() const { return DTypes(dtype, kv_dtype); }
};

// Cost of one op on one rank for one layer. MFU convention (PaLM, llm.c): `flops` counts
// matmul-class work only (GEMMs and attention's QK^T and PV); elementwise ops carry 0 FLOPs
// but their bytes are counted. Bytes assume each operand is read once from device memory.
struct OpCost {
  Op op = Op::count;
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double weight_bytes = 0;    // part of bytes_read that is weights
  double kv_read_bytes = 0;   // part of bytes_read that is KV cache
  double kv_write_bytes = 0;  // part of bytes_written that is KV cache
};

struct CommOp {
  std::string kind;  // "all_reduce"
  Op op = Op::count;
  double bytes = 0;  // payload per rank (tokens x hidden x the all-reduce dtype's bytes)
  int group = 1;     // participating ranks (tp)
};

// One step (all layers) on one rank.
struct StepCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double weight_bytes = 0;
  double kv_read_bytes = 0;
  double kv_write_bytes = 0;
  double activation_bytes = 0;    // bytes_read + bytes_written - weights - KV
  double tokens = 0;              // tokens produced (decode) or processed (prefill, mixed) per step
  std::vector<OpCost> layer_ops;  // one layer's ops (every layer is identical)
  std::vector<OpCost> tail_ops;   // once per step after the layers (serving: final_norm..sample)
  std::vector<CommOp> comm;       // every collective of the step, in order
  double comm_bytes = 0;
  double layers = 0;

  double bytes() const { return bytes_read + bytes_written; }
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0; }
};

// Tokens per sequence per step: 1 for decode, prompt for prefill.
int64_t tokens_per_step(const CostQuery& q);

OpCost op_cost(const CostQuery& q, Op op);
StepCost step_cost(const CostQuery& q);

// A mixed step (tpbench serve) from the same per-op formulas: the per-token ops over
// T = b.tokens() rows, attention sequence by sequence at its own cached length, and with
// lm_head the step's end (final_norm, lm_head, sample in tail_ops; sample_gather in comm)
// over the b.sampled() rows. A pure decode or pure prefill batch gives step_cost's numbers.
// layers = 0 means shape.n_layers. Throws BadInput for an empty batch or a bad shape.
StepCost mixed_step_cost(const ModelShape& m, int tp, const DTypes& t, int64_t layers,
                         const StepBatch& b, bool lm_head);

// The least time a step's compute can take with every op at its own roofline: the sum over the
// layer ops of max(FLOPs / peak FLOP/s, bytes / peak B/s), times the layers, plus the same sum
// over the tail ops (a serving step's end), once. It is at or above the whole step's roofline
// time, because an op bound by bandwidth cannot lend its idle FLOPs to one bound by compute.
// Collectives carry no FLOPs and ride the link, so they are left out. NaN when a peak is not
// positive.
double ops_roofline_time_s(const StepCost& c, double peak_flops, double peak_bw);

// Memory a rank needs for one point: weights (all layers), KV cache, activations.
struct MemoryNeed {
  double weights = 0;
  double kv_cache = 0;
  double activations = 0;
  double total() const { return weights + kv_cache + activations; }
};
MemoryNeed memory_need(const CostQuery& q);
// What --check adds on the rank that holds the unsharded reference (group rank 0): at TP > 1
// the whole tp = 1 model of the same point (weights, KV cache and activations), built while the
// shard is still allocated (harness/drive/verify.cc). Nothing at TP 1, where the host reference
// alone is the verdict.
MemoryNeed check_reference_need(const CostQuery& q);
// What the step's end adds for `rows` sampled rows (serve, run --lm-head).
void add_lm_head_memory(MemoryNeed& need, const ModelShape& m, int tp, const DTypes& t,
                        double rows);

// The same for a serving layout: weights (plus, with the LM head, its vocab/tp shard and the
// final gamma), the paged cache of every layer, and activations for max_tokens rows (plus the
// sampled rows' logits). layers = 0 means shape.n_layers.
MemoryNeed serve_memory_need(const ModelShape& m, int tp, const DTypes& t, int64_t layers,
                             const ServeShape& s);

// KV cache bytes one position takes on one rank, all layers: K and V of the local KV heads,
// 2 * hkv * d * e_kv * layers (layers = 0 means shape.n_layers). What a block of the paged
// cache costs per token, for sizing num_blocks from a memory budget.
double kv_bytes_per_token(const ModelShape& m, int tp, const DTypes& t, int64_t layers);

}  // namespace tpb
