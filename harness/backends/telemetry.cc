// The null sampler (backends without device telemetry) and --inject sm_clock's two forms, with
// the one record that says which form ran and what was put back.
#include "harness/backends/telemetry.h"

namespace tpb {
namespace {

class NullTelemetry final : public TelemetrySampler {
 public:
  explicit NullTelemetry(std::string reason) : reason_(std::move(reason)) {}
  void start() override {}
  nlohmann::ordered_json stop() override { return {{"available", false}, {"reason", reason_}}; }
  double mean_utilization() const override { return -1; }
  ClockControl* clock_control() override { return nullptr; }
  std::string why_no_clock_control() const override { return "no clock control: " + reason_; }

 private:
  std::string reason_;
};

nlohmann::ordered_json gpu_lock_json(const GpuLock& g) {
  if (!g.locked) return "unlocked";
  return {{"min_mhz", g.min_mhz}, {"max_mhz", g.max_mhz}};
}

// What the GPU had before the lock: its lock (read or stated) and application clocks.
nlohmann::ordered_json prior_json(const SmClockLock& l) {
  nlohmann::ordered_json j;
  const ClockState& p = l.prior();
  j["gpu_lock"] = p.gpu ? gpu_lock_json(*p.gpu) : nlohmann::ordered_json("unknown");
  j["gpu_lock_source"] = l.prior_source();
  if (p.app) j["app_clocks"] = {{"mem_mhz", p.app->mem_mhz}, {"sm_mhz", p.app->sm_mhz}};
  return j;
}

}  // namespace

std::unique_ptr<TelemetrySampler> make_null_telemetry(const std::string& reason) {
  return std::make_unique<NullTelemetry>(reason);
}

ScopedSmClock::ScopedSmClock(TelemetrySampler& t, Device& dev, const InjectSpec& inj)
    : mhz_(inj.sm_clock_mhz), fraction_(inj.sm_hold_fraction) {
  if (fraction_ > 0) {
    hold_ = dev.hold_sms(fraction_);
    if (!hold_) {
      reason_ = "this backend has no SMs to hold";
      return;
    }
    sms_held_ = hold_->sms_held();
    sm_count_ = hold_->sm_count();
    return;
  }
  if (mhz_ <= 0) return;
  ClockControl* c = t.clock_control();
  if (!c) {
    reason_ = t.why_no_clock_control() + "; sm_clock=emulate@F holds a share F of the SMs instead";
    return;
  }
  lock_.emplace(*c, mhz_, inj.sm_clock_prior);
  reason_ = lock_->reason();
}

bool ScopedSmClock::applied() const {
  return (lock_ && lock_->applied()) || hold_ != nullptr;
}

void ScopedSmClock::release() noexcept {
  if (lock_) lock_->restore();
  hold_.reset();
}

nlohmann::ordered_json ScopedSmClock::to_json() const {
  if (mhz_ <= 0 && fraction_ <= 0) return nullptr;
  nlohmann::ordered_json j;
  j["form"] = fraction_ > 0 ? "emulated" : "locked";
  if (fraction_ > 0) {
    j["requested_sm_fraction"] = fraction_;
  } else {
    j["requested_mhz"] = mhz_;
  }
  j["applied"] = applied();
  if (!reason_.empty()) j["reason"] = reason_;
  if (sms_held_ > 0) {
    j["sms_held"] = sms_held_;
    j["sm_count"] = sm_count_;
  }
  if (lock_ && lock_->applied()) {
    j["prior"] = prior_json(*lock_);
    // true: every call of the restore succeeded; false with the failing call's error; null
    // when it has not run (the record was made before release()).
    const std::optional<int> st = lock_->restore_status();
    j["restored"] = st ? nlohmann::ordered_json(*st == 0) : nullptr;
    if (st && *st != 0) j["restore_error"] = lock_->restore_error();
  }
  return j;
}

}  // namespace tpb
