// `tpbench info`: what this binary can do, as JSON: the versions record, the NCCL version where
// it is linked, and the collectives it can run; `--version` prints the same in lines.
#include <iostream>

#include "harness/backends/collective_factory.h"
#include "harness/backends/registry.h"
#include "harness/record/json/results_json.h"
#include "harness/record/run_context.h"
#include "harness/verbs/verbs.h"

namespace tpb {

std::string version_line() {
  const VersionsRecord v = versions_record(built_backends());
  std::string backends, collectives;
  for (const std::string& b : v.backends) backends += " " + b;
  for (const std::string& c : built_collectives()) collectives += " " + c;
  std::string line = "tpbench " + v.tpbench + " (git " + v.git_sha + ")\nbackends:" + backends +
                     "\ncollectives:" + collectives + "\nmpi: " + v.mpi + "\nblas: " + v.blas;
  if (const std::string nccl = linked_nccl_version(); !nccl.empty()) line += "\nnccl: " + nccl;
  return line;
}

int verb_info(const CliResult&, const World& w) {
  if (w.rank != 0) return 0;
  nlohmann::ordered_json j = to_json(versions_record(built_backends()));
  // Only where NCCL is linked, as nccl in `collectives` (a stand-in is not a transport): a
  // launcher's `grep '"nccl"'` then still means what it did.
  if (const std::string nccl = linked_nccl_version(); !nccl.empty()) j["nccl"] = nccl;
  j["collectives"] = built_collectives();
  std::cout << j.dump(2) << std::endl;
  return 0;
}

}  // namespace tpb
