// Bringing every rank's own measurements and timeline to rank 0 as plain data: the fixed
// numeric part of a RankSample as bytes, its strings one by one, its timeline segments raw.
#pragma once
#include <mpi.h>

#include <vector>

#include "harness/analysis/analysis.h"
#include "harness/record/point_builder.h"
#include "layers/timeline.h"

namespace tpb {

// Collective over `comm`. Returns every rank's sample, by rank, on `root`; empty elsewhere.
std::vector<RankSample> gather_rank_samples(MPI_Comm comm, const RankSample& mine, int root);

// Collective over `comm`. Returns every rank's segments on `root` (empty elsewhere), each
// labelled with its rank and TP group from `samples` (as gathered on root).
std::vector<RankTrace> gather_rank_traces(MPI_Comm comm, const std::vector<SegmentRecord>& mine,
                                          const std::vector<RankSample>& samples, int root);

}  // namespace tpb
