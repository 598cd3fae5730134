// The registry's tables: one entry per device backend and per collective transport. CUDA's
// entries exist only in CUDA builds; this is the one place that asks.
#include "harness/backends/registry.h"

#include <algorithm>
#include <string_view>

#include "base/errors.h"
#include "collectives/mpi/mpi_collective.h"
#include "collectives/topology.h"
#include "harness/backends/collective_factory.h"
#include "harness/backends/telemetry.h"
#include "layers/cpu/cpu_device.h"
#if defined(TPB_HAVE_CUDA)
#include "collectives/mpi/cuda_mpi_collective.h"
#include "collectives/nccl/nccl_collective.h"
#include "harness/backends/nvml_sampler.h"
#include "layers/cuda/cuda_factory.h"
#include "layers/cuda/cudnn/cudnn_probe.h"
#endif

namespace tpb {
namespace {

struct BackendEntry {
  std::string_view name;
  std::unique_ptr<Device> (*make)(const DeviceOptions&);
  std::unique_ptr<TelemetrySampler> (*telemetry)(Device&);  // nullptr: nothing to read
};

// A transport for `collective` over buffers in device memory or in host memory (caps).
struct CollectiveEntry {
  std::string_view name;
  bool device_memory;
  // `wait`: the MPI transports wait as it says; NCCL takes its timeout only.
  std::unique_ptr<Collective> (*make)(MPI_Comm tp_comm, Device& dev, const MpiWait& wait);
  // Whether the library behind it is linked (nullptr: always). An unlinked entry stays in the
  // table so that asking for it gets its stand-in's message, but it is not listed as built.
  bool (*linked)() = nullptr;
};

std::unique_ptr<Device> make_cpu_device(const DeviceOptions& o) {
  return std::make_unique<CpuDevice>(o);
}

constexpr BackendEntry kBackends[] = {
    {"cpu", make_cpu_device, nullptr},
#if defined(TPB_HAVE_CUDA)
    {"cuda", make_cuda_device, make_nvml_sampler},
#endif
};

constexpr CollectiveEntry kCollectives[] = {
    {"mpi", false, [](MPI_Comm c, Device&, const MpiWait& w) { return make_mpi_collective(c, w); }},
#if defined(TPB_HAVE_CUDA)
    {"mpi", true,
     [](MPI_Comm c, Device& d, const MpiWait& w) { return make_cuda_mpi_collective(c, d, w); }},
    {"nccl", true,
     [](MPI_Comm c, Device& d, const MpiWait& w) {
       return make_nccl_collective(c, d, w.timeout_s);
     },
     [] { return !nccl_version().empty(); }},
#endif
};

const BackendEntry* find_backend(const std::string& name) {
  for (const BackendEntry& b : kBackends)
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace

std::vector<std::string> built_backends() {
  std::vector<std::string> names;
  for (const BackendEntry& b : kBackends) names.emplace_back(b.name);
  return names;
}

std::unique_ptr<Device> make_device(const DeviceOptions& o) {
  if (const BackendEntry* b = find_backend(o.backend)) return b->make(o);
  std::string built;
  for (const auto& n : built_backends()) built += (built.empty() ? "" : ", ") + n;
  throw BadInput("--backend: '" + o.backend + "' is not built into this tpbench (built: " + built +
                 ")");
}

std::unique_ptr<Collective> make_collective(const RunSpec& spec, MPI_Comm tp_comm, Device& dev,
                                            HangReport report) {
  MpiWait wait;
  wait.mode = spec.mpi_mode;
  wait.timeout_s = spec.collective_timeout_s;
  // More ranks on this host than online CPUs: polling ranks must yield their core. (A blocked
  // call yields as the MPI library decides: Open MPI's mpi_yield_when_idle turns on by itself
  // when mpirun knows the node is oversubscribed.)
  wait.yield = dev.caps().host_ranks > online_cpus();
  wait.report = std::move(report);
  for (const CollectiveEntry& c : kCollectives)
    if (c.name == spec.collective && c.device_memory == dev.caps().device_memory)
      return c.make(tp_comm, dev, wait);
  throw BadInput("--collective: '" + spec.collective + "' is not available with --backend " +
                 spec.backend + " in this build");
}

std::vector<std::string> built_collectives() {
  std::vector<std::string> names;
  for (const CollectiveEntry& c : kCollectives)
    if ((!c.linked || c.linked()) && std::find(names.begin(), names.end(), c.name) == names.end())
      names.emplace_back(c.name);
  return names;
}

std::string linked_nccl_version() {
#if defined(TPB_HAVE_CUDA)
  return nccl_version();
#else
  return "";
#endif
}

AttentionLibraries attention_libraries() {
  AttentionLibraries a;
#if defined(TPB_HAVE_CUDA)
  a.native = true;
  a.cudnn_frontend = cudnn_frontend_built();
  a.cudnn_compiled = !a.cudnn_frontend.empty();
  const CudnnRuntime r = probe_cudnn_runtime();
  a.cudnn_runtime = r.version;
  a.cudnn_note = r.note;
#else
  a.cudnn_note = "no cuda backend in this build";
#endif
  return a;
}

std::unique_ptr<TelemetrySampler> make_telemetry(Device& dev) {
  const BackendEntry* b = find_backend(dev.caps().backend);
  if (b && b->telemetry) return b->telemetry(dev);
  return make_null_telemetry("no device telemetry on the " + dev.caps().backend + " backend");
}

void pick_gpu(const std::string& backend, int local_rank, DevicePick& p) {
  p.index = -1;
  p.pci_bus_id.clear();
#if defined(TPB_HAVE_CUDA)
  if (backend == "cuda") {
    p.visible = cuda_device_count();
    p.index = device_for_local_rank(local_rank, p.visible);
    // No GPU: make_cuda_device says so, as one agreed line, once MPI is up.
    p.reason = p.index < 0 ? "no CUDA device is visible" : "";
    if (p.index >= 0) p.pci_bus_id = cuda_select_device(p.index);
    return;
  }
#endif
  (void)local_rank;
  p.reason = "--backend " + backend + ": no GPU";
}

// What every verb's device needs; a run adds its memory budget and BLAS threads.
DeviceOptions device_options(const std::string& backend, const World& w) {
  return {.backend = backend,
          .local_rank = w.local_rank,
          .local_size = w.local_size,
          .device_index = w.device.index};
}

DeviceOptions device_options(const RunSpec& spec, const World& w) {
  DeviceOptions o = device_options(spec.backend, w);
  o.memory_budget_bytes = spec.memory_budget_bytes;
  o.blas_threads = spec.blas_threads;
  o.attention = spec.attention;
  return o;
}

DeviceOptions device_options(const CollectivesSpec& spec, const World& w) {
  return device_options(spec.backend, w);
}

}  // namespace tpb
