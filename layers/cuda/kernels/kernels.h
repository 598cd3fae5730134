// Host launchers of the CUDA backend's kernels (one .cu file each). Every launcher takes the
// KernelLaunch from launch_plan.h so the grid that runs is the grid the plan (and its unit
// test) describes. Launch errors are checked; nothing here synchronizes.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "layers/cuda/plan/launch_plan.h"
#include "layers/cuda/plan/varlen_plan.h"
#include "layers/device.h"
#include "layers/fill_hash.h"

namespace tpb::cuda_kernels {

void launch_fill(const KernelLaunch& k, cudaStream_t s, void* dst, DType t, const FillSpec& f);
// e4m3 storage of fill_value() / fp8_fill_scale(f) (fp8_quant.cu).
void launch_fill_fp8(const KernelLaunch& k, cudaStream_t s, void* dst, const FillSpec& f);

// The dynamic per-tensor quantisation before an FP8 GEMM (plan_gemm_fp8's first two launches;
// fp8_quant.cu). Device memory, zeroed once when allocated: the quantisation re-arms it.
struct Fp8QuantState {
  unsigned amax_bits;  // the input's absolute maximum, as float bits
  unsigned done;       // blocks of the quantisation that have read amax
  float scale;         // amax / 448 (1 for an all-zero input): the GEMM's input scale
  unsigned pad;
};
void launch_fp8_amax(const KernelLaunch& k, cudaStream_t s, const void* x, int64_t n, DType t,
                     Fp8QuantState* st);
void launch_fp8_quant(const KernelLaunch& k, cudaStream_t s, const void* x, int64_t n, DType t,
                      Fp8QuantState* st, void* q);

void launch_rmsnorm(const KernelLaunch& k, cudaStream_t s, const void* x, const void* gamma,
                    void* y, int64_t rows, int64_t dim, float eps, DType t);

void launch_rope(const KernelLaunch& k, cudaStream_t s, void* qkv, int64_t tokens,
                 int64_t tokens_per_seq, int64_t pos0, const AttnShape& a, float theta, DType t);

void launch_kv_write(const KernelLaunch& k, cudaStream_t s, const void* qkv, void* k_cache,
                     void* v_cache, int64_t tokens_per_seq, int64_t pos0, const AttnShape& a,
                     DType t);

void launch_swiglu(const KernelLaunch& k, cudaStream_t s, const void* gate_up, void* out,
                   int64_t rows, int64_t inter, DType t);
void launch_add(const KernelLaunch& k, cudaStream_t s, void* x, const void* y, int64_t count,
                DType t);
// Fused pairs (rmsnorm.cu, rope_kv_write.cu): x += y then xn = rmsnorm(x) * gamma; rope of
// the qkv rows then kv_write of their rotated k and their v.
void launch_add_rmsnorm(const KernelLaunch& k, cudaStream_t s, void* x, const void* y,
                        const void* gamma, void* xn, int64_t rows, int64_t dim, float eps, DType t);
void launch_rope_kv_write(const KernelLaunch& k, cudaStream_t s, void* qkv, void* k_cache,
                          void* v_cache, int64_t tokens_per_seq, int64_t pos0, const AttnShape& a,
                          float theta, DType t);

// `partials` holds DecodePlan::workspace_bytes when p.splits > 1.
void launch_attention_decode(const DecodePlan& p, cudaStream_t s, const void* qkv,
                             const void* k_cache, const void* v_cache, void* out, float* partials,
                             int64_t ctx_len, const AttnShape& a, DType t);
// Merges split-K partial states (plan_attention_combine) into `out`, rows x heads x head_dim.
void launch_attention_combine(const KernelLaunch& k, cudaStream_t s, const float* partials,
                              void* out, int64_t splits, int64_t head_dim, DType t);

// The GEMMs run on `blas`, whose stream must be `s` and whose workspace is set (no allocation
// under graph capture); `ws` holds PrefillPlan::workspace_bytes.
void launch_attention_prefill(const PrefillPlan& p, cudaStream_t s, cublasHandle_t blas,
                              const void* qkv, const void* k_cache, const void* v_cache, void* out,
                              float* ws, int64_t seq, const AttnShape& a, DType t);

// Mixed steps (attention_varlen.cu, row_argmax.cu; plans in varlen_plan.h). `meta` is the
// device copy of m.data; m's offsets say where each of its arrays starts.
void launch_rope_varlen(const KernelLaunch& k, cudaStream_t s, void* qkv, const int32_t* meta,
                        const VarlenMeta& m, const AttnShape& a, float theta, DType t);
void launch_kv_write_varlen(const KernelLaunch& k, cudaStream_t s, const void* qkv, void* k_cache,
                            void* v_cache, const int32_t* meta, const VarlenMeta& m,
                            const AttnShape& a, DType t);
// `partials` holds VarlenAttnPlan::workspace_bytes when p.splits > 1.
void launch_attention_varlen(const VarlenAttnPlan& p, cudaStream_t s, const void* qkv,
                             const void* k_cache, const void* v_cache, void* out, float* partials,
                             const int32_t* meta, const VarlenMeta& m, const AttnShape& a, DType t);
// A decode-only step (every sequence one new token, p.decode_kernel): the decode kernel over
// the paged cache, each sequence at its own length.
void launch_attention_decode_paged(const VarlenAttnPlan& p, cudaStream_t s, const void* qkv,
                                   const void* k_cache, const void* v_cache, void* out,
                                   float* partials, const int32_t* meta, const VarlenMeta& m,
                                   const AttnShape& a, DType t);
// Per row of logits [rows, cols]: the largest value and its lowest column, into max_out[rows]
// and col_out[rows] on the device.
void launch_row_argmax(const KernelLaunch& k, cudaStream_t s, const void* logits, int64_t cols,
                       float* max_out, int32_t* col_out, DType t);

// Timers (timer_kernels.cu): %globaltimer is the GPU's nanosecond wall clock.
void launch_stamp(cudaStream_t s, uint64_t* slot);
void launch_timer_burst(cudaStream_t s, uint64_t* out, int n);
// CUDA graphs: a stamp at graph_replay_slot(slot, state[0], state[1]) (dropped past capacity),
// and the kernel that advances state[0] at the end of each replay.
void launch_stamp_replay(cudaStream_t s, uint64_t* slots, std::size_t capacity,
                         const uint64_t* state, std::size_t slot);
void launch_replay_advance(cudaStream_t s, uint64_t* state);
// Copies bytes / 16 uint4 (both 16-byte aligned): the HBM hog of --inject mem_contend.
void launch_copy(cudaStream_t s, int blocks, void* dst, const void* src, std::size_t bytes);
void launch_spin(cudaStream_t s, int blocks, uint64_t ns);
// --inject sm_clock=emulate@F: `blocks` SMs held for `ns` (prepare once with the opt-in
// shared memory per block, cudaDevAttrMaxSharedMemoryPerBlockOptin).
void prepare_sm_hold(int smem_bytes);
void launch_sm_hold(cudaStream_t s, int blocks, int smem_bytes, uint64_t ns);

}  // namespace tpb::cuda_kernels
