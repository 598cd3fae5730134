// The CLI verbs. Each takes the parsed command line and the world, returns an exit code, and
// throws tpb::Error for failures main() reports.
#pragma once
#include "harness/config/cli.h"
#include "harness/config/collectives_spec.h"
#include "harness/config/run_spec.h"
#include "harness/mpi/world.h"
#include "harness/record/coll_point_record.h"
#include "harness/verbs/seam/verb_backend.h"

namespace tpb {

int verb_run(const CliResult& cli, const World& w);
int verb_sweep(const CliResult& cli, const World& w);
int verb_collectives(const CliResult& cli, const World& w);
// Rank 0, after the sweep: nccl-tests' -J file when --output-file is given (collectives.cc).
void write_nccl_tests_file(const CollectivesSpec& s, const CliResult& cli, int ranks,
                           const std::string& start_time,
                           const std::vector<CollPointRecord>& points);
// verb_run after validation, on the backend the registry opened for `spec` (run.cc); a test
// runs its own backend through it.
int run_on(const CliResult& cli, const World& w, const RunSpec& spec, VerbBackend& backend);
int verb_compare(const CliResult& cli, const World& w);
int verb_diagnose(const CliResult& cli, const World& w);
int verb_info(const CliResult& cli, const World& w);
// `tpbench --version`: version and git hash, the backends and collectives built, MPI, BLAS.
std::string version_line();
int verb_report(const CliResult& cli, const World& w);
int verb_calibrate(const CliResult& cli, const World& w);
// calibrate --from-aiconfigurator: AIConfigurator's tables converted by its script
// (calibrate_aiconfigurator.cc).
int calibrate_from_aiconfigurator(const CliResult& cli, const World& w);
int verb_serve(const CliResult& cli, const World& w);
int verb_export(const CliResult& cli, const World& w);
int verb_whatif(const CliResult& cli, const World& w);

}  // namespace tpb
