// Peak resolution. A measured peak is the best any rank saw while all ranks probed at once:
// that is what the memory system gives a rank under the benchmark's own load, and taking the
// best keeps MBU an honest fraction (<= 1 within noise).
#include "harness/drive/peak_resolver.h"

#include <fmt/format.h>

#include "base/errors.h"
#include "base/mpi_check.h"
#include "collectives/mpi/mpi_wait.h"
#include "layers/cpu/cpu_device.h"

namespace tpb {

Peaks resolve_peaks(const RunSpec& spec, const World& w, Device& dev) {
  Peaks p;
  if (!spec.hw.measure_at_startup) {
    p.flops = spec.hw.flops_for(spec.dtype);
    p.bw = spec.hw.peak_bw;
    p.source = spec.hw.source;
    return p;
  }
  if (!dev.caps().startup_probe)
    throw BadInput(
        "--hardware: '" + spec.hw.name +
        "' asks for a start-up probe, which only the cpu backend has; give a datasheet profile");
  // A peer that is gone (a dead host or link) must not leave the others here for good.
  MpiWatch watch(spec.collective_timeout_s);
  watch.run("the barrier before the start-up probe", [&] { TPB_MPI_CHECK(MPI_Barrier(w.comm)); });
  const ProbeResult r = run_cpu_probe(dev.caps().llc_bytes);
  double v[4] = {r.read_bw, r.axpy_bw, r.gemm_flops, r.stream_bw}, best[4];
  watch.run("the start-up probe's agreement",
            [&] { TPB_MPI_CHECK(MPI_Allreduce(v, best, 4, MPI_DOUBLE, MPI_MAX, w.comm)); });
  const ProbeResult agreed{best[0], best[3], best[1], best[2]};
  p.bw = agreed.bw();  // the faster read-only probe: what a decode step can reach
  p.flops = best[2];
  // A probe that measured nothing must not become a denominator (MBU = MFU = 0 would look
  // like a result): the point fails, saying why.
  if (!(p.bw > 0) || !(p.flops > 0))
    throw BackendError(fmt::format(
        "start-up probe: measured read {:g} B/s (sdot), {:g} B/s (4 streams), sgemm {:g} FLOP/s; "
        "a peak must be above zero (give --hardware FILE from `tpbench calibrate` instead)",
        best[0], best[3], best[2]));
  p.source = fmt::format(
      "measured at start-up on {} ranks probing at once (best rank): read {:.2f} GB/s (sdot), "
      "{:.2f} GB/s (skinny_gemm m=1, 4 streams), axpy {:.2f} GB/s (2 reads + 1 write, not a "
      "read-only peak), sgemm 1024^3 {:.1f} GFLOP/s, 1 BLAS thread; bw peak set by {}",
      w.size, best[0] / 1e9, best[3] / 1e9, best[1] / 1e9, best[2] / 1e9, agreed.bw_probe());
  return p;
}

}  // namespace tpb
