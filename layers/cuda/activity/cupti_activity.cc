// CuptiActivity: libcupti through dlopen, records into an ActivityJoin.
#include "layers/cuda/activity/cupti_activity.h"

#include <cupti_activity.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <vector>

namespace tpb {

// The entry points used, typed from CUPTI's own declarations.
struct CuptiApi {
  void* lib = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) register_timestamp = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  // Per-call switches (CUPTI 12.x on); optional: without them the poll records are kept.
  decltype(&cuptiActivityEnableRuntimeApi) runtime_api = nullptr;
  decltype(&cuptiActivityEnableDriverApi) driver_api = nullptr;

  std::string err(const char* fn, CUptiResult r) const {
    const char* s = nullptr;
    if (result_string) result_string(r, &s);
    return std::string(fn) + ": " + (s ? s : "error") + " (" + std::to_string(r) + ")";
  }
  ~CuptiApi() {
    if (lib) dlclose(lib);
  }
};

namespace {

// Kernels, copies and fills are the device work an op issues; the API records (runtime and
// driver) are what CUPTI attaches external correlation records to, so they are enabled too.
// Of those, the launch calls' records are kept (when the host let each op's work go); the
// rest are skipped when read. The polls are not recorded at all (kPollCalls).
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET,
                                         CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER,
                                         CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
// What the waits poll with (layers/cuda/poll_wait.h, NCCL's two-in-flight watch) and
// all_reduce asks before each call: at TP > 1 the host spins on them while a peer catches up,
// tens of thousands of calls a step, which CUPTI would record one by one on the rank's core.
// Their records are turned off after the kinds are enabled (an enable of the kind afterwards
// would turn them back on). Nothing else is lost: no work runs under them.
constexpr CUpti_CallbackId kPollRuntime[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000};
constexpr CUpti_CallbackId kPollDriver[] = {
    CUPTI_DRIVER_TRACE_CBID_cuStreamQuery, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventQuery, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
    CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz};
constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kRecordAlign = 8;  // ACTIVITY_RECORD_ALIGNMENT in CUPTI's samples

// CUPTI's buffer callbacks take no user data and its activity API is one per process, so
// the instance that receives them is found here: the one place this backend keeps state
// outside an object, set and cleared by CuptiActivity itself.
std::atomic<CuptiActivity*>& receiver() {
  static std::atomic<CuptiActivity*> r{nullptr};
  return r;
}

uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (CuptiActivity* r = receiver().load(std::memory_order_acquire)) r->take_buffer(buffer, valid);
  std::free(buffer);
}

// A kernel, memcpy or memset record: the three share the fields the join needs.
template <class Record>
void add_work(ActivityJoin& join, const CUpti_Activity* rec) {
  const auto* r = reinterpret_cast<const Record*>(rec);
  join.add_work(r->correlationId, r->start, r->end);
}

// The calls that put work on a stream, runtime and driver (a kernel records the id of the
// call that launched it, whichever layer that was).
bool is_launch(CUpti_ActivityKind kind, uint32_t cbid) {
  if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
        return true;
      default:
        return false;
    }
  }
  switch (cbid) {  // CUPTI_ACTIVITY_KIND_DRIVER
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      return true;
    default:
      return false;
  }
}

template <class F>
bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

std::unique_ptr<CuptiApi> open_cupti(std::string* why) {
  auto api = std::make_unique<CuptiApi>();
  std::vector<const char*> names = {"libcupti.so.13", "libcupti.so"};
#if defined(TPB_CUPTI_LIBRARY)
  names.push_back(TPB_CUPTI_LIBRARY);  // the toolkit's copy this build was configured against
#endif
  for (const char* n : names)
    if ((api->lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
  if (!api->lib) {
    *why = "none: libcupti could not be opened (" + std::string(dlerror() ? dlerror() : "") +
           "); per-op times need --stamps ops";
    return nullptr;
  }
  const bool all =
      bind(api->lib, "cuptiActivityEnable", api->enable) &&
      bind(api->lib, "cuptiActivityDisable", api->disable) &&
      bind(api->lib, "cuptiActivityRegisterCallbacks", api->register_callbacks) &&
      bind(api->lib, "cuptiActivityRegisterTimestampCallback", api->register_timestamp) &&
      bind(api->lib, "cuptiActivityFlushAll", api->flush_all) &&
      bind(api->lib, "cuptiActivityGetNextRecord", api->next_record) &&
      bind(api->lib, "cuptiActivityPushExternalCorrelationId", api->push) &&
      bind(api->lib, "cuptiActivityPopExternalCorrelationId", api->pop) &&
      bind(api->lib, "cuptiGetResultString", api->result_string);
  if (!all) {
    *why = "none: libcupti lacks an activity entry point (CUPTI 12.x or later is needed)";
    return nullptr;
  }
  bind(api->lib, "cuptiActivityEnableRuntimeApi", api->runtime_api);
  bind(api->lib, "cuptiActivityEnableDriverApi", api->driver_api);
  return api;
}

}  // namespace

CuptiActivity::CuptiActivity(std::unique_ptr<CuptiApi> api) : api_(std::move(api)) {}

std::unique_ptr<CuptiActivity> CuptiActivity::start(std::string* why) {
  std::unique_ptr<CuptiApi> api = open_cupti(why);
  if (!api) return nullptr;
  std::unique_ptr<CuptiActivity> a(new CuptiActivity(std::move(api)));
  CuptiActivity* expected = nullptr;
  if (!receiver().compare_exchange_strong(expected, a.get())) {
    *why = "none: another device in this process holds CUPTI's activity API";
    return nullptr;
  }
  const CuptiApi& c = *a->api_;
  // The timestamp source first: CUPTI then reports every record on the host steady clock,
  // the clock stamps are collected on, so op intervals and stamped edges line up directly.
  CUptiResult r = c.register_timestamp(&steady_ns);
  if (r == CUPTI_SUCCESS) r = c.register_callbacks(&buffer_requested, &buffer_completed);
  for (CUpti_ActivityKind k : kKinds)
    if (r == CUPTI_SUCCESS) r = c.enable(k);
  // Best effort: a CUPTI without the per-call switches keeps the polls' records (read and
  // skipped by take_buffer, at the host cost issue 54 measured).
  for (CUpti_CallbackId id : kPollRuntime)
    if (r == CUPTI_SUCCESS && c.runtime_api) (void)c.runtime_api(id, 0);
  for (CUpti_CallbackId id : kPollDriver)
    if (r == CUPTI_SUCCESS && c.driver_api) (void)c.driver_api(id, 0);
  if (r != CUPTI_SUCCESS) {
    *why = "none: " + c.err("enabling CUPTI activity records", r);
    return nullptr;  // the destructor disables what was enabled and lets the receiver go
  }
  return a;
}

CuptiActivity::~CuptiActivity() {
  if (receiver().load() != this) return;
  api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) api_->disable(k);
  api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  receiver().store(nullptr, std::memory_order_release);
}

void CuptiActivity::push(uint64_t id) {
  api_->push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiActivity::pop() {
  uint64_t last = 0;
  api_->pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

void CuptiActivity::collect(const ActivitySlots& slots, std::size_t first, std::size_t count,
                            int64_t* host_ns, int64_t* launched_ns) {
  // Forced: the buffers in use are handed over too, so every record of finished work is in.
  api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(mu_);
  join_.join();
  fill_intervals(slots, join_, first, count, host_ns, launched_ns);
}

void CuptiActivity::take_buffer(uint8_t* buffer, std::size_t valid_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  CUpti_Activity* rec = nullptr;
  while (api_->next_record(buffer, valid_bytes, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL:
        add_work<CUpti_ActivityKernel10>(join_, rec);
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        add_work<CUpti_ActivityMemcpy6>(join_, rec);
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        add_work<CUpti_ActivityMemset4>(join_, rec);
        break;
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          join_.add_external(e->correlationId, e->externalId);
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
        if (is_launch(rec->kind, a->cbid)) join_.add_launch(a->correlationId, a->end);
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace tpb
