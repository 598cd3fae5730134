// The NCCL stand-in (collectives/nccl/nccl_collective_missing.cc) on its own, as a build that
// found no NCCL links it: it says NCCL is not linked, so the registry lists no nccl, and asking
// for it anyway is one BadInput naming --collective. Its own binary: the unit tests link the
// real NCCL where the toolkit has it, and the two define the same functions.
#include <gtest/gtest.h>

#include <string>

#include "collectives/nccl/nccl_collective.h"
#include "layers/cpu/cpu_device.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

TEST(NcclStandIn, SaysNotLinkedAndRefusesByName) {
  EXPECT_EQ(nccl_version(), "");
  CpuDevice dev(DeviceOptions{});
  const std::string msg = bad_input([&] { make_nccl_collective(MPI_COMM_NULL, dev, 1.0); });
  EXPECT_EQ(msg.rfind("--collective nccl: this tpbench was built without NCCL", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace tpb
