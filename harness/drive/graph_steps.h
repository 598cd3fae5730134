// --cuda-graph: one step captured after the warm-up, then replayed as every measured step,
// with the timeline kept whole. Layout per replayed step: its step segment (stamped eagerly
// around the launch, so the host's launch and sync time stay inside it), then the captured
// block. The graph's marks write `stride` = 2 x (block + 1) slots further on each replay
// (layers/device.h graph_replay_slot), which is exactly where the next block's segments sit.
// The progress board (the timeline's ProgressSink) hears nothing from the capture, which runs
// nothing, and one position per replay: its first collective, entered as the replay is
// launched and left once it is done, so a hang inside replays names who never arrived.
#pragma once
#include <cstddef>
#include <vector>

#include "layers/timeline.h"

namespace tpb {

class GraphSteps {
 public:
  GraphSteps(Device& dev, Timeline& tl) : dev_(dev), tl_(tl) {}
  // The graph goes with the steps that replayed it, on every exit (a collective timeout
  // included), so it never outlives the communicator it captured (the point's collective is
  // made before the steps and destroyed after them).
  ~GraphSteps() { dev_.release_graph(); }
  GraphSteps(const GraphSteps&) = delete;
  GraphSteps& operator=(const GraphSteps&) = delete;

  // Records `step_body` (which stamps into the timeline) into a graph; the device may replay it
  // once unmeasured (Device::end_capture), which leaves no segments. The device must be idle,
  // and the timeline must get no other segments until the replays.
  template <class Body>
  void capture(Body&& step_body) {
    sink_ = tl_.progress_sink();
    tl_.set_progress_sink(nullptr);  // the capture runs nothing: it publishes no position
    first_ = tl_.append_unstamped({SegmentMeta{0, 0, Op::step}}, 0);
    dev_.begin_capture();
    step_body();
    const std::size_t k = tl_.size() - first_ - 1;
    dev_.end_capture(2 * (k + 1));
    block_ = tl_.metas(first_ + 1, k);
    tl_.truncate(first_);  // the captured stamps never ran
    tl_.set_progress_sink(sink_);
    first_collective_ = block_.size();
    for (std::size_t j = 0; j < block_.size() && first_collective_ == block_.size(); ++j)
      if (op_is_collective(block_[j].op)) first_collective_ = j;
  }

  // Measured step `step` (0, 1, ... in order): step segment, `before` (host work inside the
  // step, e.g. --inject host_delay), the replay, a sync.
  template <class Before>
  void replay_step(int step, Before&& before) {
    const std::size_t i = tl_.open(Op::step, 0, step);
    TPB_ASSERT(i == first_ + static_cast<std::size_t>(step) * (block_.size() + 1),
               "cuda graph: the replayed steps' segments must be contiguous");
    before();
    tl_.append_unstamped(block_, step);
    // After `before`, so a rank held there (--inject hang_at_step) is seen not to have arrived.
    const bool publish = sink_ && first_collective_ < block_.size();
    if (publish) {
      const SegmentMeta& c = block_[first_collective_];
      sink_->enter(step, c.layer, c.op);
    }
    dev_.replay();
    dev_.synchronize();
    if (publish) sink_->leave();
    tl_.close(i);
  }

  std::size_t block_size() const { return block_.size(); }

 private:
  Device& dev_;
  Timeline& tl_;
  std::vector<SegmentMeta> block_;
  std::size_t first_ = 0;
  std::size_t first_collective_ = 0;  // in block_; block_.size() when it holds none
  ProgressSink* sink_ = nullptr;      // the timeline's at capture
};

}  // namespace tpb
