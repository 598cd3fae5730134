// The constants of NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel), one table per
// NCCL release that the model backend can speak for. A topology preset names its release
// ("nccl"), or --topology PRESET:nccl-VERSION picks another; 2.20.3 is the default, the
// release every figure here was first checked against. The parts of the model these tables
// leave alone (the tree correction table, the ring's Simple plateau, the NVLS algbw) are the
// same in both releases.
#pragma once
#include <optional>
#include <string>

namespace tpb {

// The GPU generation where NCCL's constants depend on it (the one-node LL ceiling).
enum class GpuArch { ampere, hopper, blackwell };

struct NcclTuning {
  const char* version;
  // Microseconds. base_lat[algorithm][protocol]; hw_lat[hw][algorithm][protocol]: algorithm
  // ring, tree, NVLS; protocol LL, LL128, Simple; hw NVLink, PCI, network.
  double base_lat[3][3];
  double hw_lat[3][3][3];
  // LL's bandwidth ceiling on one node, GB/s, by GPU generation (llMaxBws[compCapIndex][0]; a
  // release without a generation's row gives it the row NCCL indexes for it).
  double ll_max_one_node[3];
  // Across nodes (x86 Intel row: 2 nodes, more).
  double ll_max_two_nodes, ll_max_more_nodes;
  // The ring LL bus-bandwidth factor: all-reduce, reduce and every multi-node ring; the others.
  double ring_ll_factor_ar, ring_ll_factor_other;
  // The ring LL128 factor with one rank per node (ppn < 2); with more.
  double ring_ll128_factor_ppn1, ring_ll128_factor;
  // An all-reduce ring's inter-node steps: 2 x nodes (2.20) or 2 x (nodes - 1) (2.27).
  bool inter_steps_nodes_minus_one;
  // With one rank per node, the network latency of every algorithm is the tree's (2.27).
  bool ppn1_takes_tree_net_latency;
};

// The table of one release: "2.20.3" or "2.27.3". Throws BadInput naming `option` otherwise.
const NcclTuning& nccl_tuning(const std::string& version, const std::string& option);
const NcclTuning& default_nccl_tuning();

// "ampere" | "hopper" | "blackwell"; nullopt for anything else.
std::optional<GpuArch> parse_gpu_arch(const std::string& text);

}  // namespace tpb
