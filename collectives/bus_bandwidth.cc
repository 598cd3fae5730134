// Bus-bandwidth factors, one table for every collective (see the header for derivations).
#include "collectives/bus_bandwidth.h"

#include "layers/base/errors.h"

namespace tpb {

double bus_factor(CollKind kind, int n) {
  if (n <= 1) return 0.0;
  const double d = static_cast<double>(n);
  switch (kind) {
    case CollKind::all_reduce:
      return 2.0 * (d - 1.0) / d;
    case CollKind::reduce_scatter:
      return (d - 1.0) / d;
    case CollKind::all_gather:
      return (d - 1.0) / d;
    case CollKind::broadcast:
      return 1.0;
    case CollKind::reduce:
      return 1.0;
  }
  return 0.0;
}

const char* coll_kind_name(CollKind kind) {
  switch (kind) {
    case CollKind::all_reduce:
      return "all_reduce";
    case CollKind::reduce_scatter:
      return "reduce_scatter";
    case CollKind::all_gather:
      return "all_gather";
    case CollKind::broadcast:
      return "broadcast";
    case CollKind::reduce:
      return "reduce";
  }
  return "?";
}

const std::vector<CollKind>& all_coll_kinds() {
  static const std::vector<CollKind> k{CollKind::all_reduce, CollKind::reduce_scatter,
                                       CollKind::all_gather, CollKind::broadcast, CollKind::reduce};
  return k;
}

CollKind parse_coll_kind(const std::string& name, const std::string& field) {
  for (CollKind k : all_coll_kinds())
    if (name == coll_kind_name(k)) return k;
  throw BadInput(field + ": unknown collective '" + name +
                 "' (expected all_reduce|reduce_scatter|all_gather|broadcast|reduce)");
}

}  // namespace tpb
