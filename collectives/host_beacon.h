// The progress board's reach across hosts. The board is shared memory, so a rank cannot see
// peers on other hosts through it; when a link or a host goes down, "not visible" is all it
// could say. The beacon is a channel of its own, beside MPI: every few tenths of a second each
// rank sends its board slot to its TP peers on other hosts in a UDP datagram, and keeps the last
// one heard from each. A timed-out collective can then say where a remote peer was last seen
// and how long ago it went quiet: a host that stopped answering, not just a late rank.
// It ticks on a timer signal (signal_ticker.h), not on a thread, so MPI can run at
// MPI_THREAD_SINGLE; the tick makes no MPI calls, only the constructor (collective over
// `world`) does. Made, read and destroyed on the thread that makes the MPI calls.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/signal_ticker.h"

namespace tpb {

// One rank's position, as its board slot holds it.
struct BeaconState {
  int64_t seq = 0;  // collectives entered so far
  int32_t step = -1, layer = -1, op = -1, inside = 0, timed_out = 0;
};

struct HeardFrom {
  std::string host;
  bool heard = false;  // a datagram from it ever arrived
  double age_s = 0;    // since the last one
  BeaconState state;
};

class HostBeacon {
 public:
  // Collective over `world`: every rank passes its own remote `peers` (world ranks on other
  // hosts it wants to hear from and be heard by; may be empty). `own` is read in the tick's
  // signal handler and must be safe there (atomic loads).
  HostBeacon(MPI_Comm world, const std::vector<int>& peers, std::function<BeaconState()> own,
             double period_s = 0.2);
  ~HostBeacon();
  HostBeacon(const HostBeacon&) = delete;
  HostBeacon& operator=(const HostBeacon&) = delete;

  // The last word from `world_rank`, or nullopt for a rank that is not a peer.
  std::optional<HeardFrom> heard_from(int world_rank) const;
  // How silence is judged: a peer quiet for longer than this has stopped answering.
  double quiet_after_s() const { return 5 * period_s_; }

 private:
  struct Peer;
  void tick();
  void send_all(const BeaconState& s) const;
  void receive_all();

  const double period_s_;
  const std::function<BeaconState()> own_;
  int fd_ = -1;
  int world_rank_ = 0;
  uint64_t token_ = 0;                    // the job's: datagrams of another job are ignored
  std::vector<Peer> peers_;               // the heard state is the tick's: read it under a Hold
  std::unique_ptr<SignalTicker> ticker_;  // last; none without a socket
};

}  // namespace tpb
