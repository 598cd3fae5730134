// `tpbench calibrate --from-aiconfigurator SYSTEM ENGINE VERSION [--out DIR]`: runs
// results/aiconfigurator_import.py, found as `report` finds plot.py, which converts the installed
// AIConfigurator's measured kernel tables into DIR/ENGINE/HARDWARE.json; its exit code is ours.
#include <mpi.h>

#include <cstdlib>
#include <optional>

#include "base/errors.h"
#include "harness/config/config_dir.h"
#include "harness/config/config_fields.h"
#include "harness/config/options/calibrate_options.h"
#include "harness/mpi/agreement.h"
#include "harness/report/plots.h"
#include "harness/verbs/verbs.h"

namespace tpb {

namespace {

// TPB_AIC_PYTHON names the python that has aiconfigurator (often a venv's); else python3.
std::string import_python() {
  const char* s = std::getenv("TPB_AIC_PYTHON");
  return s && *s ? s : "python3";
}

// The script, or BadInput naming every place looked in.
std::string import_script() {
  const char* rel = "results/aiconfigurator_import.py";
  if (const std::optional<std::string> s = find_shipped(rel, own_data_roots())) return *s;
  std::string looked;
  for (const std::string& r : own_data_roots()) looked += (looked.empty() ? "" : ", ") + r;
  throw BadInput(std::string("--from-aiconfigurator: ") + rel + " is in none of " + looked);
}

// --out DIR, else the config dir's engine_tables/ (where the model backend reads them). Any
// other option is refused, not ignored: this converts tables and measures nothing.
std::string import_out_dir(const CliResult& cli) {
  if (!cli.from.empty())
    throw BadInput("--from-aiconfigurator: converts AIConfigurator's tables; drop --from or it");
  for (const auto& [key, v] : cli.config.items())
    if (key != "out" && key != "config_dir")
      throw BadInput(
          "--from-aiconfigurator: converts AIConfigurator's tables and measures "
          "nothing; " +
          field_name(key) + " does not apply (drop it)");
  const std::string out = ConfigFields(cli.config).str(opt::calibrate_out);
  return out.empty() ? config_dir_for(cli.config) + "/engine_tables" : out;
}

}  // namespace

int calibrate_from_aiconfigurator(const CliResult& cli, const World& w) {
  std::vector<std::string> args;
  agree(w.comm, [&] {
    const std::string out = import_out_dir(cli);
    args = {import_python(), import_script()};
    args.insert(args.end(), cli.from_aiconfigurator.begin(), cli.from_aiconfigurator.end());
    args.insert(args.end(), {"--out", out});
  });
  // One process converts; every rank returns its exit code.
  int rc = w.rank == 0 ? run_child(args, false) : 0;
  MPI_Bcast(&rc, 1, MPI_INT, 0, w.comm);
  agree(w.comm, [&] {
    if (rc < 0)
      throw BadInput("TPB_AIC_PYTHON: '" + args[0] +
                     "' did not start or was killed (set TPB_AIC_PYTHON to the python that "
                     "has aiconfigurator: pip install aiconfigurator)");
  });
  return rc;
}

}  // namespace tpb
