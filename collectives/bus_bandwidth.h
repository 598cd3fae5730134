// Bus bandwidth: the per-link rate a collective achieved, comparable across rank counts and
// with the hardware's link peak. nccl-tests' PERFORMANCE.md defines it as
// busbw = algbw * factor(n), where algbw = S / t and S is the size nccl-tests reports for the
// operation (for all_gather the gathered total, for reduce_scatter the input total).
#pragma once
#include "collectives/kinds/coll_kind.h"

namespace tpb {

// The factor for n ranks; each kind's entry (collectives/kinds/) holds its formula.
// Derivations (a ring on n ranks, per rank and per link):
//  all_reduce:     reduce-scatter then all-gather: each rank sends 2(n-1) chunks of S/n
//                  -> 2(n-1)/n
//  reduce_scatter: each rank sends (n-1) chunks of S/n -> (n-1)/n
//  all_gather:     each rank sends (n-1) chunks of S/n -> (n-1)/n
//  broadcast:      pipelined, every link carries S once -> 1
//  reduce:         pipelined, every link carries S once -> 1
// A single rank moves nothing over a bus; its factor is 0 (nccl-tests prints 0 too).
double bus_factor(CollKind kind, int n);

}  // namespace tpb
