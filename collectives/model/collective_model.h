// The collective model of --backend model: NCCL's own tuning structure (src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime): for each algorithm and protocol a latency (a
// base plus a per-step hardware latency, intra- and inter-node steps counted apart) and a bus
// bandwidth turned into an algorithm bandwidth; time = latency + bytes / algbw, and `nccl`
// takes the fastest, as NCCL does. Beside it the serving engines' custom all-reduce
// (custom_allreduce.h): `auto` takes it where vLLM would, NCCL's choice elsewhere. Where this
// model departs from NCCL's, the .cc says so.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/kinds/coll_kind.h"
#include "collectives/model/fabric.h"

namespace tpb {

// `oneshot`, `twoshot`: the custom all-reduce's kernels. `nccl`: NCCL's own choice among ring,
// tree and nvls. `automatic` ("auto"): the engine's choice, the custom all-reduce where vLLM
// takes it (custom_allreduce.h engine_takes_custom), NCCL's choice otherwise. `measured`: a
// fabric's measured curve answered (Fabric::measured), no algorithm was chosen.
enum class ModelAlgo { ring, tree, nvls, oneshot, twoshot, nccl, automatic, measured };
// p2p: the custom all-reduce's direct reads of peers' buffers (no NCCL protocol).
enum class ModelProto { ll, ll128, simple, p2p };

// "ring" | "tree" | "nvls" | "oneshot" | "twoshot" | "nccl" | "auto". Throws BadInput naming
// `option`.
ModelAlgo parse_model_algo(const std::string& text, const std::string& option);
const char* model_algo_name(ModelAlgo a);
const char* model_proto_name(ModelProto p);

// A group of `ranks` spread evenly over `nodes` (ranks % nodes == 0).
struct ModelGroup {
  int ranks = 1, nodes = 1;
};

// A group of `ranks` placed contiguously on `f`'s nodes (as --tp-groups contiguous places a TP
// group): one node where it fits, else whole nodes of f.gpus_per_node; nullopt where the last
// node would be part-filled (8 + 4), which the model's even split over nodes cannot price.
std::optional<ModelGroup> contiguous_group(const Fabric& f, int ranks);

struct ModelTime {
  ModelAlgo algo = ModelAlgo::ring;
  ModelProto proto = ModelProto::simple;
  double latency_s = 0;
  double algbw_GBps = 0;  // what bytes / (time - latency) is
  double time_s = 0;      // latency_s + bytes / algbw
};

// A fabric with a measured curve answers from it: all-reduce only, over the group size it was
// measured at, --algo auto (BadInput naming the field otherwise).
// Throws BadInput naming --algo when the fabric or the kind has no such algorithm (nvls
// without NVLink SHARP, or across nodes; oneshot or twoshot without the preset's
// custom_allreduce, across nodes or on a group vLLM's kernels do not cover; an algorithm other
// than ring for a kind other than all_reduce), and
// naming --topology when the group spans nodes on a single-node fabric.
ModelTime model_collective(const Fabric& f, CollKind kind, int64_t bytes, ModelGroup g,
                           ModelAlgo algo);

// One row of NCCL's tuning table as the model holds it: an algorithm and protocol NCCL could
// run for the group, its latency and its algorithm bandwidth at `bytes` (the tree's by-size
// correction applied). NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING prints the same pairs, before
// that correction, so a run's log can be held against these.
struct NcclCandidate {
  ModelAlgo algo;
  ModelProto proto;
  double latency_us, algbw_GBps;
};

// NCCL's candidates for `kind` over the group (those with no bandwidth left out); none for a
// measured fabric, one rank, or a group the fabric cannot hold.
std::vector<NcclCandidate> nccl_candidates(const Fabric& f, CollKind kind, int64_t bytes,
                                           ModelGroup g);

}  // namespace tpb
