// Measurement of one message size. Inputs are verifiable (nccl-tests' idea): rank r's element
// i is a small integer v(r, i) in 1..13, so sums over up to 1290 ranks stay exact in fp32 and
// bf16 holds them too at small n; every expected output is computed exactly on the host.
#include "harness/drive/collectives_measure.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "collectives/mpi/mpi_check.h"
#include "collectives/mpi/mpi_collective.h"
#include "harness/backends/collective_factory.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/clock_sync.h"
#include "layers/base/host_clock.h"
#include "layers/cpu/cpu_device.h"

namespace tpb {

namespace {

float pattern(int r, int64_t i) {
  return static_cast<float>((i * 7 + r * 3) % 13 + 1);
}

float reduce_over(const std::string& op, int n, int64_t i) {
  float acc = pattern(0, i);
  for (int q = 1; q < n; ++q) {
    const float v = pattern(q, i);
    acc = op == "sum" ? acc + v : op == "max" ? std::max(acc, v) : std::min(acc, v);
  }
  return acc;
}

MPI_Op mpi_op(const std::string& op) {
  return op == "sum" ? MPI_SUM : op == "max" ? MPI_MAX : MPI_MIN;
}

// Host images of the buffers before the call: input where the kind and placement put it,
// the rest zero (no pattern value is 0, so an unwritten output element counts as wrong).
void fill_inputs(const CollSweepSpec& s, const CollCounts& c, int r, std::vector<float>& send,
                 std::vector<float>& recv) {
  std::fill(send.begin(), send.end(), 0.0f);
  std::fill(recv.begin(), recv.end(), 0.0f);
  const bool bcast = s.kind == CollKind::broadcast;
  if (bcast && r != s.root) return;
  std::vector<float>& in = s.inplace ? recv : send;
  const int64_t base = s.inplace && s.kind == CollKind::all_gather ? r * c.send : 0;
  for (int64_t i = 0; i < c.send; ++i) in[base + i] = pattern(bcast ? s.root : r, i);
}

// Elements of this rank's output that differ from the exact answer.
int64_t count_wrong(const CollSweepSpec& s, const CollCounts& c, int r, int n,
                    const std::vector<float>& recv) {
  int64_t wrong = 0;
  auto want = [&](int64_t j) -> float {
    switch (s.kind) {
      case CollKind::all_reduce:
      case CollKind::reduce:
        return reduce_over(s.op, n, j);
      case CollKind::reduce_scatter:
        return reduce_over(s.op, n, r * c.recv + j);
      case CollKind::all_gather:
        return pattern(static_cast<int>(j / (c.recv / n)), j % (c.recv / n));
      case CollKind::broadcast:
        return pattern(s.root, j);
    }
    return 0;
  };
  if (s.kind == CollKind::reduce && r != s.root) return 0;  // only the root receives
  for (int64_t j = 0; j < c.recv; ++j) wrong += recv[j] != want(j) ? 1 : 0;
  return wrong;
}

// One nonblocking MPI call on host buffers, polled with the timeout like the TP collective.
void mpi_call(const CollSweepSpec& s, const CollCounts& c, void* send, void* recv, MPI_Comm comm,
              int r, bool blocking) {
  const int sc = static_cast<int>(c.send), rc = static_cast<int>(c.recv);
  const MPI_Op op = mpi_op(s.op);
  const void* sb = s.inplace ? MPI_IN_PLACE : send;
  MPI_Request req = MPI_REQUEST_NULL;
  switch (s.kind) {
    case CollKind::all_reduce:
      if (blocking)
        TPB_MPI_CHECK(MPI_Allreduce(sb, recv, rc, MPI_FLOAT, op, comm));
      else
        TPB_MPI_CHECK(MPI_Iallreduce(sb, recv, rc, MPI_FLOAT, op, comm, &req));
      break;
    case CollKind::reduce_scatter:
      if (blocking)
        TPB_MPI_CHECK(MPI_Reduce_scatter_block(sb, recv, rc, MPI_FLOAT, op, comm));
      else
        TPB_MPI_CHECK(MPI_Ireduce_scatter_block(sb, recv, rc, MPI_FLOAT, op, comm, &req));
      break;
    case CollKind::all_gather:
      if (blocking)
        TPB_MPI_CHECK(MPI_Allgather(sb, sc, MPI_FLOAT, recv, sc, MPI_FLOAT, comm));
      else
        TPB_MPI_CHECK(MPI_Iallgather(sb, sc, MPI_FLOAT, recv, sc, MPI_FLOAT, comm, &req));
      break;
    case CollKind::broadcast:
      if (blocking)
        TPB_MPI_CHECK(MPI_Bcast(recv, rc, MPI_FLOAT, s.root, comm));
      else
        TPB_MPI_CHECK(MPI_Ibcast(recv, rc, MPI_FLOAT, s.root, comm, &req));
      break;
    case CollKind::reduce: {
      // In place, only the root passes MPI_IN_PLACE; the others send from their one buffer.
      const void* rsb = s.inplace ? (r == s.root ? MPI_IN_PLACE : recv) : send;
      if (blocking)
        TPB_MPI_CHECK(MPI_Reduce(rsb, recv, rc, MPI_FLOAT, op, s.root, comm));
      else
        TPB_MPI_CHECK(MPI_Ireduce(rsb, recv, rc, MPI_FLOAT, op, s.root, comm, &req));
      break;
    }
  }
  if (!blocking) wait_or_timeout(req, s.timeout_s, "collectives sweep");
}

}  // namespace

std::unique_ptr<Collective> make_sweep_collective(const CollSweepSpec& s, const World& w,
                                                  Device& dev) {
  if (s.collective == "mpi" && s.backend == "cpu") return nullptr;  // direct MPI calls
  RunSpec rs;
  rs.backend = s.backend;
  rs.collective = s.collective;
  rs.collective_timeout_s = s.timeout_s;
  return make_collective(rs, w.comm, dev);
}

CollRankResult measure_collective(const CollSweepSpec& s, const CollCounts& c, const World& w,
                                  Device& dev, Collective* coll) {
  const bool direct = coll == nullptr;
  const int r = w.rank, n = w.size;
  // In-place reduce_scatter reads all n blocks from the receive buffer.
  const int64_t recv_n = std::max(c.recv, s.inplace ? c.send : int64_t{0});
  std::vector<float> h_send(static_cast<std::size_t>(c.send)),
      h_recv(static_cast<std::size_t>(recv_n));
  DeviceBuffer d_send = dev.alloc(static_cast<std::size_t>(c.send) * dtype_bytes(s.dtype));
  DeviceBuffer d_recv = dev.alloc(static_cast<std::size_t>(recv_n) * dtype_bytes(s.dtype));
  auto upload = [&] {
    fill_inputs(s, c, r, h_send, h_recv);
    dev.upload(d_send.get(), h_send.data(), h_send.size(), s.dtype);
    dev.upload(d_recv.get(), h_recv.data(), h_recv.size(), s.dtype);
  };
  auto call = [&] {
    if (direct)
      mpi_call(s, c, d_send.get(), d_recv.get(), w.comm, r, false);
    else
      coll->all_reduce(d_recv.get(), static_cast<std::size_t>(c.recv), s.dtype);
  };
  auto barrier = [&] {
    if (coll)
      coll->barrier();
    else
      TPB_MPI_CHECK(MPI_Barrier(w.comm));
  };

  upload();
  CollRankResult out;
  ClockModel clock;
  clock.start = measure_offset(w.comm, now_s, s.sync_rounds);
  for (int i = 0; i < s.warmup; ++i) call();
  dev.synchronize();
  barrier();
  Timeline tl(dev, static_cast<std::size_t>(s.iters));
  for (int i = 0; i < s.iters; ++i) {
    const std::size_t k = tl.open(Op::allreduce_attn, 0, i);
    call();
    tl.close(k);
  }
  dev.synchronize();
  clock.end = measure_offset(w.comm, now_s, s.sync_rounds);
  out.iters = tl.resolve(0.0);
  out.loop_s = (out.iters.back().t1 - out.iters.front().t0) / s.iters;
  for (auto& rec : out.iters) {
    rec.t0 = clock.to_common(rec.t0);
    rec.t1 = clock.to_common(rec.t1);
  }
  out.offset_s = clock.start.offset_s;
  out.uncertainty_s = std::max(clock.start.uncertainty_s, clock.end.uncertainty_s);
  out.drift_ppm = clock.drift() * 1e6;

  if (s.baseline) {
    // The plain loop: blocking calls, no stamps, MPI_Wtime around the loop, so the harness's
    // own overhead (polling, stamping) shows up as the ratio between the two.
    TPB_MPI_CHECK(MPI_Barrier(w.comm));
    const double t0 = MPI_Wtime();
    for (int i = 0; i < s.iters; ++i) mpi_call(s, c, d_send.get(), d_recv.get(), w.comm, r, true);
    out.baseline_s = (MPI_Wtime() - t0) / s.iters;
  }

  // Verification on fresh inputs: the timed iterations may have reduced in place many times.
  upload();
  barrier();
  call();
  dev.synchronize();
  dev.download(h_recv.data(), d_recv.get(), h_recv.size(), s.dtype);
  out.wrong = count_wrong(s, c, r, n, h_recv);
  return out;
}

}  // namespace tpb
