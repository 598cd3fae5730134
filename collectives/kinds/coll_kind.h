// The collective kinds as one table: each kind's file (all_reduce.cc, reduce_scatter.cc, ...)
// fills one CollKindInfo, in the shape of nccl-tests' per-collective files, and the registry
// here hands it out by CollKind or by name. Callers read the entry instead of switching.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace tpb {

enum class CollKind { all_reduce, reduce_scatter, all_gather, broadcast, reduce };

// Elements per rank buffer for a message of `bytes` (see coll_counts). 0 = too small to run.
struct CollCounts {
  int64_t send = 0, recv = 0;  // elements in this rank's send and receive buffers
  int64_t bytes = 0;           // the size S reported and used for algbw
};

// A kind's split of S = `total` elements into one rank's buffers.
struct CollElements {
  int64_t send = 0, recv = 0, total = 0;
};

// What the verification of one rank's buffers depends on (collectives/kinds/verify_fill.h).
struct CollVerify {
  std::string op;  // sum | max | min
  int root = 0, rank = 0, n = 1;
  bool inplace = false;
  CollCounts counts;
};

// One MPI call on host buffers of this rank.
struct CollMpiArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  CollCounts counts;
  MPI_Datatype type = MPI_FLOAT;
  MPI_Op op = MPI_SUM;
  int root = 0, rank = 0;
  bool inplace = false;
  MPI_Comm comm = MPI_COMM_NULL;

  const void* send_or_in_place() const { return inplace ? MPI_IN_PLACE : send; }
  int send_count() const { return static_cast<int>(counts.send); }
  int recv_count() const { return static_cast<int>(counts.recv); }
};

// Where a kind's data lives on each rank.
enum class CollBuffers {
  send_and_recv,  // a send and a receive buffer; every rank's receive buffer is written
  one_buffer,     // the MPI call has one buffer per rank: always in place
  root_output,    // only the root's receive buffer is written
};

struct CollKindInfo {
  CollKind kind;
  const char* name;
  // S rounded down to what the kind splits evenly over n ranks (nccl-tests' rounding), in
  // elements, and the rank's share of it. `count` is S / element size.
  CollElements (*elements)(int64_t count, int n);
  // busbw / algbw on n >= 2 ranks; the derivations are in collectives/bus_bandwidth.h.
  double (*bus_factor)(int n);
  // Writes this rank's verification input into the zeroed host images of its buffers.
  void (*fill)(const CollVerify& v, float* send, float* recv);
  // The exact value of output element j after one call on the filled buffers.
  float (*expected)(const CollVerify& v, int64_t j);
  // The call on host buffers: nonblocking into *req, or blocking when req is null.
  void (*mpi)(const CollMpiArgs& a, MPI_Request* req);
  CollBuffers buffers = CollBuffers::send_and_recv;
};

// The entries, one per file in this folder; constant-initialized, so valid before main.
extern const CollKindInfo kAllReduce;
extern const CollKindInfo kReduceScatter;
extern const CollKindInfo kAllGather;
extern const CollKindInfo kBroadcast;
extern const CollKindInfo kReduce;

// The registry.
const CollKindInfo& coll_kind_info(CollKind kind);
// Throws BadInput naming `field` for an unknown name.
const CollKindInfo& coll_kind_info(const std::string& name, const std::string& field);
const std::vector<CollKind>& all_coll_kinds();
const char* coll_kind_name(CollKind kind);
CollKind parse_coll_kind(const std::string& name, const std::string& field);

// Elements per rank buffer for `bytes` of `kind` in `t` on n ranks: nccl-tests' rounding
// (down to a multiple of n elements for the scatter/gather kinds). All zero = too small to run.
CollCounts coll_counts(CollKind kind, int64_t bytes, DType t, int n);

}  // namespace tpb
