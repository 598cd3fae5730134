// CudaMpiCollective: device -> pinned host -> MPI all-reduce (blocking with a watchdog, or
// nonblocking and polled: collectives/mpi/mpi_wait.h) -> device. bf16/fp16 are summed in fp32
// on the host (MPI has no 16-bit float sum), which rounds once instead of at every ring step:
// the result matches a fp32 reference closely.
#include "collectives/mpi/cuda_mpi_collective.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <vector>

#include "base/cuda_check.h"
#include "collectives/kinds/coll_kind.h"
#include "collectives/mpi/mpi_wait.h"
#include "layers/cuda/cuda_device.h"

namespace tpb {
namespace {

// Nonblocking, the host thread polls with nothing else to run: it yields between polls (the
// GPU does the work; a spinning host thread only takes a core from a peer rank).
MpiWait yielding(MpiWait w) {
  w.yield = true;
  return w;
}

class CudaMpiCollective final : public Collective {
 public:
  CudaMpiCollective(MPI_Comm comm, CudaDevice& dev, const MpiWait& wait, std::size_t max_bytes)
      : comm_(comm), stream_(static_cast<cudaStream_t>(dev.stream())), caller_(yielding(wait)) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    if (max_bytes > 0 && size_ > 1) reserve(max_bytes);
  }

  ~CudaMpiCollective() override {
    if (host_) TPB_CUDA_CHECK_NOEXCEPT(cudaFreeHost(host_));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void all_reduce(void* buf, std::size_t count, DType t) override {
    if (size_ == 1 || count == 0) return;
    TPB_ASSERT(count <= static_cast<std::size_t>(INT_MAX), "all_reduce count exceeds MPI int");
    if (t == DType::fp8)
      throw BadInput("--collective mpi: no sum for dtype fp8 on the cuda backend");
    const std::size_t bytes = count * dtype_bytes(t);
    reserve(bytes);
    TPB_CUDA_CHECK(cudaMemcpyAsync(host_, buf, bytes, cudaMemcpyDeviceToHost, stream_));
    TPB_CUDA_CHECK(cudaStreamSynchronize(stream_));  // waits on this rank's own work only

    float* sum = static_cast<float*>(host_);
    if (t != DType::fp32) {
      widen_.resize(count);
      for (std::size_t i = 0; i < count; ++i)
        widen_[i] = t == DType::bf16 ? __bfloat162float(static_cast<__nv_bfloat16*>(host_)[i])
                                     : __half2float(static_cast<__half*>(host_)[i]);
      sum = widen_.data();
    }
    const auto n = static_cast<int64_t>(count);
    const CollMpiArgs args{
        .recv = sum,
        .counts = {.send = n, .recv = n, .bytes = n * static_cast<int64_t>(sizeof(float))},
        .type = MPI_FLOAT,
        .op = MPI_SUM,
        .rank = rank_,
        .inplace = true,
        .comm = comm_};
    // A hang ends the job either way: nonblocking, the caller names the step and main() calls
    // MPI_Abort; blocking, the watchdog reports and exits.
    caller_.run("mpi all_reduce", [&](MPI_Request* req) { kAllReduce.mpi(args, req); });
    if (t == DType::bf16) {
      auto* h = static_cast<__nv_bfloat16*>(host_);
      for (std::size_t i = 0; i < count; ++i) h[i] = __float2bfloat16_rn(widen_[i]);
    } else if (t == DType::fp16) {
      auto* h = static_cast<__half*>(host_);
      for (std::size_t i = 0; i < count; ++i) h[i] = __float2half_rn(widen_[i]);
    }
    // Stream-ordered: the next all_reduce's copy into host_ runs after this one completes.
    TPB_CUDA_CHECK(cudaMemcpyAsync(buf, host_, bytes, cudaMemcpyHostToDevice, stream_));
  }

  void barrier() override {
    TPB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (size_ > 1) caller_.barrier(comm_, "mpi barrier");
  }

 private:
  void reserve(std::size_t bytes) {
    if (bytes <= host_bytes_) return;
    if (host_) {
      TPB_CUDA_CHECK(cudaStreamSynchronize(stream_));  // a pending copy may still read it
      TPB_CUDA_CHECK(cudaFreeHost(host_));
      host_ = nullptr;
      host_bytes_ = 0;
    }
    TPB_CUDA_CHECK(cudaMallocHost(&host_, bytes));
    host_bytes_ = bytes;
  }

  MPI_Comm comm_;
  cudaStream_t stream_;
  MpiCaller caller_;
  int rank_ = 0, size_ = 1;
  void* host_ = nullptr;  // pinned
  std::size_t host_bytes_ = 0;
  std::vector<float> widen_;
};

}  // namespace

std::unique_ptr<Collective> make_cuda_mpi_collective(MPI_Comm tp_comm, Device& dev,
                                                     const MpiWait& wait, std::size_t max_bytes) {
  auto* cuda = dynamic_cast<CudaDevice*>(&dev);
  if (!cuda)
    throw BadInput("make_cuda_mpi_collective: needs --backend cuda (got " + dev.caps().backend +
                   ")");
  return std::make_unique<CudaMpiCollective>(tp_comm, *cuda, wait, max_bytes);
}

}  // namespace tpb
