// What a backend name implies (traits for config) and what the registry builds: defaults,
// the names `info` lists, device options from a spec, and the CPU device's caps flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "harness/backends/collective_factory.h"
#include "harness/backends/registry.h"
#include "harness/config/backend_traits.h"
#include "harness/config/run_spec.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

TEST(BackendTraits, DefaultsByBackend) {
  EXPECT_EQ(default_collective("cpu"), "mpi");
  EXPECT_EQ(default_collective("cuda"), "nccl");
  EXPECT_EQ(default_collective("tpu"), "mpi");  // rejected later, naming --backend
  EXPECT_EQ(default_collective("model"), "model");
  EXPECT_EQ(backend_names(), (std::vector<std::string>{"cpu", "cuda", "model"}));
  EXPECT_EQ(backend_traits("cuda").default_hardware, "h100-sxm");
  EXPECT_EQ(backend_traits("cuda").default_dtype, DType::bf16);
  EXPECT_FALSE(backend_traits("cpu").graphs);
  EXPECT_FALSE(backend_traits("cpu").device_memory);
  EXPECT_TRUE(backend_traits("cuda").device_memory);
  EXPECT_EQ(bad_input([] { backend_traits("tpu"); }), "--backend: unknown backend 'tpu'");
}

TEST(BackendTraits, CudaDefaultsInARunSpec) {
  const RunSpec s = resolve_run_spec({{"backend", "cuda"}}, 2, kConfigs);
  EXPECT_EQ(s.collective, "nccl");
  EXPECT_EQ(s.hardware, "h100-sxm");
  EXPECT_EQ(s.dtype, DType::bf16);
  EXPECT_EQ(bad_input([] {
              resolve_run_spec({{"collective", "nccl"}}, 2, kConfigs);
            }),
            "--collective: nccl needs --backend cuda (got --backend cpu)");
}

TEST(BackendRegistry, BuiltNames) {
  const auto backends = built_backends();
  ASSERT_FALSE(backends.empty());
  EXPECT_EQ(backends.front(), "cpu");
  const auto colls = built_collectives();
  ASSERT_FALSE(colls.empty());
  EXPECT_EQ(colls.front(), "mpi");
  // nccl where NCCL itself is linked (not its stand-in), and then info names its version.
  const bool listed = std::find(colls.begin(), colls.end(), "nccl") != colls.end();
  EXPECT_EQ(listed, TPB_NCCL_LINKED == 1);
  EXPECT_EQ(!linked_nccl_version().empty(), listed) << linked_nccl_version();
  EXPECT_EQ(bad_input([] {
              make_device(DeviceOptions{"tpu"});
            }).rfind("--backend: 'tpu' is not built into this tpbench (built: cpu", 0),
            0u);
}

TEST(BackendRegistry, DeviceOptionsAndCpuCaps) {
  RunSpec s;
  s.memory_budget_bytes = 1 << 30;
  s.blas_threads = 2;
  World w;
  w.local_rank = 1;
  w.local_size = 3;
  const DeviceOptions o = device_options(s, w);
  EXPECT_EQ(o.backend, "cpu");
  EXPECT_EQ(o.local_rank, 1);
  EXPECT_EQ(o.local_size, 3);
  EXPECT_EQ(o.memory_budget_bytes, 1 << 30);
  EXPECT_EQ(o.blas_threads, 2);
  DeviceOptions one_thread = o;  // BLAS threads are process-wide: leave them as other tests expect
  one_thread.blas_threads = 1;
  const auto dev = make_device(one_thread);
  const DeviceCaps& c = dev->caps();
  EXPECT_TRUE(c.host_compute);
  EXPECT_TRUE(c.startup_probe);
  EXPECT_FALSE(c.device_memory);
  EXPECT_EQ(c.host_ranks, 3);
}

}  // namespace
}  // namespace tpb
