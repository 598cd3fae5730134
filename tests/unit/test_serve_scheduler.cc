// The serve scheduler on a virtual clock: continuous against static batching, chunked prefill,
// paged KV accounting with preemption, rejection, the closed-loop client and determinism.
#include <gtest/gtest.h>

#include <set>

#include "base/errors.h"
#include "harness/serve/block_pool.h"
#include "harness/serve/scheduler.h"
#include "harness/serve/simulate.h"

namespace tpb {
namespace {

constexpr double kStep = 0.01;  // a fixed step duration: the tests pin policy, not speed
double fixed_step(const StepPlan&) {
  return kStep;
}

std::vector<Request> requests(int64_t n, int64_t prompt, const std::vector<int64_t>& outputs,
                              double gap_s = 0) {
  std::vector<Request> r;
  for (int64_t i = 0; i < n; ++i)
    r.push_back({.id = i,
                 .arrival_s = gap_s * static_cast<double>(i),
                 .prompt_len = prompt,
                 .output_len = outputs[static_cast<size_t>(i) % outputs.size()]});
  return r;
}

SchedulerConfig config(SchedulerKind kind, int64_t max_running, int64_t kv_blocks,
                       int64_t chunk = 0) {
  SchedulerConfig c;
  c.kind = kind;
  c.max_running = max_running;
  c.kv_blocks = kv_blocks;
  c.block_tokens = 16;
  c.chunk = chunk;
  return c;
}

// What every plan must satisfy, whatever the policy: tables cover exactly the positions the
// step touches, use only ids in [0, kv_blocks), no block is in two sequences' tables, the
// tables fit in what is allocated, and allocation fits in the cache.
void expect_kv_invariants(const SimResult& sim, const SchedulerConfig& cfg) {
  for (size_t k = 0; k < sim.steps.size(); ++k) {
    const StepPlan& p = sim.steps[k];
    std::set<int32_t> seen;
    int64_t listed = 0;
    EXPECT_LE(static_cast<int64_t>(p.batch.seqs.size()), cfg.max_running) << "step " << k;
    for (const SeqSlice& s : p.batch.seqs) {
      EXPECT_GE(s.new_tokens, 1);
      EXPECT_EQ(static_cast<int64_t>(s.blocks.size()),
                blocks_for(s.cached + s.new_tokens, cfg.block_tokens))
          << "step " << k;
      for (const int32_t b : s.blocks) {
        EXPECT_TRUE(b >= 0 && b < cfg.kv_blocks) << b;
        EXPECT_TRUE(seen.insert(b).second) << "block " << b << " shared at step " << k;
      }
      listed += static_cast<int64_t>(s.blocks.size());
    }
    EXPECT_LE(listed * cfg.block_tokens, p.kv_used_tokens) << "step " << k;
    EXPECT_LE(p.kv_used_tokens, p.kv_capacity_tokens) << "step " << k;
    EXPECT_EQ(p.kv_capacity_tokens, cfg.kv_blocks * cfg.block_tokens);
  }
}

// Every accepted request produced all its tokens, stamped in order, the first at first_token_s.
void expect_all_complete(const Scheduler& s) {
  for (const RequestLog& r : s.logs()) {
    ASSERT_FALSE(r.rejected) << r.id << ": " << r.reason;
    ASSERT_EQ(static_cast<int64_t>(r.token_s.size()), r.output_len) << r.id;
    ASSERT_EQ(r.token_step.size(), r.token_s.size());
    EXPECT_EQ(r.first_token_s, r.token_s.front());
    EXPECT_EQ(r.finish_s, r.token_s.back());
    EXPECT_GE(r.admitted_s, r.arrival_s);
    EXPECT_GE(r.first_token_s, r.admitted_s);
    for (size_t i = 1; i < r.token_s.size(); ++i) EXPECT_GE(r.token_s[i], r.token_s[i - 1]);
  }
}

int64_t sampled_real_tokens(const SimResult& sim) {
  int64_t n = 0;
  for (const StepPlan& p : sim.steps) n += p.batch.sampled() - p.padding_tokens;
  return n;
}

// (a) 64 requests, 8 slots, prompt 64, output uniform over 16..256 (a fixed pattern of it):
// static runs each batch for its longest output, continuous refills a slot at once.
TEST(ServeScheduler, ContinuousRefillsFreedSlotsStaticWaitsForTheBatch) {
  std::vector<int64_t> outputs;
  for (int64_t i = 0; i < 64; ++i) outputs.push_back(16 + (i * 97) % 241);  // spread over 16..256
  int64_t total_out = 0;
  for (const auto o : outputs) total_out += o;
  const auto reqs = requests(64, 64, outputs);
  Scheduler cont(config(SchedulerKind::continuous, 8, 4096), reqs, 0);
  Scheduler stat(config(SchedulerKind::static_batch, 8, 4096), reqs, 0);
  const auto c = simulate(cont, fixed_step), s = simulate(stat, fixed_step);
  expect_all_complete(cont);
  expect_all_complete(stat);
  EXPECT_EQ(sampled_real_tokens(c), total_out);
  EXPECT_EQ(sampled_real_tokens(s), total_out);
  // Continuous needs about total / 8 steps; static about 8 x the mean batch maximum.
  EXPECT_LT(static_cast<double>(c.steps.size()), 0.8 * static_cast<double>(s.steps.size()));
  EXPECT_GE(c.steps.size(), static_cast<size_t>(total_out / 8));
  for (size_t k = 0; k + 1 < c.steps.size(); ++k)  // a slot freed with a queue: refilled next step
    if (c.steps[k].waiting > 0) EXPECT_EQ(c.steps[k + 1].running, 8) << "step " << k + 1;
  // Static: prompts only in a step of new prompts, and padding fills finished slots.
  int64_t padding = 0;
  for (const StepPlan& p : s.steps) {
    if (p.prefill_tokens > 0) EXPECT_EQ(p.decode_tokens + p.padding_tokens, 0);
    for (const SeqSlice& q : p.batch.seqs) EXPECT_TRUE(q.samples);
    padding += p.padding_tokens;
  }
  EXPECT_GT(padding, 0);
  EXPECT_EQ(static_cast<int64_t>(s.steps.size()) * 8, total_out + padding);  // 8 a step
  expect_kv_invariants(c, config(SchedulerKind::continuous, 8, 4096));
  expect_kv_invariants(s, config(SchedulerKind::static_batch, 8, 4096));
}

// Static: outputs 1 and 3 with prompt 16. Step 0 prefills both (A's only token, B's first);
// steps 1 and 2 decode B while A, done, pads: one discarded token recomputing its last
// position (cached 15) in its own block, which it keeps until the batch ends.
TEST(ServeScheduler, StaticPadsFinishedSequencesUntilTheBatchEnds) {
  Scheduler s(config(SchedulerKind::static_batch, 2, 8), requests(3, 16, {1, 3, 1}), 0);
  const auto sim = simulate(s, fixed_step);
  ASSERT_EQ(sim.steps.size(), 4u);  // 3 for the first batch, 1 for the third request
  EXPECT_EQ(sim.steps[0].prefill_tokens, 32);
  for (const size_t k : {1u, 2u}) {
    const StepPlan& p = sim.steps[k];
    EXPECT_EQ(p.padding_tokens, 1);
    EXPECT_EQ(p.decode_tokens, 1);
    EXPECT_EQ(p.ids, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(p.batch.seqs[0].cached, 15);
    EXPECT_TRUE(p.batch.seqs[0].samples);
    EXPECT_EQ(p.kv_used_tokens, 3 * 16);  // A's block, B's two (17 and 18 positions)
    EXPECT_EQ(p.waiting, 1);              // the third waits for the batch, not for room
  }
  EXPECT_EQ(s.logs()[0].finish_s, sim.end_s[0]);  // its token came at step 0
  EXPECT_EQ(s.logs()[2].admitted_s, sim.end_s[2]);
  EXPECT_EQ(sim.steps[3].batch.seqs.at(0).blocks, (std::vector<int32_t>{0}));  // freed, reused
}

TEST(ServeScheduler, LongPromptIsChunkedByTheBudget) {
  Scheduler s(config(SchedulerKind::continuous, 4, 1024, 256), requests(1, 1024, {3}), 0);
  const auto sim = simulate(s, fixed_step);
  ASSERT_EQ(sim.steps.size(), 4u + 2u);  // ceil(1024 / 256) prefill steps, then 2 decodes
  for (int k = 0; k < 4; ++k) {
    const SeqSlice& q = sim.steps[k].batch.seqs.at(0);
    EXPECT_EQ(q.cached, 256 * k);
    EXPECT_EQ(q.new_tokens, 256);
    EXPECT_EQ(q.samples, k == 3);  // only the last chunk makes the first token
  }
  EXPECT_EQ(s.logs()[0].token_step, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_DOUBLE_EQ(s.logs()[0].first_token_s, 4 * kStep);
}

// Three short requests decode while a 1024 prompt arrives (t = 0.05).
std::vector<Request> decodes_then_long_prompt() {
  auto r = requests(3, 16, {200});
  r.push_back({.id = 3, .arrival_s = 0.05, .prompt_len = 1024, .output_len = 4});
  return r;
}

TEST(ServeScheduler, ChunkedPrefillRunsDecodesFirstWithinTheBudget) {
  const auto reqs = decodes_then_long_prompt();
  Scheduler s(config(SchedulerKind::continuous, 4, 1024, 256), reqs, 0);
  const auto sim = simulate(s, fixed_step);
  int64_t long_steps = 0;
  for (const StepPlan& p : sim.steps) {
    EXPECT_LE(p.batch.tokens(), 256);
    bool prefill_seen = false;
    for (size_t i = 0; i < p.ids.size(); ++i) {
      const auto& q = p.batch.seqs[i];
      const bool decode = q.new_tokens == 1 && q.cached >= reqs[p.ids[i]].prompt_len;
      EXPECT_FALSE(decode && prefill_seen) << "a decode after a prefill";
      prefill_seen |= !decode;
    }
    if (std::find(p.ids.begin(), p.ids.end(), 3) != p.ids.end() && p.prefill_tokens > 0) {
      ++long_steps;
      EXPECT_EQ(p.decode_tokens, 3);  // the decodes did not stall
      EXPECT_EQ(p.prefill_tokens, std::min<int64_t>(253, 1024 - 253 * (long_steps - 1)));
    }
  }
  EXPECT_EQ(long_steps, 5);  // ceil(1024 / (256 - 3))
  expect_all_complete(s);
}

TEST(ServeScheduler, UnchunkedPrefillTakesOneStepBesideTheDecodes) {
  Scheduler s(config(SchedulerKind::continuous, 4, 1024, 0), decodes_then_long_prompt(), 0);
  const auto sim = simulate(s, fixed_step);
  int64_t long_steps = 0;
  for (const StepPlan& p : sim.steps) {
    if (std::find(p.ids.begin(), p.ids.end(), 3) == p.ids.end() || p.prefill_tokens == 0) continue;
    ++long_steps;
    EXPECT_EQ(p.prefill_tokens, 1024);
    EXPECT_EQ(p.decode_tokens, 3);
    EXPECT_EQ(p.batch.tokens(), 1027);
    EXPECT_EQ(p.ids.back(), 3);  // decodes first, the new prompt after them
  }
  EXPECT_EQ(long_steps, 1);
}

// (c) 16 requests of 32 + 64 tokens (2 blocks of prompt, up to 6 blocks) in 12 blocks with 8
// slots: admission waits for blocks, decodes run out of blocks and preempt, all complete.
TEST(ServeScheduler, TinyCacheQueuesPreemptsRecomputesAndCompletes) {
  for (const int64_t chunk : {0, 16}) {
    for (const auto kind : {SchedulerKind::continuous, SchedulerKind::static_batch}) {
      SCOPED_TRACE(std::string(scheduler_name(kind)) + " chunk " + std::to_string(chunk));
      const auto cfg = config(kind, 8, 12, chunk);
      const auto reqs = requests(16, 32, {64, 40, 64, 10});
      Scheduler s(cfg, reqs, 0);
      const auto sim = simulate(s, fixed_step, 100000);
      expect_all_complete(s);
      expect_kv_invariants(sim, cfg);
      EXPECT_GT(s.preemptions(), 0);
      bool blocked = false, reused = false;
      std::map<int32_t, int64_t> owner;  // block -> the last request whose table held it
      std::map<int64_t, int64_t> made;   // request -> tokens made so far, from the plans
      for (const StepPlan& p : sim.steps) {
        blocked |= p.kv_blocked && p.waiting > 0;
        for (size_t i = 0; i < p.ids.size(); ++i) {
          const auto& q = p.batch.seqs[i];
          const int64_t id = p.ids[i];
          for (const int32_t b : q.blocks) {
            reused |= owner.count(b) && owner[b] != id;
            owner[b] = id;
          }
          // A (re)started prefill covers the prompt and every token made before preemption.
          if (q.cached == 0 && made[id] > 0 && chunk == 0)
            EXPECT_EQ(q.new_tokens, reqs[id].prompt_len + made[id]) << "request " << id;
          if (q.samples) ++made[id];  // padding counts too, but a finished one never restarts
        }
      }
      EXPECT_TRUE(blocked);
      EXPECT_TRUE(reused);
      int64_t logged = 0;
      for (const auto& r : s.logs()) logged += r.preemptions;
      EXPECT_EQ(logged, s.preemptions());
    }
  }
}

// Two requests of 16 + 40 tokens in 4 blocks of 16, both admitted at step 0 with one block
// each. After step k each has 16 + k positions cached and k + 1 tokens made; at step 17 A
// (admitted first) needs a third block with none free, so B, the most recently admitted, is
// preempted with 17 tokens made. B then waits (kv_blocked) until A's last token at step 39, and
// at step 40 prefills 16 + 17 = 33 positions again, which makes its 18th token.
TEST(ServeScheduler, PreemptsTheMostRecentlyAdmittedAndRecomputesItsTokens) {
  Scheduler s(config(SchedulerKind::continuous, 4, 4), requests(2, 16, {40}), 0);
  const auto sim = simulate(s, fixed_step);
  const RequestLog &a = s.logs()[0], &b = s.logs()[1];
  EXPECT_EQ(a.preemptions, 0);
  EXPECT_EQ(b.preemptions, 1);
  ASSERT_EQ(sim.steps.size(), 63u);  // 40 steps of A, then B's prefill and 22 decodes
  EXPECT_EQ(sim.steps[17].preempted, 1);
  EXPECT_EQ(sim.steps[17].ids, (std::vector<int64_t>{0}));
  EXPECT_TRUE(sim.steps[18].kv_blocked);
  const SeqSlice& again = sim.steps[40].batch.seqs.at(0);
  EXPECT_EQ(sim.steps[40].ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(again.cached, 0);
  EXPECT_EQ(again.new_tokens, 33);
  EXPECT_TRUE(again.samples);
  EXPECT_EQ(b.token_step[16], 16);  // made before the preemption: keeps its step and time
  EXPECT_DOUBLE_EQ(b.token_s[16], sim.end_s[16]);
  EXPECT_EQ(b.token_step[17], 40);
  EXPECT_EQ(a.finish_s, sim.end_s[39]);
}

// (d) 60 + 10 tokens can never fit 4 blocks of 16: rejected at arrival with a reason.
TEST(ServeScheduler, RejectsWhatCanNeverFit) {
  auto reqs = requests(3, 16, {8});
  reqs[1].prompt_len = 60;
  reqs[1].output_len = 10;
  auto cfg = config(SchedulerKind::continuous, 4, 4);
  cfg.max_ctx = 40;
  reqs[2].prompt_len = 30;  // 30 + 8 = 38 fits max_ctx 40; then 41 does not
  reqs[2].output_len = 11;
  Scheduler s(cfg, reqs, 0);
  simulate(s, fixed_step);
  EXPECT_TRUE(s.done());
  EXPECT_FALSE(s.logs()[0].rejected);
  EXPECT_EQ(static_cast<int64_t>(s.logs()[0].token_s.size()), 8);
  EXPECT_TRUE(s.logs()[1].rejected);
  EXPECT_NE(s.logs()[1].reason.find("exceeds the KV cache"), std::string::npos)
      << s.logs()[1].reason;
  EXPECT_TRUE(s.logs()[2].rejected);
  EXPECT_NE(s.logs()[2].reason.find("max_ctx 40"), std::string::npos) << s.logs()[2].reason;
  EXPECT_TRUE(s.logs()[1].token_s.empty());
}

// (e) The closed-loop client keeps `concurrency` requests in flight; each new one arrives when
// another finishes.
TEST(ServeScheduler, ClosedLoopKeepsConcurrencyInFlight) {
  auto cfg = config(SchedulerKind::continuous, 8, 4096);
  cfg.concurrency = 4;
  const int64_t n = 20;
  Scheduler s(cfg, requests(n, 32, {5, 17, 9, 30, 2}), 2);
  const auto sim = simulate(s, fixed_step);
  expect_all_complete(s);
  for (size_t k = 0; k < sim.steps.size(); ++k) {
    const double at = k == 0 ? 0 : sim.end_s[k - 1];
    int64_t finished = 0;
    for (const auto& r : s.logs()) finished += r.finish_s >= 0 && r.finish_s <= at;
    EXPECT_EQ(sim.steps[k].running + sim.steps[k].waiting, std::min<int64_t>(4, n - finished))
        << "step " << k;
  }
  std::multiset<double> finishes;
  for (const auto& r : s.logs()) finishes.insert(r.finish_s);
  for (const auto& r : s.logs()) {
    EXPECT_EQ(r.warmup, r.id < 2);
    if (r.id < 4)
      EXPECT_EQ(r.arrival_s, 0.0);
    else
      EXPECT_TRUE(finishes.count(r.arrival_s)) << "request " << r.id << " at " << r.arrival_s;
  }
}

TEST(ServeScheduler, OpenLoopIdlesUntilTheNextArrival) {
  Scheduler s(config(SchedulerKind::continuous, 4, 64), requests(3, 8, {2}, 1.0), 0);
  EXPECT_EQ(s.next_ready_s(0), 0.0);
  const auto sim = simulate(s, fixed_step);
  for (const auto& r : s.logs()) {
    EXPECT_DOUBLE_EQ(r.admitted_s, r.arrival_s);
    EXPECT_NEAR(r.first_token_s - r.arrival_s, kStep, 1e-12);
  }
  EXPECT_EQ(sim.steps.size(), 6u);
}

bool same_plan(const StepPlan& a, const StepPlan& b) {
  if (a.ids != b.ids || a.running != b.running || a.waiting != b.waiting ||
      a.preempted != b.preempted || a.kv_used_tokens != b.kv_used_tokens ||
      a.batch.seqs.size() != b.batch.seqs.size())
    return false;
  for (size_t i = 0; i < a.batch.seqs.size(); ++i) {
    const auto &x = a.batch.seqs[i], &y = b.batch.seqs[i];
    if (x.cached != y.cached || x.new_tokens != y.new_tokens || x.samples != y.samples ||
        x.blocks != y.blocks)
      return false;
  }
  return true;
}

// (f) Every rank runs its own copy: the same inputs must give the same plans.
TEST(ServeScheduler, SameInputsGiveIdenticalPlans) {
  const auto cfg = config(SchedulerKind::continuous, 6, 20, 32);
  const auto reqs = requests(30, 40, {50, 3, 70, 12}, 0.003);
  // A duration that depends on the plan, as a measured one does.
  auto dur = [](const StepPlan& p) { return 1e-3 + 1e-5 * static_cast<double>(p.batch.tokens()); };
  Scheduler a(cfg, reqs, 3), b(cfg, reqs, 3);
  const auto x = simulate(a, dur), y = simulate(b, dur);
  ASSERT_EQ(x.steps.size(), y.steps.size());
  for (size_t k = 0; k < x.steps.size(); ++k) EXPECT_TRUE(same_plan(x.steps[k], y.steps[k])) << k;
  for (size_t i = 0; i < a.logs().size(); ++i) EXPECT_EQ(a.logs()[i].token_s, b.logs()[i].token_s);
  EXPECT_GT(a.preemptions(), 0);  // the case exercises the preemption path too
}

TEST(ServeScheduler, BadConfigNamesTheField) {
  auto cfg = config(SchedulerKind::continuous, 0, 10);
  EXPECT_THROW(Scheduler(cfg, {}, 0), BadInput);
  cfg = config(SchedulerKind::continuous, 8, 0);
  EXPECT_THROW(Scheduler(cfg, {}, 0), BadInput);
  cfg = config(SchedulerKind::continuous, 8, 10, 4);  // a budget smaller than the decodes
  try {
    Scheduler(cfg, {}, 0);
    FAIL() << "no throw";
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--chunk: ", 0), 0u) << e.what();
  }
  Scheduler none(config(SchedulerKind::continuous, 8, 10), {}, 0);
  EXPECT_TRUE(none.done());
}

TEST(ServeBlockPool, LowestFreeFirstAndFreedReused) {
  BlockPool pool(4);
  std::vector<int32_t> a, b;
  pool.take(2, a);
  pool.take(1, b);
  EXPECT_EQ(a, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(b, (std::vector<int32_t>{2}));
  pool.give_back(a);
  EXPECT_TRUE(a.empty());
  pool.take(3, a);
  EXPECT_EQ(a, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_THROW(pool.take(1, b), std::logic_error);
  EXPECT_EQ(blocks_for(17, 16), 2);
  EXPECT_EQ(blocks_for(16, 16), 1);
}

}  // namespace
}  // namespace tpb
