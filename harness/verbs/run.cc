// `tpbench run`: one point. Setup is agreed across ranks (one error line, exit 2, nobody
// hangs); the point's record is streamed and printed by rank 0. The backend is opened once,
// through the registry, and asked for everything in which backends differ.
#include <iostream>
#include <memory>
#include <optional>

#include "harness/backends/registry.h"
#include "harness/config/config_dir.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/rerun.h"
#include "harness/record/run_context.h"
#include "harness/report/console_table.h"
#include "harness/report/diagnose.h"
#include "harness/verbs/seam/seam_registry.h"
#include "harness/verbs/verbs.h"

namespace tpb {

int verb_run(const CliResult& cli, const World& w) {
  RunSpec spec;
  std::unique_ptr<VerbBackend> backend;
  agree(w.comm, [&] {
    const nlohmann::json config =
        cli.from.empty() ? cli.config : rerun_config(cli.from, cli.from_point, cli.config);
    spec = resolve_run_spec(config, w.size, config_dir_for(config));
    spec.trace_file = ResultsWriter::run_trace_name();
    if (w.rank == 0) ensure_writable_dir(spec.out);
    backend = builtin_seams().open(device_options(spec, w));
    backend->adopt(spec);
    check_run_dtype(spec, backend->caps(spec));
  });
  return run_on(cli, w, spec, *backend);
}

int run_on(const CliResult& cli, const World& w, const RunSpec& spec, VerbBackend& backend) {
  Peaks peaks;
  agree(w.comm, [&] { peaks = backend.peaks(spec, w); });
  auto context = collect_context(w, cli.argv, backend.caps(spec), context_backends(spec.backend));
  context.peaks = {{dtype_name(spec.dtype), spec.hardware, peaks.flops, peaks.bw, peaks.source}};
  std::optional<ResultsWriter> writer;
  if (w.rank == 0) {
    backend.describe(context, spec.topology, spec.collective, spec.config_dir);
    writer.emplace(spec.out, to_json(context), run_spec_to_json(spec));
    report_archive(*writer);
    if (context.oversubscribed)
      std::cerr << "warning: " << context.ranks_per_core
                << " ranks per core: timings are time-sliced; use this run for function, not "
                   "performance\n";
  }
  const auto outcome = backend.run_point(spec, w, peaks);
  if (w.rank == 0) {
    writer->add_record(*outcome);
    const PointRecord& point = outcome->record;
    const auto verdicts = diagnose_point(point);
    writer->set_section(diagnosis_section(), to_json(verdicts));
    std::cout << format_point_table(point) << "diagnosis (the article's order):\n"
              << format_verdicts(verdicts) << "results: " << spec.out << "/results.json\n"
              << std::flush;
  }
  return 0;
}

}  // namespace tpb
