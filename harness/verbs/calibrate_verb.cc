// `tpbench calibrate --out DIR`: writes DIR/hardware.json, a profile `--hardware` accepts (its
// source says it was measured, by whom and when), and DIR/calibration.json with every figure
// behind it. The verb resolves the options, measures (harness/measure/calibration_measure.h),
// builds the profile (calibration_profile.h) and writes the records (calibration_json.h).
// `--from FILE` rebuilds hardware.json from a recorded calibration.json, through the same
// builder, or writes topology.json from an nccl-tests all_reduce_perf output
// (measure/nccl_tests_import.h). `--from-aiconfigurator` converts AIConfigurator's measured
// kernel tables (calibrate_aiconfigurator.cc).
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "base/config_loader.h"
#include "base/errors.h"
#include "base/read_text.h"
#include "harness/backends/registry.h"
#include "harness/config/axis.h"
#include "harness/config/backend_traits.h"
#include "harness/config/config_dir.h"
#include "harness/config/config_fields.h"
#include "harness/config/options/calibrate_options.h"
#include "harness/drive/sweep_point.h"
#include "harness/measure/calibration_measure.h"
#include "harness/measure/calibration_profile.h"
#include "harness/measure/nccl_tests_import.h"
#include "harness/measure/recorded_runs.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/calibration_json.h"
#include "harness/record/json/results_doc_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/verbs/seam/seam_registry.h"
#include "harness/verbs/verbs.h"
#include "layers/hardware.h"

namespace tpb {

namespace {

struct CalibrateOptions {
  CalibrateSpec measure;
  std::string out, name;
};

// The options; `shape` is the model whose sharded GEMMs are timed.
CalibrateOptions resolve_calibrate_options(const nlohmann::json& cfg, const World& w,
                                           ModelShape& shape) {
  ConfigFields f(cfg);
  CalibrateOptions o;
  CalibrateSpec& s = o.measure;
  s.backend = f.choice(opt::backend.key, opt::backend.def, backend_names());
  if (backend_traits(s.backend).virtual_ranks)
    throw BadInput("--backend: calibrate measures a real device; " + s.backend + " is not one");
  s.collective = f.choice(opt::collective.key, default_collective(s.backend), {"mpi", "nccl"});
  s.dtype = parse_dtype(f.str(opt::dtype, dtype_name(backend_traits(s.backend).default_dtype)),
                        "--dtype");
  s.config_dir = f.str(opt::config_dir, config_dir_for(cfg));
  s.model = f.str(opt::model);
  shape = load_model(s.model, s.config_dir);
  s.tp = static_cast<int>(f.integer(opt::tp, w.size));
  if (shape.n_heads % s.tp != 0)
    throw BadInput(fmt::format("--tp: {} does not divide the {} attention heads of '{}'", s.tp,
                               shape.n_heads, shape.name));
  o.out = f.str(opt::calibrate_out);
  if (o.out.empty()) throw BadInput("--out: calibrate writes DIR/hardware.json; give --out DIR");
  o.name = f.str(opt::name, "calibrated-" + w.host);
  s.max_bytes = static_cast<int64_t>(f.bytes(opt::max_bytes));
  if (s.max_bytes < 1024 || s.max_bytes > (int64_t{1} << 34))
    throw BadInput("--max-bytes: the all-reduce curve needs 1K..16G");
  s.reps = static_cast<int>(f.integer(opt::reps));
  s.blas_threads = static_cast<int>(f.integer(opt::blas_threads));
  s.collective_timeout_s = f.duration(opt::collective_timeout);
  s.context = f.integer(opt::context);
  // At least one cached token: the op profile's decode grid attends to the cache.
  if (s.context < 1) throw BadInput("--context: calibrate needs at least 1 cached token (got 0)");
  s.op_profile = f.boolean(opt::op_profile);
  s.op_repeats = static_cast<int>(f.integer(opt::op_repeats));
  if (!f.strings(opt::runs).empty())
    throw BadInput(
        "--runs: adds recorded runs to a recorded calibration; give it with --from FILE");
  f.reject_unknown();
  return o;
}

// A dtype the device cannot compute in, named before anything is measured, in run's own line.
void check_calibrate_dtype(DType t, const DeviceCaps& caps) {
  RunSpec as_run;
  as_run.dtype = t;
  as_run.kv_dtype = activation_dtype(t);
  check_run_dtype(as_run, caps);
}

DeviceOptions calibrate_device_options(const CalibrateSpec& s, const World& w) {
  RunSpec rs;
  rs.backend = s.backend;
  rs.blas_threads = s.blas_threads;
  return device_options(rs, w);
}

void print_summary(const World& w, const CalibrateOptions& o, const CalibrationRecord& cal) {
  const CalibrationPeaks p = peaks_from_record(cal);
  std::cout << fmt::format("peaks: {:.2f} GB/s ({}), ", p.bw / 1e9, p.bw_from);
  for (const auto& [k, v] : p.flops) std::cout << fmt::format("{} {:.1f} GFLOP/s ", k, v / 1e9);
  std::cout << "(" << p.fl_from << ")\n";
  std::cout << fmt::format("{:>13} {:>5} {:>6} {:>6} {:>10} {:>9} {:>8} {:>6} {:>6}\n",
                           fmt::format("gemm {}", dtype_name(o.measure.dtype)), "m", "n", "k",
                           "time_us", "GFLOP/s", "GB/s", "%flop", "%bw");
  for (const GemmShapeRecord& g : cal.gemm_shapes)
    std::cout << fmt::format(
        "{:>13} {:>5} {:>6} {:>6} {:>10.1f} {:>9.1f} {:>8.2f} {:>6.1f} {:>6.1f}\n", g.op, g.m, g.n,
        g.k, g.time_s * 1e6, g.gflops, g.gbps, 100 * g.of_peak_flops, 100 * g.of_peak_bw);
  const AllReduceRecord& ar = cal.all_reduce;
  if (ar.alpha_s)
    std::cout << fmt::format(
        "all-reduce ({} ranks, {}): latency {:.1f} us, algbw {:.2f} GB/s, "
        "busbw {:.2f} GB/s, #wrong {}\n",
        w.size, o.measure.collective, *ar.alpha_s * 1e6, ar.algbw_GBps.value_or(0),
        ar.busbw_GBps.value_or(0), ar.wrong.value_or(0));
  std::cout << "calibrate: " << hardware_profile_path(o.out) << " (use --hardware "
            << hardware_profile_path(o.out) << "), details in " << calibration_path(o.out) << "\n";
}

// `--runs A,B`: the recorded runs, read whole (a folder's results.json).
std::vector<RecordedRun> read_runs(ConfigFields& f) {
  std::vector<RecordedRun> runs;
  for (const std::string& list : f.strings(opt::runs))
    for (const std::string& path : split_list(list, ','))
      if (!path.empty()) runs.push_back({path, load_results_doc(path, "--runs")});
  return runs;
}

// `--from FILE`'s options: --out, --name and the config dir only. A measurement option with it
// is refused, not ignored: the result would not have been measured as the command line says.
std::string from_out_dir(const CliResult& cli) {
  for (const auto& [key, v] : cli.config.items())
    if (key != "out" && key != "name" && key != "config_dir" && key != "runs")
      throw BadInput("--from: rebuilds from a recorded calibration and measures nothing; " +
                     field_name(key) + " is a measurement option (drop it or drop --from)");
  const std::string out = ConfigFields(cli.config).str(opt::calibrate_out);
  if (out.empty())
    throw BadInput(
        "--out: calibrate writes DIR/hardware.json (DIR/topology.json from an "
        "nccl-tests output); give --out DIR");
  return out;
}

// What --from names: a calibration.json (nullopt here), or an nccl-tests output (its run).
std::optional<NcclTestsOutput> nccl_tests_run(const std::string& file, const std::string& text,
                                              const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_discarded()) {
    if (j.is_object() && j.contains("results") && j.contains("nccl_version"))
      return parse_nccl_tests_json(j, where);
    return std::nullopt;  // a calibration.json, checked by its own reader
  }
  if (is_nccl_tests_output(text)) return parse_nccl_tests_text(text, where);
  throw BadInput(where + ": '" + file +
                 "' is neither a calibration.json nor an nccl-tests output (no '# nThread' "
                 "header): cannot rebuild from it");
}

// `--from FILE` with an nccl-tests all_reduce_perf output: DIR/topology.json, its curve.
int calibrate_from_nccl_tests(const CliResult& cli, const World& w, const NcclTestsOutput& run,
                              const std::string& out, const std::string& where) {
  MeasuredTopologyRecord t;
  agree(w.comm, [&] {
    if (cli.config.contains("runs"))
      throw BadInput(
          "--runs: adds recorded runs to a calibration record; an nccl-tests output "
          "takes none");
    t = nccl_tests_topology(run, ConfigFields(cli.config).str(opt::name), cli.from, where);
    if (w.rank == 0) ensure_writable_dir(out);
  });
  if (w.rank != 0) return 0;
  write_measured_topology(out, t);
  if (run.zero_size_rows > 0)
    std::cout << "calibrate: left out " << run.zero_size_rows << " row(s) of 0 bytes\n";
  if (const std::string note = gpus_per_process_note(run); !note.empty())
    std::cout << "calibrate: note: " << note << "\n";
  std::cout << fmt::format(
      "calibrate: {} written from {} ({} sizes, {} to {} bytes, {} ranks) (use --topology {})\n",
      topology_path(out), cli.from, run.points.size(), run.points.front().first,
      run.points.back().first, run.ranks, topology_path(out));
  return 0;
}

// `--from FILE`: the profile rebuilt from a recorded calibration.json, measuring nothing, so
// on any machine and with any backend.
int calibrate_from(const CliResult& cli, const World& w) {
  std::string out;
  std::optional<NcclTestsOutput> run;
  const std::string where = "--from '" + cli.from + "'";
  agree(w.comm, [&] {
    out = from_out_dir(cli);
    run = nccl_tests_run(cli.from, read_text_file(cli.from, "--from"), where);
  });
  if (run) return calibrate_from_nccl_tests(cli, w, *run, out, where);
  HardwareProfileRecord hw;
  RecordedOps added;
  agree(w.comm, [&] {
    ConfigFields f(cli.config);
    const std::string name = f.str(opt::name);
    const CalibrationRecord cal = calibration_from_json(read_json_file(cli.from, "--from"), where);
    // The record's model, for the kernels per step behind the idle per kernel (kernel_idle.h).
    const std::string& model = cal.model.name;
    const ModelShape shape =
        model.empty() ? ModelShape{}
                      : load_model(model, f.str(opt::config_dir, config_dir_for(cli.config)));
    added = recorded_op_points(cal, read_runs(f));
    hw = hardware_from_calibration(cal, name, cli.from, where, model.empty() ? nullptr : &shape,
                                   added.taken);
    if (w.rank == 0) ensure_writable_dir(out);
  });
  if (w.rank != 0) return 0;
  write_hardware_profile(out, hw);
  for (const RecordedOpPoint& a : added.taken) std::cout << "calibrate: added " << a.source << "\n";
  for (const std::string& why : added.skipped) std::cout << "calibrate: left out " << why << "\n";
  std::cout << "calibrate: " << hardware_profile_path(out) << " rebuilt from " << cli.from
            << " (use --hardware " << hardware_profile_path(out) << ")\n";
  return 0;
}

}  // namespace

int verb_calibrate(const CliResult& cli, const World& w) {
  if (!cli.from_aiconfigurator.empty()) return calibrate_from_aiconfigurator(cli, w);
  if (!cli.from.empty()) return calibrate_from(cli, w);
  CalibrateOptions o;
  ModelShape shape;
  std::unique_ptr<Device> dev;
  agree(w.comm, [&] {
    o = resolve_calibrate_options(cli.config, w, shape);
    if (w.rank == 0) ensure_writable_dir(o.out);
    dev = make_device(calibrate_device_options(o.measure, w));
    check_calibrate_dtype(o.measure.dtype, dev->caps());
  });
  const RunContextRecord context = collect_context(w, cli.argv, dev->caps(), built_backends());
  if (w.rank == 0 && context.oversubscribed)
    std::cerr << "warning: " << context.ranks_per_core
              << " ranks per core: every rank measures a share of a core\n";

  // The op profile's grid points run as a sweep's points do.
  const GridPointRunner run_point = [&](const RunSpec& spec, const Peaks& peaks,
                                        MPI_Comm outcome_comm) -> std::optional<PointRecord> {
    std::optional<PointOutcome> outcome = run_sweep_point(spec, w, *dev, peaks, outcome_comm);
    if (!outcome) return std::nullopt;
    return std::move(outcome->record);
  };
  CalibrationRecord cal = measure_calibration(w, *dev, o.measure, shape, context, run_point);
  if (w.rank != 0) return 0;

  const std::string where = "calibrate (this run's record)";
  cal.hardware = hardware_from_calibration(cal, o.name, "", where, &shape);
  std::optional<MeasuredTopologyRecord> topology;
  if (cal.all_reduce.measured()) topology = measured_topology(cal, topology_path(o.out));
  write_calibration(o.out, cal, topology);
  print_summary(w, o, cal);
  return 0;
}

}  // namespace tpb
