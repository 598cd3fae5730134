// NcclCollective. The communicator is non-blocking (config.blocking = 0) so that init and
// every call can be polled against the deadline; a single-rank group makes no communicator.
#include "collectives/nccl/nccl_collective.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <chrono>
#include <thread>

#include "base/cuda_check.h"
#include "collectives/mpi/request_wait.h"
#include "layers/cuda/cuda_device.h"

namespace tpb {
namespace {

using Clock = std::chrono::steady_clock;

// Collectives allowed in flight before all_reduce waits for the oldest. Two keep the host a
// layer ahead of the GPU (launch latency stays hidden) while bounding the stream's queue: a
// hung collective is then seen within two calls, never behind a thousand queued launches
// where a kernel launch itself would block.
constexpr int kInFlight = 2;
// all_reduce_repeated's calls per tracked event: 2 x 64 queued launches stay well inside the
// stream's launch queue (about 1024), so a launch never blocks out of the timeout's reach.
constexpr int kBurst = 64;

ncclDataType_t nccl_type(DType t) {
  static constexpr std::array<ncclDataType_t, 3> kTypes{ncclFloat32, ncclBfloat16, ncclFloat16};
  if (t == DType::fp8)
    throw BadInput("--collective nccl: no sum for dtype fp8 on the cuda backend");
  return kTypes.at(static_cast<std::size_t>(t));  // in DType's order: fp32, bf16, fp16
}

class NcclCollective final : public Collective {
 public:
  NcclCollective(MPI_Comm comm, CudaDevice& dev, double timeout_s)
      : dev_(dev), stream_(static_cast<cudaStream_t>(dev.stream())), timeout_s_(timeout_s) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    comm_ = comm;
    if (size_ == 1) return;  // a single-rank group short-circuits
    ncclUniqueId id{};
    if (rank_ == 0) TPB_NCCL_CHECK(ncclGetUniqueId(&id));
    if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm) != MPI_SUCCESS)
      throw BackendError("nccl init: MPI_Bcast of the unique id failed");
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    TPB_NCCL_CHECK(ncclCommInitRankConfig(&nccl_, size_, id, rank_, &cfg));
    wait_ready("nccl init");
    for (auto& e : events_) TPB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    // synchronize() polls this, so a collective stuck behind other work still times out.
    dev_.set_sync_poll([this](double waited_s) { poll_outstanding(waited_s); });
  }

  ~NcclCollective() override {
    if (size_ == 1) return;
    dev_.set_sync_poll(nullptr);
    if (nccl_ && !aborted_) {
      // Finalize flushes outstanding work; it is polled against the timeout, then aborted.
      const ncclResult_t r = ncclCommFinalize(nccl_);
      const auto start = Clock::now();
      while ((r == ncclSuccess || r == ncclInProgress) && async_state() == ncclInProgress &&
             std::chrono::duration<double>(Clock::now() - start).count() < timeout_s_)
        std::this_thread::yield();
      if (async_state() == ncclSuccess)
        TPB_NCCL_CHECK_NOEXCEPT(ncclCommDestroy(nccl_));
      else
        TPB_NCCL_CHECK_NOEXCEPT(ncclCommAbort(nccl_));
    }
    for (auto& e : events_)
      if (e) TPB_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e));
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }

  void all_reduce(void* buf, std::size_t count, DType t) override {
    if (size_ == 1) return;
    const ncclDataType_t ty = nccl_type(t);
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    TPB_CUDA_CHECK(cudaStreamIsCapturing(stream_, &cs));
    if (cs != cudaStreamCaptureStatusNone) {
      // --cuda-graph: recorded into the graph, not run. Events recorded in a capture cannot be
      // queried, so the two-in-flight watchdog does not track replays; the caller drained
      // (barrier) before capturing, and replays are bounded by the synchronize after each.
      TPB_NCCL_CHECK(ncclAllReduce(buf, buf, count, ty, ncclSum, nccl_, stream_));
      wait_ready("nccl all_reduce");
      return;
    }
    if (issued_ - completed_ == kInFlight) wait_oldest();
    TPB_NCCL_CHECK(ncclAllReduce(buf, buf, count, ty, ncclSum, nccl_, stream_));
    wait_ready("nccl all_reduce");  // enqueue of a non-blocking communicator may be deferred
    const std::size_t slot = issued_ % kInFlight;
    TPB_CUDA_CHECK(cudaEventRecord(events_[slot], stream_));
    enqueued_at_[slot] = Clock::now();
    ++issued_;
  }

  // nccl-tests' timed loop: no wait between calls, one event per kBurst of them, so the
  // in-flight bound (and the timeout's reach) holds kInFlight bursts, not kInFlight calls.
  void all_reduce_repeated(void* buf, std::size_t count, DType t, int times) override {
    if (size_ == 1) return;
    const ncclDataType_t ty = nccl_type(t);
    for (int i = 0; i < times; ++i) {
      if (i % kBurst == 0 && issued_ - completed_ == kInFlight) wait_oldest();
      TPB_NCCL_CHECK(ncclAllReduce(buf, buf, count, ty, ncclSum, nccl_, stream_));
      wait_ready("nccl all_reduce");  // the enqueue's own completion: host-side, no GPU wait
      if ((i + 1) % kBurst != 0 && i + 1 != times) continue;
      const std::size_t slot = issued_ % kInFlight;
      TPB_CUDA_CHECK(cudaEventRecord(events_[slot], stream_));
      enqueued_at_[slot] = Clock::now();
      ++issued_;
    }
  }

  // Drains this group's collectives, then an MPI barrier, both against the deadline.
  void barrier() override {
    while (completed_ < issued_) wait_oldest();
    if (size_ > 1) timed_barrier(comm_, timeout_s_, "nccl barrier");
  }

 private:
  ncclResult_t async_state() const {
    ncclResult_t r = ncclSuccess;
    if (ncclCommGetAsyncError(nccl_, &r) != ncclSuccess) return ncclInternalError;
    return r;
  }

  // Peers blocked in the same collective see an error instead of hanging.
  void abort_comm() noexcept {
    if (nccl_ && !aborted_) {
      aborted_ = true;
      TPB_NCCL_CHECK_NOEXCEPT(ncclCommAbort(nccl_));
    }
  }

  [[noreturn]] void timeout(const std::string& what) {
    abort_comm();
    throw CollectiveTimeout(what + " did not complete in " + seconds_text(timeout_s_) + " s");
  }

  [[noreturn]] void failed(const std::string& what, ncclResult_t r) {
    abort_comm();
    throw BackendError(what + ": nccl error: " + ncclGetErrorString(r));
  }

  void check_async(const char* what) {
    const ncclResult_t r = async_state();
    if (r != ncclSuccess && r != ncclInProgress) failed(what, r);
  }

  // Non-blocking communicator: a call may return before it took effect; poll until it did.
  void wait_ready(const char* what) {
    const auto start = Clock::now();
    for (;;) {
      const ncclResult_t r = async_state();
      if (r == ncclSuccess) return;
      if (r != ncclInProgress) failed(what, r);
      if (std::chrono::duration<double>(Clock::now() - start).count() > timeout_s_) timeout(what);
      std::this_thread::yield();
    }
  }

  // True when the oldest outstanding collective finished; throws once it is overdue.
  bool oldest_done() {
    const std::size_t slot = completed_ % kInFlight;
    const cudaError_t e = cudaEventQuery(events_[slot]);
    if (e == cudaSuccess) {
      ++completed_;
      return true;
    }
    if (e != cudaErrorNotReady) TPB_CUDA_CHECK(e);
    check_async("nccl all_reduce");
    const double waited = std::chrono::duration<double>(Clock::now() - enqueued_at_[slot]).count();
    if (waited > timeout_s_) timeout("nccl all_reduce");
    return false;
  }

  void wait_oldest() {
    while (!oldest_done()) std::this_thread::yield();
  }

  // From CudaDevice::synchronize. Eager collectives are bounded one by one (oldest_done);
  // those captured in a CUDA graph are not issued through all_reduce on replay, so a replay
  // is bounded as a whole: async errors at once, and the sync's own wait against the timeout.
  void poll_outstanding(double waited_s) {
    while (completed_ < issued_ && oldest_done()) {
    }
    check_async("nccl all_reduce");
    if (completed_ == issued_ && waited_s > timeout_s_)
      timeout("nccl all_reduce (in a CUDA graph replay, or behind other device work)");
  }

  CudaDevice& dev_;
  cudaStream_t stream_;
  double timeout_s_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  ncclComm_t nccl_ = nullptr;
  bool aborted_ = false;
  std::array<cudaEvent_t, kInFlight> events_{};
  std::array<Clock::time_point, kInFlight> enqueued_at_{};
  uint64_t issued_ = 0, completed_ = 0;
};

}  // namespace

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";  // linked all the same
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9, major * 1000 before.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

std::unique_ptr<Collective> make_nccl_collective(MPI_Comm tp_comm, Device& dev, double timeout_s) {
  auto* cuda = dynamic_cast<CudaDevice*>(&dev);
  if (!cuda)
    throw BadInput("--collective nccl: needs --backend cuda (got " + dev.caps().backend + ")");
  return std::make_unique<NcclCollective>(tp_comm, *cuda, timeout_s);
}

}  // namespace tpb
