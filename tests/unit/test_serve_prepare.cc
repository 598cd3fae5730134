// Under --attention cudnn, serve's warm-up runs one step of each attention shape that a replay
// of its scheduler plans (harness/drive/serve/serve_runner.cc, warm_planned_shapes), assuming
// the warm-up's step time, so cuDNN builds no paged graph inside a measured step. Under
// --concurrency (the device plan's serve at concurrency 8) that replay must plan the very steps
// the run will, however long the real steps take; under --rate it need not (the note there),
// which the second test pins so the note stays true.
#include <gtest/gtest.h>

#include <vector>

#include "harness/serve/simulate.h"

namespace tpb {
namespace {

SchedulerConfig closed_loop(int64_t concurrency) {
  SchedulerConfig c;
  c.max_running = 8;
  c.chunk = 512;
  c.kv_blocks = 1024;
  c.block_tokens = 16;
  c.max_ctx = 1024;
  c.concurrency = concurrency;
  return c;
}

std::vector<Request> requests(int n, double gap_s) {
  std::vector<Request> r;
  for (int i = 0; i < n; ++i)  // the device plan's serve: 992-token prompts, 32 tokens out
    r.push_back(Request{i, gap_s * i, 992 - 37 * (i % 3), 32 + 5 * (i % 4)});
  return r;
}

std::vector<StepBatch> planned(const SchedulerConfig& c, const std::vector<Request>& r,
                               double step_s) {
  Scheduler s(c, r, 4);
  std::vector<StepBatch> out;
  for (const StepPlan& p : simulate(s, [&](const StepPlan&) { return step_s; }).steps)
    out.push_back(p.batch);
  return out;
}

bool same(const std::vector<StepBatch>& a, const std::vector<StepBatch>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].seqs.size() != b[i].seqs.size()) return false;
    for (std::size_t j = 0; j < a[i].seqs.size(); ++j) {
      const SeqSlice &x = a[i].seqs[j], &y = b[i].seqs[j];
      if (x.cached != y.cached || x.new_tokens != y.new_tokens || x.blocks != y.blocks)
        return false;
    }
  }
  return true;
}

TEST(ServePrepare, AClosedLoopReplayPlansTheRunsStepsWhateverTheyTake) {
  const std::vector<Request> r = requests(16, 0);
  const std::vector<StepBatch> warm_guess = planned(closed_loop(8), r, 0.004);
  ASSERT_GT(warm_guess.size(), 40u);
  EXPECT_TRUE(same(warm_guess, planned(closed_loop(8), r, 0.031)));
  EXPECT_TRUE(same(warm_guess, planned(closed_loop(8), r, 0.25)));
}

TEST(ServePrepare, AnOpenLoopReplayCanMissSteps) {
  SchedulerConfig open = closed_loop(0);
  const std::vector<Request> r = requests(16, 0.05);
  EXPECT_FALSE(same(planned(open, r, 0.004), planned(open, r, 0.031)));
}

}  // namespace
}  // namespace tpb
