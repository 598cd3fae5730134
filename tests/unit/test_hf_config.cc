// `--model` reading Hugging Face config.json files (layers/hf): the supported architectures' shapes
// against hand-checked figures, a shipped HF config against tpbench's own file for the same model
// (two sources), and the one line each refused architecture, field and name gets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/errors.h"
#include "layers/hf/hf_config.h"
#include "layers/hf/hf_shipped.h"
#include "layers/model_shape.h"
#include "tests/support/bad_input.h"

namespace tpb {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kConfigs = TPB_SOURCE_DIR "/configs";
const std::string kFixtures = TPB_SOURCE_DIR "/tests/fixtures/hf";

// Every field but the name, which differs between the two sources by design.
json shape_of(const ModelShape& m) {
  json j = model_to_json(m);
  j.erase("name");
  return j;
}

// The smallest config the reader takes, for the error cases (Llama-3.1-8B's counts).
json llama() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"hidden_size", 4096},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"intermediate_size", 14336},
          {"vocab_size", 128256}};
}

TEST(HfConfig, ShippedLlamaEqualsTpbenchOwnFile) {
  // configs/models/llama-3.1-*.json were typed from the model cards; the hf/ files are Meta's
  // config.json as AIConfigurator ships it. Equal shapes check each against the other.
  for (const auto& [id, own] : {std::pair{"meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b"},
                                std::pair{"meta-llama/Meta-Llama-3.1-70B", "llama-3.1-70b"}}) {
    const ModelShape hf = load_model(id, kConfigs);
    EXPECT_EQ(hf.name, id);
    EXPECT_EQ(shape_of(hf), shape_of(load_model(own, kConfigs))) << id;
    EXPECT_TRUE(hf.notes.empty()) << id;
  }
  // The bare NAME resolves to the same file and names the model by its hub id.
  EXPECT_EQ(load_model("Meta-Llama-3.1-8B", kConfigs).name, "meta-llama/Meta-Llama-3.1-8B");
}

TEST(HfConfig, LlamaShapesByHand) {
  const ModelShape m70 = load_model("Meta-Llama-3.1-70B", kConfigs);
  EXPECT_EQ(m70.hidden, 8192);
  EXPECT_EQ(m70.n_layers, 80);
  EXPECT_EQ(m70.n_heads, 64);
  EXPECT_EQ(m70.n_kv_heads, 8);
  EXPECT_EQ(m70.head_dim, 128);  // no head_dim in the file: 8192 / 64
  EXPECT_EQ(m70.intermediate, 28672);
  EXPECT_EQ(m70.vocab, 128256);
  EXPECT_DOUBLE_EQ(m70.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(m70.rms_eps, 1e-5);
  const ModelShape m405 = load_model("meta-llama/Meta-Llama-3.1-405B", kConfigs);
  EXPECT_EQ(m405.hidden, 16384);
  EXPECT_EQ(m405.n_layers, 126);
  EXPECT_EQ(m405.n_heads, 128);
  EXPECT_EQ(m405.n_kv_heads, 8);
  EXPECT_EQ(m405.head_dim, 128);
  EXPECT_EQ(m405.intermediate, 53248);
  // transformers 5 moved rope_theta into rope_parameters.
  const ModelShape l1b = load_model(kFixtures + "/Llama-3.2-1B-transformers5.json", kConfigs);
  EXPECT_EQ(l1b.name, "Llama-3.2-1B-transformers5");
  EXPECT_EQ(l1b.hidden, 2048);
  EXPECT_EQ(l1b.n_layers, 16);
  EXPECT_EQ(l1b.head_dim, 64);
  EXPECT_DOUBLE_EQ(l1b.rope_theta, 500000.0);
}

TEST(HfConfig, QwenTwoFromItsFolderWithTheBiasNote) {
  const ModelShape q = load_model(kFixtures + "/Qwen2.5-7B-Instruct", kConfigs);
  EXPECT_EQ(q.name, "Qwen2.5-7B-Instruct");  // the folder's name: config.json names nothing
  EXPECT_EQ(q.hidden, 3584);
  EXPECT_EQ(q.n_layers, 28);
  EXPECT_EQ(q.n_heads, 28);
  EXPECT_EQ(q.n_kv_heads, 4);
  EXPECT_EQ(q.head_dim, 128);  // 3584 / 28
  EXPECT_EQ(q.intermediate, 18944);
  EXPECT_EQ(q.vocab, 152064);
  EXPECT_DOUBLE_EQ(q.rms_eps, 1e-6);
  EXPECT_DOUBLE_EQ(q.rope_theta, 1e6);
  ASSERT_EQ(q.notes.size(), 1u);
  EXPECT_EQ(q.notes[0].rfind("hf_config: Qwen2ForCausalLM's q/k/v projection biases are not "
                             "modelled",
                             0),
            0u)
      << q.notes[0];
  // Its sliding_window (131072) is off: use_sliding_window is false. Switched on at 4096 it binds.
  json j = json::parse(std::ifstream(kFixtures + "/Qwen2.5-7B-Instruct/config.json"));
  j["use_sliding_window"] = true;
  j["sliding_window"] = 4096;
  EXPECT_EQ(bad_input([&] { read_hf_config(j, "q.json"); }),
            "model 'q.json': field 'sliding_window' is 4096 (below max_position_embeddings 32768): "
            "windowed attention is not modelled; null, or a window >= max_position_embeddings, "
            "runs as full attention");
  EXPECT_EQ(bad_input([&] { load_model(kFixtures, kConfigs); }),
            "--model: folder '" + kFixtures + "' holds no config.json");
}

TEST(HfConfig, MistralHeadDimAndSlidingWindow) {
  const ModelShape n = load_model(kFixtures + "/Mistral-Nemo-Base-2407.json", kConfigs);
  EXPECT_EQ(n.hidden, 5120);
  EXPECT_EQ(n.n_layers, 40);
  EXPECT_EQ(n.head_dim, 128);  // stated: 5120 / 32 would be 160
  EXPECT_EQ(n.n_kv_heads, 8);
  EXPECT_EQ(n.vocab, 131072);
  EXPECT_TRUE(n.notes.empty());
  const std::string v01 = kFixtures + "/Mistral-7B-v0.1.json";
  EXPECT_EQ(bad_input([&] { load_model(v01, kConfigs); }),
            "model '" + v01 +
                "': field 'sliding_window' is 4096 (below max_position_embeddings 32768): "
                "windowed attention is not modelled; null, or a window >= "
                "max_position_embeddings, runs as full attention");
  json j = json::parse(std::ifstream(v01));
  j["sliding_window"] = 32768;  // never binds at 32768 positions: full attention
  EXPECT_EQ(read_hf_config(j, "m.json").hidden, 4096);
}

TEST(HfConfig, RefusedArchitecturesNameThemselvesAndWhy) {
  const auto refusal = [](const json& j) {
    return bad_input([&] { read_hf_config(j, "r.json"); });
  };
  const auto arch = [](const char* a) { return json{{"architectures", {a}}}; };
  EXPECT_EQ(refusal(arch("Qwen3ForCausalLM")),
            "model 'r.json': architectures 'Qwen3ForCausalLM' not supported (per-head q/k "
            "RMSNorm not modelled)");
  for (const char* moe : {"Qwen3MoeForCausalLM", "MixtralForCausalLM", "GptOssForCausalLM",
                          "Llama4ForConditionalGeneration"})
    EXPECT_EQ(refusal(arch(moe)), std::string("model 'r.json': architectures '") + moe +
                                      "' not supported (mixture of experts: issue 55)");
  EXPECT_NE(refusal(arch("DeepseekV3ForCausalLM")).find("(mixture of experts: issue 55, and"),
            std::string::npos);
  EXPECT_EQ(refusal(arch("Qwen3_5ForCausalLM")),
            "model 'r.json': architectures 'Qwen3_5ForCausalLM' not supported (linear "
            "attention: issue 56)");
  EXPECT_NE(refusal(arch("Qwen3NextForCausalLM")).find("(linear attention: issue 56, and"),
            std::string::npos);
  EXPECT_EQ(refusal(arch("GPT2LMHeadModel")),
            "model 'r.json': architectures 'GPT2LMHeadModel' not supported (tpbench computes the "
            "Llama layer of LlamaForCausalLM, MistralForCausalLM and Qwen2ForCausalLM only)");
  // An architecture not in the table that has experts is called what it is.
  json other = arch("MiniMaxM2ForCausalLM");
  other["num_local_experts"] = 256;
  EXPECT_NE(refusal(other).find("(mixture of experts: issue 55)"), std::string::npos);
  // Without `architectures`, model_type names the class.
  EXPECT_EQ(refusal({{"model_type", "qwen3_moe"}}),
            "model 'r.json': model_type 'qwen3_moe' not supported (mixture of experts: issue 55)");
  json by_type = llama();
  by_type.erase("architectures");
  by_type["model_type"] = "llama";
  EXPECT_EQ(read_hf_config(by_type, "t.json").architecture, "LlamaForCausalLM");
}

TEST(HfConfig, WrongOrMissingFieldNamesItAndTheFile) {
  const auto err = [](const json& j) { return bad_input([&] { read_hf_config(j, "f.json"); }); };
  json j = llama();
  j.erase("hidden_size");
  EXPECT_EQ(err(j), "model 'f.json': missing required field 'hidden_size'");
  j = llama();
  j["num_hidden_layers"] = 32.0;
  EXPECT_EQ(err(j),
            "model 'f.json': field 'num_hidden_layers' must be an integer in [1, 100000] "
            "(got 32.0)");
  j = llama();
  j["num_key_value_heads"] = 5;
  EXPECT_EQ(err(j),
            "model 'f.json': field 'num_key_value_heads' (5) must divide "
            "num_attention_heads (32)");
  j = llama();
  j["hidden_size"] = 4100;  // 4100 / 32 heads is no whole head
  EXPECT_EQ(err(j),
            "model 'f.json': field 'head_dim' is absent and hidden_size 4100 is not a "
            "multiple of num_attention_heads 32");
  j = llama();
  j["hidden_act"] = "gelu";
  EXPECT_EQ(err(j),
            "model 'f.json': field 'hidden_act' is \"gelu\": tpbench's MLP is SwiGLU "
            "with silu");
  j = llama();
  j["rope_parameters"] = {{"rope_theta", -1}};
  EXPECT_EQ(err(j),
            "model 'f.json': field 'rope_parameters.rope_theta' must be a positive "
            "number (got -1)");
  j = llama();
  j["architectures"] = "LlamaForCausalLM";
  EXPECT_EQ(err(j), "model 'f.json': field 'architectures' must be a non-empty list of strings");
  // Through load_model the file's path is named.
  const fs::path p = fs::temp_directory_path() / "tpb_test_hf_no_vocab.json";
  j = llama();
  j.erase("vocab_size");
  std::ofstream(p) << j.dump();
  EXPECT_EQ(bad_input([&] { load_model(p.string(), kConfigs); }),
            "model '" + p.string() + "': missing required field 'vocab_size'");
  fs::remove(p);
}

TEST(HfConfig, DefaultsNotesAndNames) {
  json j = llama();
  j.erase("num_key_value_heads");  // absent: one KV head per query head
  j["quantization_config"] = {{"quant_method", "fp8"}};
  j["_name_or_path"] = "/opt/ckpts/Llama-3.1-8B-Instruct/";  // a local path names nothing
  const HfShape h = read_hf_config(j, "/data/my-llama.json");
  EXPECT_EQ(h.n_kv_heads, 32);
  EXPECT_DOUBLE_EQ(h.rms_eps, 1e-6);  // transformers' LlamaConfig default
  EXPECT_DOUBLE_EQ(h.rope_theta, 10000.0);
  EXPECT_EQ(h.name, "my-llama");
  ASSERT_EQ(h.notes.size(), 1u);
  EXPECT_EQ(h.notes[0],
            "hf_config: quantization_config (quant_method fp8) is not read; weights "
            "and activations are in --dtype");
  j["_name_or_path"] = "meta-llama/Llama-3.1-8B-Instruct";
  EXPECT_EQ(read_hf_config(j, "config.json").name, "meta-llama/Llama-3.1-8B-Instruct");
  j.erase("_name_or_path");
  EXPECT_EQ(
      read_hf_config(j, "/hub/models--meta-llama--Llama-3.2-1B/snapshots/ab12/config.json").name,
      "meta-llama/Llama-3.2-1B");
  EXPECT_TRUE(is_hf_config(llama()));
  EXPECT_FALSE(is_hf_config({{"hidden", 1024}}));
}

TEST(HfConfig, EveryShippedConfigLoadsOrIsRefusedByName) {
  int loaded = 0;
  const auto shipped = shipped_hf(kConfigs);
  ASSERT_GE(shipped.size(), 40u);
  for (const ShippedHf& s : shipped) {
    try {
      EXPECT_EQ(load_model(s.id, kConfigs).name, s.id);
      ++loaded;
    } catch (const BadInput& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("model '" + s.path + "': architectures '", 0), 0u) << m;
      EXPECT_NE(m.find("' not supported ("), std::string::npos) << m;
    }
  }
  EXPECT_EQ(loaded, 3);  // Meta-Llama-3.1 8B, 70B and 405B: the dense Llama layers among them
  EXPECT_EQ(bad_input([&] { load_model("Qwen/Qwen3-30B-A3B", kConfigs); }),
            "model '" + kConfigs +
                "/models/hf/Qwen/Qwen3-30B-A3B.json': architectures 'Qwen3MoeForCausalLM' not "
                "supported (mixture of experts: issue 55)");
  EXPECT_NE(bad_input([&] { load_model("Qwen3.5-27B", kConfigs); }).find("(linear attention"),
            std::string::npos);
  // An unknown name lists the HF configs that load, not the refused ones.
  const std::string unknown = bad_input([&] { load_model("Llama-3.1-8B", kConfigs); });
  EXPECT_EQ(unknown.rfind("--model: unknown model 'Llama-3.1-8B' (known: ", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("meta-llama/Meta-Llama-3.1-8B"), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find("Qwen/Qwen3-8B"), std::string::npos) << unknown;
  EXPECT_TRUE(find_shipped_hf("meta-llama/../Qwen/Qwen3-8B", kConfigs).path.empty());
  EXPECT_TRUE(find_shipped_hf("a/b/c", kConfigs).path.empty());
}

}  // namespace
}  // namespace tpb
