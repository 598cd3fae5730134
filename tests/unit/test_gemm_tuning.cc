// The tuning pass before the measured steps (issue 54, defect 5), on two ranks as threads of
// this process: TpModel::tune_gemms issues every GEMM shape the steps will run (serving's row
// counts included), and a backend that times candidates in it, gathering the times through the
// Collective (group_gather), keeps one kernel per shape on every rank despite a near-tie timed
// apart. The recording device below does what CudaDevice::tune_gemms does, with fake times.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "layers/cpu/cpu_device.h"
#include "layers/cuda/plan/gemm_choice.h"
#include "tests/support/thread_collective.h"
#include "tp_model/mixed_check.h"
#include "tp_model/tp_model.h"

namespace tpb {
namespace {

using Shape = std::tuple<int64_t, int64_t, int64_t>;  // m, n, k

// A CpuDevice that records the GEMM shapes it runs, and in tune_gemms the shapes it is asked
// to tune, each timed at two candidates with this rank's noise: rank 0 finds candidate 1 a
// hair faster, rank 1 candidate 0, as two H200s did (45.73 vs 45.89 us).
class TuningDevice final : public Device {
 public:
  explicit TuningDevice(int rank) : cpu_(DeviceOptions{}), rank_(rank) {}
  const DeviceCaps& caps() const override { return cpu_.caps(); }
  DeviceBuffer alloc(std::size_t b) override { return cpu_.alloc(b); }
  void free_raw(void* p) noexcept override { cpu_.free_raw(p); }
  void upload(void* d, const float* s, std::size_t n, DType t) override { cpu_.upload(d, s, n, t); }
  void download(float* d, const void* s, std::size_t n, DType t) override {
    cpu_.download(d, s, n, t);
  }
  void fill(void* d, DType t, const FillSpec& f) override { cpu_.fill(d, t, f); }
  void gemm(const void* x, const void* w, void* y, int64_t m, int64_t n, int64_t k,
            DType t) override {
    if (tuning_) {
      tuned_.push_back({m, n, k});
      return;  // timed, not run
    }
    ran_.insert({m, n, k});
    cpu_.gemm(x, w, y, m, n, k, t);
  }
  void rmsnorm(const void* x, const void* g, void* y, int64_t r, int64_t d, float e,
               DType t) override {
    cpu_.rmsnorm(x, g, y, r, d, e, t);
  }
  void rope(void* q, int64_t n, int64_t tps, int64_t p0, const AttnShape& s, float th,
            DType t) override {
    cpu_.rope(q, n, tps, p0, s, th, t);
  }
  void kv_write(const void* q, void* k, void* v, int64_t tps, int64_t p0, const AttnShape& s,
                DType t) override {
    cpu_.kv_write(q, k, v, tps, p0, s, t);
  }
  void attention_decode(const void* q, const void* k, const void* v, void* o, int64_t c,
                        const AttnShape& s, DType t) override {
    cpu_.attention_decode(q, k, v, o, c, s, t);
  }
  void attention_prefill(const void* q, const void* k, const void* v, void* o, int64_t n,
                         const AttnShape& s, DType t) override {
    cpu_.attention_prefill(q, k, v, o, n, s, t);
  }
  void rope_varlen(void* q, const StepBatch& b, const AttnShape& s, float th, DType t) override {
    cpu_.rope_varlen(q, b, s, th, t);
  }
  void kv_write_varlen(const void* q, void* k, void* v, const StepBatch& b, const KvLayout& kv,
                       const AttnShape& s, DType t) override {
    cpu_.kv_write_varlen(q, k, v, b, kv, s, t);
  }
  void attention_varlen(const void* q, const void* k, const void* v, void* o, const StepBatch& b,
                        const KvLayout& kv, const AttnShape& s, DType t) override {
    cpu_.attention_varlen(q, k, v, o, b, kv, s, t);
  }
  void row_argmax(const void* l, int64_t r, int64_t c, float* mx, int32_t* col, DType t) override {
    cpu_.row_argmax(l, r, c, mx, col, t);
  }
  void swiglu(const void* g, void* o, int64_t r, int64_t i, DType t) override {
    cpu_.swiglu(g, o, r, i, t);
  }
  void add(void* x, const void* y, std::size_t n, DType t) override { cpu_.add(x, y, n, t); }
  void busy_work(double s) override { cpu_.busy_work(s); }
  void reserve_marks(std::size_t n) override { cpu_.reserve_marks(n); }
  void mark(std::size_t s) override { cpu_.mark(s); }
  void collect_marks(std::size_t f, std::size_t n, int64_t* h) override {
    cpu_.collect_marks(f, n, h);
  }
  void synchronize() override { cpu_.synchronize(); }

  // As LtGemm's pass: time each shape (here: this rank's fake times), gather, agree.
  void tune_gemms(const std::function<void()>& gemms, const GroupGather& gather) override {
    tuning_ = true;
    tuned_.clear();
    gemms();
    tuning_ = false;
    std::vector<float> mine;
    for (std::size_t i = 0; i < tuned_.size(); ++i) {
      mine.push_back(rank_ == 0 ? 45.89f : 45.75f);
      mine.push_back(rank_ == 0 ? 45.73f : 45.95f);
    }
    const std::vector<float> all = gather(mine);
    const std::size_t ranks = all.size() / mine.size();
    for (std::size_t j = 0; j < tuned_.size(); ++j) {
      std::vector<std::vector<double>> per_rank(ranks);
      for (std::size_t r = 0; r < ranks; ++r)
        per_rank[r] = {all[r * mine.size() + 2 * j], all[r * mine.size() + 2 * j + 1]};
      alone_[tuned_[j]] = fastest_candidate(per_rank[static_cast<std::size_t>(rank_)]);
      chosen_[tuned_[j]] = agreed_candidate(per_rank);
    }
  }

  std::vector<Shape> tuned_;
  std::set<Shape> ran_;
  std::map<Shape, int> alone_, chosen_;

 private:
  CpuDevice cpu_;
  int rank_;
  bool tuning_ = false;
};

ModelShape small_model() {
  ModelShape m;
  m.name = "tuning-test";
  m.hidden = 64;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = 2;
  m.head_dim = 16;
  m.intermediate = 128;
  m.vocab = 384;
  return m;
}

TpModelConfig fixed_config(int tp, int rank) {
  TpModelConfig c;
  c.shape = small_model();
  c.layers = 2;
  c.tp = tp;
  c.tp_rank = rank;
  c.batch = 3;
  c.context = 5;
  c.lm_head = true;
  return c;
}

TEST(GemmTuning, TwoRanksKeepOneKernelPerShapeWhereEachAloneWouldNot) {
  std::vector<std::map<Shape, int>> chosen(2), alone(2);
  testing::run_ranks(2, [&](int r, Collective& coll) {
    TuningDevice dev(r);
    TpModel model(dev, fixed_config(2, r));
    model.tune_gemms(coll);
    chosen[r] = dev.chosen_;
    alone[r] = dev.alone_;
  });
  ASSERT_FALSE(chosen[0].empty());
  EXPECT_EQ(chosen[0], chosen[1]);
  for (const auto& [shape, c] : chosen[0]) {
    EXPECT_EQ(c, 0);  // the slowest rank's times: 45.89 vs 45.95 us
    EXPECT_NE(alone[0].at(shape), alone[1].at(shape));  // what each rank chose alone
  }
}

TEST(GemmTuning, TheFixedPassCoversEveryShapeOfTheStepExactly) {
  testing::run_ranks(2, [&](int r, Collective& coll) {
    TuningDevice dev(r);
    TpModel model(dev, fixed_config(2, r));
    model.tune_gemms(coll);
    model.step(coll, nullptr, 0, nullptr);
    // As sets: two GEMMs may share a shape (here qkv and down, n = k = 64), timed once by LtGemm.
    EXPECT_EQ(std::set<Shape>(dev.tuned_.begin(), dev.tuned_.end()), dev.ran_);
  });
}

TEST(GemmTuning, TheServingPassCoversEveryRowCountItsStepsMeet) {
  const KvLayout kv{24, 16};
  const std::vector<StepBatch> script = mixed_check_script(kv, 37, 45, 20);
  testing::run_ranks(2, [&](int r, Collective& coll) {
    TuningDevice dev(r);
    TpModelConfig c = fixed_config(2, r);
    c.serve = serve_shape_for(script, kv, true);
    TpModel model(dev, c);
    model.tune_gemms(coll);
    for (std::size_t i = 0; i < script.size(); ++i)
      model.step_mixed(coll, nullptr, static_cast<int>(i), nullptr, script[i]);
    // Each shape a step ran has its weight tuned at the row count tuned_rows_for gives it.
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> rows_by_weight;
    for (const auto& [m, n, k] : dev.tuned_) rows_by_weight[{n, k}].push_back(m);
    ASSERT_FALSE(dev.ran_.empty());
    for (const auto& [m, n, k] : dev.ran_) {
      const auto it = rows_by_weight.find({n, k});
      ASSERT_NE(it, rows_by_weight.end()) << "n=" << n << " k=" << k << " never tuned";
      EXPECT_GE(tuned_rows_for(m, it->second), m) << "m=" << m << " n=" << n;
    }
  });
}

}  // namespace
}  // namespace tpb
