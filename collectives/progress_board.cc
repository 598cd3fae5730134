// Progress board over MPI shared memory (MPI_Win_allocate_shared): plain loads and stores,
// so reading it needs nothing from the rank being read.
#include "collectives/progress_board.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <exception>
#include <iomanip>
#include <sstream>
#include <thread>

#include "base/mpi_check.h"
#include "collectives/progress_text.h"

namespace tpb {

struct ProgressBoard::Slot {
  int64_t seq;  // collectives entered so far
  int32_t step;
  int32_t layer;
  int32_t op;
  int32_t inside;     // 1 while inside the collective
  int32_t timed_out;  // 1 once this rank gave up waiting
  int32_t pad;
};

ProgressBoard::ProgressBoard(MPI_Comm world, const std::vector<int>& group) {
  int world_size = 1;
  TPB_MPI_CHECK(MPI_Comm_rank(world, &world_rank_));
  TPB_MPI_CHECK(MPI_Comm_size(world, &world_size));
  TPB_MPI_CHECK(
      MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL, &node_));
  int local = 0, local_size = 1;
  TPB_MPI_CHECK(MPI_Comm_rank(node_, &local));
  TPB_MPI_CHECK(MPI_Comm_size(node_, &local_size));
  // Rank 0 of the host allocates every slot, contiguous, so one base pointer reaches all.
  void* mine = nullptr;
  const MPI_Aint bytes = local == 0 ? static_cast<MPI_Aint>(sizeof(Slot)) * local_size : 0;
  TPB_MPI_CHECK(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node_, &mine, &win_));
  MPI_Aint size = 0;
  int disp = 0;
  void* base = nullptr;
  TPB_MPI_CHECK(MPI_Win_shared_query(win_, 0, &size, &disp, &base));
  base_ = static_cast<char*>(base);
  std::vector<int> members(local_size);
  TPB_MPI_CHECK(MPI_Allgather(&world_rank_, 1, MPI_INT, members.data(), 1, MPI_INT, node_));
  local_of_world_.assign(world_size, -1);
  for (int i = 0; i < local_size; ++i) local_of_world_[members[i]] = i;
  // Every rank is a member of its own node, so its slot exists; keeping the pointer also spares
  // the hot enter/leave path the lookup (and gcc a null path to warn about).
  mine_ = slot_of(world_rank_);
  *mine_ = Slot{0, -1, -1, -1, 0, 0, 0};
  TPB_MPI_CHECK(MPI_Barrier(node_));
  if (local_size == world_size) return;  // one host: the board sees everyone
  std::vector<int> remote;
  for (int r : group)
    if (local_of_world_[static_cast<std::size_t>(r)] < 0) remote.push_back(r);
  const Slot* s = mine_;
  beacon_ = std::make_unique<HostBeacon>(world, remote, [s] {
    return BeaconState{__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE),
                       __atomic_load_n(&s->step, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->layer, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->op, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->inside, __ATOMIC_RELAXED),
                       __atomic_load_n(&s->timed_out, __ATOMIC_RELAXED)};
  });
}

ProgressBoard::~ProgressBoard() {
  // MPI_Win_free is collective: while an exception unwinds (a hung peer), calling it would
  // hang this rank too. The job is about to be aborted, so leaking is the right call.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || std::uncaught_exceptions() > 0) return;
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

ProgressBoard::Slot* ProgressBoard::slot_of(int world_rank) const {
  const int i = local_of_world_[world_rank];
  return i < 0 ? nullptr : reinterpret_cast<Slot*>(base_ + sizeof(Slot) * i);
}

void ProgressBoard::enter(int step, int layer, Op op) {
  Slot* s = mine_;
  __atomic_store_n(&s->step, step, __ATOMIC_RELAXED);
  __atomic_store_n(&s->layer, layer, __ATOMIC_RELAXED);
  __atomic_store_n(&s->op, static_cast<int32_t>(op), __ATOMIC_RELAXED);
  __atomic_store_n(&s->inside, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

void ProgressBoard::leave() {
  __atomic_store_n(&mine_->inside, 0, __ATOMIC_RELEASE);
}

int ProgressBoard::mark_timed_out() {
  __atomic_store_n(&mine_->timed_out, 1, __ATOMIC_RELEASE);
  int lowest = INT_MAX;
  for (int r = 0; r < static_cast<int>(local_of_world_.size()); ++r) {
    const Slot* s = slot_of(r);
    if (s && __atomic_load_n(&s->timed_out, __ATOMIC_ACQUIRE)) lowest = std::min(lowest, r);
  }
  return lowest;
}

namespace {

BoardPosition position(int64_t seq, int32_t step, int32_t layer, int32_t op, int32_t inside) {
  return {seq, step, layer, op, inside};
}

}  // namespace

// A peer on another host, as the beacon last heard it; "" when it arrived and still answers.
std::string ProgressBoard::describe_remote(int r, int64_t my_seq) const {
  const auto h = beacon_ ? beacon_->heard_from(r) : std::nullopt;
  std::ostringstream os;
  if (!h) return "";
  os << "rank " << r << " on host " << h->host;
  if (!h->heard) {
    os << " stopped answering: never heard from over the beacon (its host or link down?)";
    return os.str();
  }
  const BeaconState& b = h->state;
  const std::string where = where_was(position(b.seq, b.step, b.layer, b.op, b.inside));
  if (h->age_s > beacon_->quiet_after_s()) {
    os << " stopped answering " << std::fixed << std::setprecision(1) << h->age_s
       << " s ago (its host or the link to it); last seen " << where;
    return os.str();
  }
  if (b.seq >= my_seq) return "";
  os << " (still answering, " << std::fixed << std::setprecision(1) << h->age_s
     << " s ago: " << where << ")";
  return os.str();
}

std::string ProgressBoard::describe(const std::vector<int>& group) const {
  const Slot* me = mine_;
  const int64_t my_seq = __atomic_load_n(&me->seq, __ATOMIC_ACQUIRE);
  std::ostringstream missing, unseen, silent;
  int n_missing = 0, n_silent = 0;
  for (int r : group) {
    if (r == world_rank_) continue;
    const Slot* s = slot_of(r);
    if (!s) {
      const std::string remote = describe_remote(r, my_seq);
      if (!beacon_ || !beacon_->heard_from(r))
        unseen << (unseen.tellp() > 0 ? ", " : "") << r;
      else if (remote.find("stopped answering") != std::string::npos)
        silent << (n_silent++ ? "; " : "") << remote;
      else if (!remote.empty())
        missing << (n_missing++ ? "; " : "") << remote;
      continue;
    }
    const int64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq < my_seq)
      missing << (n_missing++ ? "; " : "")
              << missing_entry(r, position(seq, s->step, s->layer, s->op, s->inside));
  }
  std::ostringstream os;
  os << waited_clause(world_rank_, position(my_seq, me->step, me->layer, me->op, me->inside));
  if (n_missing)
    os << "never arrived: " << missing.str();
  else if (!n_silent)
    os << "every rank " << (beacon_ ? "heard from" : "on this host") << " arrived";
  if (n_silent) os << (n_missing ? "; " : "") << silent.str();
  if (unseen.tellp() > 0) os << "; not visible from this host: ranks " << unseen.str();
  return os.str();
}

std::string ProgressBoard::hang_report(const std::string& timeout_message,
                                       const std::vector<int>& group) {
  mark_timed_out();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let peers mark themselves
  const int reporter = mark_timed_out();
  const std::string msg = timeout_message + "; " + describe(group);
  if (reporter != world_rank_) std::this_thread::sleep_for(std::chrono::seconds(3));
  return msg;
}

}  // namespace tpb
