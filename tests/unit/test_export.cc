// `tpbench export`'s printers pinned to hand-written lines: the Prometheus text format (names,
// labels and their escapes, a summary's quantiles, _count and _sum, a null figure omitted) and
// the CSV (one row per rank, the point's figures repeated, RFC 4180 quoting).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "harness/record/json/results_doc_json.h"
#include "harness/record/json/results_json.h"
#include "harness/report/export/export_csv.h"
#include "harness/report/export/export_table.h"
#include "harness/report/export/openmetrics.h"

namespace tpb {
namespace {

using oj = nlohmann::ordered_json;

RankRecord rank(int64_t r, double mbu, double wait_s) {
  RankRecord x;
  x.rank = r;
  x.host = "h\"1";  // a quote, which the label must escape
  x.wall_s = 2;
  x.wait_s = wait_s;
  x.mbu = mbu;
  x.mfu = 0.25;
  x.occupancy_sampled = 1;
  x.busy_fraction = 0.5;
  return x;
}

// A two-rank decode point: step p50 10 ms over n = 4 steps of mean 12 ms; rank 1's MBU is null.
oj results_doc() {
  PointRecord p;
  p.params.phase = "decode";
  p.params.model = "tiny";
  p.params.batch = 4;
  p.params.context = 128;
  p.params.tp = 2;
  p.params.dtype = "fp32";
  p.params.backend = "cpu";
  p.params.topology = "shm";
  p.params.inject = {"rank=1:slowdown=1.5,rank=0:jitter=0.1@5"};
  MetricsRecord m;
  m.step_time_s = {0.010, 0.020, 0.030, 0.012, 0.009, 0.031, 4};
  m.tokens_per_s = 400;
  m.mfu_ceiling = 0.5;
  p.metrics = m;
  p.ranks = std::vector<RankRecord>{rank(0, 0.75, 0.5), rank(1, NAN, 0)};
  oj doc = {{"points", oj::array()}};
  doc["points"].push_back(to_json(p));
  return doc;
}

// The document as the printers take it: its records, read as `tpbench export` reads them.
ResultsDoc doc_of(const oj& j) {
  return results_doc_from_json(j, "export", "test");
}

std::string lines_of(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string out, l;
  while (std::getline(in, l))
    if (l.rfind(prefix, 0) == 0) out += l + "\n";
  return out;
}

const char* kLabels =
    "results=\"r\",point=\"0\",model=\"tiny\",phase=\"decode\",batch=\"4\",context=\"128\","
    "prompt=\"0\",tp=\"2\",dtype=\"fp32\",backend=\"cpu\",topology=\"shm\",inject=\"rank=1:"
    "slowdown=1.5,rank=0:"
    "jitter=0.1@5\"";

TEST(Export, OpenMetricsLines) {
  const std::string text = openmetrics_text(export_points("r", doc_of(results_doc())));
  const std::string L = kLabels;
  // Rank 1's null MBU is no sample; the host's quote is escaped.
  EXPECT_EQ(lines_of(text, "tpbench_mbu"),
            "tpbench_mbu{" + L + ",rank=\"0\",host=\"h\\\"1\"} 0.75\n");
  // wait_s / wall_s: 0.5 / 2 and 0 / 2.
  EXPECT_EQ(lines_of(text, "tpbench_wait_fraction"),
            "tpbench_wait_fraction{" + L + ",rank=\"0\",host=\"h\\\"1\"} 0.25\n" +
                "tpbench_wait_fraction{" + L + ",rank=\"1\",host=\"h\\\"1\"} 0\n");
  // The summary: three quantiles, then _count = n and _sum = mean x n = 0.048.
  EXPECT_EQ(lines_of(text, "tpbench_step_seconds"),
            "tpbench_step_seconds{" + L + ",quantile=\"0.5\"} 0.01\n" + "tpbench_step_seconds{" +
                L + ",quantile=\"0.95\"} 0.02\n" + "tpbench_step_seconds{" + L +
                ",quantile=\"0.99\"} 0.03\n" + "tpbench_step_seconds_count{" + L + "} 4\n" +
                "tpbench_step_seconds_sum{" + L + "} 0.048\n");
  EXPECT_NE(text.find("# TYPE tpbench_step_seconds summary\n"), std::string::npos);
  EXPECT_EQ(text.find("tpbench_itl_seconds"), std::string::npos);  // not a serve point
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
}

TEST(Export, HelpBeforeTypeBeforeSamples) {
  const std::string text = openmetrics_text(export_points("r", doc_of(results_doc())));
  const auto help = text.find("# HELP tpbench_mbu "), type = text.find("# TYPE tpbench_mbu gauge");
  ASSERT_NE(help, std::string::npos);
  EXPECT_LT(help, type);
  EXPECT_LT(type, text.find("tpbench_mbu{"));
}

TEST(Export, CsvRowPerRank) {
  const std::string csv = csv_text(export_points("r", doc_of(results_doc())));
  std::istringstream in(csv);
  std::string header, r0, r1, extra;
  std::getline(in, header);
  std::getline(in, r0);
  std::getline(in, r1);
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(
      header,
      "results,point,model,phase,batch,context,prompt,tp,dtype,backend,topology,inject,rank,host,"
      "mbu,"
      "mfu,mfu_ceiling,occupancy,busy_fraction,wait_fraction,step_seconds_q0.5,"
      "step_seconds_q0.95,step_seconds_q0.99,step_seconds_count,step_seconds_sum,"
      "tokens_per_second");
  const std::string id =
      "r,0,tiny,decode,4,128,0,2,fp32,cpu,shm,\"rank=1:slowdown=1.5,rank=0:jitter=0.1@5\"";
  EXPECT_EQ(r0, id + ",0,\"h\"\"1\",0.75,0.25,0.5,1,0.5,0.25,0.01,0.02,0.03,4,0.048,400");
  EXPECT_EQ(r1, id + ",1,\"h\"\"1\",,0.25,0.5,1,0.5,0,0.01,0.02,0.03,4,0.048,400");
}

// A collectives run exports its sizes' time and bus bandwidth, and each rank's arrival lag.
TEST(Export, CollectivesGolden) {
  std::ifstream f(std::string(TPB_SOURCE_DIR) + "/tests/golden/results_collectives.json");
  std::stringstream s;
  s << f.rdbuf();
  const oj doc = oj::parse(s.str());
  const auto points = export_points("c", doc_of(doc));
  std::size_t ok = 0;
  for (const auto& p : doc["points"]) ok += p["status"] == "ok";
  ASSERT_EQ(points.size(), ok);
  ASSERT_GT(ok, 0u);
  const std::string text = openmetrics_text(points);
  const CollPointRecord first = coll_point_from_json(doc["points"][0]);
  EXPECT_NE(text.find("tpbench_collective_seconds{results=\"c\",point=\"0\",kind=\"" +
                      first.params.kind + "\""),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE tpbench_collective_arrival_lag_seconds gauge"), std::string::npos);
  EXPECT_EQ(text.find("tpbench_mbu"), std::string::npos);
}

// A serve point: TPOT, E2EL and goodput beside TTFT and ITL, and its load as a label of its
// own (concurrency=8), in both printers.
TEST(Export, ServeLatenciesAndLoad) {
  PointRecord p;
  p.params.phase = "serve";
  p.params.model = "tiny";
  p.params.tp = 2;
  p.params.topology = "shm";
  ServeParamsRecord s;
  s.load = "concurrency";
  s.x = 8;
  p.params.serve = s;
  MetricsRecord m;
  // TPOT: mean 5 ms over n = 3 requests, so _sum = 0.015; E2EL: mean 1 s over n = 4.
  m.tpot_s = LatencyStats{0.005, 0.004, 0.006, 0.007, 0.008, 0.009, 3, std::nullopt};
  m.e2el_s = LatencyStats{1, 0.9, 1.2, 1.3, 1.4, 1.5, 4, std::nullopt};
  m.queue_s = LatencyStats{0.25, 0.2, 0.3, 0.35, 0.4, 0.5, 4, std::nullopt};
  m.goodput = Goodput{"ttft=100", 2.5, 0.75};
  p.metrics = m;
  oj doc = {{"points", oj::array()}};
  doc["points"].push_back(to_json(p));
  const auto points = export_points("s", doc_of(doc));
  const std::string text = openmetrics_text(points);
  const std::string L =
      "results=\"s\",point=\"0\",model=\"tiny\",phase=\"serve\",batch=\"0\",context=\"0\","
      "prompt=\"0\",tp=\"2\",dtype=\"\",backend=\"\",topology=\"shm\",inject=\"\","
      "concurrency=\"8\"";
  EXPECT_EQ(lines_of(text, "tpbench_tpot_seconds"),
            "tpbench_tpot_seconds{" + L + ",quantile=\"0.5\"} 0.004\n" + "tpbench_tpot_seconds{" +
                L + ",quantile=\"0.9\"} 0.006\n" + "tpbench_tpot_seconds{" + L +
                ",quantile=\"0.95\"} 0.007\n" + "tpbench_tpot_seconds{" + L +
                ",quantile=\"0.99\"} 0.008\n" + "tpbench_tpot_seconds_count{" + L + "} 3\n" +
                "tpbench_tpot_seconds_sum{" + L + "} 0.015\n");
  EXPECT_NE(text.find("tpbench_e2el_seconds_count{" + L + "} 4\n"), std::string::npos);
  EXPECT_NE(text.find("tpbench_request_queue_seconds_sum{" + L + "} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("tpbench_request_decode_seconds{"), std::string::npos);  // not in the record
  EXPECT_NE(text.find("tpbench_goodput_requests_per_second{" + L + "} 2.5\n"), std::string::npos);
  EXPECT_NE(text.find("tpbench_goodput_fraction{" + L + "} 0.75\n"), std::string::npos);
  std::istringstream in(csv_text(points));
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_NE(header.find(",topology,inject,concurrency,"), std::string::npos) << header;
  for (const char* col : {"tpot_seconds_q0.5", "tpot_seconds_count", "e2el_seconds_q0.99",
                          "e2el_seconds_sum", "goodput_requests_per_second", "goodput_fraction"})
    EXPECT_NE(header.find(col), std::string::npos) << col;
  EXPECT_EQ(row.substr(row.size() - 4), "0.75");  // goodput_fraction is the last family
}

TEST(Export, Numbers) {
  EXPECT_EQ(metric_number(0.1), "0.1");
  EXPECT_EQ(metric_number(1e-7), "1e-07");
  EXPECT_EQ(metric_number(INFINITY), "+Inf");
  EXPECT_EQ(metric_number(3), "3");
}

}  // namespace
}  // namespace tpb
