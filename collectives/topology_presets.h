// Topology presets (--topology PRESET[:algo=A][:proto=P]): named interconnect choices mapped
// to the real knobs, read from configs/topologies/PRESET.json. Two kinds of knob:
//  - launcher env (Open MPI's OMPI_MCA_*): read at MPI_Init, so it must come from mpirun
//    (--mca or -x). tpbench only checks it and, when it is missing, says which mpirun line to
//    use; launch/mpirun_topology.sh sets it.
//  - process env (NCCL_*): read when a communicator is created, so tpbench sets it itself,
//    before any communicator exists.
// "default" is the built-in no-op preset: nothing is checked or set.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tpb {

struct TopologyChoice {
  std::string text;    // as given: "nvlink:algo=ring"
  std::string preset;  // "nvlink"
  std::string family;  // the collective it configures: "mpi" | "nccl"
  std::string description;
  std::map<std::string, std::string> launcher_env;  // must already hold before MPI_Init
  std::map<std::string, std::string> process_env;   // tpbench sets before communicators
  // A preset for runs across hosts ("hosts": {"min": N, "link_rate": R}): the ranks must span
  // at least `min_hosts` hosts, and with `link_rate` the launcher's links file
  // (TPB_LINKS_FILE) must show a host link shaped to that rate.
  int min_hosts = 0;
  std::string link_rate;
};

// Parses and loads one choice for `family`. `algo`/`proto` modifiers are NCCL_ALGO/NCCL_PROTO
// and only exist for nccl. Throws BadInput naming --topology.
TopologyChoice resolve_topology(const std::string& text, const std::string& family,
                                const std::string& config_dir);

// Empty when this process's environment holds every launcher knob; otherwise the knobs that
// differ, as "KEY=have (wants VALUE)" items.
std::string launcher_env_mismatch(const TopologyChoice& c);

// The mpirun line that runs `argv` with `c`'s launcher knobs: "mpirun --mca pml ob1 --mca btl
// self,tcp -np 2 tpbench run ...".
std::string mpirun_line(const TopologyChoice& c, int np, const std::vector<std::string>& argv);

// Resolves every choice a launch asks for, checks that they can share one process (a sweep
// over presets with different env needs one launch per preset), checks the launcher env and
// sets the process env. Throws BadInput with the mpirun line to use. Identical on every rank.
std::vector<TopologyChoice> prepare_topologies(const std::vector<std::string>& texts,
                                               const std::string& family,
                                               const std::string& config_dir, int np,
                                               const std::vector<std::string>& argv, int hosts = 1);

// What the results' context says about the interconnect: the choice and its knobs, the
// environment actually seen and, for a "default" run, the preset whose launcher knobs match
// that environment (a run launched by hand with a preset's flags is still that preset's run).
struct TopologyContext {
  TopologyChoice choice;
  std::map<std::string, std::string> env_seen;
  std::optional<std::string> detected_preset;
  std::optional<std::string> gpu_topology_matrix;  // `nvidia-smi topo -m`, where it runs
};

TopologyContext topology_context(const std::string& text, const std::string& family,
                                 const std::string& config_dir);

}  // namespace tpb
