#include "harness/drive/model/virtual_hang.h"

#include <string>

#include "collectives/mpi/mpi_wait.h"
#include "harness/mpi/agreement.h"
#include "layers/ops.h"

namespace tpb {

namespace {

std::string never_arrived(const std::vector<HungRank>& hung) {
  std::string s = "never arrived: ";
  for (std::size_t i = 0; i < hung.size(); ++i)
    s += (i ? "; " : "") + missing_entry(hung[i].rank, hung[i].last) + ", stopped at step " +
         std::to_string(hung[i].step) + " by --inject hang_at_step";
  return s;
}

std::string timeout_text(const RunSpec& spec, const std::string& what) {
  if (spec.collective_timeout_s > 0) return timeout_message(what, spec.collective_timeout_s);
  return what + " would never complete (--collective-timeout 0: no watchdog)";
}

// One process holds every virtual rank and every rank agrees on the hang by construction: the
// error ends this process once, with the one line and exit code of a real hung job.
[[noreturn]] void end(const std::string& msg) {
  throw AgreedError(ExitCode::collective_timeout,
                    msg + " (virtual ranks: the wait is modelled, nothing was waited)");
}

}  // namespace

void throw_group_hang(const RunSpec& spec, int reporter, const BoardPosition& at,
                      const std::vector<HungRank>& hung) {
  end("rank " + std::to_string(reporter) + ": " +
      timeout_text(spec, "the modelled " + std::string(op_name(static_cast<Op>(at.op)))) + "; " +
      waited_clause(reporter, at) + never_arrived(hung));
}

void throw_world_hang(const RunSpec& spec, const std::vector<int>& alive, int last_step,
                      const std::vector<HungRank>& hung) {
  if (alive.empty())
    end("every rank stopped (--inject hang_at_step) and none is left to time out on it: a real "
        "run would never end; " +
        never_arrived(hung));
  const int reporter = alive.front();
  end("rank " + std::to_string(reporter) + ": " +
      timeout_text(spec, "the clock sync after the steps") + "; rank " + std::to_string(reporter) +
      " waited after its last step (" + std::to_string(last_step) + "); " + never_arrived(hung));
}

}  // namespace tpb
