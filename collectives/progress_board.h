// A shared-memory board where every rank on a host publishes its position (step, layer,
// collective, entered/left) as it enters and leaves each collective. When a collective times
// out, a surviving rank reads the board without needing the hung peer to make MPI progress,
// and names the ranks that never arrived and where they were last seen (nccl-tests only says
// "timeout"; this says who).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/host_beacon.h"
#include "layers/ops.h"
#include "layers/timeline.h"

namespace tpb {

class ProgressBoard final : public ProgressSink {
 public:
  // Collective over `world`. Ranks of `group` (world ranks: the TP group whose collectives are
  // watched) on other hosts are heard through a HostBeacon when the world spans hosts; any
  // other rank elsewhere is reported as "not visible".
  explicit ProgressBoard(MPI_Comm world, const std::vector<int>& group = {});
  ~ProgressBoard();
  ProgressBoard(const ProgressBoard&) = delete;
  ProgressBoard& operator=(const ProgressBoard&) = delete;

  // Hot path: a few relaxed stores into this rank's slot.
  void enter(int step, int layer, Op op) override;
  void leave() override;
  // Marks this rank as having timed out; returns the lowest world rank that has, so exactly
  // one rank prints the report.
  int mark_timed_out();

  // One line about `group` (world ranks) from the viewpoint of the calling rank.
  std::string describe(const std::vector<int>& group) const;

  // A timed-out collective: names who never arrived. Every surviving rank times out at about
  // the same moment; the lowest of them reports at once, and the job ends with it. The others
  // give the reporter a head start, then report too in case it died. Reads only the board
  // (shared memory), so it also serves the watchdog of a blocked MPI call, on the watchdog's
  // thread. The board is per host: ranks on other hosts are named as not visible from this
  // one, and each host's lowest timed-out rank reports.
  std::string hang_report(const std::string& timeout_message, const std::vector<int>& group);

 private:
  struct Slot;
  Slot* slot_of(int world_rank) const;
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Comm node_ = MPI_COMM_NULL;
  int world_rank_ = 0;
  std::vector<int> local_of_world_;  // world rank -> node-local index, -1 if elsewhere
  char* base_ = nullptr;
  Slot* mine_ = nullptr;                // this rank's slot: never null once constructed
  std::unique_ptr<HostBeacon> beacon_;  // only when the world spans hosts
  std::string describe_remote(int world_rank, int64_t my_seq) const;
};

}  // namespace tpb
