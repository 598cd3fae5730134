// One rank's setup and teardown around a point's steps, written once for run and serve (and
// calibrate's op profile, which runs run's point): the progress board and the hang reports that
// read it, the collective, the TP model, its timeline and injector, and the rank's clock,
// synced against rank 0's before and after the steps. The caller keeps only its step loop.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "collectives/collective.h"
#include "collectives/mpi/mpi_wait.h"
#include "collectives/progress_board.h"
#include "harness/config/inject_spec.h"
#include "harness/config/run_spec.h"
#include "harness/drive/session/injector.h"
#include "harness/mpi/clock_sync.h"
#include "harness/mpi/world.h"
#include "layers/device.h"
#include "layers/timeline.h"
#include "tp_model/tp_model.h"

namespace tpb {

// Lends a point's MpiWatch the board's report for a scope (the board's lifetime): a call
// outside the collectives that hangs then names who never arrived, as a collective does.
class WatchReport {
 public:
  WatchReport(MpiWatch& watch, HangReport report) : watch_(watch) {
    watch_.set_report(std::move(report));
  }
  ~WatchReport() { watch_.set_report({}); }
  WatchReport(const WatchReport&) = delete;
  WatchReport& operator=(const WatchReport&) = delete;

 private:
  MpiWatch& watch_;
};

// Built in the order its members are declared, torn down in reverse: the collective outlives
// the model and the timeline, the board outlives every report that reads it.
class RankSession {
 public:
  // Before anything can hang: the board (collective over the world), the reports (a blocked
  // MPI call's watchdog reads the board through `watch`) and the TP group's collective.
  RankSession(const RunSpec& spec, const World& w, Device& dev, const TpGroup& group,
              const InjectSpec& inj, MpiWatch& watch);
  RankSession(const RankSession&) = delete;
  RankSession& operator=(const RankSession&) = delete;

  Collective& coll() { return *coll_; }

  // The TP model, once whatever must run before it is allocated has run (run's --check
  // reference, serve's mixed check).
  TpModel& open_model(const TpModelConfig& mc);
  // Its timeline of `capacity` segments, the injector that writes into it, and the rank's
  // --inject clock skew, from now.
  void open_timeline(std::size_t capacity);
  TpModel& model() { return *model_; }
  Timeline& timeline() { return *tl_; }
  Injector& injector() { return *injector_; }

  // The clock sync before the steps (collective over the world).
  void sync_start();
  // `steps` with the board watching: a collective that times out names who never arrived.
  void watched(const std::function<void()>& steps);
  // The clock sync after the steps (collective over the world); the rank's clock model.
  const ClockModel& sync_end();

  // The timeline's segments so far, on the rank's (skewed) clock.
  std::vector<SegmentRecord> resolve() const { return tl_->resolve(skew_); }
  // `segs` onto the common clock (rank 0's), once sync_end has run.
  void to_common(std::vector<SegmentRecord>& segs) const;

 private:
  OffsetSample sync(const char* what);

  const RunSpec& spec_;
  const World& w_;
  Device& dev_;
  const InjectSpec& inj_;
  MpiWatch& watch_;
  ProgressBoard board_;
  const std::vector<int> members_;
  HangReport report_;
  WatchReport watch_report_;
  std::unique_ptr<Collective> coll_;
  std::optional<TpModel> model_;
  std::optional<Timeline> tl_;
  std::optional<Injector> injector_;
  ClockSkew skew_;
  ClockModel clock_;
};

}  // namespace tpb
