// The two passes of `collectives` and `calibrate` (harness/measure/timed_pass.h) on a device
// that logs its stamps: the timed pass has one stamp before the calls and one after, none
// between them (the loop before it stamped twice per call: 2 * iters stamp kernels on a GPU
// inside nccl-tests' figure), and its time is the stamps' span / iters; the stamped pass
// still stamps each call, apart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/measure/timed_pass.h"
#include "tests/support/null_device.h"

namespace tpb {
namespace {

// Each mark reads a clock that the calls advance by 1 us; the log keeps the order of marks,
// calls and waits.
class LoggingDevice : public test::NullDevice {
 public:
  std::vector<std::string> log;
  int64_t now_ns = 1'000'000;
  void reserve_marks(std::size_t n) override { slots_.assign(n, 0); }
  void mark(std::size_t slot) override {
    log.emplace_back("mark");
    slots_.at(slot) = now_ns;
  }
  void collect_marks(std::size_t first, std::size_t count, int64_t* ns) override {
    for (std::size_t i = 0; i < count; ++i) ns[i] = slots_.at(first + i);
  }
  void synchronize() override { log.emplace_back("sync"); }
  void call() {
    log.emplace_back("call");
    now_ns += 1000;
  }

 private:
  std::vector<int64_t> slots_;
};

TEST(TimedPass, StampsOnlyAroundTheLoop) {
  LoggingDevice dev;
  const double t = timed_pass(dev, 5, [&](int n) {
    for (int i = 0; i < n; ++i) dev.call();
  });
  const std::vector<std::string> want{"mark", "call", "call", "call",
                                      "call", "call", "mark", "sync"};
  EXPECT_EQ(dev.log, want);
  EXPECT_NEAR(t, 1e-6, 1e-15);  // 5 calls of 1 us between the two stamps
}

TEST(TimedPass, StampedPassStampsEachCallApart) {
  LoggingDevice dev;
  const std::vector<SegmentRecord> segs = stamped_pass(dev, 3, [&] { dev.call(); });
  const std::vector<std::string> want{"mark", "call", "mark", "mark", "call",
                                      "mark", "mark", "call", "mark", "sync"};
  EXPECT_EQ(dev.log, want);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_NEAR(segs[1].t0, 1.001e-3, 1e-12);  // after the first call's 1 us
  EXPECT_NEAR(segs[1].t1 - segs[1].t0, 1e-6, 1e-12);
}

}  // namespace
}  // namespace tpb
