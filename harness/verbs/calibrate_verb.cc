// `tpbench calibrate --out DIR`: writes DIR/hardware.json, a profile `--hardware` accepts (its
// source says it was measured, by whom and when), and DIR/calibration.json with every figure
// behind it. See harness/measure/calibrate.h for what is measured and how. `--from FILE`
// rebuilds hardware.json from a recorded calibration.json, through the same builder.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "base/config_loader.h"
#include "base/errors.h"
#include "base/mpi_check.h"
#include "collectives/bus_bandwidth.h"
#include "collectives/model/fabric.h"
#include "harness/backends/registry.h"
#include "harness/config/backend_traits.h"
#include "harness/config/config_dir.h"
#include "harness/config/config_fields.h"
#include "harness/measure/calibrate.h"
#include "harness/measure/calibration_profile.h"
#include "harness/measure/collectives_measure.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/verbs/calibrate_ops.h"
#include "harness/verbs/verbs.h"
#include "layers/cpu/cpu_device.h"
#include "layers/hardware.h"

namespace tpb {

namespace {

using oj = nlohmann::ordered_json;

struct CalibrateSpec {
  std::string backend, collective, model, out, name, config_dir;
  DType dtype = DType::fp32;  // the GEMM table's and the op profile's: the run's (backend default)
  int tp = 1, blas_threads = 1, reps = 5;
  int64_t max_bytes = 0, context = 1024;
  bool op_profile = true;
  int op_repeats = 3;
  double collective_timeout_s = 600;
};

double max_over_ranks(const World& w, double v) {
  double r = 0;
  TPB_MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, w.comm));
  return r;
}

// The options; `shape` is the model whose sharded GEMMs are timed.
CalibrateSpec resolve_calibrate_spec(const nlohmann::json& cfg, const World& w, ModelShape& shape) {
  ConfigFields f(cfg);
  CalibrateSpec s;
  s.backend = f.choice("backend", "cpu", backend_names());
  if (backend_traits(s.backend).virtual_ranks)
    throw BadInput("--backend: calibrate measures a real device; " + s.backend + " is not one");
  s.collective = f.choice("collective", default_collective(s.backend), {"mpi", "nccl"});
  s.dtype =
      parse_dtype(f.str("dtype", dtype_name(backend_traits(s.backend).default_dtype)), "--dtype");
  s.config_dir = f.str("config_dir", config_dir_for(cfg));
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
  s.collective_timeout_s = f.duration("collective_timeout", 600.0, "s", 0.1, 86400.0);
  s.context = f.integer("context", 1024, 1, int64_t{1} << 24);
  s.op_profile = f.boolean("op_profile", true);  // on | off, as true | false
  s.op_repeats = static_cast<int>(f.integer("op_repeats", 3, 1, 100));
  f.reject_unknown();
  return s;
}

// As `run` refuses it: a dtype the device cannot compute in, named before anything is measured.
void check_calibrate_dtype(DType t, const DeviceCaps& caps) {
  if (std::find(caps.dtypes.begin(), caps.dtypes.end(), t) != caps.dtypes.end()) return;
  if (caps.dtypes == std::vector<DType>{DType::fp32})
    throw BadInput("--dtype: the " + caps.backend + " backend supports fp32 only (got " +
                   dtype_name(t) + ")");
  std::string have;
  for (DType d : caps.dtypes) have += (have.empty() ? "" : ", ") + std::string(dtype_name(d));
  throw BadInput("--dtype: the " + caps.backend + " backend has no " + dtype_name(t) + " (it has " +
                 have + ")");
}

DeviceOptions calibrate_device_options(const CalibrateSpec& s, const World& w) {
  RunSpec rs;
  rs.backend = s.backend;
  rs.blas_threads = s.blas_threads;
  return device_options(rs, w);
}

// 1. Peaks, every rank at once (the best rank is the peak, as for the start-up probe); the
// record's `peaks`, from which peaks_from_record takes the profile's.
oj measure_peaks(const World& w, Device& dev, int reps) {
  const DeviceCaps& caps = dev.caps();
  oj p = oj::object();
  const int64_t stream_bytes =
      static_cast<int64_t>(std::clamp(4.0 * caps.llc_bytes, 64.0 * (1 << 20), 512.0 * (1 << 20)));
  // A host-computed GEMM of 8192^3 would take minutes; 1024^3 is already past its cache.
  const int64_t gemm_dim = caps.host_compute ? 1024 : 8192;
  for (DType t : caps.dtypes) {
    TPB_MPI_CHECK(MPI_Barrier(w.comm));
    const DeviceOpsPeaks d = measure_device_ops(dev, t, stream_bytes, gemm_dim, reps);
    const double bw = max_over_ranks(w, d.add_bw), fl = max_over_ranks(w, d.gemm_flops);
    p["device_ops"][dtype_name(t)] = {{"add_GBps", bw / 1e9},
                                      {"gemm_GFLOPs", fl / 1e9},
                                      {"stream_bytes", d.stream_bytes},
                                      {"gemm_dim", d.gemm_dim}};
  }
  return p;
}

// The start-up probe's kernels too (BLAS sdot/saxpy/sgemm), so a calibrated profile is never
// below what a run would have measured for itself.
void add_probe_peaks(const World& w, const DeviceCaps& caps, oj& p) {
  TPB_MPI_CHECK(MPI_Barrier(w.comm));
  const ProbeResult r = run_cpu_probe(caps.llc_bytes);
  const double rd = max_over_ranks(w, r.read_bw), ax = max_over_ranks(w, r.axpy_bw),
               gf = max_over_ranks(w, r.gemm_flops);
  p["cpu_probe"] = {{"read_GBps", rd / 1e9}, {"axpy_GBps", ax / 1e9}, {"sgemm_GFLOPs", gf / 1e9}};
}

// 2. GEMM FLOP/s by shape in the run's dtype (a bf16 run's GEMMs are not fp32's: on an H200
// the two differ 16x in peak), the slowest rank's time: it bounds a TP step. A shape that beats
// the peaks raises them (peaks_from_record; seen here: the ~0.1 s sgemm probe landing in a slow
// spell that the ~40 s table outlasts), so the rows' of_peak_* are filled in after.
oj measure_shapes(const World& w, Device& dev, const ModelShape& shape, const CalibrateSpec& s) {
  TPB_MPI_CHECK(MPI_Barrier(w.comm));
  const DType t0 = s.dtype;
  const std::vector<GemmShapeResult> got =
      measure_gemm_shapes(dev, shape, s.tp, t0, {1, 8, 64, 512}, s.reps, dev.caps().llc_bytes);
  oj shapes = oj::array();
  for (const GemmShapeResult& g : got) {
    const double sec = max_over_ranks(w, g.seconds);
    shapes.push_back({{"op", g.op},
                      {"m", g.m},
                      {"n", g.n},
                      {"k", g.k},
                      {"dtype", dtype_name(t0)},
                      {"time_s", sec},
                      {"GFLOPs", g.flops / sec / 1e9},
                      {"GBps", g.bytes / sec / 1e9}});
  }
  return shapes;
}

struct ArCurve {
  std::vector<int64_t> bytes;
  std::vector<double> seconds;  // slowest rank
  int64_t wrong = 0;            // summed over ranks
};

ArCurve time_all_reduce(const World& w, Device& dev, const CalibrateSpec& s) {
  CollectivesSpec cs;
  cs.kind = CollKind::all_reduce;
  cs.dtype = DType::fp32;
  cs.collective = s.collective;
  cs.backend = s.backend;
  cs.timeout_s = s.collective_timeout_s;
  for (int64_t b = 8; b <= s.max_bytes; b *= 4) cs.sizes.push_back(b);
  auto coll = make_measured_collective(cs, w, dev);
  ArCurve c;
  for (int64_t b : cs.sizes) {
    const CollCounts n = coll_counts(cs.kind, b, cs.dtype, w.size);
    if (n.bytes == 0) continue;
    const CollRankResult r = measure_collective(cs, n, w, dev, coll.get());
    int64_t wr = 0;
    TPB_MPI_CHECK(MPI_Allreduce(&r.wrong, &wr, 1, MPI_INT64_T, MPI_SUM, w.comm));
    c.wrong += wr;
    c.bytes.push_back(n.bytes);
    c.seconds.push_back(max_over_ranks(w, r.loop_s));
  }
  return c;
}

// 3. All-reduce curve through the run's collective; its fitted busbw asymptote is link_bw.
oj measure_all_reduce(const World& w, Device& dev, const CalibrateSpec& s) {
  if (w.size <= 1) return oj::object();
  const ArCurve c = time_all_reduce(w, dev, s);
  const double bf = bus_factor(CollKind::all_reduce, w.size);
  oj pts = oj::array();
  for (std::size_t i = 0; i < c.bytes.size(); ++i)
    pts.push_back({{"bytes", c.bytes[i]},
                   {"time_s", c.seconds[i]},
                   {"algbw_GBps", c.bytes[i] / c.seconds[i] / 1e9},
                   {"busbw_GBps", c.bytes[i] / c.seconds[i] * bf / 1e9}});
  oj ar = {{"collective", s.collective}, {"ranks", w.size}, {"points", pts}, {"wrong", c.wrong}};
  if (c.bytes.size() >= 3) {
    const AlphaBeta ab = fit_alpha_beta(c.bytes, c.seconds);
    const double busbw_asym = ab.algbw * bf;
    ar["alpha_s"] = ab.alpha_s;
    ar["algbw_GBps"] = ab.algbw / 1e9;
    ar["busbw_GBps"] = busbw_asym / 1e9;
    ar["fit"] =
        "t(S) = alpha + S / algbw; alpha = median time of the 3 smallest sizes, algbw = "
        "largest S / (its time - alpha); busbw = algbw * 2(n-1)/n";
  }
  return ar;
}

// A topology preset whose fabric is the all-reduce curve just measured (--topology DIR/
// topology.json with --backend model): one node of the world's ranks.
oj measured_topology(const World& w, const CalibrateSpec& s, const oj& ar,
                     const std::string& date) {
  oj curve = oj::array();
  for (const auto& p : ar["points"]) curve.push_back({p["bytes"], p["time_s"]});
  const std::string source = fmt::format(
      "measured by tpbench calibrate on {} at {}: all-reduce through {} over {} ranks, slowest "
      "rank's time per call",
      w.host, date, s.collective, w.size);
  oj t;
  t["name"] = "measured-" + w.host;
  t["description"] = "The all-reduce curve tpbench calibrate measured on " + w.host +
                     ". Modelled only (--backend model): it sets no knob of a real run.";
  t["model"] = {{"gpus_per_node", w.size},
                {"measured",
                 {{"collective", s.collective},
                  {"ranks", w.size},
                  {"all_reduce", curve},
                  {"source", source}}}};
  (void)parse_fabric(t["model"], s.out + "/topology.json");  // what --topology will accept
  return t;
}

void print_summary(const World& w, const CalibrateSpec& s, const CalibrationPeaks& p,
                   const oj& shapes, const oj& ar) {
  std::cout << fmt::format("peaks: {:.2f} GB/s ({}), ", p.bw / 1e9, p.bw_from);
  for (const auto& [k, v] : p.flops) std::cout << fmt::format("{} {:.1f} GFLOP/s ", k, v / 1e9);
  std::cout << "(" << p.fl_from << ")\n";
  std::cout << fmt::format("{:>13} {:>5} {:>6} {:>6} {:>10} {:>9} {:>8} {:>6} {:>6}\n",
                           fmt::format("gemm {}", dtype_name(s.dtype)), "m", "n", "k", "time_us",
                           "GFLOP/s", "GB/s", "%flop", "%bw");
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
}

// `--from FILE`: the profile rebuilt from a recorded calibration.json, measuring nothing, so
// on any machine and with any backend. A measurement option with it is refused, not ignored:
// the profile would not have been measured as the command line says.
int calibrate_from(const CliResult& cli, const World& w) {
  std::string out, name;
  oj hw;
  agree(w.comm, [&] {
    for (const auto& [key, v] : cli.config.items())
      if (key != "out" && key != "name" && key != "config_dir")
        throw BadInput("--from: rebuilds from a recorded calibration and measures nothing; " +
                       field_name(key) + " is a measurement option (drop it or drop --from)");
    ConfigFields f(cli.config);
    out = f.str("out", "");
    if (out.empty()) throw BadInput("--out: calibrate writes DIR/hardware.json; give --out DIR");
    name = f.str("name", "");
    const std::string where = "--from '" + cli.from + "'";
    const oj cal = read_json_file(cli.from, "--from");
    if (!cal.is_object() || cal.value("schema", "") != "tpbench.calibration")
      throw BadInput(where + ": not a calibration.json (its schema is not tpbench.calibration)");
    // The record's model, for the kernels per step behind the idle per kernel (kernel_idle.h).
    const std::string model = cal.contains("model") ? cal["model"].value("name", "") : "";
    const ModelShape shape =
        model.empty() ? ModelShape{}
                      : load_model(model, f.str("config_dir", config_dir_for(cli.config)));
    hw = hardware_from_calibration(cal, name, cli.from, where, model.empty() ? nullptr : &shape);
    if (w.rank == 0) ensure_writable_dir(out);
  });
  if (w.rank != 0) return 0;
  write_file_atomic(out + "/hardware.json", hw.dump(2) + "\n");
  std::cout << "calibrate: " << out << "/hardware.json rebuilt from " << cli.from
            << " (use --hardware " << out << "/hardware.json)\n";
  return 0;
}

}  // namespace

int verb_calibrate(const CliResult& cli, const World& w) {
  if (!cli.from.empty()) return calibrate_from(cli, w);
  CalibrateSpec s;
  ModelShape shape;
  std::unique_ptr<Device> dev;
  agree(w.comm, [&] {
    s = resolve_calibrate_spec(cli.config, w, shape);
    if (w.rank == 0) ensure_writable_dir(s.out);
    dev = make_device(calibrate_device_options(s, w));
    check_calibrate_dtype(s.dtype, dev->caps());
  });
  const DeviceCaps& caps = dev->caps();
  const RunContextRecord context = collect_context(w, cli.argv, caps, built_backends());
  if (w.rank == 0 && context.oversubscribed)
    std::cerr << "warning: " << context.ranks_per_core
              << " ranks per core: every rank measures a share of a core\n";

  // Every rank builds the record, so every rank judges the op profile by the same peaks.
  const std::string where = "calibrate (this run's record)";
  oj cal;
  cal["schema"] = "tpbench.calibration";
  cal["schema_version"] = 1;
  cal["context"] = to_json(context);
  cal["model"] = {{"name", shape.name}, {"tp", s.tp}};
  cal["dtype"] = dtype_name(s.dtype);  // of gemm_shapes and op_profile
  cal["peaks"] = measure_peaks(w, *dev, s.reps);
  if (caps.startup_probe) add_probe_peaks(w, caps, cal["peaks"]);
  cal["gemm_shapes"] = measure_shapes(w, *dev, shape, s);
  const CalibrationPeaks peaks = peaks_from_record(cal, where);
  judge_gemm_shapes(cal["gemm_shapes"], peaks);
  cal["all_reduce"] = measure_all_reduce(w, *dev, s);
  if (s.op_profile)
    cal["op_profile"] =
        measure_op_profile(w, *dev,
                           {s.backend, s.collective, s.model, s.config_dir, s.dtype, w.size,
                            s.context, s.blas_threads, s.collective_timeout_s, s.op_repeats},
                           peaks.flops, peaks.bw)
            .points;
  else
    cal["op_profile"] = oj::array();
  if (w.rank != 0) return 0;

  const oj hw = hardware_from_calibration(cal, s.name, "", where, &shape);
  cal["hardware"] = hw;
  write_file_atomic(s.out + "/calibration.json", cal.dump(2) + "\n");
  write_file_atomic(s.out + "/hardware.json", hw.dump(2) + "\n");
  const oj& ar = cal["all_reduce"];
  if (ar.contains("points"))
    write_file_atomic(s.out + "/topology.json",
                      measured_topology(w, s, ar, context.date).dump(2) + "\n");
  print_summary(w, s, peaks, cal["gemm_shapes"], ar);
  return 0;
}

}  // namespace tpb
