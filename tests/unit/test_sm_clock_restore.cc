// --inject sm_clock's locked form against a fake NVML whose prior state is an administrator's
// lock: after a normal run, an exception, the hang watchdog's _Exit and SIGTERM/SIGINT (run in a
// forked child), the GPU's state must be the prior one, never the driver default.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "collectives/hang_watchdog.h"
#include "collectives/mpi/mpi_wait.h"
#include "harness/backends/telemetry.h"
#include "layers/clock_control.h"
#include "layers/cpu/cpu_device.h"

namespace tpb {
namespace {

// The fake GPU's clocks, in a MAP_SHARED page so that what a forked child does reaches the test.
struct FakeGpu {
  GpuLock gpu;
  AppClocks app, app_default;
  bool deny_lock = false;  // as NVML without root: NVML_ERROR_NO_PERMISSION
  int resets = 0;          // nvmlDeviceResetGpuLockedClocks calls
};

constexpr GpuLock kAdminLock{true, 1410, 1410};  // nvidia-smi -lgc 1410 by the site

class FakeNvmlClocks final : public ClockControl {
 public:
  FakeNvmlClocks(FakeGpu* g, bool lock_readable) : g_(g), readable_(lock_readable) {}
  ClockState read() noexcept override {
    ClockState s;
    if (readable_) s.gpu = g_->gpu;
    s.app = g_->app;
    s.app_default = g_->app_default;
    return s;
  }
  int lock_gpu(unsigned lo, unsigned hi) noexcept override {
    if (g_->deny_lock) return 4;
    g_->gpu = {true, lo, hi};
    return 0;
  }
  int unlock_gpu() noexcept override {  // the driver default: an admin's lock is gone
    g_->gpu = {};
    ++g_->resets;
    return 0;
  }
  int set_app(AppClocks c) noexcept override {
    g_->app = c;
    return 0;
  }
  int reset_app() noexcept override {
    g_->app = g_->app_default;
    return 0;
  }
  std::string describe(int code) const override {
    return code == 4 ? "Insufficient Permissions (4)" : "error " + std::to_string(code);
  }

 private:
  FakeGpu* g_;
  bool readable_;
};

// A sampler whose clock controls are the fake's: the harness's own ScopedSmClock drives it.
class FakeSampler final : public TelemetrySampler {
 public:
  explicit FakeSampler(ClockControl& c) : c_(c) {}
  void start() override {}
  nlohmann::ordered_json stop() override { return {{"available", false}, {"reason", "fake"}}; }
  double mean_utilization() const override { return -1; }
  ClockControl* clock_control() override { return &c_; }
  std::string why_no_clock_control() const override { return ""; }

 private:
  ClockControl& c_;
};

class SmClockRestore : public ::testing::Test {
 protected:
  void SetUp() override {
    void* p =
        mmap(nullptr, sizeof(FakeGpu), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    gpu_ = new (p) FakeGpu{kAdminLock, {1593, 1755}, {1593, 1980}};
  }
  void TearDown() override { munmap(gpu_, sizeof(FakeGpu)); }

  // Forks a child that holds a 1200 MHz lock and then runs `body`, which is to end it.
  template <class Body>
  pid_t fork_holding_lock(Body body) {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    for (int sig : {SIGTERM, SIGINT}) {  // a job's start (a runner may have left them ignored)
      struct sigaction now {};
      sigaction(sig, nullptr, &now);
      if (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN) std::signal(sig, SIG_DFL);
    }
    FakeNvmlClocks c(gpu_, true);
    SmClockLock lock(c, 1200, std::nullopt);
    if (!lock.applied() || !(gpu_->gpu == GpuLock{true, 1200, 1200})) _exit(90);
    body();
    _exit(91);
  }
  static int wait_for(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }

  FakeGpu* gpu_ = nullptr;
};

TEST_F(SmClockRestore, NormalEndPutsBackTheAdminsLock) {
  FakeNvmlClocks c(gpu_, true);
  {
    SmClockLock lock(c, 1200, std::nullopt);
    ASSERT_TRUE(lock.applied()) << lock.reason();
    EXPECT_EQ(gpu_->gpu, (GpuLock{true, 1200, 1200}));
  }
  EXPECT_EQ(gpu_->gpu, kAdminLock);
  EXPECT_EQ(gpu_->resets, 0);  // never a reset to the default on the way
}

// The harness's holder (what point_runner keeps for the point): the record says which form ran,
// the prior state and whether it came back.
TEST_F(SmClockRestore, TheRecordSaysWhichFormRanAndWhatCameBack) {
  FakeNvmlClocks c(gpu_, true);
  FakeSampler sampler(c);
  DeviceOptions o;
  CpuDevice cpu(o);
  InjectSpec inj;
  inj.sm_clock_mhz = 1200;
  ScopedSmClock held(sampler, cpu, inj);
  ASSERT_TRUE(held.applied()) << held.reason();
  EXPECT_EQ(gpu_->gpu, (GpuLock{true, 1200, 1200}));
  EXPECT_TRUE(held.to_json()["restored"].is_null());  // not yet
  held.release();
  EXPECT_EQ(gpu_->gpu, kAdminLock);
  const nlohmann::ordered_json record = held.to_json();
  EXPECT_EQ(record["form"], "locked");
  EXPECT_EQ(record["requested_mhz"], 1200);
  EXPECT_EQ(record["applied"], true);
  EXPECT_EQ(record["prior"]["gpu_lock"],
            nlohmann::ordered_json({{"min_mhz", 1410}, {"max_mhz", 1410}}));
  EXPECT_EQ(record["prior"]["gpu_lock_source"], "read");
  EXPECT_EQ(record["prior"]["app_clocks"],
            nlohmann::ordered_json({{"mem_mhz", 1593}, {"sm_mhz", 1755}}));
  EXPECT_EQ(record["restored"], true);
}

TEST_F(SmClockRestore, ExceptionThroughThePointRestores) {
  FakeNvmlClocks c(gpu_, true);
  FakeSampler sampler(c);
  DeviceOptions o;
  CpuDevice cpu(o);
  InjectSpec inj;
  inj.sm_clock_mhz = 1200;
  try {
    ScopedSmClock held(sampler, cpu, inj);
    ASSERT_EQ(gpu_->gpu, (GpuLock{true, 1200, 1200}));
    throw std::runtime_error("cuda error mid-point");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(gpu_->gpu, kAdminLock);
  EXPECT_EQ(gpu_->resets, 0);
}

TEST_F(SmClockRestore, WatchdogExitRestoresBeforeExitCode3) {
  const int st = wait_for(
      fork_holding_lock([] { end_hung_job(1, "all_reduce did not complete within 1 s"); }));
  ASSERT_TRUE(WIFEXITED(st)) << st;
  EXPECT_EQ(WEXITSTATUS(st), 3);
  EXPECT_EQ(gpu_->gpu, kAdminLock);
  EXPECT_EQ(gpu_->resets, 0);
}

TEST_F(SmClockRestore, HungCallSeenByTheWatchdogTickRestores) {
  const int st = wait_for(fork_holding_lock([] {
    HangWatchdog dog(0.05, [](const char* what) { end_hung_job(0, what); });
    dog.arm("all_reduce");
    for (;;) pause();  // blocked "in the call": the tick's signal ends the process
  }));
  ASSERT_TRUE(WIFEXITED(st)) << st;
  EXPECT_EQ(WEXITSTATUS(st), 3);
  EXPECT_EQ(gpu_->gpu, kAdminLock);
}

// A scheduler's kill, and a peer's MPI_Abort (mpirun ends the other ranks with SIGTERM).
TEST_F(SmClockRestore, SchedulerSignalsRestoreAndStillEndTheProcess) {
  for (int sig : {SIGTERM, SIGINT}) {
    gpu_->gpu = kAdminLock;
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t pid = fork_holding_lock([&] {
      const char byte = 1;
      (void)!write(ready[1], &byte, 1);
      for (;;) pause();
    });
    char byte = 0;
    ASSERT_EQ(read(ready[0], &byte, 1), 1);
    close(ready[0]);
    close(ready[1]);
    EXPECT_EQ(gpu_->gpu, (GpuLock{true, 1200, 1200}));
    kill(pid, sig);
    const int st = wait_for(pid);
    ASSERT_TRUE(WIFSIGNALED(st)) << "signal " << sig << ": status " << st;
    EXPECT_EQ(WTERMSIG(st), sig);  // the signal's own ending, after the restore
    EXPECT_EQ(gpu_->gpu, kAdminLock) << "signal " << sig;
  }
}

TEST_F(SmClockRestore, UnlockedPriorIsPutBackByTheReset) {
  gpu_->gpu = {};
  FakeNvmlClocks c(gpu_, true);
  { SmClockLock lock(c, 1200, std::nullopt); }
  EXPECT_EQ(gpu_->gpu, GpuLock{});
  EXPECT_EQ(gpu_->resets, 1);
}

TEST_F(SmClockRestore, ApplicationClocksThatMovedArePutBack) {
  FakeNvmlClocks c(gpu_, true);
  {
    SmClockLock lock(c, 1200, std::nullopt);
    gpu_->app = gpu_->app_default;  // changed under the lock
  }
  EXPECT_EQ(gpu_->app, (AppClocks{1593, 1755}));
}

// Real NVML cannot read the locked range: without the user's word nothing is locked.
TEST_F(SmClockRestore, UnreadablePriorIsNotGuessed) {
  FakeNvmlClocks blind(gpu_, false);
  {
    SmClockLock lock(blind, 1200, std::nullopt);
    EXPECT_FALSE(lock.applied());
    EXPECT_NE(lock.reason().find("cannot be read"), std::string::npos) << lock.reason();
    EXPECT_NE(lock.reason().find("sm_clock=emulate@F"), std::string::npos) << lock.reason();
    EXPECT_EQ(gpu_->gpu, kAdminLock);
  }
  EXPECT_EQ(gpu_->gpu, kAdminLock);
  {
    SmClockLock lock(blind, 1200, kAdminLock);  // sm_clock=1200@1410-1410
    EXPECT_TRUE(lock.applied());
    EXPECT_STREQ(lock.prior_source(), "stated");
  }
  EXPECT_EQ(gpu_->gpu, kAdminLock);
  FakeNvmlClocks seeing(gpu_, true);
  SmClockLock wrong(seeing, 1200, GpuLock{});  // said "unlocked", but the GPU is locked
  EXPECT_FALSE(wrong.applied());
  EXPECT_NE(wrong.reason().find("is not the GPU's (1410-1410"), std::string::npos)
      << wrong.reason();
}

TEST_F(SmClockRestore, RefusedLockChangesNothingAndOffersEmulation) {
  gpu_->deny_lock = true;
  FakeNvmlClocks c(gpu_, true);
  {
    SmClockLock lock(c, 1200, std::nullopt);
    EXPECT_FALSE(lock.applied());
    EXPECT_EQ(lock.reason(),
              "lock refused: Insufficient Permissions (4); sm_clock=emulate@F holds a share F of "
              "the SMs instead, without privileges");
  }
  EXPECT_EQ(gpu_->gpu, kAdminLock);
  EXPECT_EQ(gpu_->resets, 0);
}

// The emulated form on a backend with no SMs: said, never silently "applied".
TEST_F(SmClockRestore, EmulationOnTheCpuSaysWhy) {
  FakeNvmlClocks c(gpu_, true);
  FakeSampler sampler(c);
  DeviceOptions o;
  CpuDevice cpu(o);
  InjectSpec inj;
  inj.sm_hold_fraction = 0.3;
  ScopedSmClock held(sampler, cpu, inj);
  EXPECT_FALSE(held.applied());
  const auto j = held.to_json();
  EXPECT_EQ(j["form"], "emulated");
  EXPECT_EQ(j["requested_sm_fraction"], 0.3);
  EXPECT_EQ(j["applied"], false);
  EXPECT_EQ(j["reason"], "this backend has no SMs to hold");
  EXPECT_EQ(gpu_->gpu, kAdminLock);
}

// The project's rule: the lent GPU's clocks are never locked by the device check. Every script
// that plans or runs its steps may use the emulated form only.
TEST(DevicePlan, NeverLocksTheLentGpusClocks) {
  namespace fs = std::filesystem;
  const fs::path root = TPB_SOURCE_DIR;
  std::vector<fs::path> files = {root / "tests/device_rehearsal.sh"};
  for (const auto& e : fs::directory_iterator(root / "launch"))
    if (e.is_regular_file()) files.push_back(e.path());
  const std::regex locking(R"(sm_clock=(?!emulate@)\S*)");  // 1200, ${MHZ}: any but emulate@F
  int read = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    ++read;
    std::smatch m;
    const std::string s = text.str();
    EXPECT_FALSE(std::regex_search(s, m, locking))
        << f << " locks the GPU's clocks (" << m.str() << "): use sm_clock=emulate@F";
  }
  EXPECT_GE(read, 3);  // device_plan.sh, device-check.sh and the rehearsal at least
}

}  // namespace
}  // namespace tpb
