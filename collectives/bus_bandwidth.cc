// Bus-bandwidth factors: the kind's entry for n >= 2 ranks, 0 for one rank (see the header).
#include "collectives/bus_bandwidth.h"

namespace tpb {

double bus_factor(CollKind kind, int n) {
  if (n <= 1) return 0.0;
  return coll_kind_info(kind).bus_factor(n);
}

}  // namespace tpb
