// Host-side parts of the CUDA backend, testable without a GPU: the no-GPU error path, NVML
// absent, telemetry summaries, throttle-reason names, the globaltimer->host mapping and the
// dtype guard of the kernel launchers. Real kernels are checked by tpb_device_check on a GPU.
#if defined(TPB_HAVE_CUDA)
#include <gtest/gtest.h>

#include <string>

#include "base/errors.h"
#include "layers/cuda/activity/cupti_activity.h"
#include "layers/cuda/cuda_clock.h"
#include "layers/cuda/cuda_factory.h"
#include "layers/cuda/kernels/kernels.h"
#include "layers/cuda/nvml_telemetry.h"
#include "layers/cuda/nvtx_ranges.h"

namespace tpb {
namespace {

TEST(CudaHost, NoGpuIsAClearBadInput) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is visible; tpb_device_check covers it";
  DeviceOptions o;
  o.backend = "cuda";
  try {
    make_cuda_device(o);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("--backend cuda: no CUDA device is visible (cudaGetDeviceCount: ", 0), 0u)
        << msg;
    EXPECT_EQ(msg.back(), ')');
    EXPECT_EQ(e.code(), ExitCode::bad_input);
  }
}

TEST(CudaHost, MissingNvmlLibraryReportsUnavailable) {
  NvmlTelemetry t("0000:00:00.0", "libtpb-no-such-nvml.so.1");
  EXPECT_FALSE(t.available());
  EXPECT_NE(t.reason().find("dlopen(libtpb-no-such-nvml.so.1) failed"), std::string::npos);
  t.start();  // harmless without NVML
  const nlohmann::ordered_json j = t.stop();
  EXPECT_EQ(j["available"], false);
  EXPECT_EQ(j["reason"], t.reason());
  EXPECT_EQ(t.mean_utilization(), -1);
  EXPECT_EQ(t.lock_gpu(1410, 1410), NvmlTelemetry::kNoNvml);
  EXPECT_NE(t.describe(NvmlTelemetry::kNoNvml).find("nvml unavailable"), std::string::npos);
  EXPECT_EQ(t.read(), ClockState{});
}

TEST(CudaHost, DefaultNvmlNeverThrows) {
  // On this machine the driver may or may not be there; either way construction is safe.
  NvmlTelemetry t("");
  if (!t.available()) EXPECT_FALSE(t.reason().empty());
}

TEST(CudaHost, ThrottleReasonNames) {
  EXPECT_TRUE(throttle_reason_names(0).empty());
  const auto names = throttle_reason_names(0x1 | 0x4 | 0x40 | 0x10000);
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "gpu_idle");
  EXPECT_EQ(names[1], "sw_power_cap");
  EXPECT_EQ(names[2], "hw_thermal_slowdown");
  EXPECT_EQ(names[3], "other");
}

TEST(CudaHost, TelemetrySummary) {
  std::vector<NvmlSample> s(3);
  // Utilization 100, 100, 40 -> mean 80: a spinning kernel reads "100%" whatever it does.
  s[0].util_gpu_pct = 100, s[1].util_gpu_pct = 100, s[2].util_gpu_pct = 40;
  s[0].sm_clock_mhz = 1980, s[1].sm_clock_mhz = 1500, s[2].sm_clock_mhz = 1755;
  s[0].throttle_mask = 0x1;  // idle only: not throttled
  s[1].throttle_mask = 0x4;  // power cap
  s[2].throttle_mask = 0x0;
  s[0].mem_total_bytes = s[1].mem_total_bytes = 141e9;
  const nlohmann::ordered_json j = summarize_samples(s, 0.1);
  EXPECT_EQ(j["available"], true);
  EXPECT_EQ(j["samples"], 3);
  EXPECT_DOUBLE_EQ(j["utilization_gpu_pct"]["mean"].get<double>(), 80.0);
  EXPECT_DOUBLE_EQ(j["utilization_gpu_pct"]["min"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(j["sm_clock_mhz"]["max"].get<double>(), 1980.0);
  EXPECT_DOUBLE_EQ(j["sm_clock_mhz"]["mean"].get<double>(), (1980.0 + 1500 + 1755) / 3);
  EXPECT_FALSE(j.contains("power_w"));  // never reported -> omitted, not 0 or -1
  EXPECT_DOUBLE_EQ(j["memory_total_bytes"].get<double>(), 141e9);
  EXPECT_EQ(j["throttle_reasons"], nlohmann::json({"gpu_idle", "sw_power_cap"}));
  EXPECT_DOUBLE_EQ(j["throttled_sample_fraction"].get<double>(), 1.0 / 3);
}

TEST(CudaHost, GlobaltimerToHostInterpolatesDrift) {
  // Offsets 1,000 ns at GPU time 0 and 1,100 ns at GPU time 1e9 (a 0.1 ppm rate difference).
  const ClockSample a{0, 1000, 8000}, b{1'000'000'000, 1100, 6000};
  EXPECT_EQ(GpuClock::to_host_ns(0, a, b), 1000);
  EXPECT_EQ(GpuClock::to_host_ns(500'000'000, a, b), 500'001'050);
  EXPECT_EQ(GpuClock::to_host_ns(1'000'000'000, a, b), 1'000'001'100);
  EXPECT_EQ(GpuClock::to_host_ns(2'000'000'000, a, b), 2'000'001'200);  // extrapolated
  EXPECT_EQ(GpuClock::to_host_ns(42, b, b), 1142);                      // one sample: constant
}

TEST(CudaHost, TimerResolutionIsSmallestNonzeroStep) {
  EXPECT_DOUBLE_EQ(GpuClock::min_step_s({100, 100, 132, 164, 164, 228}), 32e-9);
  EXPECT_DOUBLE_EQ(GpuClock::min_step_s({5, 5, 5}), 0.0);
}

TEST(CudaHost, KernelLaunchersRejectFp8BeforeTouchingTheGpu) {
  EXPECT_THROW(
      cuda_kernels::launch_add(plan_add(16, DType::fp8), nullptr, nullptr, nullptr, 16, DType::fp8),
      BadInput);
}

TEST(CudaHost, NvtxRangesAreHarmlessWithoutAProfiler) {
  NvtxRange r(Op::attention);
  nvtx_mark("tpbench unit test");
  SUCCEED();
}

// The toolkit's libcupti opens and has every entry point CuptiActivity binds (a renamed or
// missing one would leave CUDA per-op times silently off). Without a GPU, enabling the records
// may fail for want of a driver: that failure is named, and a second start is refused while
// a first holds CUPTI.
TEST(CudaHost, CuptiBindsTheToolkitsLibrary) {
  std::string why;
  std::unique_ptr<CuptiActivity> a = CuptiActivity::start(&why);
  if (!a) {
    EXPECT_EQ(why.find("could not be opened"), std::string::npos) << why;
    EXPECT_EQ(why.find("lacks an activity entry point"), std::string::npos) << why;
    EXPECT_EQ(why.rfind("none: enabling CUPTI activity records: ", 0), 0u) << why;
    return;
  }
  std::string second;
  EXPECT_EQ(CuptiActivity::start(&second), nullptr);
  EXPECT_EQ(second, "none: another device in this process holds CUPTI's activity API");
}

}  // namespace
}  // namespace tpb
#endif  // TPB_HAVE_CUDA

#if defined(TPB_HAVE_CUDA) && defined(TPB_FAKE_NVML)
// Against tests/support/fake_nvml.c: the sampler thread, the JSON it yields, the PCI lookup
// and the RAII clock lock (applied, visible, restored; refused -> reason).
#include <chrono>
#include <thread>

namespace tpb {
namespace {

TEST(CudaHostFakeNvml, SamplesDuringAPoint) {
  NvmlTelemetry t("0000:00:00.0", TPB_FAKE_NVML, 0.01);
  ASSERT_TRUE(t.available()) << t.reason();
  t.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const nlohmann::ordered_json j = t.stop();
  EXPECT_EQ(j["available"], true);
  EXPECT_GE(j["samples"].get<int>(), 3);  // one at each end plus the thread's
  EXPECT_DOUBLE_EQ(j["utilization_gpu_pct"]["mean"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(j["power_w"]["mean"].get<double>(), 512.0);
  EXPECT_DOUBLE_EQ(j["sm_clock_mhz"]["mean"].get<double>(), 1980.0);
  EXPECT_EQ(j["throttle_reasons"], nlohmann::json({"sw_power_cap"}));
  EXPECT_DOUBLE_EQ(t.mean_utilization(), 1.0);
}

TEST(CudaHostFakeNvml, UnknownBusIdIsUnavailableWithReason) {
  NvmlTelemetry t("0000:99:00.0", TPB_FAKE_NVML);
  EXPECT_FALSE(t.available());
  EXPECT_NE(t.reason().find("Not Found"), std::string::npos) << t.reason();
  EXPECT_NE(t.reason().find("0000:99:00.0"), std::string::npos) << t.reason();
}

// NVML reads no locked range back, so the lock needs the prior stated (here: unlocked).
TEST(CudaHostFakeNvml, ClockLockIsRestored) {
  NvmlTelemetry t("0000:00:00.0", TPB_FAKE_NVML);
  ASSERT_TRUE(t.available());
  EXPECT_FALSE(t.read().gpu.has_value());
  {
    SmClockLock unstated(t, 1410, std::nullopt);
    EXPECT_FALSE(unstated.applied());
    EXPECT_DOUBLE_EQ(t.sample_now().sm_clock_mhz, 1980.0);
  }
  {
    SmClockLock lock(t, 1410, GpuLock{});
    EXPECT_TRUE(lock.applied()) << lock.reason();
    EXPECT_DOUBLE_EQ(t.sample_now().sm_clock_mhz, 1410.0);
  }
  EXPECT_DOUBLE_EQ(t.sample_now().sm_clock_mhz, 1980.0);
  SmClockLock refused(t, 1, GpuLock{});
  EXPECT_FALSE(refused.applied());
  EXPECT_NE(refused.reason().find("Insufficient Permissions"), std::string::npos);
}

}  // namespace
}  // namespace tpb
#endif  // TPB_FAKE_NVML
