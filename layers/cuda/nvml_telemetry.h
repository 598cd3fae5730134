// GPU telemetry during a point through NVML, opened with dlopen at run time so the build needs
// no driver: utilization.gpu (the occupancy dashboards show, which the article warns about),
// SM/memory clocks, power, temperature, throttle reasons and memory use. Also the GPU's clock
// controls (layers/clock_control.h) behind --inject sm_clock. Without the library, telemetry
// says why.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "layers/clock_control.h"

namespace tpb {

// One reading; -1 marks a field the GPU or driver did not report.
struct NvmlSample {
  double t_s = 0;  // since start()
  double util_gpu_pct = -1;
  double util_mem_pct = -1;
  double sm_clock_mhz = -1;
  double mem_clock_mhz = -1;
  double power_w = -1;
  double temperature_c = -1;
  int64_t throttle_mask = -1;  // nvmlClocksEventReasons bits
  double mem_used_bytes = -1;
  double mem_total_bytes = -1;
};

// Names of the set bits of an NVML clocks-event ("throttle") reason mask, e.g. "sw_power_cap".
std::vector<std::string> throttle_reason_names(uint64_t mask);

// The telemetry record of one point: {mean, min, max} per quantity, the union of throttle
// reasons and the share of samples that were throttled (idle does not count).
nlohmann::ordered_json summarize_samples(const std::vector<NvmlSample>& samples, double period_s);

struct NvmlApi;  // the dlsym'ed entry points

class NvmlTelemetry final : public ClockControl {
 public:
  // Never throws for a missing library or GPU: available() is then false and reason() says
  // why. `pci_bus_id` as cudaDeviceGetPCIBusId gives it ("" = NVML device 0).
  explicit NvmlTelemetry(const std::string& pci_bus_id,
                         const std::string& library = "libnvidia-ml.so.1", double period_s = 0.1);
  ~NvmlTelemetry() override;
  NvmlTelemetry(const NvmlTelemetry&) = delete;
  NvmlTelemetry& operator=(const NvmlTelemetry&) = delete;

  bool available() const { return api_ != nullptr; }
  const std::string& reason() const { return reason_; }

  // Samples every period_s on a thread between start() and stop(), plus one reading at each
  // end, so even a point shorter than a period has two. NVML's utilization.gpu itself covers
  // the driver's last sample window (1/6 s to 1 s), so short points blend with what preceded.
  void start();
  nlohmann::ordered_json stop();  // {"available": false, "reason": ...} when unavailable
  // Mean utilization.gpu of the last stop() as a fraction (0..1); -1 when not read.
  double mean_utilization() const { return mean_util_; }

  NvmlSample sample_now();

  // ClockControl. Unavailable NVML answers every call with kNoNvml and reads nothing; the
  // locked range reads as unknown (NVML has no getter for it).
  static constexpr int kNoNvml = -1000;
  ClockState read() noexcept override;
  int lock_gpu(unsigned min_mhz, unsigned max_mhz) noexcept override;
  int unlock_gpu() noexcept override;
  int set_app(AppClocks c) noexcept override;
  int reset_app() noexcept override;
  std::string describe(int code) const override;

 private:
  void loop();

  std::unique_ptr<NvmlApi> api_;
  std::string reason_;
  void* device_ = nullptr;  // nvmlDevice_t
  double period_s_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<NvmlSample> samples_;
  int64_t t0_ns_ = 0;
  double mean_util_ = -1;
};

}  // namespace tpb
