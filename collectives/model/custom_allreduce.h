// The serving engines' own all-reduce over NVLink P2P (vLLM's custom all-reduce; SGLang and
// TensorRT-LLM run one-shot and two-shot kernels of the same shape): when an engine takes it
// instead of NCCL, which of its two kernels it launches, and how long that kernel takes.
#pragma once
#include <cstdint>

#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"

namespace tpb {

enum class CustomShot { one, two };

// vLLM's kernels exist for these group sizes only (csrc/custom_all_reduce.cuh REDUCE_CASE).
bool custom_group_size(int ranks);

// vLLM's kernel choice (csrc/custom_all_reduce.cuh, CustomAllreduce::allreduce): two ranks
// always one-shot; on full NVLink one-shot below 512 KB up to 4 ranks and below 256 KB up to 8,
// two-shot above.
CustomShot engine_shot(int ranks, int64_t bytes);

// Where vLLM runs its custom all-reduce rather than NCCL (vllm/distributed/device_communicators/
// custom_all_reduce.py): the fabric has one (NVLink inside the node), the group is one node of
// 2, 4, 6 or 8 ranks, and the message is below the engine's limit for the group size
// (should_custom_ar: inp_size < max_size; the preset's max_bytes).
bool engine_takes_custom(const Fabric& f, int ranks, int nodes, int64_t bytes);

struct CustomTime {
  double latency_us = 0, algbw_GBps = 0;  // time = latency + bytes / algbw
};

// one-shot: each rank reads all n - 1 peers' whole buffers, (n - 1) S over its NVLink ingress;
// two-shot: a reduce-scatter then an all-gather, each reading (n - 1) / n x S from peers.
// algbw is S over the data term: line x eff / (n - 1), and line x eff x n / (2 (n - 1)).
CustomTime custom_time(const CustomAllReduce& c, double line_GBps, CustomShot shot, int ranks);

// An eager call of the all-reduce `t` of `bytes` on an unregistered input (--eager): the custom
// all-reduce's copy into its registered buffer runs first, on the same stream: the preset's
// eager_copy latency joins the latency, and its bytes, read and written at eager_copy's HBM
// rate, the data term. NCCL takes any input: its time is returned unchanged.
// Throws BadInput naming --eager when a custom all-reduce's fabric has no eager_copy.
ModelTime eager_call(const Fabric& f, ModelTime t, int64_t bytes);

}  // namespace tpb
