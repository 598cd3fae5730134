// --inject hang_at_step on virtual ranks: the watchdog's report of a real run, for a rank that
// stops at the start of its step and never reaches the next collective. Its peers enter that
// collective and would wait --collective-timeout there, so the job ends as a real hung job
// does (exit 3, the finished points kept) with a report worded as the shared-memory board's
// (collectives/progress_text.h). Nothing is slept: the wait is modelled, and the report says so.
#pragma once
#include <vector>

#include "collectives/progress_text.h"
#include "harness/config/run_spec.h"

namespace tpb {

// A rank that stopped, and where the board last saw it.
struct HungRank {
  int rank = 0;
  int step = 0;  // the step it stopped at
  BoardPosition last;
};

// `reporter` (the lowest world rank that entered) waited at `at` for the `hung` ranks.
[[noreturn]] void throw_group_hang(const RunSpec& spec, int reporter, const BoardPosition& at,
                                   const std::vector<HungRank>& hung);

// A whole TP group stopped (a group of one, or every member hung): nobody inside it waits, so
// the world's clock sync after the steps is where the peers of other groups would wait. With
// no rank left to wait (`alive` empty) a real run would never end; this one says so.
[[noreturn]] void throw_world_hang(const RunSpec& spec, const std::vector<int>& alive,
                                   int last_step, const std::vector<HungRank>& hung);

}  // namespace tpb
