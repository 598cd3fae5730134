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
#include "layers/device_factory.h"

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

}  // namespace

int verb_sweep(const CliResult& cli, const World& w) {
  SweepPlan plan;
  std::vector<RunSpec> specs;
  std::unique_ptr<Device> dev;
  std::string resume_dir;
  ResumeLedger ledger;  // rank 0 only
  agree(w.comm, [&] {
    nlohmann::json cfg = cli.config;
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
    plan = plan_sweep(cfg);
    for (const auto& p : plan.points) {
      specs.push_back(resolve_run_spec(p, w.size, default_config_dir()));
      // Numbered by plan order, which --resume keeps, so a resumed point's trace stays its own.
      specs.back().trace_file = "traces/point-" + std::to_string(specs.size() - 1) + ".json";
    }
    if (w.rank == 0) {
      ensure_writable_dir(specs[0].out);
      if (!resume_dir.empty()) ledger = read_ledger(resume_dir);
    }
    // backend, memory budget and BLAS threads are not axes, so every point shares the device.
    DeviceOptions o;
    o.backend = specs[0].backend;
    o.local_rank = w.local_rank;
    o.local_size = w.local_size;
    o.memory_budget_bytes = specs[0].memory_budget_bytes;
    o.blas_threads = specs[0].blas_threads;
    dev = make_device(o);
  });

  // Which points the ledger already holds: decided on rank 0, shared so all ranks skip alike.
  std::vector<char> done(specs.size(), 0);
  if (w.rank == 0)
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const auto id = point_identity(specs[i]);
      for (const auto& p : ledger.points) done[i] = done[i] || same_point(p["params"], id);
    }
  TPB_MPI_CHECK(MPI_Bcast(done.data(), static_cast<int>(done.size()), MPI_CHAR, 0, w.comm));

  auto context = collect_context(w, cli.argv, dev->caps());
  std::optional<ResultsWriter> writer;
  std::optional<std::size_t> exhaustion;
  if (w.rank == 0) {
    context["topology"] =
        topology_context(specs[0].topology, specs[0].collective, specs[0].config_dir);
    if (context["oversubscribed"].get<bool>())
      std::cerr << "warning: " << context["ranks_per_core"].get<double>()
                << " ranks per core: timings are time-sliced; use this sweep for function, not "
                   "performance\n";
    // A resumed sweep keeps exactly the finished lines; a fresh one moves any earlier results
    // in --out aside (previous-<time>/) and starts an empty ledger.
    if (!resume_dir.empty()) rewrite_ledger(specs[0].out, ledger);
    writer.emplace(specs[0].out, context, sweep_config_json(specs[0], plan),
                   resume_dir.empty() ? Existing::archive : Existing::keep);
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
    if (!resume_dir.empty())
      std::cout << "resume: " << ledger.points.size() << " finished point(s) kept, " << ledger.torn
                << " torn line(s) dropped, " << ledger.retried << " failed point(s) to rerun\n";
  }

  MPI_Comm dup;
  TPB_MPI_CHECK(MPI_Comm_dup(w.comm, &dup));
  CommHandle outcome_comm(dup);
  std::map<std::string, std::optional<Peaks>> peaks;  // by dtype: the probe runs once
  std::map<std::string, std::string> peak_errors;
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
    const RunSpec& spec = specs[i];
    if (w.rank == 0) {
      prog.k = i + 1;
      prog.label = point_label(plan.points[i], plan);
      prog.elapsed_s = now_s() - t_start;
      prog.eta_s = sweep_eta_s(run_s, ran, to_run - ran);
      std::cout << format_progress(prog) << std::endl;
    }
    nlohmann::ordered_json point;
    std::string why = unsupported_reason(spec, *dev);
    const std::string pkey = std::string(dtype_name(spec.dtype)) + "/" + spec.hardware;
    if (why.empty() && !peaks.count(pkey)) {
      try {  // agree() makes a peak failure the same on every rank, so it can be a skip
        agree(w.comm, [&] { peaks[pkey] = resolve_peaks(spec, w, *dev); });
      } catch (const AgreedError& e) {
        peaks[pkey] = std::nullopt;
        peak_errors[pkey] = e.what();
      }
    }
    if (why.empty() && !peaks[pkey]) why = peak_errors[pkey];
    if (!why.empty()) {
      if (w.rank == 0) point = skipped_point_json(spec, why);
    } else {
      const double t0 = now_s();
      point = run_sweep_point(spec, w, *dev, *peaks[pkey], outcome_comm.get());
      run_s += now_s() - t0;
      ++ran;
    }
    if (w.rank != 0) continue;
    if (point["status"] == "oom" && !exhaustion) {
      point["memory_exhaustion"] = true;
      exhaustion = writer->results()["points"].size();
      writer->set_section("memory_exhaustion", exhaustion_json(*exhaustion, point));
    }
    writer->add_point(point);
    prog.last_status = point["status"].get<std::string>();
    prog.last_tokens_per_s =
        prog.last_status == "ok" ? point["metrics"]["tokens_per_s"].get<double>() : 0.0;
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
