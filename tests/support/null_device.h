// A device whose every op does nothing, for tests that fake one side of a backend (its marks,
// graphs or profiler ranges) and derive from this: each overrides only what it observes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "layers/device.h"

namespace tpb::test {

class NullDevice : public Device {
 public:
  const DeviceCaps& caps() const override { return caps_; }
  DeviceBuffer alloc(std::size_t) override { return {}; }
  void free_raw(void*) noexcept override {}
  void upload(void*, const float*, std::size_t, DType) override {}
  void download(float*, const void*, std::size_t, DType) override {}
  void fill(void*, DType, const FillSpec&) override {}
  void gemm(const void*, const void*, void*, int64_t, int64_t, int64_t, DType) override {}
  void rmsnorm(const void*, const void*, void*, int64_t, int64_t, float, DType) override {}
  void rope(void*, int64_t, int64_t, int64_t, const AttnShape&, float, DType) override {}
  void kv_write(const void*, void*, void*, int64_t, int64_t, const AttnShape&, DType) override {}
  void attention_decode(const void*, const void*, const void*, void*, int64_t, const AttnShape&,
                        DType) override {}
  void attention_prefill(const void*, const void*, const void*, void*, int64_t, const AttnShape&,
                         DType) override {}
  void swiglu(const void*, void*, int64_t, int64_t, DType) override {}
  void add(void*, const void*, std::size_t, DType) override {}
  void busy_work(double) override {}
  void reserve_marks(std::size_t) override {}
  void mark(std::size_t) override {}
  void collect_marks(std::size_t, std::size_t, int64_t*) override {}
  void synchronize() override {}

 protected:
  DeviceCaps caps_;
};

// A null device whose buffers are real, zeroed host memory: enough for a TpModel to be built
// and stepped while a test watches the calls it overrides.
class HeapDevice : public NullDevice {
 public:
  DeviceBuffer alloc(std::size_t bytes) override {
    return DeviceBuffer(this, std::calloc(bytes + 1, 1), bytes);
  }
  void free_raw(void* p) noexcept override { std::free(p); }
};

}  // namespace tpb::test
