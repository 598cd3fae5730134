// `tpbench sweep`: run's options, any axis a list or range (harness/config/sweep_plan.h states the
// order). Every point goes through run_point, is appended to points.jsonl (fsynced) and
// rewrites results.json, so a killed sweep loses at most the point in flight and
// `--resume DIR` picks up from the ledger.
#include <mpi.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "base/host_clock.h"
#include "base/mpi_check.h"
#include "harness/backends/registry.h"
#include "harness/config/config_dir.h"
#include "harness/config/run_spec.h"
#include "harness/config/sweep_plan.h"
#include "harness/drive/sweep_resume.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/echo_json.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/point_builder.h"
#include "harness/record/run_context.h"
#include "harness/report/sweep_table.h"
#include "harness/verbs/seam/seam_registry.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// What every rank resolves, agreed, before the first point.
struct SweepSetup {
  SweepPlan plan;
  std::vector<RunSpec> specs;
  std::unique_ptr<VerbBackend> backend;
  std::string resume_dir;
  ResumeLedger ledger;  // rank 0 only
};

SweepSetup resolve_sweep(const CliResult& cli, const World& w) {
  SweepSetup s;
  agree(w.comm, [&] {
    nlohmann::json cfg = cli.config;
    if (cfg.contains("resume")) {
      s.resume_dir = cfg["resume"].is_string() ? cfg["resume"].get<std::string>() : "";
      if (s.resume_dir.empty()) throw BadInput("--resume: expected a directory");
      if (cfg.contains("out") && cfg["out"] != s.resume_dir)
        throw BadInput("--resume: results go back into " + s.resume_dir +
                       "; drop --out or make "
                       "it the same directory");
      cfg.erase("resume");
      cfg["out"] = s.resume_dir;
    }
    s.plan = plan_sweep(cfg);
    for (const auto& p : s.plan.points) {
      s.specs.push_back(resolve_run_spec(p, w.size, config_dir_for(p)));
      s.specs.back().trace_file = ResultsWriter::sweep_trace_name(s.specs.size() - 1);
    }
    if (w.rank == 0) {
      ensure_writable_dir(s.specs[0].out);
      if (!s.resume_dir.empty()) s.ledger = read_ledger(s.resume_dir);
    }
    // backend, memory budget and BLAS threads are not axes, so every point shares the device.
    s.backend = builtin_seams().open(device_options(s.specs[0], w));
    for (RunSpec& p : s.specs) s.backend->adopt(p);
  });
  return s;
}

// Which points the ledger already holds: decided on rank 0, shared so all ranks skip alike.
std::vector<char> finished_points(const SweepSetup& s, const World& w) {
  std::vector<char> done(s.specs.size(), 0);
  if (w.rank == 0)
    for (std::size_t i = 0; i < s.specs.size(); ++i) {
      const auto id = point_identity(s.specs[i]);
      for (const auto& p : s.ledger.points) done[i] = done[i] || same_point(to_json(p.params), id);
    }
  TPB_MPI_CHECK(MPI_Bcast(done.data(), static_cast<int>(done.size()), MPI_CHAR, 0, w.comm));
  return done;
}

// Rank 0's side: the writer, every record so far (resumed ones first) and the sweep's first
// point that did not fit.
struct SweepResults {
  std::optional<ResultsWriter> writer;
  std::vector<PointRecord> points;
  std::optional<std::size_t> exhaustion;
};

void open_results(SweepResults& r, const SweepSetup& s, RunContextRecord context) {
  const RunSpec& first = s.specs[0];
  s.backend->describe_sweep(context, s.specs);
  if (context.oversubscribed)
    std::cerr << "warning: " << context.ranks_per_core
              << " ranks per core: timings are time-sliced; use this sweep for function, not "
                 "performance\n";
  // A resumed sweep keeps exactly the finished lines; a fresh one moves any earlier results
  // in --out aside (previous-<time>/) and starts an empty ledger.
  if (!s.resume_dir.empty()) rewrite_ledger(first.out, s.ledger);
  r.writer.emplace(first.out, to_json(context), sweep_config_json(first, s.plan),
                   s.resume_dir.empty() ? Existing::archive : Existing::keep);
  report_archive(*r.writer);
  r.writer->prepare_sweep_traces();
  nlohmann::ordered_json old = nlohmann::ordered_json::array();
  for (const auto& p : s.ledger.points) {
    if (!r.exhaustion && p.memory_exhaustion.value_or(false)) r.exhaustion = r.points.size();
    r.points.push_back(p);
    old.push_back(to_json(p));
  }
  r.writer->set_section(points_section(), old);
  r.writer->set_section(
      memory_exhaustion_section(),
      r.exhaustion ? memory_exhaustion_json(*r.exhaustion, r.points[*r.exhaustion]) : nullptr);
  if (!s.resume_dir.empty())
    std::cout << "resume: " << s.ledger.points.size() << " finished point(s) kept, "
              << s.ledger.torn << " torn line(s) dropped, " << s.ledger.retried
              << " failed point(s) to rerun\n";
}

void add_result(SweepResults& r, PointOutcome o) {
  if (o.record.status == PointStatus::oom && !r.exhaustion) {
    o.record.memory_exhaustion = true;
    r.exhaustion = r.points.size();
    r.writer->set_section(memory_exhaustion_section(),
                          memory_exhaustion_json(*r.exhaustion, o.record));
  }
  r.writer->add_record(o);
  r.points.push_back(std::move(o.record));
}

// Peaks by dtype and hardware profile: the probe runs once for each, and a probe every rank
// agrees has failed skips that dtype's points instead of ending the sweep.
class PeakCache {
 public:
  // Null, with the reason in `why`, when the peaks could not be had.
  const Peaks* get(const RunSpec& spec, const World& w, VerbBackend& backend, std::string& why) {
    const std::string key = std::string(dtype_name(spec.dtype)) + "/" + spec.hardware;
    if (!peaks_.count(key)) {
      try {
        agree(w.comm, [&] { peaks_[key] = backend.peaks(spec, w); });
      } catch (const AgreedError& e) {
        peaks_[key] = std::nullopt;
        errors_[key] = e.what();
      }
    }
    if (!peaks_[key]) why = errors_[key];
    return peaks_[key] ? &*peaks_[key] : nullptr;
  }

  // What the context records: every entry asked for so far, a failed one with its reason.
  std::vector<PeaksUsedRecord> used() const {
    std::vector<PeaksUsedRecord> v;
    for (const auto& [key, p] : peaks_) {
      const auto slash = key.find('/');
      PeaksUsedRecord r{key.substr(0, slash), key.substr(slash + 1), kNoValue, kNoValue, ""};
      if (p)
        r.flops = p->flops, r.bw = p->bw, r.source = p->source;
      else
        r.source = "not available: " + errors_.at(key);
      v.push_back(r);
    }
    return v;
  }

 private:
  std::map<std::string, std::optional<Peaks>> peaks_;
  std::map<std::string, std::string> errors_;
};

}  // namespace

int verb_sweep(const CliResult& cli, const World& w) {
  SweepSetup setup = resolve_sweep(cli, w);
  const std::vector<char> done = finished_points(setup, w);
  const auto& specs = setup.specs;
  VerbBackend& backend = *setup.backend;
  auto context =
      collect_context(w, cli.argv, backend.caps(specs[0]), context_backends(specs[0].backend));
  // Every point's peaks before the first point runs, so the probe runs once per dtype and
  // profile on a quiet machine and the context can list them all.
  PeakCache peaks;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::string why = backend.unsupported_reason(specs[i]);
    if (!done[i] && why.empty()) peaks.get(specs[i], w, backend, why);
  }
  context.peaks = peaks.used();
  SweepResults res;
  if (w.rank == 0) open_results(res, setup, context);

  MPI_Comm dup;
  TPB_MPI_CHECK(MPI_Comm_dup(w.comm, &dup));
  CommHandle outcome_comm(dup);
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
      prog.label = point_label(setup.plan.points[i], setup.plan);
      prog.elapsed_s = now_s() - t_start;
      prog.eta_s = sweep_eta_s(run_s, ran, to_run - ran);
      if (!cli.quiet) std::cerr << format_progress(prog) << std::endl;  // progress: stderr
    }
    std::optional<PointOutcome> outcome;
    std::string why = backend.unsupported_reason(spec);
    const Peaks* pk = why.empty() ? peaks.get(spec, w, backend, why) : nullptr;
    if (!why.empty()) {
      if (w.rank == 0) outcome = PointOutcome{skipped_point(spec, why), {}};
    } else {
      const double t0 = now_s();
      outcome = backend.sweep_point(spec, w, *pk, outcome_comm.get());
      run_s += now_s() - t0;
      ++ran;
    }
    if (w.rank != 0) continue;
    add_result(res, std::move(*outcome));
    const PointRecord& last = res.points.back();
    prog.last_status = point_status_name(last.status);
    prog.last_tokens_per_s = last.status == PointStatus::ok ? last.metrics->tokens_per_s : 0.0;
  }
  if (w.rank == 0)
    std::cout << format_sweep_table(res.points) << "sweep: " << ran << " point(s) run, " << resumed
              << " resumed, " << specs.size() << " in the plan; results: " << specs[0].out
              << "/results.json\n"
              << std::flush;
  return 0;
}

}  // namespace tpb
