// calibrate --from an nccl-tests all_reduce_perf output: the text table (both column layouts,
// mpirun's tags), the -J JSON, and every way such a file can fail to be one run's curve. The
// outputs below are written here in nccl-tests' format (src/common.cu, src/util.cu); the sizes
// and times are made up, so each check holds the parser to the figures it was given.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "collectives/model/collective_model.h"
#include "collectives/model/fabric.h"
#include "harness/measure/nccl_tests_import.h"
#include "harness/record/json/calibration_json.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kHead =
    "# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22903\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 1 minBytes 0 maxBytes 2097152 step: 8(factor) warmup iters: 5 iters: 20 "
    "agg iters: 1 validation: 1 graph: 1\n"
    "#\n# Using devices\n"
    "#  Rank  0 Group  0 Pid  41001 on      nodeA device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  41002 on      nodeA device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  2 Group  0 Pid  41003 on      nodeB device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  3 Group  0 Pid  41004 on      nodeB device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n"
    "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)"
    "  (GB/s)  (GB/s)\n";
const std::string kRows =
    "           0             0     float     sum      -1     4.10    0.00    0.00      0     4.00"
    "    0.00    0.00      0\n"
    "           8             2     float     sum      -1    12.00    0.00    0.00      0    11.90"
    "    0.00    0.00      0\n"
    "        4096          1024     float     sum      -1    14.00    0.29    0.44      0    13.90"
    "    0.29    0.44      0\n"
    "     2097152        524288     float     sum      -1    32.00   65.54   98.30      0    31.90"
    "   65.74   98.61      0\n"
    "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 33.0\n";

TEST(NcclTestsImport, TheTextTableIsTheCurveOfItsRanks) {
  EXPECT_TRUE(is_nccl_tests_output(kHead + kRows));
  const NcclTestsOutput r = parse_nccl_tests_text(kHead + kRows, "f");
  EXPECT_EQ(r.test, "all_reduce_perf");
  EXPECT_EQ(r.nccl_version, "2.29.3");  // the library's, not the headers'
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.hosts, 2);
  EXPECT_EQ(r.host, "nodeA");
  EXPECT_EQ(r.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(r.graph);
  EXPECT_EQ(r.dtype, "float");
  EXPECT_EQ(r.processes, 4);  // one GPU per process: nothing to say of it
  EXPECT_EQ(gpus_per_process_note(r), "");
  EXPECT_EQ(r.zero_size_rows, 1);
  ASSERT_EQ(r.points.size(), 3u);  // out-of-place times, the 0-byte row left out
  EXPECT_EQ(r.points[0].first, 8);
  EXPECT_DOUBLE_EQ(r.points[0].second, 12.00e-6);
  EXPECT_EQ(r.points[2].first, 2097152);
  EXPECT_DOUBLE_EQ(r.points[2].second, 32.00e-6);

  // As a topology: two GPUs per node, and --backend model answers from the curve.
  const MeasuredTopologyRecord t = nccl_tests_topology(r, "", "ar.txt", "f");
  EXPECT_EQ(t.name, "nccl-tests-nodeA");
  EXPECT_EQ(t.model.gpus_per_node, 2);
  EXPECT_NE(t.model.measured.source.find("NCCL 2.29.3, 4 ranks on 2 host(s)"), std::string::npos);
  EXPECT_NE(t.model.measured.source.find("CUDA-graph launches"), std::string::npos);
  const Fabric f = parse_fabric(fabric_section_json(t), "f");
  EXPECT_NEAR(model_collective(f, CollKind::all_reduce, 4096, {4, 2}, ModelAlgo::automatic).time_s,
              14.00e-6, 1e-15);
  // Between two sizes the curve is linear in log-log: 8 B -> 4 KiB is 9 octaves, 12 -> 14 us.
  EXPECT_NEAR(model_collective(f, CollKind::all_reduce, 512, {4, 2}, ModelAlgo::automatic).time_s,
              12e-6 * std::pow(14.0 / 12.0, 6.0 / 9.0), 1e-12);
}

TEST(NcclTestsImport, OldLayoutsAndMpirunTags) {
  // Before nccl-tests 2.13: no root column, no Group, no version line; mpirun --tag-output.
  const std::string old =
      "[1,0]<stdout>:# Collective test starting: all_reduce_perf\n"
      "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 8(factor) warmup iters: 5 "
      "iters: 20 validation: 1\n"
      "[1,0]<stdout>:#   Rank  0 Pid 1821213 on host1 device  0 [0x00] NVIDIA A100-SXM4-40GB\n"
      "[1,0]<stdout>:#   Rank  1 Pid 1821214 on host1 device  1 [0x00] NVIDIA A100-SXM4-40GB\n"
      "[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw  error"
      "     time   algbw   busbw  error\n"
      "[1,0]<stdout>:           8             2   float     sum    24765    0.00    0.00  0e+00"
      "    20.07    0.00    0.00  0e+00\n"
      "[0]          64            16   float     sum    20.50    0.00    0.00  0e+00    20.10"
      "    0.00    0.00  0e+00\n";
  const NcclTestsOutput r = parse_nccl_tests_text(old, "f");
  EXPECT_EQ(r.ranks, 2);
  EXPECT_FALSE(r.graph);
  EXPECT_EQ(r.nccl_version, "");
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_DOUBLE_EQ(r.points[0].second, 24765e-6);  // an integer time, read as one
  EXPECT_NE(
      nccl_tests_topology(r, "x", "old.txt", "f").model.measured.source.find("version not printed"),
      std::string::npos);
}

TEST(NcclTestsImport, OneProcessDrivingSeveralGpusIsSaid) {
  // nccl-tests -g 4: one process, one pid on every rank line.
  std::string head = kHead;
  for (const char* pid : {"41002", "41003", "41004"}) head.replace(head.find(pid), 5, "41001");
  const NcclTestsOutput r = parse_nccl_tests_text(head + kRows, "f");
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.processes, 2);  // the same pid on two hosts is two processes
  EXPECT_NE(gpus_per_process_note(r).find("2 GPUs per process"), std::string::npos);
  EXPECT_NE(nccl_tests_topology(r, "", "g.txt", "f")
                .model.measured.source.find("in 2 process(es) (2 GPUs per process"),
            std::string::npos);
}

TEST(NcclTestsImport, TheJsonOfMinusJ) {
  const nlohmann::json j = nlohmann::json::parse(R"({
    "version": 3, "args": ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8"],
    "nccl_version": 22703,
    "config": {"graph": 0, "devices": [
      {"rank": 0, "pid": 7, "hostname": "h", "device_info": "NVIDIA H200"},
      {"rank": 1, "pid": 7, "hostname": "h", "device_info": "NVIDIA H200"}]},
    "results": [
      {"size": 8, "type": "bfloat16", "out_of_place": {"time": 9.5, "alg_bw": 0, "bus_bw": 0}},
      {"size": 1024, "type": "bfloat16", "out_of_place": {"time": 10.5, "alg_bw": 0, "bus_bw": 0}}
    ]})");
  const NcclTestsOutput r = parse_nccl_tests_json(j, "f");
  EXPECT_EQ(r.test, "all_reduce_perf");
  EXPECT_EQ(r.nccl_version, "2.27.3");
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.hosts, 1);
  EXPECT_EQ(r.processes, 1);  // both ranks in pid 7
  EXPECT_EQ(r.gpu, "NVIDIA H200");
  EXPECT_EQ(r.dtype, "bfloat16");
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_DOUBLE_EQ(r.points[1].second, 10.5e-6);
}

TEST(NcclTestsImport, VersionCodes) {
  EXPECT_EQ(nccl_version_name(22902), "2.29.2");
  EXPECT_EQ(nccl_version_name(21805), "2.18.5");
  EXPECT_EQ(nccl_version_name(2708), "2.7.8");
}

std::string refusal(const std::string& text) {
  return bad_input([&] { parse_nccl_tests_text(text, "--from 'f'"); });
}

TEST(NcclTestsImport, RefusedWithWhatIsWrong) {
  auto has = [](const std::string& msg, const char* word) {
    return msg.rfind("--from 'f'", 0) == 0 && msg.find(word) != std::string::npos;
  };
  std::string no_test = kHead + kRows;
  no_test.erase(no_test.find("# Collective"), std::string("# Collective test starting: ").size());
  EXPECT_TRUE(has(refusal(no_test), "which test")) << refusal(no_test);
  std::string gather = kHead + kRows;
  gather.replace(gather.find("all_reduce_perf"), 15, "all_gather_perf");
  EXPECT_TRUE(has(refusal(gather), "all_gather_perf"));
  EXPECT_TRUE(has(refusal(kHead + kRows + kRows), "does not ascend"));
  std::string one_rank = kHead;
  one_rank.erase(one_rank.find("#  Rank  1"),
                 one_rank.find("#\n#       size") - one_rank.find("#  Rank  1"));
  EXPECT_TRUE(has(refusal(one_rank + kRows), "1 rank(s)"));
  // NCCL_DEBUG=INFO: a debug line glued to a row, and a row split over lines.
  EXPECT_TRUE(
      has(refusal(kHead + "     2097152        524288     float     sum      -1h:1:2 [0] NCCL "
                          "INFO AllReduce: 2097152 Bytes -> Algo RING proto LL\n"),
          "debug output"));
  EXPECT_TRUE(has(refusal(kHead + "     2097152        524288     float     sum      -1\n"
                                  "h:1:2 [0] NCCL INFO AllReduce: 2097152 Bytes\n"
                                  "    32.00   65.54   98.30      0\n"),
                  "not a row"));
  std::string negative = kHead + kRows;
  negative.replace(negative.find("14.00"), 5, "-4.00");
  EXPECT_TRUE(has(refusal(negative), "positive"));
  EXPECT_NE(bad_input([] {
              parse_nccl_tests_json(nlohmann::json::parse(R"({"results": []})"), "j");
            }).find("not an nccl-tests JSON"),
            std::string::npos);
  EXPECT_FALSE(is_nccl_tests_output("{\"schema\": \"x\"}"));
  // A JSON's size below zero or between two bytes (found by tests/fuzz/fuzz_nccl_tests.cc).
  for (const char* size : {"-8", "0.5"}) {
    const std::string text =
        std::string(R"({"nccl_version": 22703, "config": {"devices": [{"hostname": "h"},
        {"hostname": "h"}]}, "results": [{"size": )") +
        size + R"(, "out_of_place": {"time": 9.5}}, {"size": 64, "out_of_place": {"time": 10}}]})";
    EXPECT_NE(bad_input([&] {
                parse_nccl_tests_json(nlohmann::json::parse(text), "j");
              }).find("is not a byte count"),
              std::string::npos)
        << size;
  }
}

}  // namespace
}  // namespace tpb
