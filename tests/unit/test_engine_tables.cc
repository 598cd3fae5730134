// Engine table files (layers/profile/engine_tables.h) on a small synthetic table written here:
// each op's price, its coverage and the table that priced it; nullopt where the table lacks
// the dtype, head shape or rank count; and a broken file's message naming the file and field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "layers/profile/engine_tables.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

using Json = nlohmann::ordered_json;
constexpr double us = 1e-6;

// gemm.bf16: s = base[m] + 4 j + 8 l + 16 j l us (j, l: n's and k's index), base = 10, 10,
// 20 over m = 1, 2, 4. decode: 32/8/128 over batch 1, 4 x context 128, 256. prefill:
// 32/8/128 over batch 1 x prompt 1024, 2048. all_reduce.custom_graph at 8 ranks over 1, 4,
// 16 KiB.
Json fixture() {
  return {{"format", 1},
          {"engine", "vllm-test"},
          {"hardware", "h200-sxm"},
          {"provenance", {{"source", "a test"}, {"package", "none"}}},
          {"gemm",
           {{"bf16",
             {{"kernel", "torch.nn.functional.linear"},
              {"m", {1, 2, 4}},
              {"n", {32, 64}},
              {"k", {32, 64}},
              {"s",
               {{{10 * us, 18 * us}, {14 * us, 38 * us}},
                {{10 * us, 18 * us}, {14 * us, 38 * us}},
                {{20 * us, 28 * us}, {24 * us, 48 * us}}}}}}}},
          {"decode_attention",
           {{"bf16",
             {{{"kernel", "fa3"},
               {"q_heads", 32},
               {"kv_heads", 8},
               {"head_dim", 128},
               {"batch", {1, 4}},
               {"context", {128, 256}},
               {"s", {{10 * us, 20 * us}, {30 * us, nullptr}}}}}}}},
          {"prefill_attention",
           {{"bf16",
             {{{"kernel", "fa3"},
               {"q_heads", 32},
               {"kv_heads", 8},
               {"head_dim", 128},
               {"batch", {1}},
               {"prompt", {1024, 2048}},
               {"s", {{100 * us, 350 * us}}}}}}}},
          {"collectives",
           {{"all_reduce",
             {{"custom_graph",
               {{"8", {{"bytes", {1024, 4096, 16384}}, {"s", {10 * us, 12 * us, 20 * us}}}}}}}}}},
          {"elementwise", {{"bw_fraction", 0.8}, {"fixed_s", 3e-6}, {"source", "a test"}}}};
}

// The name carries the process id: ctest runs each test in its own process, in parallel.
std::string write(const std::string& stem, const Json& j) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tpb-engine-table-" + stem + "-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << j.dump();
  return path.string();
}

const EngineTables& tables() {
  static const EngineTables t = EngineTables::load(write("fixture", fixture()));
  return t;
}

TEST(EngineTables, GemmOnAGridPointIsTheStoredTime) {
  const auto p = tables().gemm(DType::bf16, 2, 64, 64);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->s, 38 * us);
  EXPECT_EQ(p->coverage, TableCoverage::exact);
  EXPECT_EQ(p->table, "gemm.bf16");
  EXPECT_EQ(p->kernel, "torch.nn.functional.linear");
}

TEST(EngineTables, GemmBetweenTwoMIsTheirMean) {
  // m = 3 between m = 2 (10 us) and m = 4 (20 us) at n = k = 32.
  const auto p = tables().gemm(DType::bf16, 3, 32, 32);
  EXPECT_NEAR(p->s, 15 * us, 1e-15);
  EXPECT_EQ(p->coverage, TableCoverage::interpolated);
}

TEST(EngineTables, GemmTrilinear) {
  // m = 3 (base 15), n = 48 (j = 0.5), k = 40 (l = 0.25): 15 + 2 + 2 + 2 = 21 us.
  EXPECT_NEAR(tables().gemm(DType::bf16, 3, 48, 40)->s, 21 * us, 1e-15);
}

TEST(EngineTables, GemmPastTheGridScalesByWork) {
  // m = 8 is twice m = 4's work: 2 x 20 us.
  const auto p = tables().gemm(DType::bf16, 8, 32, 32);
  EXPECT_NEAR(p->s, 40 * us, 1e-15);
  EXPECT_EQ(p->coverage, TableCoverage::extrapolated);
  // k = 128 at m = 4, n = 64: 2 x 48 us.
  EXPECT_NEAR(tables().gemm(DType::bf16, 4, 64, 128)->s, 96 * us, 1e-15);
  EXPECT_FALSE(tables().gemm(DType::fp8, 4, 64, 64));
}

TEST(EngineTables, DecodeAttentionBilinearAndAHole) {
  // batch 2 (1/3 of 1 -> 4), context 192 (half of 128 -> 256): the hole at (4, 256) is one
  // step from (1, 256) and (4, 128); the first, (1, 256) = 20 us, x 4 = 80 us. At batch 1:
  // 15; at batch 4: (30 + 80) / 2 = 55; 15 + 40 / 3.
  const auto p = tables().decode_attention(DType::bf16, 2, 192, 32, 8, 128);
  ASSERT_TRUE(p);
  EXPECT_NEAR(p->s, (15 + 40.0 / 3) * us, 1e-15);
  EXPECT_EQ(p->coverage, TableCoverage::interpolated);
  EXPECT_EQ(p->table, "decode_attention.bf16");
  EXPECT_EQ(p->kernel, "fa3");
  // The hole alone, on its grid point: interpolated, not exact.
  EXPECT_NEAR(tables().decode_attention(DType::bf16, 4, 256, 32, 8, 128)->s, 80 * us, 1e-15);
  EXPECT_EQ(tables().decode_attention(DType::bf16, 4, 256, 32, 8, 128)->coverage,
            TableCoverage::interpolated);
}

TEST(EngineTables, AttentionWithoutTheHeadShapeOrDtypeIsNullopt) {
  EXPECT_FALSE(tables().decode_attention(DType::bf16, 2, 192, 64, 8, 128));
  EXPECT_FALSE(tables().decode_attention(DType::bf16, 2, 192, 32, 4, 128));
  EXPECT_FALSE(tables().decode_attention(DType::bf16, 2, 192, 32, 8, 64));
  EXPECT_FALSE(tables().decode_attention(DType::fp8, 2, 192, 32, 8, 128));
  EXPECT_FALSE(tables().prefill_attention(DType::fp16, 1, 1024, 32, 8, 128));
}

TEST(EngineTables, PrefillPastThePromptScalesByItsSquare) {
  // 4096 is twice 2048: 4 x 350 us.
  const auto p = tables().prefill_attention(DType::bf16, 1, 4096, 32, 8, 128);
  EXPECT_NEAR(p->s, 1400 * us, 1e-15);
  EXPECT_EQ(p->coverage, TableCoverage::extrapolated);
  EXPECT_EQ(p->table, "prefill_attention.bf16");
  // 1536 is half way: (100 + 350) / 2.
  EXPECT_NEAR(tables().prefill_attention(DType::bf16, 1, 1536, 32, 8, 128)->s, 225 * us, 1e-15);
}

TEST(EngineTables, CollectiveBetweenAboveAndBelowItsSizes) {
  const auto at = [](double bytes) {
    return tables().collective("all_reduce", "custom_graph", 8, bytes);
  };
  EXPECT_EQ(at(2048)->table, "all_reduce.custom_graph");
  EXPECT_NEAR(at(2048)->s, (10 + 2.0 / 3) * us, 1e-15);  // 1/3 of 1 -> 4 KiB
  EXPECT_EQ(at(2048)->coverage, TableCoverage::interpolated);
  EXPECT_NEAR(at(32768)->s, (20 + 8.0 * 16384 / 12288) * us, 1e-15);  // the last slope
  EXPECT_EQ(at(32768)->coverage, TableCoverage::extrapolated);
  EXPECT_NEAR(at(64)->s, 10 * us, 1e-15);  // below 1 KiB: 1 KiB's time
  EXPECT_EQ(at(64)->coverage, TableCoverage::extrapolated);
}

TEST(EngineTables, CollectiveWithoutTheRanksImplOrKindIsNullopt) {
  EXPECT_FALSE(tables().collective("all_reduce", "custom_graph", 4, 2048));
  EXPECT_FALSE(tables().collective("all_reduce", "nccl", 8, 2048));
  EXPECT_FALSE(tables().collective("all_gather", "nccl", 8, 2048));
}

TEST(EngineTables, ElementwiseAndProvenance) {
  // 1.6 GB at 2 TB/s x 0.8 = 1 ms, + 3 us.
  EXPECT_DOUBLE_EQ(tables().elementwise_s(1.6e9, 2e12), 1.003e-3);
  EXPECT_EQ(tables().provenance()["source"], "a test");
  EXPECT_EQ(tables().provenance().begin().key(), "source");  // the file's order, kept
  EXPECT_EQ(tables().engine, "vllm-test");
  EXPECT_EQ(tables().hardware, "h200-sxm");
}

TEST(EngineTables, FindLooksUnderTheConfigDirAndIsNulloptWithoutAFile) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tpb-engine-tables-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "engine_tables" / "vllm-test");
  std::ofstream(dir / "engine_tables" / "vllm-test" / "h200-sxm.json") << fixture().dump();
  const auto t = EngineTables::find("vllm-test", "h200-sxm", dir.string());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->path, (dir / "engine_tables" / "vllm-test" / "h200-sxm.json").string());
  EXPECT_FALSE(EngineTables::find("vllm-test", "h100-sxm", dir.string()));
  EXPECT_FALSE(EngineTables::find("sglang-test", "h200-sxm", dir.string()));
  EXPECT_FALSE(EngineTables::find("../engine_tables/vllm-test", "h200-sxm", dir.string()));
  // The H200's file copied as the H100's: refused, not priced with the H200's times.
  std::filesystem::copy_file(dir / "engine_tables" / "vllm-test" / "h200-sxm.json",
                             dir / "engine_tables" / "vllm-test" / "h100-sxm.json");
  EXPECT_NE(bad_input([&] {
              EngineTables::find("vllm-test", "h100-sxm", dir.string());
            }).find("h100-sxm.json': hardware: 'h200-sxm', but the file is named 'h100-sxm.json'"),
            std::string::npos);
  std::filesystem::create_directories(dir / "engine_tables" / "sglang-test");
  std::filesystem::copy_file(dir / "engine_tables" / "vllm-test" / "h200-sxm.json",
                             dir / "engine_tables" / "sglang-test" / "h200-sxm.json");
  EXPECT_NE(bad_input([&] {
              EngineTables::find("sglang-test", "h200-sxm", dir.string());
            }).find("engine: 'vllm-test', but the file sits under 'sglang-test'"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// The message of loading the fixture after `edit`.
std::string broken(const std::string& stem, const std::function<void(Json&)>& edit) {
  Json j = fixture();
  edit(j);
  const std::string path = write(stem, j);
  const std::string what = bad_input([&] { EngineTables::load(path); });
  EXPECT_NE(what.find("engine table '" + path + "': "), std::string::npos) << what;
  return what;
}

TEST(EngineTables, LoadErrorsNameTheField) {
  EXPECT_NE(broken("rows", [](Json& j) { j["gemm"]["bf16"]["s"].erase(2); })
                .find("gemm.bf16.s: 2 rows, but m has 3 values"),
            std::string::npos);
  EXPECT_NE(broken("inner", [](Json& j) { j["gemm"]["bf16"]["s"][1][0].erase(1); })
                .find("gemm.bf16.s[1][0]: 1 values, but k has 2 values"),
            std::string::npos);
  EXPECT_NE(broken("ascend",
                   [](Json& j) {
                     j["gemm"]["bf16"]["n"] = {64, 32};
                   })
                .find("gemm.bf16.n: must ascend (32 after 64)"),
            std::string::npos);
  EXPECT_NE(
      broken("negative",
             [](Json& j) { j["collectives"]["all_reduce"]["custom_graph"]["8"]["s"][1] = -1; })
          .find("collectives.all_reduce.custom_graph.8.s[1]: a negative time"),
      std::string::npos);
  EXPECT_NE(broken("missing", [](Json& j) { j["decode_attention"]["bf16"][0].erase("head_dim"); })
                .find("decode_attention.bf16[0].head_dim: missing"),
            std::string::npos);
  EXPECT_NE(broken("type", [](Json& j) { j["engine"] = 3; }).find("engine: must be a string"),
            std::string::npos);
  EXPECT_NE(broken("time", [](Json& j) { j["gemm"]["bf16"]["s"][0][0][0] = "10us"; })
                .find("gemm.bf16.s[0][0][0]: must be a time in seconds or null"),
            std::string::npos);
}

TEST(EngineTables, LoadErrorsNameTheFieldAtTheTop) {
  EXPECT_NE(broken("format", [](Json& j) { j["format"] = 2; }).find("format: this tpbench reads"),
            std::string::npos);
  EXPECT_NE(broken("dtype", [](Json& j) { j["gemm"]["int8"] = j["gemm"]["bf16"]; })
                .find("gemm.int8: unknown dtype 'int8'"),
            std::string::npos);
  EXPECT_NE(
      broken("unknown", [](Json& j) { j["gemms"] = Json::object(); }).find("gemms: unknown field"),
      std::string::npos);
  EXPECT_NE(broken("provenance", [](Json& j) { j["provenance"].erase("source"); })
                .find("provenance.source: missing"),
            std::string::npos);
  EXPECT_NE(
      broken("elementwise", [](Json& j) { j.erase("elementwise"); }).find("elementwise: missing"),
      std::string::npos);
  EXPECT_NE(broken("fraction", [](Json& j) { j["elementwise"]["bw_fraction"] = 80; })
                .find("elementwise.bw_fraction: must be a number in"),
            std::string::npos);
  EXPECT_NE(broken("ranks",
                   [](Json& j) {
                     j["collectives"]["all_reduce"]["nccl"]["eight"] =
                         j["collectives"]["all_reduce"]["custom_graph"]["8"];
                   })
                .find("collectives.all_reduce.nccl.eight: a rank count"),
            std::string::npos);
  EXPECT_NE(broken("allnull",
                   [](Json& j) {
                     j["prefill_attention"]["bf16"][0]["s"] = {{nullptr, nullptr}};
                   })
                .find("prefill_attention.bf16[0].s: no measured time"),
            std::string::npos);
  EXPECT_NE(broken("twice",
                   [](Json& j) {
                     j["decode_attention"]["bf16"].push_back(j["decode_attention"]["bf16"][0]);
                   })
                .find("decode_attention.bf16[1]: head shape 32/8/128"),
            std::string::npos);
  const std::string path = write("malformed", fixture());
  std::ofstream(path) << "{\"format\": 1,";
  EXPECT_NE(bad_input([&] { EngineTables::load(path); }).find("malformed JSON"), std::string::npos);
}

}  // namespace
}  // namespace tpb
