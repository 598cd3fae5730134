// The locked form of --inject sm_clock: the prior state first, the lock, and the exact restore.
#include "layers/clock_control.h"

namespace tpb {
namespace {

// Why a lock with an unknown prior is refused rather than tried: NVML can set and reset the GPU
// locked clocks but has no call that reads them back (nvml.h to CUDA 13: Set/Reset only), and
// a reset at the end would wipe a lock an administrator set with nvidia-smi -lgc.
constexpr const char* kUnreadable =
    "not locked: the GPU's current locked-clock range cannot be read (NVML has no getter), so "
    "it could not be restored exactly and a reset would wipe an administrator's lock; state it "
    "(sm_clock=MHz@unlocked or sm_clock=MHz@MIN-MAX), or hold a share F of the SMs instead, "
    "without privileges: sm_clock=emulate@F";

constexpr const char* kEmulateHint =
    "; sm_clock=emulate@F holds a share F of the SMs instead, without privileges";

}  // namespace

std::string gpu_lock_text(const GpuLock& g) {
  return g.locked ? std::to_string(g.min_mhz) + "-" + std::to_string(g.max_mhz) : "unlocked";
}

SmClockLock::SmClockLock(ClockControl& c, int mhz, std::optional<GpuLock> stated) : c_(c) {
  prior_ = c_.read();
  if (prior_.gpu && stated && !(*prior_.gpu == *stated)) {
    reason_ = "not locked: the stated prior lock (" + gpu_lock_text(*stated) +
              ") is not the GPU's (" + gpu_lock_text(*prior_.gpu) + ", read back)";
    return;
  }
  if (!prior_.gpu) {
    if (!stated) {
      reason_ = kUnreadable;
      return;
    }
    prior_.gpu = stated;
    prior_source_ = "stated";
  }
  // Registered before the change: a signal that lands just after the lock still restores it.
  hook_.emplace(&SmClockLock::restore_hook, this);
  const auto m = static_cast<unsigned>(mhz);
  if (const int r = c_.lock_gpu(m, m); r != 0) {
    hook_.reset();  // nothing changed: nothing to put back
    reason_ = "lock refused: " + c_.describe(r) + kEmulateHint;
    return;
  }
  applied_ = true;
}

void SmClockLock::restore() noexcept {
  if (hook_) hook_->run_now();
}

void SmClockLock::restore_hook(void* self) noexcept {
  static_cast<SmClockLock*>(self)->put_back();
}

// The prior GPU lock, exactly (a range set again, or the reset only when it was unlocked), then
// the application clocks if they moved. Runs once, possibly inside a signal handler.
void SmClockLock::put_back() noexcept {
  int first = 0;
  auto keep = [&first](int r) {
    if (first == 0 && r != 0) first = r;
  };
  const GpuLock& g = *prior_.gpu;
  keep(g.locked ? c_.lock_gpu(g.min_mhz, g.max_mhz) : c_.unlock_gpu());
  if (prior_.app) {
    const ClockState now = c_.read();
    if (now.app && !(*now.app == *prior_.app))
      keep(prior_.app_default && *prior_.app == *prior_.app_default ? c_.reset_app()
                                                                    : c_.set_app(*prior_.app));
  }
  status_.store(first);
  done_.store(true);
}

}  // namespace tpb
