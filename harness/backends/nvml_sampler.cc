// The NVML sampler: the GPU's utilization and clocks during a point, and the SM clock lock.
#include "harness/backends/nvml_sampler.h"

#include "layers/cuda/cuda_device.h"
#include "layers/cuda/nvml_telemetry.h"

namespace tpb {
namespace {

class NvmlSampler final : public TelemetrySampler {
 public:
  explicit NvmlSampler(const std::string& pci) : nvml_(pci) {}
  void start() override { nvml_.start(); }
  nlohmann::ordered_json stop() override { return nvml_.stop(); }
  double mean_utilization() const override { return nvml_.mean_utilization(); }
  ClockControl* clock_control() override { return nvml_.available() ? &nvml_ : nullptr; }
  std::string why_no_clock_control() const override {
    return "nvml unavailable: " + nvml_.reason();
  }

 private:
  NvmlTelemetry nvml_;
};

}  // namespace

std::unique_ptr<TelemetrySampler> make_nvml_sampler(Device& dev) {
  return std::make_unique<NvmlSampler>(dynamic_cast<CudaDevice&>(dev).pci_bus_id());
}

}  // namespace tpb
