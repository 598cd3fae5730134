// `tpbench run --backend model`: one point on virtual ranks in this process, written, diagnosed
// and printed exactly as a measured point is.
#include <iostream>

#include "collectives/model/fabric.h"
#include "harness/backends/registry.h"
#include "harness/drive/model/model_point.h"
#include "harness/record/json/results_json.h"
#include "harness/record/json/results_writer.h"
#include "harness/record/run_context.h"
#include "harness/report/console_table.h"
#include "harness/report/diagnose.h"
#include "harness/verbs/verbs.h"

namespace tpb {

int verb_model_run(const CliResult& cli, const World& w, RunSpec spec) {
  const Fabric fabric = load_fabric(spec.topology, spec.config_dir);
  const Peaks peaks = model_peaks(spec);
  std::vector<std::string> built = built_backends();
  built.push_back("model");
  auto context = collect_context(w, cli.argv, model_device_caps(spec, fabric), built);
  context.peaks = {{dtype_name(spec.dtype), spec.hardware, peaks.flops, peaks.bw, peaks.source}};
  context.fabric = nlohmann::ordered_json{{fabric.name, fabric.preset}};
  ResultsWriter writer(spec.out, to_json(context), run_spec_to_json(spec));
  report_archive(writer);
  const PointOutcome outcome = run_model_point(spec, peaks, fabric);
  writer.add_record(outcome);
  const auto verdicts = diagnose_point(outcome.record);
  writer.set_section("diagnosis", to_json(verdicts));
  std::cout << format_point_table(outcome.record) << "diagnosis (the article's order):\n"
            << format_verdicts(verdicts) << "results: " << spec.out << "/results.json\n"
            << std::flush;
  return 0;
}

}  // namespace tpb
