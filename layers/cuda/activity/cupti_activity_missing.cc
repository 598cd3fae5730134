// Stand-in for builds whose configure step found no CUPTI headers: CuptiActivity::start says
// why, so CUDA points keep each run of compute whole (per_op_times_partial) instead of the
// build failing, and the device needs no #ifdef.
#include "layers/cuda/activity/cupti_activity.h"

namespace tpb {

struct CuptiApi {};

CuptiActivity::CuptiActivity(std::unique_ptr<CuptiApi> api) : api_(std::move(api)) {}
CuptiActivity::~CuptiActivity() = default;

std::unique_ptr<CuptiActivity> CuptiActivity::start(std::string* why) {
  *why =
      "none: this tpbench was built without CUPTI (cupti_activity.h not found at configure "
      "time); per-op times need --stamps ops";
  return nullptr;
}

void CuptiActivity::push(uint64_t) {}
void CuptiActivity::pop() {}
void CuptiActivity::collect(const ActivitySlots&, std::size_t, std::size_t, int64_t*, int64_t*) {}
void CuptiActivity::take_buffer(uint8_t*, std::size_t) {}

}  // namespace tpb
