// tpbench entry point: MPI up, one verb, every failure caught here once. Setup failures are
// agreed by all ranks (each exits with the same code, rank 0 prints one line); a failure in
// the middle of a point (a hung peer, a crash) aborts the whole job so no rank hangs.
#include <mpi.h>

#include <cstdlib>
#include <iostream>

#include "harness/agreement.h"
#include "harness/cli.h"
#include "harness/errors.h"
#include "harness/verbs.h"
#include "harness/world.h"

namespace tpb {

// configs/ of the source tree, or $TPB_CONFIG_DIR.
std::string default_config_dir() {
  if (const char* d = std::getenv("TPB_CONFIG_DIR")) return d;
  return TPB_SOURCE_DIR "/configs";
}

}  // namespace tpb

namespace {

int dispatch(const tpb::CliResult& cli, const tpb::World& w) {
  if (cli.verb == "run") return tpb::verb_run(cli, w);
  if (cli.verb == "info") return tpb::verb_info(cli, w);
  throw tpb::BadInput("unknown verb '" + cli.verb + "'");
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    tpb::CliResult cli;
    // Parsing is deterministic: every rank reaches the same verdict without talking.
    try {
      cli = tpb::parse_cli(argc, argv);
    } catch (const tpb::Error& e) {
      throw tpb::AgreedError(e.code(), e.what());
    }
    if (!cli.help) code = dispatch(cli, tpb::describe_world(MPI_COMM_WORLD));
  } catch (const tpb::AgreedError& e) {
    code = static_cast<int>(e.code());
    if (rank == 0) std::cerr << "tpbench: error: " << e.what() << std::endl;
  } catch (const tpb::Error& e) {
    std::cerr << "tpbench: error on rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(e.code()));
  } catch (const std::exception& e) {
    std::cerr << "tpbench: internal error on rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(tpb::ExitCode::internal));
  }
  MPI_Finalize();
  return code;
}
