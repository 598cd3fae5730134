// tpbench entry point: MPI up, one verb, every failure caught here once. Setup failures are
// agreed by all ranks (each exits with the same code, rank 0 prints one line); a failure in
// the middle of a point (a hung peer, a crash) aborts the whole job so no rank hangs.
#include <mpi.h>

#include <cstdlib>
#include <iostream>
#include <optional>

#include "base/errors.h"
#include "collectives/topology_presets.h"
#include "harness/backends/device_setup.h"
#include "harness/config/axis.h"
#include "harness/config/backend_traits.h"
#include "harness/config/cli.h"
#include "harness/config/config_dir.h"
#include "harness/mpi/agreement.h"
#include "harness/mpi/thread_need.h"
#include "harness/mpi/world.h"
#include "harness/record/rerun.h"
#include "harness/verbs/verbs.h"
#include "layers/cpu/blas_core.h"

namespace {

std::string config_text(const nlohmann::json& c, const char* key, const std::string& def) {
  return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : def;
}

// --topology presets, before any communicator exists: NCCL reads its knobs when a
// communicator is created, so they are set here; MPI fixed its transport at MPI_Init, so its
// knobs can only be checked, and a mismatch ends the launch with the mpirun line to use.
void prepare_topology(const tpb::CliResult& cli, const tpb::World& w) {
  const auto& c = cli.config;
  std::vector<std::string> texts;
  if (c.contains("topology")) texts = tpb::axis_values(c["topology"], "--topology", false);
  const std::string backend = config_text(c, "backend", "cpu");
  const std::string family = config_text(c, "collective", tpb::default_collective(backend));
  // A modelled fabric sets no knob of a real run; the model backend reads it itself.
  if (tpb::virtual_collective(family)) return;
  tpb::prepare_topologies(texts, family, tpb::config_dir_for(c), w.size, cli.argv, w.nodes);
}

int dispatch(const tpb::CliResult& cli, const tpb::World& w) {
  if (cli.verb == "run" || cli.verb == "sweep" || cli.verb == "collectives" || cli.verb == "serve")
    tpb::agree(w.comm, [&] { prepare_topology(cli, w); });
  if (cli.verb == "run") return tpb::verb_run(cli, w);
  if (cli.verb == "sweep") return tpb::verb_sweep(cli, w);
  if (cli.verb == "collectives") return tpb::verb_collectives(cli, w);
  if (cli.verb == "compare") return tpb::verb_compare(cli, w);
  if (cli.verb == "diagnose") return tpb::verb_diagnose(cli, w);
  if (cli.verb == "info") return tpb::verb_info(cli, w);
  if (cli.verb == "report") return tpb::verb_report(cli, w);
  if (cli.verb == "calibrate") return tpb::verb_calibrate(cli, w);
  if (cli.verb == "serve") return tpb::verb_serve(cli, w);
  if (cli.verb == "export") return tpb::verb_export(cli, w);
  if (cli.verb == "whatif") return tpb::verb_whatif(cli, w);
  throw tpb::BadInput("unknown verb '" + cli.verb + "'");
}

// The config the verb will run: a rerun's is its recorded point's. Input that cannot be read
// is nullopt here: the verb refuses it later, as an agreed error.
std::optional<nlohmann::json> effective_config(const tpb::CliResult& cli) {
  if (cli.help) return std::nullopt;
  try {
    return cli.from.empty() ? cli.config : tpb::rerun_config(cli.from, cli.from_point, cli.config);
  } catch (const std::exception&) {  // a tpb::Error, or JSON the verb will refuse
    return std::nullopt;
  }
}

// SINGLE unless a helper thread may start (harness/mpi/thread_need.h); a rerun is judged by
// its recorded point. Input that cannot be read asks for FUNNELED: the verb refuses it later.
int thread_level_for(const tpb::CliResult& cli, const std::optional<nlohmann::json>& config) {
  if (cli.help) return MPI_THREAD_SINGLE;
  if (!config) return MPI_THREAD_FUNNELED;
  try {
    return tpb::needs_helper_threads(
               *config, {tpb::helper_thread_backends(), tpb::helper_thread_collectives()})
               ? MPI_THREAD_FUNNELED
               : MPI_THREAD_SINGLE;
  } catch (const std::exception&) {
    return MPI_THREAD_FUNNELED;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before MPI_Init: OpenBLAS fixed its kernels in its constructor, so a better core needs a
  // fresh image of this process (same PID, so mpirun still knows it). See blas_core.h.
  tpb::reexec_with_blas_core(argv);
  // Parsed before MPI_Init, which needs the thread level the command implies. Parsing is
  // deterministic: every rank reaches the same verdict without talking, and a refusal is
  // reported once MPI is up, as every agreed error is.
  tpb::CliResult cli;
  std::optional<tpb::AgreedError> refused;
  try {
    cli = tpb::parse_cli(argc, argv);
  } catch (const tpb::Error& e) {
    refused.emplace(e.code(), e.what());
  }
  const std::optional<nlohmann::json> config = refused ? std::nullopt : effective_config(cli);
  const tpb::DeviceIntent intent =
      config ? tpb::device_intent(cli.verb, *config) : tpb::DeviceIntent{};
  // The GPU is made current before MPI_Init: a CUDA-aware MPI makes its context on the
  // current device there, which would be GPU 0 on every rank.
  // A GPU that cannot be used fails one rank, not all: it is agreed once MPI is up.
  tpb::DevicePick pick;
  std::optional<tpb::Error> pick_failed;
  try {
    if (!refused) pick = tpb::pick_device_before_mpi(intent, tpb::launcher_env());
  } catch (const tpb::Error& e) {
    pick_failed.emplace(e);
  }
  // Only the main thread ever calls MPI. SINGLE spares the all-reduces Open MPI's locking
  // (tests/bench/allreduce_side_by_side.sh); FUNNELED when a thread beside it may run.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, refused ? MPI_THREAD_SINGLE : thread_level_for(cli, config),
                  &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = 0;
  try {
    if (refused) throw *refused;
    if (!cli.help) {
      tpb::World w = tpb::describe_world(MPI_COMM_WORLD);
      w.device = pick;
      tpb::agree(w.comm, [&] {
        if (pick_failed) throw *pick_failed;
        tpb::settle_device(intent, w);
      });
      tpb::agree(w.comm, [&] { tpb::judge_gpu_sharing(intent, w); });
      code = dispatch(cli, w);
    }
    if (cli.help && rank == 0)  // once, not once per rank under mpirun
      std::cout << (cli.version ? tpb::version_line() + "\n" : cli.help_text) << std::flush;
  } catch (const tpb::AgreedError& e) {
    code = static_cast<int>(e.code());
    if (rank == 0) std::cerr << "tpbench: error: " << e.what() << std::endl;
  } catch (const tpb::Error& e) {
    std::cerr << tpb::rank_error_line(rank, e.what()) << std::endl;
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(e.code()));
  } catch (const std::exception& e) {
    std::cerr << "tpbench: internal error on rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, static_cast<int>(tpb::ExitCode::internal));
  }
  MPI_Finalize();
  return code;
}
