// Per-op device times from CUPTI's activity API, as Nsight Systems and PyTorch's Kineto take
// them: each kernel's, memcpy's and memset's start and end, recorded by the driver at no
// device cost, tied to the op that launched it by an external correlation id pushed around
// the op (Device::activity_begin/end under --stamps collectives). The host pays CUPTI's record
// keeping per API call instead of two stamp kernels per op.
//
// libcupti is opened with dlopen, as NVML is: a machine without it still runs tpbench, with
// per-op times from stamps only (why() says so). CUPTI's activity API is one per process and
// its callbacks carry no user data, so one CuptiActivity at a time may hold it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "layers/cuda/activity/activity_join.h"

namespace tpb {

struct CuptiApi;

class CuptiActivity {
 public:
  // Opens libcupti and enables the record kinds, with timestamps on the host steady clock
  // (cuptiActivityRegisterTimestampCallback), the clock every stamp is collected on. Returns
  // nullptr and sets *why when CUPTI cannot be had.
  static std::unique_ptr<CuptiActivity> start(std::string* why);
  ~CuptiActivity();
  CuptiActivity(const CuptiActivity&) = delete;
  CuptiActivity& operator=(const CuptiActivity&) = delete;

  // Work launched between push(id) and pop() belongs to op `id` (ids > 0, never reused).
  void push(uint64_t id);
  void pop();
  // After the device synchronized: delivers every record, joins them, and answers as
  // Device::collect_activity does (fill_intervals), in host steady-clock ns.
  void collect(const ActivitySlots& slots, std::size_t first, std::size_t count, int64_t* host_ns,
               int64_t* launched_ns);
  // CUPTI's buffer callbacks land here (a CUPTI thread, or the flushing one).
  void take_buffer(uint8_t* buffer, std::size_t valid_bytes);

 private:
  explicit CuptiActivity(std::unique_ptr<CuptiApi> api);
  std::unique_ptr<CuptiApi> api_;
  mutable std::mutex mu_;  // take_buffer runs on CUPTI's thread
  ActivityJoin join_;
};

}  // namespace tpb
