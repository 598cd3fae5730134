// Measurement of one message size: buffers filled with the kind's verification input
// (collectives/kinds/verify_fill.h), the timed and stamped passes (timed_pass.h) on synced
// clocks, the optional plain MPI loop, and one verification call on fresh inputs.
#include "harness/measure/collectives_measure.h"

#include <mpi.h>

#include <algorithm>
#include <memory>

#include "base/host_clock.h"
#include "base/mpi_check.h"
#include "collectives/mpi/mpi_wait.h"
#include "harness/backends/collective_factory.h"
#include "harness/config/backend_traits.h"
#include "harness/config/run_spec.h"
#include "harness/measure/timed_pass.h"
#include "harness/mpi/clock_sync.h"

namespace tpb {

namespace {

MPI_Op mpi_op(const std::string& op) {
  return op == "sum" ? MPI_SUM : op == "max" ? MPI_MAX : MPI_MIN;
}

// One size's buffers (host images and device copies) and what is done with them: fill, call,
// barrier and check. The call goes through the Collective when there is one, else through the
// kind's MPI call on the host buffers.
class MeasuredCall {
 public:
  MeasuredCall(const CollectivesSpec& s, const CollCounts& c, const World& w, Device& dev,
               Collective* coll)
      : s_(s),
        kind_(coll_kind_info(s.kind)),
        w_(w),
        dev_(dev),
        coll_(coll),
        caller_(MpiWait{.mode = s.mpi_mode, .timeout_s = s.timeout_s}),
        verify_{.op = s.op,
                .root = s.root,
                .rank = w.rank,
                .n = w.size,
                .inplace = s.inplace,
                .counts = c},
        // In-place reduce_scatter reads all n blocks from the receive buffer.
        h_send_(static_cast<std::size_t>(c.send)),
        h_recv_(static_cast<std::size_t>(std::max(c.recv, s.inplace ? c.send : int64_t{0}))),
        d_send_(dev.alloc(h_send_.size() * dtype_bytes(s.dtype))),
        d_recv_(dev.alloc(h_recv_.size() * dtype_bytes(s.dtype))) {}

  // Fresh verification inputs; everything the kind does not fill is zero.
  void upload() {
    std::fill(h_send_.begin(), h_send_.end(), 0.0f);
    std::fill(h_recv_.begin(), h_recv_.end(), 0.0f);
    kind_.fill(verify_, h_send_.data(), h_recv_.data());
    dev_.upload(d_send_.get(), h_send_.data(), h_send_.size(), s_.dtype);
    dev_.upload(d_recv_.get(), h_recv_.data(), h_recv_.size(), s_.dtype);
  }

  // The call as timed: in --mpi-mode, with the timeout, like the TP collective.
  void call() {
    if (coll_ == nullptr) {
      const CollMpiArgs args = mpi_args();
      caller_.run("collectives sweep", [&](MPI_Request* req) { kind_.mpi(args, req); });
    } else {
      coll_->all_reduce(d_recv_.get(), static_cast<std::size_t>(verify_.counts.recv), s_.dtype);
    }
  }

  // `times` calls back to back, as the timed pass issues them: through the Collective with no
  // wait of the harness's between them; the direct MPI path waits in each call (it is one).
  void calls(int times) {
    if (coll_ == nullptr) {
      for (int i = 0; i < times; ++i) call();
    } else {
      coll_->all_reduce_repeated(d_recv_.get(), static_cast<std::size_t>(verify_.counts.recv),
                                 s_.dtype, times);
    }
  }

  void blocking_mpi_call() { kind_.mpi(mpi_args(), nullptr); }

  void barrier() {
    if (coll_)
      coll_->barrier();
    else
      caller_.barrier(w_.comm, "collectives sweep barrier");
  }

  // Elements of this rank's output that differ from the exact answer.
  int64_t count_wrong() {
    dev_.download(h_recv_.data(), d_recv_.get(), h_recv_.size(), s_.dtype);
    if (kind_.buffers == CollBuffers::root_output && w_.rank != s_.root) return 0;
    int64_t wrong = 0;
    for (int64_t j = 0; j < verify_.counts.recv; ++j)
      wrong += h_recv_[j] != kind_.expected(verify_, j) ? 1 : 0;
    return wrong;
  }

 private:
  CollMpiArgs mpi_args() {
    return {.send = d_send_.get(),
            .recv = d_recv_.get(),
            .counts = verify_.counts,
            .type = MPI_FLOAT,
            .op = mpi_op(s_.op),
            .root = s_.root,
            .rank = w_.rank,
            .inplace = s_.inplace,
            .comm = w_.comm};
  }

  const CollectivesSpec& s_;
  const CollKindInfo& kind_;
  const World& w_;
  Device& dev_;
  Collective* coll_;
  MpiCaller caller_;  // the direct MPI path's waits
  const CollVerify verify_;
  std::vector<float> h_send_, h_recv_;
  DeviceBuffer d_send_, d_recv_;
};

// Warm-up, then the timed pass (nccl-tests' loop, stamps around it only: loop_s) and, where
// asked, the stamped pass (its iterations land in `out` on the synced clock), both between two
// clock measurements; with the clock's error terms.
void timed_loop(const CollectivesSpec& s, const World& w, Device& dev, MeasuredCall& m,
                CollRankResult& out) {
  ClockModel clock;
  clock.start = measure_offset(w.comm, now_s, s.sync_rounds);
  for (int i = 0; i < s.warmup; ++i) m.call();
  dev.synchronize();
  m.barrier();
  out.loop_s = timed_pass(dev, s.iters, [&](int n) { m.calls(n); });
  if (s.stamped_pass) {
    m.barrier();
    out.iters = stamped_pass(dev, s.iters, [&] { m.call(); });
  }
  clock.end = measure_offset(w.comm, now_s, s.sync_rounds);
  for (auto& rec : out.iters) {
    rec.t0 = clock.to_common(rec.t0);
    rec.t1 = clock.to_common(rec.t1);
  }
  out.offset_s = clock.start.offset_s;
  out.uncertainty_s = std::max(clock.start.uncertainty_s, clock.end.uncertainty_s);
  out.drift_ppm = clock.drift() * 1e6;
}

// The plain loop: blocking calls, no stamps, no watchdog, MPI_Wtime around the loop, so the
// harness's own overhead (stamping and arming; nonblocking, the other algorithm and polling)
// shows up as the ratio between the two.
double baseline_loop(const CollectivesSpec& s, const World& w, MeasuredCall& m) {
  TPB_MPI_CHECK(MPI_Barrier(w.comm));
  const double t0 = MPI_Wtime();
  for (int i = 0; i < s.iters; ++i) m.blocking_mpi_call();
  return (MPI_Wtime() - t0) / s.iters;
}

}  // namespace

std::unique_ptr<Collective> make_measured_collective(const CollectivesSpec& s, const World& w,
                                                     Device& dev) {
  if (collective_traits(s.collective).host_calls && !dev.caps().device_memory)
    return nullptr;  // direct MPI calls
  RunSpec rs;
  rs.backend = s.backend;
  rs.collective = s.collective;
  rs.collective_timeout_s = s.timeout_s;
  rs.mpi_mode = s.mpi_mode;
  return make_collective(rs, w.comm, dev);
}

CollRankResult measure_collective(const CollectivesSpec& s, const CollCounts& c, const World& w,
                                  Device& dev, Collective* coll) {
  MeasuredCall m(s, c, w, dev, coll);
  m.upload();
  CollRankResult out;
  timed_loop(s, w, dev, m, out);
  if (s.baseline) out.baseline_s = baseline_loop(s, w, m);
  // Verification on fresh inputs: the timed iterations may have reduced in place many times.
  m.upload();
  m.barrier();
  m.call();
  dev.synchronize();
  out.wrong = m.count_wrong();
  return out;
}

}  // namespace tpb
