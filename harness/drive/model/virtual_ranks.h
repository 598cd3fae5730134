// The timelines of virtual ranks (--backend model): every rank runs the TP layer step's ops in
// the order the real step runs them (tp_model/tp_model.cc), each compute op taking its roofline
// time from the cost model and the point's peaks, each all-reduce starting when the group's
// last member arrives and taking NCCL's modelled time on the fabric. --inject changes a rank's
// segments as the real injector does (harness/drive/injector.cc). Deterministic: the same
// spec gives the same stamps.
#pragma once
#include <vector>

#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"
#include "harness/analysis/analysis.h"
#include "harness/analysis/peaks.h"
#include "harness/config/run_spec.h"
#include "harness/record/point_record.h"

namespace tpb {

// Where virtual rank r sits: its TP group and node, as split_tp_groups and a contiguous
// placement of gpus_per_node ranks per node would put it.
struct VirtualPlace {
  int group = 0, group_rank = 0, node = 0;
};
VirtualPlace virtual_place(const RunSpec& spec, int rank);

// Group `group`'s size and the nodes its members span. Throws BadInput naming --tp-groups when
// they span the nodes unevenly.
ModelGroup virtual_group_shape(const RunSpec& spec, int group);

// Every rank's measured steps (0 .. steps-1) and the step records that bound them, by rank.
// `pricing`, when given, gets what priced each op (an engine with tables).
std::vector<RankTrace> virtual_rank_traces(const RunSpec& spec, int64_t layers, const Peaks& peaks,
                                           const Fabric& fabric, OpPricingMap* pricing = nullptr);

}  // namespace tpb
