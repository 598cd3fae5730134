// `tpbench sweep`: run's options, any axis a list or range (harness/config/sweep_plan.h states the
// order). Every point goes through run_point, is appended to points.jsonl (fsynced) and
// rewrites results.json, so a killed sweep loses at most the point in flight and
// `--resume DIR` picks up from the ledger.
#include <mpi.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "collectives/mpi/mpi_check.h"
#include "collectives/topology_presets.h"
#include "harness/backends/registry.h"
#include "harness/config/config_dir.h"
#include "harness/config/run_spec.h"
#include "harness/config/sweep_plan.h"
#include "harness/drive/peaks.h"
#include "harness/drive/sweep_point.h"
#include "harness/drive/sweep_resume.h"
#include "harness/mpi/agreement.h"
#include "harness/record/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/report/sweep_table.h"
#include "harness/verbs/verbs.h"
#include "layers/base/host_clock.h"

namespace tpb {

namespace {

// The results' `config`: the first point's resolved spec with each axis shown as its list.
nlohmann::ordered_json sweep_config_json(const RunSpec& first, const SweepPlan& plan) {
  nlohmann::ordered_json c = run_spec_to_json(first);
  for (const auto& a : plan.axes) c[a.key] = axis_values_json(a);
  c["sweep"] = sweep_plan_to_json(plan);
  return c;
}

nlohmann::ordered_json exhaustion_json(std::size_t index, const nlohmann::ordered_json& p) {
  return {{"point_index", index},
          {"params", p["params"]},
          {"need_bytes", p["memory"]["need_bytes"]},
          {"have_bytes", p["memory"]["have_bytes"]},
          {"meaning",
           "first point of the sweep whose weights + KV cache + activations do not "
           "fit the TP group's smallest per-rank memory budget"}};
}

// What every rank resolves before the first point. The ledger is rank 0's only.
struct SweepSetup {
  SweepPlan plan;
  std::vector<RunSpec> specs;
  std::unique_ptr<Device> dev;
  std::string resume_dir;
  ResumeLedger ledger;
};

// The config with --resume DIR turned into --out DIR (results go back where they were).
nlohmann::json resume_config(const nlohmann::json& config, std::string& resume_dir) {
  nlohmann::json cfg = config;
  if (cfg.contains("resume")) {
    resume_dir = cfg["resume"].is_string() ? cfg["resume"].get<std::string>() : "";
    if (resume_dir.empty()) throw BadInput("--resume: expected a directory");
    if (cfg.contains("out") && cfg["out"] != resume_dir)
      throw BadInput("--resume: results go back into " + resume_dir +
                     "; drop --out or make "
                     "it the same directory");
    cfg.erase("resume");
    cfg["out"] = resume_dir;
  }
  return cfg;
}

void setup_sweep(const CliResult& cli, const World& w, SweepSetup& st) {
  const nlohmann::json cfg = resume_config(cli.config, st.resume_dir);
  st.plan = plan_sweep(cfg);
  for (const auto& p : st.plan.points) {
    st.specs.push_back(resolve_run_spec(p, w.size, default_config_dir()));
    // Numbered by plan order, which --resume keeps, so a resumed point's trace stays its own.
    st.specs.back().trace_file = "traces/point-" + std::to_string(st.specs.size() - 1) + ".json";
  }
  if (w.rank == 0) {
    ensure_writable_dir(st.specs[0].out);
    if (!st.resume_dir.empty()) st.ledger = read_ledger(st.resume_dir);
  }
  // backend, memory budget and BLAS threads are not axes, so every point shares the device.
  st.dev = make_device(device_options(st.specs[0], w));
}

// Which points the ledger already holds: decided on rank 0, shared so all ranks skip alike.
std::vector<char> finished_points(const World& w, const SweepSetup& st) {
  std::vector<char> done(st.specs.size(), 0);
  if (w.rank == 0)
    for (std::size_t i = 0; i < st.specs.size(); ++i) {
      const auto id = point_identity(st.specs[i]);
      for (const auto& p : st.ledger.points) done[i] = done[i] || same_point(p["params"], id);
    }
  TPB_MPI_CHECK(MPI_Bcast(done.data(), static_cast<int>(done.size()), MPI_CHAR, 0, w.comm));
  return done;
}

// Rank 0: the results writer, holding the ledger's finished points. `exhaustion` is the index
// of the first point that ran out of memory, if one did.
void open_results(const SweepSetup& st, nlohmann::ordered_json& context,
                  std::optional<ResultsWriter>& writer, std::optional<std::size_t>& exhaustion) {
  const auto& specs = st.specs;
  const auto& ledger = st.ledger;
  context["topology"] =
      topology_context(specs[0].topology, specs[0].collective, specs[0].config_dir);
  if (context["oversubscribed"].get<bool>())
    std::cerr << "warning: " << context["ranks_per_core"].get<double>()
              << " ranks per core: timings are time-sliced; use this sweep for function, not "
                 "performance\n";
  // A resumed sweep keeps exactly the finished lines; a fresh one moves any earlier results
  // in --out aside (previous-<time>/) and starts an empty ledger.
  if (!st.resume_dir.empty()) rewrite_ledger(specs[0].out, ledger);
  writer.emplace(specs[0].out, context, sweep_config_json(specs[0], st.plan),
                 st.resume_dir.empty() ? Existing::archive : Existing::keep);
  report_archive(*writer);
  std::filesystem::create_directories(specs[0].out + "/traces");
  nlohmann::ordered_json old = nlohmann::ordered_json::array();
  for (const auto& p : ledger.points) {
    if (!exhaustion && p.value("memory_exhaustion", false)) exhaustion = old.size();
    old.push_back(p);
  }
  writer->set_section("points", old);
  writer->set_section("memory_exhaustion",
                      exhaustion ? exhaustion_json(*exhaustion, old[*exhaustion]) : nullptr);
  if (!st.resume_dir.empty())
    std::cout << "resume: " << ledger.points.size() << " finished point(s) kept, " << ledger.torn
              << " torn line(s) dropped, " << ledger.retried << " failed point(s) to rerun\n";
}

// The start-up peaks by dtype and hardware: the probe runs once per pair, and a failure is a
// skip of every point that needs it.
struct PeakCache {
  std::map<std::string, std::optional<Peaks>> peaks;
  std::map<std::string, std::string> errors;
};

// One point: skipped (unsupported, or its peaks failed) or run. Every rank calls it.
// `run_s` is how long the run took (the ETA's basis), or -1 for a skip.
nlohmann::ordered_json sweep_one(const RunSpec& spec, const World& w, Device& dev, PeakCache& pc,
                                 MPI_Comm outcome_comm, double& run_s) {
  nlohmann::ordered_json point;
  std::string why = unsupported_reason(spec, dev);
  const std::string pkey = std::string(dtype_name(spec.dtype)) + "/" + spec.hardware;
  if (why.empty() && !pc.peaks.count(pkey)) {
    try {  // agree() makes a peak failure the same on every rank, so it can be a skip
      agree(w.comm, [&] { pc.peaks[pkey] = resolve_peaks(spec, w, dev); });
    } catch (const AgreedError& e) {
      pc.peaks[pkey] = std::nullopt;
      pc.errors[pkey] = e.what();
    }
  }
  if (why.empty() && !pc.peaks[pkey]) why = pc.errors[pkey];
  run_s = -1;
  if (!why.empty()) {
    if (w.rank == 0) point = skipped_point_json(spec, why);
  } else {
    const double t0 = now_s();
    point = run_sweep_point(spec, w, dev, *pc.peaks[pkey], outcome_comm);
    run_s = now_s() - t0;
  }
  return point;
}

// Rank 0: the point into the results, marking the first memory exhaustion.
void record_point(nlohmann::ordered_json& point, ResultsWriter& writer,
                  std::optional<std::size_t>& exhaustion, SweepProgress& prog) {
  if (point["status"] == "oom" && !exhaustion) {
    point["memory_exhaustion"] = true;
    exhaustion = writer.results()["points"].size();
    writer.set_section("memory_exhaustion", exhaustion_json(*exhaustion, point));
  }
  writer.add_point(point);
  prog.last_status = point["status"].get<std::string>();
  prog.last_tokens_per_s =
      prog.last_status == "ok" ? point["metrics"]["tokens_per_s"].get<double>() : 0.0;
}

}  // namespace

int verb_sweep(const CliResult& cli, const World& w) {
  SweepSetup st;
  agree(w.comm, [&] { setup_sweep(cli, w, st); });
  const auto& specs = st.specs;
  const std::vector<char> done = finished_points(w, st);

  auto context = collect_context(w, cli.argv, st.dev->caps());
  std::optional<ResultsWriter> writer;
  std::optional<std::size_t> exhaustion;
  if (w.rank == 0) open_results(st, context, writer, exhaustion);

  MPI_Comm dup;
  TPB_MPI_CHECK(MPI_Comm_dup(w.comm, &dup));
  CommHandle outcome_comm(dup);
  PeakCache peaks;
  std::size_t resumed = 0, ran = 0;
  for (char d : done) resumed += d ? 1 : 0;
  const std::size_t to_run = specs.size() - resumed;
  const double t_start = now_s();
  double run_s = 0;
  SweepProgress prog;
  prog.n = specs.size();
  prog.resumed = resumed;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (done[i]) continue;
    if (w.rank == 0) {
      prog.k = i + 1;
      prog.label = point_label(st.plan.points[i], st.plan);
      prog.elapsed_s = now_s() - t_start;
      prog.eta_s = sweep_eta_s(run_s, ran, to_run - ran);
      std::cout << format_progress(prog) << std::endl;
    }
    double point_s = -1;
    nlohmann::ordered_json point =
        sweep_one(specs[i], w, *st.dev, peaks, outcome_comm.get(), point_s);
    if (point_s >= 0) run_s += point_s, ++ran;
    if (w.rank == 0) record_point(point, *writer, exhaustion, prog);
  }
  if (w.rank == 0) {
    std::vector<nlohmann::ordered_json> all(writer->results()["points"].begin(),
                                            writer->results()["points"].end());
    std::cout << format_sweep_table(all) << "sweep: " << ran << " point(s) run, " << resumed
              << " resumed, " << specs.size() << " in the plan; results: " << specs[0].out
              << "/results.json\n"
              << std::flush;
  }
  return 0;
}

}  // namespace tpb
