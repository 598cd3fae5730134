// The null sampler (backends without device telemetry) and the RAII SM-clock lock.
#include "harness/backends/telemetry.h"

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

}  // namespace

std::unique_ptr<TelemetrySampler> make_null_telemetry(const std::string& reason) {
  return std::make_unique<NullTelemetry>(reason);
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
