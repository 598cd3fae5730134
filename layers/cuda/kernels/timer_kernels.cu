// Timestamp, spin and copy kernels. %globaltimer is the GPU's nanosecond wall clock, so a stamp
// kernel on the stream records when the stream reached that point, not when the host enqueued
// it; the spin kernel holds the stream (and one block per SM) for a wall-clock interval, the
// hold kernel a share of the SMs (--inject sm_clock=emulate@F).
#include "base/cuda_check.h"
#include "layers/cuda/kernels/kernel_common.cuh"
#include "layers/cuda/kernels/kernels.h"

namespace tpb::cuda_kernels {
namespace {

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stamp_kernel(uint64_t* slot) {
  *slot = globaltimer();
}

// A stamp captured into a CUDA graph: state = {replay index, slots per replay}, so each replay
// of the same graph writes its own slot (layers/device.h graph_replay_slot).
__global__ void stamp_replay_kernel(uint64_t* slots, uint64_t capacity, const uint64_t* state,
                                    uint64_t slot) {
  const std::size_t i = tpb::graph_replay_slot(slot, state[0], state[1]);
  if (i < capacity) slots[i] = globaltimer();
}

// The last node of a captured step: the next replay stamps the next block of slots.
__global__ void replay_advance_kernel(uint64_t* state) {
  state[0] += 1;
}

// --inject mem_contend on a GPU: a grid-stride 16-byte copy, read + write through HBM.
__global__ void copy_kernel(uint4* dst, const uint4* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

// Consecutive reads in one thread: the smallest nonzero step is the timer's resolution.
__global__ void timer_burst_kernel(uint64_t* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = globaltimer();
}

__global__ void spin_kernel(uint64_t ns) {
  const uint64_t t0 = globaltimer();
  while (globaltimer() - t0 < ns) {
  }
}

// --inject sm_clock=emulate@F: one block per held SM, 1024 threads and all the shared memory a
// block may opt into, so with the 1 KB the hardware reserves per block no other block fits
// beside it. The threads sleep between reads of the timer: the SM is held, not heated.
__global__ void __launch_bounds__(1024, 1) sm_hold_kernel(uint64_t ns) {
  extern __shared__ unsigned char held[];
  const uint64_t t0 = globaltimer();
  while (globaltimer() - t0 < ns) {
#if __CUDA_ARCH__ >= 700
    __nanosleep(2000);
#endif
  }
  if (ns == 0) held[threadIdx.x] = 0;  // never true; keeps the buffer a use of the kernel
}

}  // namespace

void prepare_sm_hold(int smem_bytes) {
  TPB_CUDA_CHECK(cudaFuncSetAttribute(sm_hold_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      smem_bytes));
}

void launch_sm_hold(cudaStream_t s, int blocks, int smem_bytes, uint64_t ns) {
  sm_hold_kernel<<<blocks, 1024, static_cast<std::size_t>(smem_bytes), s>>>(ns);
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_stamp(cudaStream_t s, uint64_t* slot) {
  stamp_kernel<<<1, 1, 0, s>>>(slot);
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_stamp_replay(cudaStream_t s, uint64_t* slots, std::size_t capacity,
                         const uint64_t* state, std::size_t slot) {
  stamp_replay_kernel<<<1, 1, 0, s>>>(slots, capacity, state, slot);
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_replay_advance(cudaStream_t s, uint64_t* state) {
  replay_advance_kernel<<<1, 1, 0, s>>>(state);
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_copy(cudaStream_t s, int blocks, void* dst, const void* src, std::size_t bytes) {
  copy_kernel<<<blocks, 256, 0, s>>>(static_cast<uint4*>(dst), static_cast<const uint4*>(src),
                                     bytes / sizeof(uint4));
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_timer_burst(cudaStream_t s, uint64_t* out, int n) {
  timer_burst_kernel<<<1, 1, 0, s>>>(out, n);
  TPB_CUDA_CHECK(cudaGetLastError());
}

void launch_spin(cudaStream_t s, int blocks, uint64_t ns) {
  spin_kernel<<<blocks, 32, 0, s>>>(ns);
  TPB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tpb::cuda_kernels
