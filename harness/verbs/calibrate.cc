// `tpbench calibrate --out DIR`: writes DIR/hardware.json, a profile `--hardware` accepts (its
// source says it was measured, by whom and when), and DIR/calibration.json with every figure
// behind it. See harness/drive/calibrate.h for what is measured and how.
#include "harness/drive/calibrate.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "collectives/bus_bandwidth.h"
#include "collectives/mpi/mpi_check.h"
#include "harness/config/config_dir.h"
#include "harness/config/config_fields.h"
#include "harness/drive/collectives_measure.h"
#include "harness/mpi/agreement.h"
#include "harness/record/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/verbs/verbs.h"
#include "layers/base/errors.h"
#include "layers/cpu/cpu_device.h"
#include "layers/device_factory.h"
#include "layers/hardware.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

struct CalibrateSpec {
  std::string backend, collective, model, out, name, config_dir;
  int tp = 1, blas_threads = 1, reps = 5;
  int64_t max_bytes = 0;
  double collective_timeout_s = 600;
};

double max_over_ranks(const World& w, double v) {
  double r = 0;
  TPB_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, w.comm));
  return r;
}

}  // namespace

int verb_calibrate(const CliResult& cli, const World& w) {
  CalibrateSpec s;
  ModelShape shape;
  std::unique_ptr<Device> dev;
  agree(w.comm, [&] {
    ConfigFields f(cli.config);
    s.backend = f.choice("backend", "cpu", {"cpu", "cuda"});
    s.collective = f.choice("collective", s.backend == "cuda" ? "nccl" : "mpi", {"mpi", "nccl"});
    s.config_dir = f.str("config_dir", default_config_dir());
    s.model = f.str("model", "tiny");
    shape = load_model(s.model, s.config_dir);
    s.tp = static_cast<int>(f.integer("tp", w.size, 1, 1 << 20));
    if (shape.n_heads % s.tp != 0)
      throw BadInput(fmt::format("--tp: {} does not divide the {} attention heads of '{}'", s.tp,
                                 shape.n_heads, shape.name));
    s.out = f.str("out", "");
    if (s.out.empty()) throw BadInput("--out: calibrate writes DIR/hardware.json; give --out DIR");
    s.name = f.str("name", "calibrated-" + w.host);
    s.max_bytes = static_cast<int64_t>(f.bytes("max_bytes", 64.0 * (1 << 20)));
    if (s.max_bytes < 1024 || s.max_bytes > (int64_t{1} << 34))
      throw BadInput("--max-bytes: the all-reduce curve needs 1K..16G");
    s.reps = static_cast<int>(f.integer("reps", 5, 1, 1000));
    s.blas_threads = static_cast<int>(f.integer("blas_threads", 1, 1, 1024));
    s.collective_timeout_s = f.number("collective_timeout", 600.0, 0.1, 86400.0);
    f.reject_unknown();
    if (w.rank == 0) ensure_writable_dir(s.out);
    DeviceOptions o;
    o.backend = s.backend;
    o.local_rank = w.local_rank;
    o.local_size = w.local_size;
    o.blas_threads = s.blas_threads;
    dev = make_device(o);
  });
  const DeviceCaps& caps = dev->caps();
  oj context = collect_context(w, cli.argv, caps);
  if (w.rank == 0 && context["oversubscribed"].get<bool>())
    std::cerr << "warning: " << context["ranks_per_core"].get<double>()
              << " ranks per core: every rank measures a share of a core\n";

  // 1. Peaks, every rank at once (the best rank is the peak, as for the start-up probe).
  oj peaks = oj::object();
  double peak_bw = 0;
  std::map<std::string, double> peak_flops;
  const int64_t stream_bytes =
      static_cast<int64_t>(std::clamp(4.0 * caps.llc_bytes, 64.0 * (1 << 20), 512.0 * (1 << 20)));
  for (DType t : caps.dtypes) {
    TPB_MPI_CHECK(MPI_Barrier(w.comm));
    const DeviceOpsPeaks d =
        measure_device_ops(*dev, t, stream_bytes, caps.backend == "cpu" ? 1024 : 8192, s.reps);
    const double bw = max_over_ranks(w, d.add_bw), fl = max_over_ranks(w, d.gemm_flops);
    peaks["device_ops"][dtype_name(t)] = {{"add_GBps", bw / 1e9},
                                          {"gemm_GFLOPs", fl / 1e9},
                                          {"stream_bytes", d.stream_bytes},
                                          {"gemm_dim", d.gemm_dim}};
    peak_flops[dtype_name(t)] = fl;
    peak_bw = std::max(peak_bw, bw);
  }
  std::string bw_from = "Device::add", fl_from = "Device::gemm";
  if (caps.backend == "cpu") {
    // The start-up probe's kernels too (BLAS sdot/saxpy/sgemm), so a calibrated profile is
    // never below what a run would have measured for itself.
    TPB_MPI_CHECK(MPI_Barrier(w.comm));
    const ProbeResult r = run_cpu_probe(caps.llc_bytes);
    const double rd = max_over_ranks(w, r.read_bw), ax = max_over_ranks(w, r.axpy_bw),
                 gf = max_over_ranks(w, r.gemm_flops);
    peaks["cpu_probe"] = {
        {"read_GBps", rd / 1e9}, {"axpy_GBps", ax / 1e9}, {"sgemm_GFLOPs", gf / 1e9}};
    if (std::max(rd, ax) > peak_bw)
      peak_bw = std::max(rd, ax), bw_from = rd > ax ? "sdot" : "saxpy";
    if (gf > peak_flops["fp32"]) peak_flops["fp32"] = gf, fl_from = "sgemm 1024^3";
  }

  // 2. GEMM FLOP/s by shape (the slowest rank's time: it bounds a TP step).
  oj shapes = oj::array();
  TPB_MPI_CHECK(MPI_Barrier(w.comm));
  const DType t0 = caps.dtypes.front();
  for (const GemmShapeResult& g :
       measure_gemm_shapes(*dev, shape, s.tp, t0, {1, 8, 64, 512}, s.reps, caps.llc_bytes)) {
    const double sec = max_over_ranks(w, g.seconds);
    shapes.push_back({{"op", g.op},
                      {"m", g.m},
                      {"n", g.n},
                      {"k", g.k},
                      {"dtype", dtype_name(t0)},
                      {"time_s", sec},
                      {"GFLOPs", g.flops / sec / 1e9},
                      {"GBps", g.bytes / sec / 1e9},
                      {"of_peak_flops", g.flops / sec / peak_flops[dtype_name(t0)]},
                      {"of_peak_bw", g.bytes / sec / peak_bw}});
  }

  // 3. All-reduce curve through the run's collective.
  oj ar = oj::object();
  double busbw_asym = 0;
  if (w.size > 1) {
    CollSweepSpec cs;
    cs.kind = CollKind::all_reduce;
    cs.dtype = DType::fp32;
    cs.collective = s.collective;
    cs.backend = s.backend;
    cs.timeout_s = s.collective_timeout_s;
    for (int64_t b = 8; b <= s.max_bytes; b *= 4) cs.sizes.push_back(b);
    auto coll = make_sweep_collective(cs, w, *dev);
    std::vector<int64_t> sizes;
    std::vector<double> secs;
    int64_t wrong = 0;
    for (int64_t b : cs.sizes) {
      const CollCounts c = coll_counts(cs.kind, b, cs.dtype, w.size);
      if (c.bytes == 0) continue;
      const CollRankResult r = measure_collective(cs, c, w, *dev, coll.get());
      int64_t wr = 0;
      TPB_MPI_CHECK(MPI_Allreduce(&r.wrong, &wr, 1, MPI_INT64_T, MPI_SUM, w.comm));
      wrong += wr;
      sizes.push_back(c.bytes);
      secs.push_back(max_over_ranks(w, r.loop_s));
    }
    const double bf = bus_factor(CollKind::all_reduce, w.size);
    oj pts = oj::array();
    for (std::size_t i = 0; i < sizes.size(); ++i)
      pts.push_back({{"bytes", sizes[i]},
                     {"time_s", secs[i]},
                     {"algbw_GBps", sizes[i] / secs[i] / 1e9},
                     {"busbw_GBps", sizes[i] / secs[i] * bf / 1e9}});
    ar = {{"collective", s.collective}, {"ranks", w.size}, {"points", pts}, {"wrong", wrong}};
    if (sizes.size() >= 3) {
      const AlphaBeta ab = fit_alpha_beta(sizes, secs);
      busbw_asym = ab.algbw * bf;
      ar["alpha_s"] = ab.alpha_s;
      ar["algbw_GBps"] = ab.algbw / 1e9;
      ar["busbw_GBps"] = busbw_asym / 1e9;
      ar["fit"] =
          "t(S) = alpha + S / algbw; alpha = median time of the 3 smallest sizes, algbw = "
          "largest S / (its time - alpha); busbw = algbw * 2(n-1)/n";
    }
  }
  if (w.rank != 0) return 0;

  oj hw;
  hw["name"] = s.name;
  hw["peak_flops"] = oj::object();
  for (const auto& [k, v] : peak_flops) hw["peak_flops"][k] = v;
  hw["peak_bw"] = peak_bw;
  hw["memory_bytes"] = caps.memory_bytes;
  hw["llc_bytes"] = caps.llc_bytes;
  hw["link_bw"] = busbw_asym;
  hw["source"] = fmt::format(
      "measured by tpbench calibrate on {} at {} ({} ranks at once, best rank): bandwidth {}, "
      "FLOP/s {}{}",
      w.host, context["date"].get<std::string>(), w.size, bw_from, fl_from,
      w.size > 1 ? ", link_bw = all-reduce busbw asymptote" : "");
  hw["measure_at_startup"] = false;
  (void)hardware_from_json(hw, s.out + "/hardware.json");  // what --hardware will accept

  oj cal;
  cal["schema"] = "tpbench.calibration";
  cal["schema_version"] = 1;
  cal["context"] = context;
  cal["model"] = {{"name", shape.name}, {"tp", s.tp}};
  cal["peaks"] = peaks;
  cal["gemm_shapes"] = shapes;
  cal["all_reduce"] = ar;
  cal["hardware"] = hw;
  write_file_atomic(s.out + "/calibration.json", cal.dump(2) + "\n");
  write_file_atomic(s.out + "/hardware.json", hw.dump(2) + "\n");

  std::cout << fmt::format("peaks: {:.2f} GB/s ({}), ", peak_bw / 1e9, bw_from);
  for (const auto& [k, v] : peak_flops) std::cout << fmt::format("{} {:.1f} GFLOP/s ", k, v / 1e9);
  std::cout << "(" << fl_from << ")\n";
  std::cout << fmt::format("{:>13} {:>5} {:>6} {:>6} {:>10} {:>9} {:>8} {:>6} {:>6}\n", "gemm", "m",
                           "n", "k", "time_us", "GFLOP/s", "GB/s", "%flop", "%bw");
  for (const auto& g : shapes)
    std::cout << fmt::format(
        "{:>13} {:>5} {:>6} {:>6} {:>10.1f} {:>9.1f} {:>8.2f} {:>6.1f} {:>6.1f}\n",
        g["op"].get<std::string>(), g["m"].get<int64_t>(), g["n"].get<int64_t>(),
        g["k"].get<int64_t>(), g["time_s"].get<double>() * 1e6, g["GFLOPs"].get<double>(),
        g["GBps"].get<double>(), 100 * g["of_peak_flops"].get<double>(),
        100 * g["of_peak_bw"].get<double>());
  if (ar.contains("alpha_s"))
    std::cout << fmt::format(
        "all-reduce ({} ranks, {}): latency {:.1f} us, algbw {:.2f} GB/s, "
        "busbw {:.2f} GB/s, #wrong {}\n",
        w.size, s.collective, ar["alpha_s"].get<double>() * 1e6, ar["algbw_GBps"].get<double>(),
        ar["busbw_GBps"].get<double>(), ar["wrong"].get<int64_t>());
  std::cout << "calibrate: " << s.out << "/hardware.json (use --hardware " << s.out
            << "/hardware.json), details in " << s.out << "/calibration.json\n";
  return 0;
}

}  // namespace tpb
