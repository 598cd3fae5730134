// `tpbench run`: one point. Setup is agreed across ranks (one error line, exit 2, nobody
// hangs); the point's record is streamed and printed by rank 0.
#include <iostream>
#include <memory>
#include <optional>

#include "collectives/topology_presets.h"
#include "harness/backends/registry.h"
#include "harness/config/config_dir.h"
#include "harness/config/run_spec.h"
#include "harness/drive/peak_resolver.h"
#include "harness/drive/point_runner.h"
#include "harness/mpi/agreement.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/rerun.h"
#include "harness/record/run_context.h"
#include "harness/report/console_table.h"
#include "harness/report/diagnose.h"
#include "harness/verbs/verbs.h"

namespace tpb {

int verb_run(const CliResult& cli, const World& w) {
  RunSpec spec;
  std::unique_ptr<Device> dev;
  agree(w.comm, [&] {
    const nlohmann::json config =
        cli.from.empty() ? cli.config : rerun_config(cli.from, cli.from_point, cli.config);
    spec = resolve_run_spec(config, w.size, config_dir_for(config));
    spec.trace_file = ResultsWriter::run_trace_name();
    if (w.rank == 0) ensure_writable_dir(spec.out);
    if (spec.backend == "model") return;  // virtual ranks: no device
    dev = make_device(device_options(spec, w));
    const DeviceCaps& caps = dev->caps();
    spec.hardware_note = adopt_device_hardware(spec, caps);
    if (spec.dtype != DType::fp32 && caps.dtypes == std::vector<DType>{DType::fp32})
      throw BadInput("--dtype: the " + caps.backend + " backend supports fp32 only (got " +
                     dtype_name(spec.dtype) + ")");
  });
  if (spec.backend == "model") return verb_model_run(cli, w, spec);
  Peaks peaks;
  agree(w.comm, [&] { peaks = resolve_peaks(spec, w, *dev); });
  auto context = collect_context(w, cli.argv, dev->caps(), built_backends());
  context.peaks = {{dtype_name(spec.dtype), spec.hardware, peaks.flops, peaks.bw, peaks.source}};
  // The --topology preset and its knobs (main.cc checked them).
  if (w.rank == 0)
    context.topology = topology_context(spec.topology, spec.collective, spec.config_dir);
  std::optional<ResultsWriter> writer;
  if (w.rank == 0) {
    writer.emplace(spec.out, to_json(context), run_spec_to_json(spec));
    report_archive(*writer);
    if (context.oversubscribed)
      std::cerr << "warning: " << context.ranks_per_core
                << " ranks per core: timings are time-sliced; use this run for function, not "
                   "performance\n";
  }
  const auto outcome = run_point(spec, w, *dev, peaks);
  if (w.rank == 0) {
    writer->add_record(*outcome);
    const PointRecord& point = outcome->record;
    const auto verdicts = diagnose_point(point);
    writer->set_section("diagnosis", to_json(verdicts));
    std::cout << format_point_table(point) << "diagnosis (the article's order):\n"
              << format_verdicts(verdicts) << "results: " << spec.out << "/results.json\n"
              << std::flush;
  }
  return 0;
}

}  // namespace tpb
