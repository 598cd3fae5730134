// The collective kinds' table entries, pinned per kind to hand-computed element splits, bus
// factors and verification values (fill v(r, i) = (7i + 3r) % 13 + 1; collectives/kinds/).
#include <gtest/gtest.h>

#include <vector>

#include "base/errors.h"
#include "collectives/bus_bandwidth.h"
#include "collectives/kinds/coll_kind.h"
#include "collectives/kinds/verify_fill.h"
#include "layers/reference/dtype_round.h"

namespace tpb {
namespace {

// Two ranks' first values, by hand: rank 0: 1 8 2 9 3 ..., rank 1: 4 11 5 12 6 ...
CollVerify verify(int rank, int n, CollCounts c, const char* op = "sum", int root = 0,
                  bool inplace = false) {
  return {.op = op, .root = root, .rank = rank, .n = n, .inplace = inplace, .counts = c};
}

void expect_elements(const CollKindInfo& k, int64_t count, int n, CollElements want) {
  const CollElements got = k.elements(count, n);
  EXPECT_EQ(got.send, want.send) << k.name;
  EXPECT_EQ(got.recv, want.recv) << k.name;
  EXPECT_EQ(got.total, want.total) << k.name;
}

TEST(CollKinds, RegistryByKindAndName) {
  const std::vector<CollKind> order{CollKind::all_reduce, CollKind::reduce_scatter,
                                    CollKind::all_gather, CollKind::broadcast, CollKind::reduce};
  EXPECT_EQ(all_coll_kinds(), order);
  for (CollKind k : order) {
    EXPECT_EQ(coll_kind_info(k).kind, k);
    EXPECT_EQ(&coll_kind_info(coll_kind_name(k), "--kind"), &coll_kind_info(k));
  }
  try {
    coll_kind_info("alltoall", "--kind");
    FAIL() << "no BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--kind: unknown collective 'alltoall' "
                  "(expected all_reduce|reduce_scatter|all_gather|broadcast|reduce)"),
              std::string::npos)
        << e.what();
  }
}

TEST(CollKinds, AllReduce) {
  const CollKindInfo& k = kAllReduce;
  expect_elements(k, 250, 3, {250, 250, 250});
  EXPECT_DOUBLE_EQ(k.bus_factor(3), 4.0 / 3.0);  // 2 * 2/3
  const CollCounts c = coll_counts(CollKind::all_reduce, 1001, DType::fp32, 3);
  EXPECT_EQ(c.send, 250);
  EXPECT_EQ(c.bytes, 1000);
  EXPECT_EQ(k.expected(verify(0, 2, c), 1), 19.0f);         // 8 + 11
  EXPECT_EQ(k.expected(verify(1, 2, c, "max"), 1), 11.0f);  // max(8, 11)
  EXPECT_EQ(k.expected(verify(1, 2, c, "min"), 3), 9.0f);   // min(9, 12)
  EXPECT_EQ(k.buffers, CollBuffers::send_and_recv);
}

TEST(CollKinds, ReduceScatter) {
  const CollKindInfo& k = kReduceScatter;
  // 1000 B of fp16 on 3 ranks: 500 elements rounded to 498; each rank keeps 166.
  expect_elements(k, 500, 3, {498, 166, 498});
  const CollCounts c = coll_counts(CollKind::reduce_scatter, 1000, DType::fp16, 3);
  EXPECT_EQ(c.send, 498);
  EXPECT_EQ(c.recv, 166);
  EXPECT_EQ(c.bytes, 996);
  EXPECT_DOUBLE_EQ(k.bus_factor(3), 2.0 / 3.0);
  // 8 elements on 2 ranks: rank 1 keeps elements 4..7; element 4 is 3 + 6.
  const CollCounts c8{.send = 8, .recv = 4, .bytes = 32};
  EXPECT_EQ(k.expected(verify(1, 2, c8), 0), 9.0f);
  EXPECT_EQ(k.expected(verify(0, 2, c8), 0), 5.0f);  // 1 + 4
}

TEST(CollKinds, AllGather) {
  const CollKindInfo& k = kAllGather;
  // 1000 B of fp32 on 3 ranks: 250 elements rounded to 249; each rank sends 83.
  expect_elements(k, 250, 3, {83, 249, 249});
  EXPECT_EQ(coll_counts(CollKind::all_gather, 1000, DType::fp32, 3).bytes, 996);
  EXPECT_DOUBLE_EQ(k.bus_factor(3), 2.0 / 3.0);
  const CollCounts c{.send = 4, .recv = 8, .bytes = 32};
  EXPECT_EQ(k.expected(verify(0, 2, c), 1), 8.0f);   // rank 0's element 1
  EXPECT_EQ(k.expected(verify(0, 2, c), 5), 11.0f);  // rank 1's element 1
  // In place, rank 1's block goes to its own slot of the receive buffer.
  std::vector<float> send(4, 0.0f), recv(8, 0.0f);
  k.fill(verify(1, 2, c, "sum", 0, true), send.data(), recv.data());
  EXPECT_EQ(recv, (std::vector<float>{0, 0, 0, 0, 4, 11, 5, 12}));
  EXPECT_EQ(send, std::vector<float>(4, 0.0f));
}

TEST(CollKinds, Broadcast) {
  const CollKindInfo& k = kBroadcast;
  expect_elements(k, 7, 4, {7, 7, 7});
  EXPECT_DOUBLE_EQ(k.bus_factor(8), 1.0);
  EXPECT_EQ(k.buffers, CollBuffers::one_buffer);
  const CollCounts c{.send = 4, .recv = 4, .bytes = 16};
  EXPECT_EQ(k.expected(verify(0, 2, c, "sum", 1), 0), 4.0f);  // the root's element 0
  std::vector<float> send(4, 0.0f), recv(4, 0.0f);
  k.fill(verify(0, 2, c, "sum", 1, true), send.data(), recv.data());  // not the root
  EXPECT_EQ(recv, std::vector<float>(4, 0.0f));
  k.fill(verify(1, 2, c, "sum", 1, true), send.data(), recv.data());
  EXPECT_EQ(recv, (std::vector<float>{4, 11, 5, 12}));
}

TEST(CollKinds, Reduce) {
  const CollKindInfo& k = kReduce;
  expect_elements(k, 1, 3, {1, 1, 1});
  EXPECT_EQ(coll_counts(CollKind::reduce, 3, DType::bf16, 3).bytes, 2);
  EXPECT_DOUBLE_EQ(k.bus_factor(3), 1.0);
  EXPECT_EQ(k.buffers, CollBuffers::root_output);
  const CollCounts c{.send = 4, .recv = 4, .bytes = 16};
  EXPECT_EQ(k.expected(verify(1, 2, c, "sum", 1), 2), 7.0f);  // 2 + 5
  std::vector<float> send(4, 0.0f), recv(4, 0.0f);
  k.fill(verify(0, 2, c), send.data(), recv.data());  // out of place: the send buffer
  EXPECT_EQ(send, (std::vector<float>{1, 8, 2, 9}));
  EXPECT_EQ(recv, std::vector<float>(4, 0.0f));
}

// The sum kinds' expected values stay exact in bf16 at any rank count: every rank's inputs
// summed in bf16 (rounded after each add, as a ring's partial sums are stored) in rank order
// and in reverse, equal the kind's expected value and the exact sum, and each element's sum is
// below 256 (so any other order is exact too). The fill before the sparse sum (every rank's
// value in 1..13) first rounds at 36 ranks (91 + 91 + 13+12+...+4 = 267 > 256) and at 1024
// ranks sums ~7000; 24 ranks (at most 91 + 13+...+3 = 179) is within the bound either way.
TEST(CollKinds, SumExactInBf16AtAnyRankCount) {
  for (const CollKindInfo* k : {&kAllReduce, &kReduce, &kReduceScatter}) {
    // reduce_scatter's buffers are n blocks per rank: 1024 ranks would take n^2 blocks here.
    const bool blocks = k == &kReduceScatter;
    for (int n : blocks ? std::vector<int>{2, 19, 24, 36} : std::vector<int>{2, 19, 24, 36, 1024}) {
      const int64_t recv = 2 * 13 * sum_stride(n);  // every residue of i mod 13 and the stride
      const int64_t count = blocks ? recv * n : recv;
      const CollCounts c{.send = count, .recv = recv, .bytes = 2 * count};
      std::vector<std::vector<float>> in(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        std::vector<float> send(static_cast<std::size_t>(count), 0.0f), out(send);
        k->fill(verify(r, n, c), send.data(), out.data());
        in[static_cast<std::size_t>(r)] = send;
      }
      int64_t wrong = 0;
      for (int64_t j = 0; j < c.recv; ++j) {  // rank 0's output: reduce_scatter's block 0
        const auto e = static_cast<std::size_t>(j);
        double exact = 0;
        float up = 0, down = 0;
        for (int r = 0; r < n; ++r) {
          exact += in[static_cast<std::size_t>(r)][e];
          up = ref::round_to_dtype(up + in[static_cast<std::size_t>(r)][e], DType::bf16);
          down =
              ref::round_to_dtype(down + in[static_cast<std::size_t>(n - 1 - r)][e], DType::bf16);
        }
        const float want = k->expected(verify(0, n, c), j);
        // An output left unwritten (holding rank 0's own input) must not read as right.
        const bool unwritten_passes = want <= in[0][e];
        wrong += (up != want || down != want || want != exact || exact >= 256 || unwritten_passes);
      }
      EXPECT_EQ(wrong, 0) << k->name << " at " << n << " ranks";
    }
  }
}

}  // namespace
}  // namespace tpb
