// `tpbench info`: what this binary can do, as JSON.
#include <iostream>

#include "harness/backends/collective_factory.h"
#include "harness/backends/registry.h"
#include "harness/record/json/results_json.h"
#include "harness/record/run_context.h"
#include "harness/verbs/verbs.h"

namespace tpb {

int verb_info(const CliResult&, const World& w) {
  if (w.rank != 0) return 0;
  nlohmann::ordered_json j = to_json(versions_record(built_backends()));
  j["collectives"] = built_collectives();
  std::cout << j.dump(2) << std::endl;
  return 0;
}

}  // namespace tpb
