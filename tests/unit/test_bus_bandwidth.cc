// Bus-bandwidth factors and nccl-tests' size rounding, pinned to hand-computed numbers
// (nccl-tests doc/PERFORMANCE.md; derivations in collectives/bus_bandwidth.h).
#include <gtest/gtest.h>

#include "base/errors.h"
#include "collectives/bus_bandwidth.h"
#include "harness/measure/collectives_measure.h"

namespace tpb {
namespace {

TEST(BusFactor, AllReduceIsTwoNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(bus_factor(CollKind::all_reduce, 2), 1.0);   // 2 * 1/2
  EXPECT_DOUBLE_EQ(bus_factor(CollKind::all_reduce, 4), 1.5);   // 2 * 3/4
  EXPECT_DOUBLE_EQ(bus_factor(CollKind::all_reduce, 8), 1.75);  // 2 * 7/8
}

TEST(BusFactor, OtherCollectives) {
  EXPECT_DOUBLE_EQ(bus_factor(CollKind::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollKind::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(CollKind::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollKind::reduce, 3), 1.0);
  for (CollKind k : all_coll_kinds()) EXPECT_EQ(bus_factor(k, 1), 0.0) << coll_kind_name(k);
}

TEST(BusFactor, NamesRoundTrip) {
  for (CollKind k : all_coll_kinds()) EXPECT_EQ(parse_coll_kind(coll_kind_name(k), "--kind"), k);
  EXPECT_THROW(parse_coll_kind("alltoall", "--kind"), BadInput);
}

TEST(CollCounts, NcclTestsRounding) {
  // all_reduce: 1000 B of fp32 -> 250 elements in and out.
  CollCounts c = coll_counts(CollKind::all_reduce, 1000, DType::fp32, 4);
  EXPECT_EQ(c.send, 250);
  EXPECT_EQ(c.recv, 250);
  EXPECT_EQ(c.bytes, 1000);
  // all_gather on 4 ranks: 1000 B -> 250 elements rounded to 248 (a multiple of 4); each rank
  // sends 62 and receives the 248; S is the gathered total.
  c = coll_counts(CollKind::all_gather, 1000, DType::fp32, 4);
  EXPECT_EQ(c.send, 62);
  EXPECT_EQ(c.recv, 248);
  EXPECT_EQ(c.bytes, 992);
  // reduce_scatter: the mirror image; S is the input total.
  c = coll_counts(CollKind::reduce_scatter, 1024, DType::bf16, 4);
  EXPECT_EQ(c.send, 512);
  EXPECT_EQ(c.recv, 128);
  EXPECT_EQ(c.bytes, 1024);
  // Too small to give every rank an element.
  EXPECT_EQ(coll_counts(CollKind::all_gather, 8, DType::fp32, 4).bytes, 0);
  EXPECT_EQ(coll_counts(CollKind::all_reduce, 2, DType::fp32, 2).bytes, 0);
}

TEST(CollSpec, SizesAndRules) {
  nlohmann::json cfg = {{"minbytes", "1K"}, {"maxbytes", "4M"}, {"stepfactor", "4"}};
  CollectivesSpec s = resolve_coll_spec(cfg, 2, ".");
  EXPECT_EQ(s.sizes,
            (std::vector<int64_t>{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22}));
  cfg = {{"minbytes", "8"}, {"maxbytes", "40"}, {"stepbytes", "16"}};
  EXPECT_EQ(resolve_coll_spec(cfg, 2, ".").sizes, (std::vector<int64_t>{8, 24, 40}));
  EXPECT_THROW(resolve_coll_spec({{"minbytes", "4M"}, {"maxbytes", "1K"}}, 2, "."), BadInput);
  EXPECT_THROW(resolve_coll_spec({{"dtype", "bf16"}}, 2, "."), BadInput);  // mpi on host: fp32
  EXPECT_THROW(resolve_coll_spec({{"root", "2"}}, 2, "."), BadInput);
  EXPECT_THROW(resolve_coll_spec({{"collective", "nccl"}}, 2, "."), BadInput);  // needs cuda
  EXPECT_THROW(resolve_coll_spec({{"bogus", "1"}}, 2, "."), BadInput);
  EXPECT_TRUE(resolve_coll_spec({{"kind", "broadcast"}}, 2, ".").inplace);  // one buffer
}

}  // namespace
}  // namespace tpb
