// How a hang report names where a rank was: one wording for the shared-memory board of real
// ranks (progress_board.h) and for virtual ranks (--backend model), so a modelled hang reads as
// a measured one does and a script that parses one parses the other.
#pragma once
#include <cstdint>
#include <string>

namespace tpb {

// A rank's last published position at the collectives.
struct BoardPosition {
  int64_t seq = 0;  // collectives entered so far
  int32_t step = -1, layer = -1, op = -1;
  int32_t inside = 0;  // 1 while inside the collective
};

// "inside OP of layer L at step S", "last left ...", or "before its first collective".
std::string where_was(const BoardPosition& p);

// "rank R waited in OP of layer L at step S; " (or "before its first collective of a step; ").
std::string waited_clause(int rank, const BoardPosition& p);

// "rank R (where it was)": one entry of the "never arrived" list.
std::string missing_entry(int rank, const BoardPosition& p);

}  // namespace tpb
