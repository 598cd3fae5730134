// The per-rank setup in the order it must run: nothing here may hang unwatched, and the
// clock syncs bracket exactly the steps the caller runs.
#include "harness/drive/session/rank_session.h"

#include "base/host_clock.h"
#include "harness/backends/collective_factory.h"

namespace tpb {

RankSession::RankSession(const RunSpec& spec, const World& w, Device& dev, const TpGroup& group,
                         const InjectSpec& inj, MpiWatch& watch)
    : spec_(spec),
      w_(w),
      dev_(dev),
      inj_(inj),
      watch_(watch),
      board_(w.comm, group.members),
      members_(group.members),
      report_([this](const std::string& msg) { return board_.hang_report(msg, members_); }),
      watch_report_(watch, report_),
      coll_(make_collective(spec, group.comm.get(), dev, report_)) {}

TpModel& RankSession::open_model(const TpModelConfig& mc) {
  return model_.emplace(dev_, mc);
}

void RankSession::open_timeline(std::size_t capacity) {
  tl_.emplace(dev_, capacity, spec_.stamps);
  injector_.emplace(inj_, dev_, *tl_, spec_.seed);
  skew_ = {inj_.clock_offset_ms * 1e-3, inj_.clock_drift_ppm * 1e-6, now_s()};
}

OffsetSample RankSession::sync(const char* what) {
  const ClockSkew skew = skew_;
  auto rank_clock = [skew] { return skew.apply(now_s()); };
  return watch_.run(what, [&] { return measure_offset(w_.comm, rank_clock, spec_.sync_rounds); });
}

void RankSession::sync_start() {
  // The device's own clock line first, so that this point's stamps are mapped by samples
  // taken around it (not a line from device open, which a rate change since would bend).
  dev_.calibrate_marks(true);
  clock_.start = sync("the clock sync before the steps");
}

void RankSession::watched(const std::function<void()>& steps) {
  tl_->set_progress_sink(&board_);
  try {
    steps();
  } catch (const CollectiveTimeout& e) {
    throw CollectiveTimeout(report_(e.what()));  // nonblocking: main() prints it and aborts
  }
  tl_->set_progress_sink(nullptr);
}

const ClockModel& RankSession::sync_end() {
  dev_.calibrate_marks(false);
  clock_.end = sync("the clock sync after the steps");
  return clock_;
}

void RankSession::to_common(std::vector<SegmentRecord>& segs) const {
  for (auto& s : segs) {
    s.t0 = clock_.to_common(s.t0);
    s.t1 = clock_.to_common(s.t1);
  }
}

}  // namespace tpb
