// Per-rank timeline: preallocated segment records, stamped through Device::mark.
// Recording in the timed loop is an index increment and two stamps; no allocation.
#pragma once
#include <cstdint>
#include <vector>

#include "base/errors.h"
#include "layers/device.h"
#include "layers/ops.h"

namespace tpb {

// How densely a step is stamped (--stamps). `ops`: a device stamp around every op. A stamp
// on a GPU is a kernel of its own (a few us each, twice per op), which is what the small ops of
// a B=1 decode step cost themselves, so `collectives` stamps only step and collective
// boundaries and the compute between them as one run (Op::compute), and asks the device for
// each op's own times from a record that costs no device time (Device::activity_begin).
enum class StampLevel : uint8_t { ops, collectives };
const char* stamp_level_name(StampLevel l);

// How a segment's ends are known.
enum class SegmentSource : uint8_t {
  stamped,   // Device::mark at slots 2*i and 2*i+1
  activity,  // an op under StampLevel::collectives: Device::activity_begin/end at those slots
  run,       // Op::compute: the stamped run of compute that holds the activity segments after it
};

// One interval. Slots 2*i and 2*i+1 of the device's mark storage hold its ends.
struct SegmentMeta {
  int32_t step = 0;  // < 0 for warm-up steps
  int16_t layer = 0;
  Op op = Op::count;
  SegmentSource source = SegmentSource::stamped;
};

// A resolved interval on a clock (seconds). POD so it can travel in MPI_Gatherv as bytes.
struct SegmentRecord {
  double t0 = 0;
  double t1 = 0;
  int32_t step = 0;
  int16_t layer = 0;
  Op op = Op::count;
  uint8_t collective = 0;  // 1 for all-reduces
  // When the host call that launched the op's first work returned, on the same clock; 0
  // where unknown (stamped segments, ops run on the host, a launch record not delivered).
  double launched = 0;
};

// Where a rank publishes its position at each collective (collectives/progress_board), so a
// hang can be attributed. Kept abstract so the timeline stays free of MPI.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void enter(int step, int layer, Op op) = 0;
  virtual void leave() = 0;
};

// A rank's emulated clock error: host time t reads as t + offset_s + (t - origin_s) * rate,
// a fixed offset plus a clock that runs fast by `rate` (ppm * 1e-6) from `origin_s` on.
struct ClockSkew {
  double offset_s = 0, rate = 0, origin_s = 0;
  double apply(double t) const { return t + offset_s + (t - origin_s) * rate; }
};

class Timeline {
 public:
  // Capacity is fixed here; the device's mark storage is sized to match. Under
  // StampLevel::collectives a run segment can precede each op, so the storage doubles.
  Timeline(Device& dev, std::size_t capacity, StampLevel level = StampLevel::ops)
      : dev_(dev), level_(level) {
    const std::size_t n = level == StampLevel::collectives ? 2 * capacity : capacity;
    meta_.resize(n);
    dev_.reserve_marks(2 * n);
  }

  // Opens a segment: stamps its start (or, for an op inside a run, starts its activity record).
  // Returns its index for close().
  std::size_t open(Op op, int layer, int step) {
    dev_.range_push(op_name(op));  // popped by close()
    if (level_ == StampLevel::collectives) {
      if (op_is_collective(op) || op == Op::step)
        end_run();
      else
        return open_in_run(op, layer, step);
    }
    const std::size_t i = push(op, layer, step, SegmentSource::stamped);
    if (sink_ && op_is_collective(op)) sink_->enter(step, layer, op);
    dev_.mark(2 * i);
    return i;
  }
  void close(std::size_t i) {
    dev_.range_pop();
    if (meta_[i].source == SegmentSource::activity) {
      dev_.activity_end(2 * i + 1);
      return;
    }
    if (meta_[i].op == Op::step) end_run();
    dev_.mark(2 * i + 1);
    if (sink_ && op_is_collective(meta_[i].op)) sink_->leave();
  }
  void set_progress_sink(ProgressSink* s) { sink_ = s; }
  ProgressSink* progress_sink() const { return sink_; }
  StampLevel level() const { return level_; }
  // Ends the open run, if any: a step's compute ends where its last op was issued, not after
  // the host's wait for it (the step driver calls this before it synchronizes).
  void end_run() {
    if (!run_open_) return;
    dev_.mark(2 * run_ + 1);
    run_open_ = false;
  }

  std::size_t size() const { return n_; }
  // The op of segment i (open or closed). Lets --inject slowdown find the ops of the block
  // that just ran without knowing the step driver's layout.
  Op op_at(std::size_t i) const { return meta_[i].op; }
  void clear() {
    n_ = 0;
    run_open_ = false;
  }

  // CUDA graphs (--cuda-graph). A captured step's marks stamp on every replay, shifted by a
  // fixed number of slots (layers/device.h graph_replay_slot), so each replay's segments are
  // the captured ones re-appended at a fixed stride: `metas` copies the captured block,
  // `truncate` drops it after capture (its stamps never ran), and `append_unstamped` lays a
  // copy down for each replay with that replay's step number, stamps left to the graph.
  std::vector<SegmentMeta> metas(std::size_t first, std::size_t count) const {
    return {meta_.begin() + static_cast<std::ptrdiff_t>(first),
            meta_.begin() + static_cast<std::ptrdiff_t>(first + count)};
  }
  void truncate(std::size_t n) {
    TPB_ASSERT(n <= n_, "timeline truncate beyond its size");
    n_ = n;
    run_open_ = false;
  }
  std::size_t append_unstamped(const std::vector<SegmentMeta>& block, int step) {
    TPB_ASSERT(n_ + block.size() <= meta_.size(), "timeline capacity exceeded");
    const std::size_t first = n_;
    for (const SegmentMeta& m : block) {
      meta_[n_] = m;
      meta_[n_++].step = step;
    }
    return first;
  }

  // After Device::synchronize(): records in host steady-clock seconds as read through `skew`
  // (--inject clock_offset / clock_drift emulate a wrong clock; the default reads true time).
  // Under StampLevel::collectives each run is replaced by its ops where the device recorded
  // every one of them, and kept (Op::compute) where it did not.
  std::vector<SegmentRecord> resolve(const ClockSkew& skew = {}) const;

 private:
  std::size_t push(Op op, int layer, int step, SegmentSource src) {
    TPB_ASSERT(n_ < meta_.size(), "timeline capacity exceeded");
    meta_[n_] = SegmentMeta{step, static_cast<int16_t>(layer), op, src};
    return n_++;
  }
  // A run lasts from its first compute op to the next collective or step edge, and also ends
  // where the layer changes, so a run never holds two layers' ops.
  std::size_t open_in_run(Op op, int layer, int step) {
    if (run_open_ && (meta_[run_].layer != layer || meta_[run_].step != step)) end_run();
    if (!run_open_) {
      run_ = push(Op::compute, layer, step, SegmentSource::run);
      run_open_ = true;
      dev_.mark(2 * run_);
    }
    const std::size_t i = push(op, layer, step, SegmentSource::activity);
    dev_.activity_begin(2 * i);
    return i;
  }
  Device& dev_;
  StampLevel level_;
  std::vector<SegmentMeta> meta_;
  std::size_t n_ = 0;
  std::size_t run_ = 0;  // the open run's index, while run_open_
  bool run_open_ = false;
  ProgressSink* sink_ = nullptr;
};

// RAII segment: open on construction, close on destruction.
class Scoped {
 public:
  Scoped(Timeline& tl, Op op, int layer, int step) : tl_(tl), i_(tl.open(op, layer, step)) {}
  ~Scoped() { tl_.close(i_); }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;

 private:
  Timeline& tl_;
  std::size_t i_;
};

// Runs body() as one stamped `op` when a timeline is given; a null timeline (reference runs)
// costs a branch. Stamps cost two clock reads.
template <class F>
void stamped(Timeline* tl, Op op, int layer, int step, F&& body) {
  const std::size_t i = tl ? tl->open(op, layer, step) : 0;
  body();
  if (tl) tl->close(i);
}

}  // namespace tpb
