// Telemetry by backend: NVML for CUDA devices, a null sampler elsewhere.
#include "harness/backends/telemetry.h"

#if defined(TPB_HAVE_CUDA)
#include "layers/cuda/cuda_device.h"
#include "layers/cuda/nvml_telemetry.h"
#endif

namespace tpb {
namespace {

class NullTelemetry final : public TelemetrySampler {
 public:
  explicit NullTelemetry(std::string reason) : reason_(std::move(reason)) {}
  void start() override {}
  nlohmann::ordered_json stop() override { return {{"available", false}, {"reason", reason_}}; }
  double mean_utilization() const override { return -1; }
  std::string lock_sm_clock(int) override { return "no clock control: " + reason_; }
  void unlock_sm_clock() noexcept override {}

 private:
  std::string reason_;
};

#if defined(TPB_HAVE_CUDA)
class NvmlSampler final : public TelemetrySampler {
 public:
  explicit NvmlSampler(const std::string& pci) : nvml_(pci) {}
  void start() override { nvml_.start(); }
  nlohmann::ordered_json stop() override { return nvml_.stop(); }
  double mean_utilization() const override { return nvml_.mean_utilization(); }
  std::string lock_sm_clock(int mhz) override { return nvml_.lock_sm_clock(mhz); }
  void unlock_sm_clock() noexcept override { nvml_.unlock_sm_clock(); }

 private:
  NvmlTelemetry nvml_;
};
#endif

}  // namespace

std::unique_ptr<TelemetrySampler> make_null_telemetry(const std::string& reason) {
  return std::make_unique<NullTelemetry>(reason);
}

std::unique_ptr<TelemetrySampler> make_telemetry(Device& dev) {
#if defined(TPB_HAVE_CUDA)
  if (auto* cuda = dynamic_cast<CudaDevice*>(&dev))
    return std::make_unique<NvmlSampler>(cuda->pci_bus_id());
#endif
  return make_null_telemetry("no device telemetry on the " + dev.caps().backend + " backend");
}

ScopedSmClock::ScopedSmClock(TelemetrySampler& t, int mhz) : t_(t), mhz_(mhz) {
  if (mhz_ > 0) reason_ = t_.lock_sm_clock(mhz_);
}

ScopedSmClock::~ScopedSmClock() {
  if (applied()) t_.unlock_sm_clock();
}

nlohmann::ordered_json ScopedSmClock::to_json() const {
  if (mhz_ <= 0) return nullptr;
  nlohmann::ordered_json j = {{"requested_mhz", mhz_}, {"applied", applied()}};
  if (!reason_.empty()) j["reason"] = reason_;
  return j;
}

}  // namespace tpb
