// Each part starts behind a barrier, so that every rank measures at once and a shared memory
// bus is divided as during a run; the figures are then reduced over the ranks: a peak is the
// best rank's (as for the start-up probe), a time the slowest rank's (it bounds a TP step).
#include "harness/measure/calibration_measure.h"

#include <mpi.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "base/mpi_check.h"
#include "collectives/bus_bandwidth.h"
#include "harness/measure/calibrate.h"
#include "harness/measure/calibration_profile.h"
#include "harness/measure/collectives_measure.h"
#include "layers/cpu/cpu_device.h"

namespace tpb {

namespace {

double max_over_ranks(const World& w, double v) {
  double r = 0;
  TPB_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, w.comm));
  return r;
}

// 1. Peaks in every dtype the device computes in, through the Device interface.
CalibrationPeaksRecord measure_peaks(const World& w, Device& dev, int reps) {
  const DeviceCaps& caps = dev.caps();
  CalibrationPeaksRecord p;
  const int64_t stream_bytes =
      static_cast<int64_t>(std::clamp(4.0 * caps.llc_bytes, 64.0 * (1 << 20), 512.0 * (1 << 20)));
  // A host-computed GEMM of 8192^3 would take minutes; 1024^3 is already past its cache.
  const int64_t gemm_dim = caps.host_compute ? 1024 : 8192;
  for (DType t : caps.dtypes) {
    TPB_MPI_CHECK(MPI_Barrier(w.comm));
    const DeviceOpsPeaks d = measure_device_ops(dev, t, stream_bytes, gemm_dim, reps);
    const double bw = max_over_ranks(w, d.add_bw), fl = max_over_ranks(w, d.gemm_flops);
    p.device_ops[dtype_name(t)] = {bw / 1e9, fl / 1e9, d.stream_bytes, d.gemm_dim};
  }
  return p;
}

// The start-up probe's kernels too (BLAS sdot/saxpy/sgemm), so a calibrated profile is never
// below what a run would have measured for itself.
CpuProbePeakRecord measure_probe_peaks(const World& w, const DeviceCaps& caps) {
  TPB_MPI_CHECK(MPI_Barrier(w.comm));
  const ProbeResult r = run_cpu_probe(caps.llc_bytes);
  const double rd = max_over_ranks(w, r.read_bw), ax = max_over_ranks(w, r.axpy_bw),
               gf = max_over_ranks(w, r.gemm_flops);
  return {rd / 1e9, ax / 1e9, gf / 1e9};
}

// 2. GEMM FLOP/s by shape in the run's dtype (a bf16 run's GEMMs are not fp32's: on an H200
// the two differ 16x in peak). A shape that beats the peaks raises them (peaks_from_record;
// seen here: the ~0.1 s sgemm probe landing in a slow spell that the ~40 s table outlasts), so
// the rows' of_peak_* are filled in after.
std::vector<GemmShapeRecord> measure_shapes(const World& w, Device& dev, const ModelShape& shape,
                                            const CalibrateSpec& s) {
  TPB_MPI_CHECK(MPI_Barrier(w.comm));
  const std::vector<GemmShapeResult> got =
      measure_gemm_shapes(dev, shape, s.tp, s.dtype, {1, 8, 64, 512}, s.reps, dev.caps().llc_bytes);
  std::vector<GemmShapeRecord> shapes;
  for (const GemmShapeResult& g : got) {
    const double sec = max_over_ranks(w, g.seconds);
    shapes.push_back(
        {g.op, g.m, g.n, g.k, dtype_name(s.dtype), sec, g.flops / sec / 1e9, g.bytes / sec / 1e9});
  }
  return shapes;
}

// Sizes from 8 bytes by 4x to --max-bytes, each verified; the slowest rank's mean per call.
std::vector<AllReducePointRecord> time_all_reduce(const World& w, Device& dev,
                                                  const CalibrateSpec& s, int64_t& wrong) {
  CollectivesSpec cs;
  cs.kind = CollKind::all_reduce;
  cs.dtype = DType::fp32;
  cs.collective = s.collective;
  cs.backend = s.backend;
  cs.timeout_s = s.collective_timeout_s;
  cs.stamped_pass = false;  // alpha and algbw come from the timed pass's mean alone
  for (int64_t b = 8; b <= s.max_bytes; b *= 4) cs.sizes.push_back(b);
  auto coll = make_measured_collective(cs, w, dev);
  const double bf = bus_factor(CollKind::all_reduce, w.size);
  std::vector<AllReducePointRecord> pts;
  for (int64_t b : cs.sizes) {
    const CollCounts n = coll_counts(cs.kind, b, cs.dtype, w.size);
    if (n.bytes == 0) continue;
    const CollRankResult r = measure_collective(cs, n, w, dev, coll.get());
    int64_t wr = 0;
    TPB_MPI_CHECK(MPI_Allreduce(&r.wrong, &wr, 1, MPI_INT64_T, MPI_SUM, w.comm));
    wrong += wr;
    const double sec = max_over_ranks(w, r.loop_s);
    pts.push_back({n.bytes, sec, n.bytes / sec / 1e9, n.bytes / sec * bf / 1e9});
  }
  return pts;
}

// 3. The all-reduce curve through the run's collective; its fitted busbw asymptote is link_bw.
AllReduceRecord measure_all_reduce(const World& w, Device& dev, const CalibrateSpec& s) {
  AllReduceRecord ar;
  if (w.size <= 1) return ar;
  int64_t wrong = 0;
  std::vector<AllReducePointRecord> pts = time_all_reduce(w, dev, s, wrong);
  ar.collective = s.collective;
  ar.ranks = w.size;
  ar.wrong = wrong;
  if (pts.size() >= 3) {
    std::vector<int64_t> bytes;
    std::vector<double> seconds;
    for (const AllReducePointRecord& p : pts) bytes.push_back(p.bytes), seconds.push_back(p.time_s);
    const AlphaBeta ab = fit_alpha_beta(bytes, seconds);
    ar.alpha_s = ab.alpha_s;
    ar.algbw_GBps = ab.algbw / 1e9;
    ar.busbw_GBps = ab.algbw * bus_factor(CollKind::all_reduce, w.size) / 1e9;
    ar.fit =
        "t(S) = alpha + S / algbw; alpha = median time of the 3 smallest sizes, algbw = "
        "largest S / (its time - alpha); busbw = algbw * 2(n-1)/n";
  }
  ar.points = std::move(pts);
  return ar;
}

}  // namespace

CalibrationRecord measure_calibration(const World& w, Device& dev, const CalibrateSpec& s,
                                      const ModelShape& shape, RunContextRecord context,
                                      const GridPointRunner& run_point) {
  CalibrationRecord r;
  r.context = std::move(context);
  r.model = {shape.name, s.tp};
  r.dtype = dtype_name(s.dtype);
  r.peaks = measure_peaks(w, dev, s.reps);
  if (dev.caps().startup_probe) r.peaks.cpu_probe = measure_probe_peaks(w, dev.caps());
  r.gemm_shapes = measure_shapes(w, dev, shape, s);
  const CalibrationPeaks peaks = peaks_from_record(r);
  judge_gemm_shapes(r.gemm_shapes, peaks);
  r.all_reduce = measure_all_reduce(w, dev, s);
  if (s.op_profile)
    r.op_profile =
        measure_op_profile(w,
                           {s.backend, s.collective, s.model, s.config_dir, s.dtype, w.size,
                            s.context, s.blas_threads, s.collective_timeout_s, s.op_repeats},
                           peaks.flops, peaks.bw, run_point);
  return r;
}

}  // namespace tpb
