// `tpbench info`: what this binary can do, as JSON: the versions record, the NCCL version where
// it is linked, the collectives it can run and the attention libraries (what `--attention
// cudnn` will find, known before a run and without a GPU); `--version` prints the same in lines.
#include <iostream>

#include "harness/backends/collective_factory.h"
#include "harness/backends/registry.h"
#include "harness/record/json/results_json.h"
#include "harness/record/run_context.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

AttentionLibrariesRecord attention_record() {
  const AttentionLibraries a = attention_libraries();
  return {a.native, a.cudnn_compiled, a.cudnn_frontend,
          a.cudnn_runtime.empty() ? "not found" : a.cudnn_runtime, a.cudnn_note};
}

}  // namespace

std::string version_line() {
  const VersionsRecord v = versions_record(built_backends());
  std::string backends, collectives;
  for (const std::string& b : v.backends) backends += " " + b;
  for (const std::string& c : built_collectives()) collectives += " " + c;
  std::string line = "tpbench " + v.tpbench + " (git " + v.git_sha + ")\nbackends:" + backends +
                     "\ncollectives:" + collectives + "\nmpi: " + v.mpi + "\nblas: " + v.blas;
  if (const std::string nccl = linked_nccl_version(); !nccl.empty()) line += "\nnccl: " + nccl;
  const AttentionLibrariesRecord a = attention_record();
  if (a.native)
    line += "\nattention: native; cudnn " +
            (a.cudnn_compiled ? "compiled in (cudnn-frontend " + a.cudnn_frontend_version + ")"
                              : std::string("not compiled in")) +
            ", cuDNN at run time: " + a.cudnn_runtime_version;
  return line;
}

int verb_info(const CliResult&, const World& w) {
  if (w.rank != 0) return 0;
  nlohmann::ordered_json j = to_json(versions_record(built_backends()));
  // Only where NCCL is linked, as nccl in `collectives` (a stand-in is not a transport): a
  // launcher's `grep '"nccl"'` then still means what it did.
  if (const std::string nccl = linked_nccl_version(); !nccl.empty()) j["nccl"] = nccl;
  j["collectives"] = built_collectives();
  j["attention"] = to_json(attention_record());
  std::cout << j.dump(2) << std::endl;
  return 0;
}

}  // namespace tpb
