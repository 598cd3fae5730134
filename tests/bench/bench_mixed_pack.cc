// Host cost of a serving step's per-layer attention metadata on the CUDA backend: each layer's
// attention packs the step's batch again (pack_varlen for the native kernels, pack_sdpa_paged
// for cuDNN's paged call) and compares it with what the device holds, uploading only the first
// time in a step. The host must stay ahead of the GPU: on an H200, Llama-3.1-8B's decode layer
// at B = 64 takes about 290 us (9.36 ms / 32 layers, shared/measured/h200-2026-12-04), so the
// packing should be a small share of that. Args: sequences, context (blocks of 16 positions).
#include <benchmark/benchmark.h>

#include "layers/cuda/plan/sdpa_paged_plan.h"
#include "layers/cuda/plan/varlen_plan.h"

namespace tpb {
namespace {

constexpr int64_t kBlock = 16;

// `seqs` decodes at `context` positions each, tables of consecutive blocks.
StepBatch decodes(int64_t seqs, int64_t context) {
  StepBatch b;
  int32_t next = 0;
  for (int64_t i = 0; i < seqs; ++i) {
    SeqSlice s{context - 1, 1, true, {}};
    for (int64_t k = 0; k < blocks_needed(s, kBlock); ++k) s.blocks.push_back(next++);
    b.seqs.push_back(std::move(s));
  }
  return b;
}

void BM_PackVarlen(benchmark::State& state) {
  const StepBatch b = decodes(state.range(0), state.range(1));
  const std::vector<int32_t> held = pack_varlen(b, kBlock).data;
  for (auto _ : state) {
    const VarlenMeta m = pack_varlen(b, kBlock);
    benchmark::DoNotOptimize(m.data == held);
  }
}
BENCHMARK(BM_PackVarlen)->Args({1, 1024})->Args({64, 1024})->Args({256, 1024})->Args({64, 8192});

void BM_PackSdpaPaged(benchmark::State& state) {
  const StepBatch b = decodes(state.range(0), state.range(1));
  const KvLayout kv{state.range(0) * (state.range(1) / kBlock + 1), kBlock};
  const std::vector<int32_t> held = pack_sdpa_paged(b, sdpa_paged_layout(b, 32, 8, 128, kv)).data;
  for (auto _ : state) {
    const SdpaPagedLayout l = sdpa_paged_layout(b, 32, 8, 128, kv);
    const SdpaPagedMeta m = pack_sdpa_paged(b, l);
    benchmark::DoNotOptimize(m.data == held);
  }
}
BENCHMARK(BM_PackSdpaPaged)->Args({1, 1024})->Args({64, 1024})->Args({256, 1024})->Args({64, 8192});

}  // namespace
}  // namespace tpb
