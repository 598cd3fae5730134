// run's point on a fake device whose memory runs out where the plan cannot see it: NCCL's
// lazily allocated buffers (the budget re-read after the first collectives) and a workspace the
// first warm-up step grows (an allocation failure agreed as oom on every rank, not a
// BackendError that ends the job). Its own main: run_point agrees over MPI; ctest runs it on
// one rank (unit) and on two (mpi), where every rank must end the point the same way.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "base/errors.h"
#include "harness/config/run_spec.h"
#include "harness/drive/point_runner.h"
#include "harness/mpi/world.h"
#include "tests/support/null_device.h"

namespace tpb {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Real host buffers under a budget, as the cpu backend keeps one; ops do nothing, except that
// the first GEMM grows a workspace (`lazy_bytes`), as a GPU backend's first step does.
class BudgetDevice final : public test::HeapDevice {
 public:
  BudgetDevice(double budget, std::size_t lazy_bytes) : lazy_bytes_(lazy_bytes) {
    caps_.backend = "fake";
    caps_.name = "fake";
    caps_.dtypes = {DType::fp32};
    caps_.host_compute = true;
    caps_.memory_bytes = budget;
  }
  DeviceBuffer alloc(std::size_t bytes) override {
    if (used_ + static_cast<double>(bytes) > caps_.memory_bytes)
      throw DeviceOom("fake alloc of " + std::to_string(bytes) + " B exceeds the budget");
    used_ += static_cast<double>(bytes);
    return HeapDevice::alloc(bytes);
  }
  void gemm(const void*, const void*, void*, int64_t, int64_t, int64_t, DType) override {
    if (lazy_bytes_ > 0 && !workspace_.get()) workspace_ = alloc(lazy_bytes_);
  }
  // What the first collectives left: here, `taken` bytes fewer (NCCL's buffers on a GPU).
  void refresh_budget() override {
    ++refreshed;
    caps_.memory_bytes -= taken;
  }
  double taken = 0;
  int refreshed = 0;

 private:
  std::size_t lazy_bytes_;
  double used_ = 0;  // never given back: the test's points are short
  DeviceBuffer workspace_;
};

// tiny, one layer, decode B = 1 at context 16, TP = every rank: 60 MiB of fp32 weights whole,
// 30 MiB per rank at TP 2, inside a 256 MiB budget and outside the 6 MiB left of it below.
RunSpec spec_for(int world) {
  const nlohmann::json cfg = {{"backend", "cpu"}, {"tp", world}, {"model", "tiny"},
                              {"layers", 1},      {"batch", 1},  {"context", 16},
                              {"steps", 2},       {"warmup", 1}, {"collective_timeout", 30}};
  return resolve_run_spec(cfg, world, TPB_SOURCE_DIR "/configs");
}

// Rank 0 holds the record; the others nothing. Every rank must come back (none left waiting).
PointRecord outcome_on_rank0(const std::optional<PointOutcome>& out, const World& w) {
  EXPECT_EQ(out.has_value(), w.rank == 0);
  int ok = 1, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_SUM, w.comm);
  EXPECT_EQ(all, w.size);  // every rank returned from the point
  return out ? out->record : PointRecord{};
}

TEST(PointOom, WarmupAllocationFailureIsOomOnEveryRank) {
  const World w = describe_world(MPI_COMM_WORLD);
  BudgetDevice dev(256 * kMiB, static_cast<std::size_t>(512 * kMiB));
  std::optional<PointOutcome> out;
  ASSERT_NO_THROW(out = run_point(spec_for(w.size), w, dev, Peaks{}));
  const PointRecord r = outcome_on_rank0(out, w);
  if (w.rank != 0) return;
  EXPECT_EQ(r.status, PointStatus::oom);
  EXPECT_NE(r.reason.find("although the plan fit"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("rank 0: fake alloc of 536870912 B"), std::string::npos) << r.reason;
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_LT(r.memory->need_bytes, r.memory->have_bytes);
}

TEST(PointOom, BudgetIsReadAfterTheFirstCollectives) {
  const World w = describe_world(MPI_COMM_WORLD);
  BudgetDevice dev(256 * kMiB, 0);
  dev.taken = 250 * kMiB;  // what the communicator and its first all-reduce took
  std::optional<PointOutcome> out;
  ASSERT_NO_THROW(out = run_point(spec_for(w.size), w, dev, Peaks{}));
  EXPECT_EQ(dev.refreshed, 1);
  const PointRecord r = outcome_on_rank0(out, w);
  if (w.rank != 0) return;
  EXPECT_EQ(r.status, PointStatus::oom) << r.reason;
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_DOUBLE_EQ(r.memory->have_bytes, 6 * kMiB);  // the budget as re-read
  EXPECT_NE(r.reason.find("KV cache + weights + activations need"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace tpb

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  MPI_Init(&argc, &argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
