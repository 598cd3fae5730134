// The serving engine around the kernels (issue 32, item 5): the host work it adds per step and
// per launched kernel, which a modelled step pays where the device would otherwise run ahead.
// "none" (built in) is tpbench's own loop, which enqueues the next kernels while the device
// works; other engines are configs/engines/NAME.json, each with the measurement it comes from.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "layers/ops.h"

namespace tpb {

struct EngineProfile {
  std::string name = "none";
  std::string description;
  // The host issues each kernel this long after the one before; a kernel starts no earlier
  // than its issue (an eager Python engine is launch-bound at small batch).
  double host_per_kernel_s = 0;
  // Host or scheduler work per step before its first kernel (input preparation, scheduling).
  double step_overhead_s = 0;
  // Host work before a prefill step's first kernel, on top of step_overhead_s: a runtime's
  // fixed cost of a context phase (a first token) that its decode steps do not pay.
  double prefill_overhead_s = 0;
  // Whether the host waits for each step's tokens before issuing the next step (sampling on
  // the host), so its issue clock cannot run ahead across steps.
  bool syncs_per_step = true;
  // Passes a decode step's attention makes over each KV head's cache, per group of query heads
  // sharing it: 1 where a kernel reads it once for the group (FlashInfer, FlashAttention,
  // TensorRT-LLM's XQA, tpbench's); up to the group size where a kernel runs one block per
  // query head (TensorRT-LLM's masked MHA before XQA), less what the L2 serves. The model
  // prices min(passes, group) x the cache's bytes; the MBU's bytes stay the model's one pass.
  double gqa_decode_kv_passes = 1;
  // Whether `--algo auto` may take the custom all-reduce where vLLM and SGLang would (their
  // engines, and TensorRT-LLM's built with its custom all-reduce); false: every all-reduce is
  // NCCL's choice, as an engine without one runs it.
  bool custom_allreduce = true;
  // An engine priced from its own measured kernels (issue 57): configs/engine_tables/<tables>/
  // <hardware>.json, converted from AIConfigurator's tables; "" prices tpbench's own kernels
  // (the hardware profile's efficiency table and achievable fractions).
  std::string tables;
  // Which all-reduce table prices a step of each kind ("custom_graph", "custom_eager", "custom"
  // where the engine's table has one kind, "nccl"): vLLM captures decode in CUDA graphs and
  // runs prefill eager.
  std::string decode_allreduce = "custom_graph", prefill_allreduce = "custom_eager";
  // Ops the engine does not launch as kernels of their own: op -> the op whose kernel carries
  // it. An element-wise op fused into another element-wise op adds its bytes to that kernel
  // (less the intermediate the pair no longer reads back); one carried by attention costs
  // nothing beside the attention table's time.
  std::map<Op, Op> fused;
  std::string source;
  bool host_bound() const { return host_per_kernel_s > 0; }
  bool has_tables() const { return !tables.empty(); }
  // The op that carries `op`'s kernel under this engine (`op` itself when it runs alone).
  Op carrier(Op op) const {
    const auto it = fused.find(op);
    return it == fused.end() ? op : it->second;
  }
};

// NAME (configs/engines/NAME.json, or the built-in "none") or a .json path. Throws BadInput
// naming --engine and the field.
EngineProfile load_engine(const std::string& name_or_path, const std::string& config_dir);
nlohmann::ordered_json engine_to_json(const EngineProfile& e);

}  // namespace tpb
