// The GPU clock controls behind --inject sm_clock's locked form, as a small interface (NVML on a
// GPU, layers/cuda/nvml_telemetry.cc; a fake in the tests), and the lock that reads the GPU's
// prior state first and puts back exactly that state on every exit path, never the driver default.
#pragma once
#include <atomic>
#include <optional>
#include <string>

#include "base/exit_restore.h"

namespace tpb {

// The GPU (SM) clock lock: unlocked, or locked to [min_mhz, max_mhz].
struct GpuLock {
  bool locked = false;
  unsigned min_mhz = 0, max_mhz = 0;
  bool operator==(const GpuLock&) const = default;
};

// Application clocks (the older, per-boot clock setting): the target and the driver's default.
struct AppClocks {
  unsigned mem_mhz = 0, sm_mhz = 0;
  bool operator==(const AppClocks&) const = default;
};

// What a control could read; nullopt where it cannot (NVML has no getter for the locked range).
struct ClockState {
  std::optional<GpuLock> gpu;
  std::optional<AppClocks> app, app_default;
  bool operator==(const ClockState&) const = default;
};

// Every call is noexcept and returns 0 or the library's error code, because the restores run
// inside signal handlers; describe() turns a code into text on the normal path.
class ClockControl {
 public:
  virtual ~ClockControl() = default;
  virtual ClockState read() noexcept = 0;
  virtual int lock_gpu(unsigned min_mhz, unsigned max_mhz) noexcept = 0;
  virtual int unlock_gpu() noexcept = 0;  // the driver's default, which wipes an admin's lock
  virtual int set_app(AppClocks c) noexcept = 0;
  virtual int reset_app() noexcept = 0;
  virtual std::string describe(int code) const = 0;
};

// "unlocked" or "MIN-MAX" (MHz): how results and messages name a lock state.
std::string gpu_lock_text(const GpuLock& g);

// The locked form of --inject sm_clock=MHz: reads the prior state, then locks min = max = mhz.
// The prior GPU lock must be known exactly, read by the control or `stated` by the user
// (sm_clock=MHz@unlocked, @MIN-MAX); without it nothing is locked and reason() says why, since
// restoring a guess could wipe an administrator's lock. Registered with ExitRestore, so the
// watchdog's _Exit and the termination signals restore it too.
class SmClockLock {
 public:
  SmClockLock(ClockControl& c, int mhz, std::optional<GpuLock> stated);
  ~SmClockLock() { restore(); }
  SmClockLock(const SmClockLock&) = delete;
  SmClockLock& operator=(const SmClockLock&) = delete;

  bool applied() const { return applied_; }
  const std::string& reason() const { return reason_; }
  const ClockState& prior() const { return prior_; }
  const char* prior_source() const { return prior_source_; }  // "read" or "stated"
  // Puts the prior state back (at most once, whichever exit path comes first).
  void restore() noexcept;
  // Once the restore ran: 0 when every call succeeded, else the first failing call's code.
  std::optional<int> restore_status() const {
    return done_.load() ? std::optional<int>(status_.load()) : std::nullopt;
  }
  std::string restore_error() const { return c_.describe(status_.load()); }

 private:
  static void restore_hook(void* self) noexcept;
  void put_back() noexcept;

  ClockControl& c_;
  ClockState prior_;
  const char* prior_source_ = "read";
  bool applied_ = false;
  std::string reason_;
  std::atomic<int> status_{0};
  std::atomic<bool> done_{false};
  std::optional<ExitRestore> hook_;
};

}  // namespace tpb
