// The collectives console row and -J file in nccl-tests' shape, on hand-made records: the
// columns a whitespace split finds, the N/A half, wide numbers kept in their column, and the
// JSON keys nccl-tests writes.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "harness/record/coll_point_builder.h"
#include "harness/record/json/nccl_tests_json.h"
#include "harness/report/collectives_table.h"

namespace tpb {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// 4096 B of float = 1024 elements; 2 ranks, time 10 us: algbw = 4096 / 10e-6 / 1e9 = 0.4096
// GB/s, busbw = algbw x 2(2-1)/2 = 0.4096.
CollPointRecord point(bool inplace, double time_s) {
  CollPointRecord p;
  p.params = {.kind = "all_reduce",
              .op = "sum",
              .dtype = "fp32",
              .bytes = 4096,
              .count = 1024,
              .ranks = 2,
              .inplace = inplace};
  p.metrics.time_s.mean = time_s;
  p.metrics.algbw_GBps = 4096 / time_s / 1e9;
  p.metrics.busbw_GBps = p.metrics.algbw_GBps;
  p.ranks = {CollRankRecord{.rank = 0}, CollRankRecord{.rank = 1}};
  return p;
}

TEST(CollectivesTable, NcclTestsColumns) {
  const std::vector<CollPointRecord> pts = {point(false, 10e-6), point(true, 12e-6)};
  const auto rows = coll_size_rows(pts);
  ASSERT_EQ(rows.size(), 1u);
  const auto w = words(coll_table_row(rows[0], false));
  ASSERT_GE(w.size(), 13u);
  EXPECT_EQ(w[0], "4096");
  EXPECT_EQ(w[1], "1024");
  EXPECT_EQ(w[2], "float");
  EXPECT_EQ(w[3], "sum");
  EXPECT_EQ(w[4], "-1");  // all_reduce has no root
  EXPECT_EQ(w[5], "10.00");
  EXPECT_EQ(w[6], "0.41");
  EXPECT_EQ(w[7], "0.41");
  EXPECT_EQ(w[8], "0");
  EXPECT_EQ(w[9], "12.00");
}

TEST(CollectivesTable, AbsentHalfAndWideNumbersKeepTheColumns) {
  // 1234567.89 us does not fit nccl-tests' 7 characters with decimals: it loses them.
  const std::vector<CollPointRecord> pts = {point(true, 1.23456789)};
  const auto w = words(coll_table_row(coll_size_rows(pts)[0], false));
  ASSERT_GE(w.size(), 13u);
  for (int i = 5; i < 9; ++i) EXPECT_EQ(w[i], "N/A");
  EXPECT_EQ(w[9], "1234568");
}

TEST(CollectivesTable, NcclTestsJsonKeys) {
  const std::vector<CollPointRecord> pts = {point(false, 10e-6), point(true, 12e-6)};
  CollectivesSpec s;
  s.sizes = {4096};
  const auto j = nccl_tests_json(s, {{"tpbench"}, "t0", "t1", 2}, pts, coll_summary(pts));
  EXPECT_EQ(j["version"], 2);
  const auto& r = j["results"][0];
  EXPECT_EQ(r["size"], 4096);
  EXPECT_EQ(r["type"], "float");
  EXPECT_EQ(r["root"], "    -1");
  EXPECT_DOUBLE_EQ(r["out_of_place"]["time"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(r["in_place"]["time"].get<double>(), 12.0);
  EXPECT_TRUE(r["in_place"].contains("nwrong"));
  EXPECT_EQ(j["out_of_bounds"]["count"], 0);
}

}  // namespace
}  // namespace tpb
