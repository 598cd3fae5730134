#include "collectives/progress_text.h"

#include <sstream>

#include "layers/ops.h"

namespace tpb {

std::string where_was(const BoardPosition& p) {
  if (p.step < -1000000 || p.op < 0) return "before its first collective";
  std::ostringstream os;
  os << (p.inside ? "inside " : "last left ") << op_name(static_cast<Op>(p.op)) << " of layer "
     << p.layer << " at step " << p.step;
  return os.str();
}

std::string waited_clause(int rank, const BoardPosition& p) {
  std::ostringstream os;
  os << "rank " << rank << " waited ";
  // A collective before the first published one: the --check reference's, or a barrier.
  if (p.op < 0)
    os << "before its first collective of a step; ";
  else
    os << "in " << op_name(static_cast<Op>(p.op)) << " of layer " << p.layer << " at step "
       << p.step << "; ";
  return os.str();
}

std::string missing_entry(int rank, const BoardPosition& p) {
  return "rank " + std::to_string(rank) + " (" + where_was(p) + ")";
}

}  // namespace tpb
