// Model/hardware config loading, TP split rules and dtype parsing: the values the shipped configs
// hold, and the one-line BadInput messages a user sees for each kind of mistake.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/dtype.h"
#include "base/errors.h"
#include "layers/hardware.h"
#include "layers/model_shape.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

nlohmann::json tiny_json() {
  return {{"hidden", 1024}, {"n_layers", 8},        {"n_heads", 16}, {"n_kv_heads", 8},
          {"head_dim", 64}, {"intermediate", 4096}, {"vocab", 32000}};
}

TEST(ModelShape, ShippedConfigsLoad) {
  const ModelShape m8 = load_model("llama-3.1-8b", kConfigs);
  EXPECT_EQ(m8.name, "llama-3.1-8b");
  EXPECT_EQ(m8.hidden, 4096);
  EXPECT_EQ(m8.n_layers, 32);
  EXPECT_EQ(m8.n_heads, 32);
  EXPECT_EQ(m8.n_kv_heads, 8);
  EXPECT_EQ(m8.head_dim, 128);
  EXPECT_EQ(m8.intermediate, 14336);
  EXPECT_EQ(m8.vocab, 128256);
  EXPECT_DOUBLE_EQ(m8.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(m8.rms_eps, 1e-5);
  const ModelShape m70 = load_model("llama-3.1-70b", kConfigs);
  EXPECT_EQ(m70.hidden, 8192);
  EXPECT_EQ(m70.n_layers, 80);
  EXPECT_EQ(m70.n_heads, 64);
  EXPECT_EQ(m70.intermediate, 28672);
  const ModelShape tiny = load_model("tiny", kConfigs);
  EXPECT_EQ(tiny.hidden, 1024);
  EXPECT_EQ(tiny.n_kv_heads, 8);
  // A path ending in .json works as well as a name.
  EXPECT_EQ(load_model(kConfigs + "/models/tiny.json", kConfigs).name, "tiny");
}

TEST(ModelShape, JsonRoundTrip) {
  const ModelShape m = load_model("llama-3.1-8b", kConfigs);
  const ModelShape back = model_from_json(nlohmann::json::parse(model_to_json(m).dump()), "rt");
  EXPECT_EQ(model_to_json(back), model_to_json(m));
}

TEST(ModelShape, ShardSplitsAndReplicates) {
  const ModelShape m70 = load_model("llama-3.1-70b", kConfigs);
  // tp=8: 8 KV heads split one per rank; rank r uses KV head r.
  for (int r = 0; r < 8; ++r) EXPECT_EQ(first_kv_head(m70, 8, r), r);
  // tp=16: 16 ranks share 8 KV heads; ranks 2k and 2k+1 (q heads 8k..8k+7, GQA group k of 8 q
  // heads per KV head) both keep a copy of KV head k.
  const ShardShape s16 = shard_shape(m70, 16);
  EXPECT_TRUE(s16.kv_replicated);
  EXPECT_EQ(s16.kv_heads, 1);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(first_kv_head(m70, 16, r), r / 2);
  // tp=2 on the 8B: KV heads 0-3 on rank 0, 4-7 on rank 1.
  const ModelShape m8 = load_model("llama-3.1-8b", kConfigs);
  EXPECT_EQ(shard_shape(m8, 2).kv_heads, 4);
  EXPECT_EQ(first_kv_head(m8, 2, 1), 4);
  EXPECT_EQ(shard_shape(m8, 1).q_heads, 32);
}

TEST(ModelShape, BadTpMessages) {
  const ModelShape m8 = load_model("llama-3.1-8b", kConfigs);
  EXPECT_EQ(bad_input([&] { shard_shape(m8, 3); }),
            "--tp: 3 does not divide the model's 32 attention heads (n_heads)");
  EXPECT_EQ(bad_input([&] { shard_shape(m8, 0); }), "--tp: must be >= 1 (got 0)");
  ModelShape odd = m8;  // 48 q heads, 12 KV heads: tp=8 divides 48 but neither divides 12 nor
  odd.n_heads = 48;     // is a multiple of it
  odd.n_kv_heads = 12;
  EXPECT_EQ(bad_input([&] { shard_shape(odd, 8); }),
            "--tp: 8 neither divides nor is a multiple of the model's 12 KV heads (n_kv_heads)");
  ModelShape narrow = m8;
  narrow.intermediate = 14337;
  EXPECT_EQ(bad_input([&] { shard_shape(narrow, 2); }),
            "--tp: 2 does not divide the model's MLP width 14337 (intermediate)");
}

TEST(ModelShape, RejectsBadJson) {
  auto j = tiny_json();
  j["hiden"] = 1024;
  EXPECT_EQ(bad_input([&] {
              model_from_json(j, "x.json");
            }).rfind("model 'x.json': unknown field 'hiden' (known: hidden,", 0),
            0u);
  j = tiny_json();
  j["hidden"] = -1024;
  EXPECT_EQ(bad_input([&] { model_from_json(j, "x.json"); }),
            "model 'x.json': field 'hidden' must be a positive integer");
  j = tiny_json();
  j["n_layers"] = "8";  // wrong type
  EXPECT_EQ(bad_input([&] { model_from_json(j, "x.json"); }),
            "model 'x.json': field 'n_layers' must be a positive integer");
  j = tiny_json();
  j["head_dim"] = 64.5;  // not a count
  EXPECT_EQ(bad_input([&] { model_from_json(j, "x.json"); }),
            "model 'x.json': field 'head_dim' must be a positive integer");
  j = tiny_json();
  j["n_heads"] = 0;
  EXPECT_EQ(bad_input([&] { model_from_json(j, "x.json"); }),
            "model 'x.json': field 'n_heads' must be a positive integer");
  j = tiny_json();
  j.erase("intermediate");
  EXPECT_EQ(bad_input([&] { model_from_json(j, "x.json"); }),
            "model 'x.json': missing required field 'intermediate'");
  j = tiny_json();
  j["n_kv_heads"] = 6;
  EXPECT_EQ(bad_input([&] { model_from_json(j, "x.json"); }),
            "model 'x.json': n_heads (16) must be a multiple of n_kv_heads (6)");
  j = tiny_json();
  j["rms_eps"] = -1;
  EXPECT_EQ(bad_input([&] { model_from_json(j, "x.json"); }),
            "model 'x.json': field 'rms_eps' must be a positive number");
  EXPECT_EQ(bad_input([&] { model_from_json(nlohmann::json::array(), "x.json"); }),
            "model 'x.json': must be a JSON object");
}

TEST(ModelShape, LoadErrors) {
  const std::string unknown = bad_input([&] { load_model("foo", kConfigs); });
  EXPECT_EQ(unknown.rfind("--model: unknown model 'foo' (known: ", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("llama-3.1-70b, llama-3.1-8b"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("tiny"), std::string::npos) << unknown;
  EXPECT_EQ(bad_input([&] {
              load_model("../models/tiny", kConfigs);
            }).rfind("--model: unknown model '../models/tiny'", 0),
            0u);
  EXPECT_EQ(bad_input([&] { load_model("/nonexistent/m.json", kConfigs); }),
            "--model: file '/nonexistent/m.json' not found");
  const auto path = std::filesystem::temp_directory_path() / "tpb_test_malformed_model.json";
  std::ofstream(path) << "{\"hidden\": 1024,";
  const std::string msg = bad_input([&] { load_model(path.string(), kConfigs); });
  EXPECT_EQ(msg.rfind(path.string() + ": malformed JSON: ", 0), 0u) << msg;
  std::filesystem::remove(path);
}

TEST(DType, Parse) {
  EXPECT_EQ(parse_dtype("bf16", "--dtype"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp8", "--dtype"), DType::fp8);
  EXPECT_EQ(bad_input([] { parse_dtype("x", "--dtype"); }),
            "--dtype: unknown dtype 'x' (expected fp32|bf16|fp16|fp8)");
}

// Hardware profiles share the loader conventions, so they are checked here too.
TEST(Hardware, ShippedProfiles) {
  const Hardware h100 = load_hardware("h100-sxm", kConfigs);
  EXPECT_DOUBLE_EQ(h100.flops_for(DType::bf16), 989e12);
  EXPECT_DOUBLE_EQ(h100.peak_bw, 3.35e12);
  // Ridge ~295 FLOP/B, as the brief says.
  EXPECT_NEAR(h100.flops_for(DType::bf16) / h100.peak_bw, 295.2, 0.1);
  const Hardware h200 = load_hardware("h200-sxm", kConfigs);
  EXPECT_NEAR(h200.flops_for(DType::bf16) / h200.peak_bw, 206.0, 0.1);
  for (const char* name : {"h100-sxm", "h200-sxm", "a100-sxm-80g", "b200"}) {
    const Hardware h = load_hardware(name, kConfigs);
    EXPECT_FALSE(h.measure_at_startup) << name;
    EXPECT_NE(h.source.find("dense"), std::string::npos) << name;
  }
  const Hardware a100 = load_hardware("a100-sxm-80g", kConfigs);
  EXPECT_EQ(bad_input([&] { a100.flops_for(DType::fp8); }),
            "--dtype: hardware 'a100-sxm-80g' has no peak for fp8");
  const Hardware cpu = load_hardware("cpu", kConfigs);
  EXPECT_TRUE(cpu.measure_at_startup);
  EXPECT_DOUBLE_EQ(cpu.llc_bytes, 33554432);
  EXPECT_EQ(bad_input([&] { cpu.flops_for(DType::bf16); }),
            "--dtype: hardware 'cpu' has no peak for bf16");
  const std::string unknown = bad_input([&] { load_hardware("foo", kConfigs); });
  EXPECT_EQ(unknown.rfind("--hardware: unknown hardware 'foo' (known: ", 0), 0u) << unknown;
}

TEST(Hardware, RejectsBadJson) {
  const nlohmann::json ok = {
      {"name", "g"}, {"peak_flops", {{"bf16", 1e15}}}, {"peak_bw", 3e12}, {"source", "datasheet"}};
  EXPECT_EQ(hardware_from_json(ok, "g.json").peak_flops.at("bf16"), 1e15);
  auto j = ok;
  j["peak_bw"] = 0;  // a datasheet profile needs a real peak
  EXPECT_EQ(bad_input([&] { hardware_from_json(j, "g.json"); }),
            "hardware 'g.json': field 'peak_bw' must be a positive number");
  j["measure_at_startup"] = true;  // ...a probed one may start at 0
  EXPECT_DOUBLE_EQ(hardware_from_json(j, "g.json").peak_bw, 0);
  j = ok;
  j["peak_flops"]["bf16"] = 989;  // TFLOP/s written where FLOP/s go: a step of hours
  EXPECT_EQ(bad_input([&] { hardware_from_json(j, "g.json"); }),
            "hardware 'g.json': field 'peak_flops.bf16' is 989 FLOP/s: a device's peak lies "
            "between 1e+06 and 1e+18 FLOP/s (give FLOP/s, not TFLOP/s or GFLOP/s)");
  j = ok;
  j["peak_bw"] = 1e-300;  // once an ok point with a NaN step
  EXPECT_NE(bad_input([&] { hardware_from_json(j, "g.json"); }).find("'peak_bw' is 1e-300 B/s"),
            std::string::npos);
  j = ok;
  j["peak_flops"]["int4"] = 1;
  EXPECT_EQ(bad_input([&] {
              hardware_from_json(j, "g.json");
            }).rfind("hardware 'g.json': unknown dtype 'peak_flops.int4'", 0),
            0u);
  j = ok;
  j.erase("source");
  EXPECT_EQ(bad_input([&] { hardware_from_json(j, "g.json"); }),
            "hardware 'g.json': missing required field 'source'");
  j = ok;
  j["bw"] = 1;
  EXPECT_EQ(bad_input([&] {
              hardware_from_json(j, "g.json");
            }).rfind("hardware 'g.json': unknown field 'bw'", 0),
            0u);
  const Hardware back = hardware_from_json(
      nlohmann::json::parse(hardware_to_json(load_hardware("b200", kConfigs)).dump()), "rt");
  EXPECT_DOUBLE_EQ(back.flops_for(DType::fp8), 4.5e15);
}

}  // namespace
}  // namespace tpb
