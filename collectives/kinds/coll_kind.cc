// The registry of collective kinds: the five entries in CollKind order, looked up by kind or
// by name, and nccl-tests' size arithmetic through each entry's element split.
#include "collectives/kinds/coll_kind.h"

#include <stdexcept>

#include "base/errors.h"

namespace tpb {

namespace {

const std::vector<const CollKindInfo*>& table() {
  static const std::vector<const CollKindInfo*> t{&kAllReduce, &kReduceScatter, &kAllGather,
                                                  &kBroadcast, &kReduce};
  return t;
}

}  // namespace

const CollKindInfo& coll_kind_info(CollKind kind) {
  for (const CollKindInfo* k : table())
    if (k->kind == kind) return *k;
  // Only a value cast into CollKind from outside its enumerators gets here.
  throw std::logic_error("coll_kind_info: CollKind " + std::to_string(static_cast<int>(kind)) +
                         " has no entry");
}

const CollKindInfo& coll_kind_info(const std::string& name, const std::string& field) {
  std::string names;
  for (const CollKindInfo* k : table()) {
    if (name == k->name) return *k;
    names += (names.empty() ? "" : "|") + std::string(k->name);
  }
  throw BadInput(field + ": unknown collective '" + name + "' (expected " + names + ")");
}

const std::vector<CollKind>& all_coll_kinds() {
  static const std::vector<CollKind> kinds = [] {
    std::vector<CollKind> v;
    for (const CollKindInfo* k : table()) v.push_back(k->kind);
    return v;
  }();
  return kinds;
}

const char* coll_kind_name(CollKind kind) {
  return coll_kind_info(kind).name;
}

CollKind parse_coll_kind(const std::string& name, const std::string& field) {
  return coll_kind_info(name, field).kind;
}

CollCounts coll_counts(CollKind kind, int64_t bytes, DType t, int n) {
  const auto e = static_cast<int64_t>(dtype_bytes(t));
  const CollElements x = coll_kind_info(kind).elements(bytes / e, n);
  if (x.total == 0) return {};
  return {.send = x.send, .recv = x.recv, .bytes = x.total * e};
}

}  // namespace tpb
