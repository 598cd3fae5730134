// `tpbench serve`: one serving point per load (--concurrency or --rate, each a list), on one set
// of peaks. Every point is appended to points.jsonl (fsynced) with its step and request logs,
// and results.json is rewritten, so a killed run keeps every finished point; the curve over the
// loads is written once the last point is in.
#include <algorithm>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>

#include "base/host_clock.h"
#include "base/mpi_check.h"
#include "harness/backends/registry.h"
#include "harness/config/config_dir.h"
#include "harness/config/serve_spec.h"
#include "harness/drive/serve/serve_point.h"
#include "harness/drive/serve/serve_resume.h"
#include "harness/drive/serve/serve_runner.h"
#include "harness/drive/sweep_resume.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/echo_json.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/json/vllm_result_json.h"
#include "harness/record/run_context.h"
#include "harness/report/serve/serve_table.h"
#include "harness/report/serve/vllm_summary.h"
#include "harness/serve/curve.h"
#include "harness/verbs/seam/seam_registry.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

CurveRecord curve_record(const Curve& c, const std::string& slo) {
  CurveRecord r;
  r.x = c.x;
  for (const CurveInput& p : c.points)
    r.points.push_back({p.x, p.total_tokens_per_s, p.itl_p95_s, p.ttft_p95_s, p.status, p.cost});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.free_region = {c.free_upto.value_or(nan), c.free_threshold,
                   "loads, in increasing order, whose p95 ITL is within the threshold of the "
                   "lightest load's"};
  r.knee = {c.knee_x.value_or(nan), c.knee_method};
  if (c.wall_x) r.memory_wall = MemoryWallRecord{*c.wall_x, c.wall_reason};
  if (c.slo) {
    const SloCapacity& s = *c.slo;
    r.slo_capacity = SloCapacityRecord{
        slo,
        s.target,
        s.x.value_or(nan),
        s.x ? s.attainment : nan,
        s.x ? s.goodput_rps : nan,
        s.x ? s.goodput_per_gpu : nan,
        s.next_x.value_or(nan),
        s.next_x ? s.next_attainment : nan,
        s.x ? s.cost : std::nullopt,
        "the largest load, in increasing order up to the first that misses, whose requests meet "
        "every SLO at least `target` of the time (DistServe's goodput); next_x: the first load "
        "that missed (null: none did), x null when even the lightest missed"};
  }
  return r;
}

void print_progress(std::size_t done, std::size_t total, double started) {
  const double spent = now_s() - started;
  const double eta =
      done ? spent / static_cast<double>(done) * static_cast<double>(total - done) : 0;
  std::cerr << "serve: " << done << "/" << total << " points, " << static_cast<int>(spent)
            << " s, eta " << static_cast<int>(eta) << " s\n";
}

// What every rank resolves, agreed, before the first point; the ledger lives on rank 0.
struct ServeSetup {
  ServeSpec spec;
  std::unique_ptr<VerbBackend> backend;
  ResumeLedger ledger;
  std::vector<char> done;  // per load: finished in the resumed run
};

ServeSetup resolve_serve(const CliResult& cli, const World& w) {
  ServeSetup s;
  agree(w.comm, [&] {
    s.spec = resolve_serve_spec(cli.config, w.size, config_dir_for(cli.config));
    const RunSpec& r = s.spec.run;
    if (w.rank == 0) ensure_writable_dir(r.out);
    if (w.rank == 0 && s.spec.vllm.on && !s.spec.vllm.dir.empty()) {
      try {
        ensure_writable_dir(s.spec.vllm.dir);
      } catch (const BadInput&) {
        throw BadInput("--result-dir: cannot write to '" + s.spec.vllm.dir + "'");
      }
    }
    if (w.rank == 0 && !s.spec.resume.empty()) {
      check_same_serve_config(s.spec.resume, serve_config_json(s.spec));
      s.ledger = read_ledger(s.spec.resume);
    }
    s.backend = builtin_seams().open(device_options(r, w));
    s.backend->adopt(s.spec.run);
    resolve_serve_price(s.spec);  // after adopt: a GPU may take its own profile there
    check_run_dtype(r, s.backend->caps(r));
  });
  s.done.assign(s.spec.loads.size(), 0);
  if (w.rank == 0) s.done = finished_loads(s.spec, s.ledger);
  TPB_MPI_CHECK(MPI_Bcast(s.done.data(), static_cast<int>(s.done.size()), MPI_CHAR, 0, w.comm));
  return s;
}

// Rank 0: the writer, with a resumed run's finished points (and their logs) kept as they were.
ResultsWriter open_serve_results(const ServeSetup& s, RunContextRecord context,
                                 std::vector<CurveInput>& curve) {
  const ServeSpec& spec = s.spec;
  s.backend->describe(context, spec.run.topology, spec.run.collective, spec.run.config_dir);
  const bool resumed = !spec.resume.empty();
  if (resumed) {
    rewrite_ledger(spec.run.out, s.ledger);
    trim_serve_logs(spec.run.out, s.done);
  }
  ResultsWriter w(spec.run.out, to_json(context), serve_config_json(spec),
                  resumed ? Existing::keep : Existing::archive);
  report_archive(w);
  if (spec.loads.size() > 1) w.prepare_sweep_traces();
  nlohmann::ordered_json old = nlohmann::ordered_json::array();
  for (const PointRecord& p : s.ledger.points) {
    old.push_back(to_json(p));
    curve.push_back(curve_input(p));
  }
  w.set_section(points_section(), old);
  if (resumed)
    std::cout << "resume: " << s.ledger.points.size() << " finished point(s) kept, "
              << s.ledger.torn << " torn line(s) dropped\n";
  return w;
}

// vLLM's current_dt: one per run, so a run's files share it.
std::string vllm_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// --save-result: vLLM's file for point i; --result-filename with several loads gets -point-K
// before its extension, so one load's file does not overwrite another's.
void save_vllm_result(const ServeSpec& spec, const PointRecord& p, std::size_t i,
                      const std::string& date) {
  const VllmSaveSpec& v = spec.vllm;
  std::string name = v.filename.empty() ? vllm_result_filename(p, date) : v.filename;
  if (!v.filename.empty() && spec.loads.size() > 1) {
    const auto dot = name.rfind('.');
    const std::string tag = "-point-" + std::to_string(i);
    name = dot == std::string::npos ? name + tag : name.substr(0, dot) + tag + name.substr(dot);
  }
  const std::string path = (v.dir.empty() ? spec.run.out : v.dir) + "/" + name;
  write_file_atomic(path, vllm_result_json(p, date, static_cast<int64_t>(i)).dump() + "\n");
  std::cout << "vllm result: " << path << "\n";
}

// Rank 0: one finished point into the folder (logs first, then the ledger line) and the table.
void record_serve_point(ResultsWriter& w, const ServePoint& p, std::vector<CurveInput>& curve) {
  std::vector<nlohmann::ordered_json> steps, requests;
  for (const auto& s : p.steps) steps.push_back(to_json(s));
  for (const auto& r : p.requests) requests.push_back(to_json(r));
  w.append_lines("steps.jsonl", steps);
  w.append_lines("requests.jsonl", requests);
  w.add_record(PointOutcome{p.record, p.trace});
  curve.push_back(p.curve);
  std::cout << format_serve_row(p.record) << format_vllm_summary(p.record) << std::flush;
}

}  // namespace

int verb_serve(const CliResult& cli, const World& w) {
  ServeSetup s = resolve_serve(cli, w);
  const ServeSpec& spec = s.spec;
  VerbBackend& backend = *s.backend;
  Peaks peaks;
  agree(w.comm, [&] { peaks = backend.peaks(spec.run, w); });
  const DeviceCaps caps = backend.serve_caps(spec);
  auto context = collect_context(w, cli.argv, caps, context_backends(spec.run.backend));
  context.peaks = {
      {dtype_name(spec.run.dtype), spec.run.hardware, peaks.flops, peaks.bw, peaks.source}};
  std::vector<CurveInput> curve;
  std::optional<ResultsWriter> writer;
  if (w.rank == 0) {
    writer.emplace(open_serve_results(s, context, curve));
    std::cout << format_serve_header(spec.axis) << std::flush;
  }
  const double started = now_s();
  const std::string date = vllm_date();
  for (std::size_t i = 0; i < spec.loads.size(); ++i) {
    if (s.done[i]) continue;
    ServeResult res = backend.serve_load(spec, i, w, peaks);
    if (w.rank != 0) continue;
    // One trace per point: trace.json for a single load, traces/point-K.json for several.
    const std::string trace = spec.loads.size() > 1 ? ResultsWriter::sweep_trace_name(i)
                                                    : ResultsWriter::run_trace_name();
    const ServePoint p =
        res.oom ? oom_serve_point(spec, i, std::move(*res.oom))
                : build_serve_point(spec, i, *res.run, peaks, caps, static_cast<int64_t>(i), trace);
    record_serve_point(*writer, p, curve);
    if (!p.trace_empty.empty())
      std::cerr << "warning: point " << i << "'s trace (" << trace
                << ") holds no step: " << p.trace_empty << "\n";
    if (spec.vllm.on) save_vllm_result(spec, p.record, i, date);
    if (!cli.quiet) print_progress(i + 1, spec.loads.size(), started);
  }
  if (w.rank == 0) {
    std::sort(curve.begin(), curve.end(),
              [](const CurveInput& a, const CurveInput& b) { return a.x < b.x; });
    const CurveRecord c = curve_record(make_curve(spec.axis, curve), spec.slo.text());
    writer->set_section(curve_section(), to_json(c));
    std::cout << format_curve_summary(c) << "results: " << spec.run.out << "/results.json\n"
              << std::flush;
  }
  return 0;
}

}  // namespace tpb
