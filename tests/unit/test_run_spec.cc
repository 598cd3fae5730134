// RunSpec resolution and inject parsing: defaults, overrides, and one-line errors that name
// the field. (The end-to-end bad-input table runs the binary in tests/mpi/test_bad_input.py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/errors.h"
#include "harness/config/inject_spec.h"
#include "harness/config/run_spec.h"
#include "harness/config/serve_spec.h"
#include "harness/record/json/echo_json.h"
#include "layers/device.h"
#include "layers/hardware.h"
#include "layers/tp_model_config.h"

namespace tpb {
namespace {

const std::string kConfigs = TPB_SOURCE_DIR "/configs";

RunSpec resolve(const nlohmann::json& cfg, int world = 2) {
  return resolve_run_spec(cfg, world, kConfigs);
}

std::string error_of(const nlohmann::json& cfg, int world = 2) {
  try {
    resolve(cfg, world);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

// IEC and binary-shorthand suffixes are powers of two, SI ones powers of ten; a bare number
// is GiB, as it has always been.
TEST(RunSpec, MemoryBudgetIecAndSiUnits) {
  const auto budget = [](const char* text) {
    return resolve({{"memory_budget", text}}).memory_budget_bytes;
  };
  EXPECT_EQ(budget("2GiB"), 2.0 * (1 << 30));
  EXPECT_EQ(budget("2G"), 2.0 * (1 << 30));
  EXPECT_EQ(budget("2gib"), 2.0 * (1 << 30));
  EXPECT_EQ(budget("2GB"), 2e9);
  EXPECT_EQ(budget("512MiB"), 512.0 * (1 << 20));
  EXPECT_EQ(budget("512M"), 512.0 * (1 << 20));
  EXPECT_EQ(budget("512MB"), 512e6);
  EXPECT_EQ(budget("1.5"), 1.5 * (1 << 30));
  for (const char* bad : {"2GiBs", "GiB", "2 GiB", "2X", "-1G"})
    EXPECT_NE(error_of({{"memory_budget", bad}}).find("--memory-budget"), std::string::npos) << bad;
}

TEST(RunSpec, DefaultsFollowTheWorld) {
  const RunSpec s = resolve(nlohmann::json::object(), 4);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.backend, "cpu");
  EXPECT_EQ(s.collective, "mpi");
  EXPECT_EQ(s.dtype, DType::fp32);
  EXPECT_EQ(s.shape.name, "tiny");
  EXPECT_TRUE(s.hw.measure_at_startup);
}

TEST(RunSpec, StringsFromTheCliAreTyped) {
  const RunSpec s = resolve({{"batch", "8"}, {"phase", "prefill"}, {"prompt", "128"}, {"tp", "2"}});
  EXPECT_EQ(s.batch, 8);
  EXPECT_EQ(s.phase, Phase::prefill);
  EXPECT_EQ(s.prompt, 128);
  EXPECT_EQ(s.cost_query().layers, s.shape.n_layers);
}

TEST(RunSpec, ErrorsNameTheField) {
  EXPECT_NE(error_of({{"batch", 0}}).find("--batch"), std::string::npos);
  EXPECT_NE(error_of({{"batch", "-3"}}).find("--batch"), std::string::npos);
  EXPECT_NE(error_of({{"batch", "eight"}}).find("--batch"), std::string::npos);
  EXPECT_NE(error_of({{"batch", 1.5}}).find("--batch"), std::string::npos);
  EXPECT_NE(error_of({{"phase", "train"}}).find("--phase"), std::string::npos);
  EXPECT_NE(error_of({{"model", "gpt-9"}}).find("--model"), std::string::npos);
  EXPECT_NE(error_of({{"hardware", "tpu-v9"}}).find("hardware"), std::string::npos);
  EXPECT_NE(error_of({{"collective_timeout", 0}}).find("--collective-timeout"), std::string::npos);
  EXPECT_NE(error_of({{"memory_budget", "lots"}}).find("--memory-budget"), std::string::npos);
  EXPECT_NE(error_of({{"frobnicate", 1}}).find("frobnicate"), std::string::npos);
  EXPECT_NE(error_of({{"collective", "nccl"}}).find("--collective"), std::string::npos);
}

TEST(RunSpec, MpiModeIsBlockingUnlessAsked) {
  EXPECT_EQ(resolve(nlohmann::json::object()).mpi_mode, MpiMode::blocking);
  EXPECT_EQ(resolve({{"mpi_mode", "nonblocking"}}).mpi_mode, MpiMode::nonblocking);
  EXPECT_EQ(run_spec_to_json(resolve({{"mpi_mode", "nonblocking"}}))["mpi_mode"], "nonblocking");
  const std::string e = error_of({{"mpi_mode", "polled"}});
  EXPECT_NE(e.find("--mpi-mode"), std::string::npos) << e;
  EXPECT_NE(e.find("blocking|nonblocking"), std::string::npos) << e;
}

TEST(RunSpec, TpMustDivideHeadsAndWorld) {
  // tiny has 16 heads: tp 3 does not divide them; world 4 is not divisible by tp 3 either,
  // and the world check comes first.
  EXPECT_NE(error_of({{"tp", 3}}, 3).find("--tp"), std::string::npos);
  EXPECT_NE(error_of({{"tp", 3}}, 4).find("not divisible"), std::string::npos);
  EXPECT_NE(error_of({{"tp", 32}}, 32).find("--tp"), std::string::npos);
}

TEST(RunSpec, MemoryBudgetUnits) {
  EXPECT_DOUBLE_EQ(resolve({{"memory_budget", "512M"}}).memory_budget_bytes, 512.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(resolve({{"memory_budget", 2}}).memory_budget_bytes, 2.0 * 1024 * 1024 * 1024);
}

TEST(Inject, ParsesEveryKey) {
  const auto v = parse_inject(
      "rank=1:slowdown=1.3:jitter=0.1@500:host_delay=200,rank=0:mem_reserve=2:mem_contend=1:"
      "clock_offset=-5:hang_at_step=3:sm_clock=1400");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].rank, 1);
  EXPECT_DOUBLE_EQ(v[0].slowdown, 1.3);
  EXPECT_DOUBLE_EQ(v[0].jitter_p, 0.1);
  EXPECT_DOUBLE_EQ(v[0].jitter_us, 500);
  EXPECT_DOUBLE_EQ(v[0].host_delay_us, 200);
  EXPECT_DOUBLE_EQ(v[1].mem_reserve_gib, 2);
  EXPECT_TRUE(v[1].mem_contend);
  EXPECT_DOUBLE_EQ(v[1].clock_offset_ms, -5);
  EXPECT_EQ(v[1].hang_at_step, 3);
  EXPECT_EQ(v[1].sm_clock_mhz, 1400);
}

TEST(Inject, AppliesOnlyToTheNamedRank) {
  const auto v = parse_inject("rank=1:slowdown=2,rank=all:host_delay=10");
  EXPECT_DOUBLE_EQ(inject_for_rank(v, 0).slowdown, 1.0);
  EXPECT_DOUBLE_EQ(inject_for_rank(v, 1).slowdown, 2.0);
  EXPECT_DOUBLE_EQ(inject_for_rank(v, 0).host_delay_us, 10);
  EXPECT_DOUBLE_EQ(inject_for_rank(v, 1).host_delay_us, 10);
}

TEST(Inject, SlowOpNamesOneComputeOp) {
  const auto v = parse_inject("rank=1:slow_op=attention@2,rank=0:slow_op=lm_head@1.5");
  EXPECT_EQ(inject_for_rank(v, 1).slow_op, Op::attention);
  EXPECT_DOUBLE_EQ(inject_for_rank(v, 1).slow_op_factor, 2.0);
  EXPECT_EQ(inject_for_rank(v, 0).slow_op, Op::lm_head);
  EXPECT_EQ(inject_for_rank(parse_inject("rank=1:slowdown=2"), 1).slow_op, Op::count);
  // A collective is not a kernel to slow (a slow link is --topology's), nor are the stamps'
  // own kinds; the message lists what is.
  for (const char* bad :
       {"rank=1:slow_op=allreduce_attn@2", "rank=1:slow_op=injected@2", "rank=1:slow_op=attn@2",
        "rank=1:slow_op=attention", "rank=1:slow_op=attention@0.5"}) {
    try {
      parse_inject(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("--inject: slow_op"), std::string::npos) << e.what();
    }
  }
  try {
    parse_inject("rank=1:slow_op=attn@2");
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("known: rmsnorm_attn, qkv_proj"), std::string::npos);
    EXPECT_EQ(std::string(e.what()).find("allreduce"), std::string::npos) << e.what();
  }
}

// sm_clock's forms: the lock (with the prior state to restore, when NVML cannot read it) and
// the emulation that holds a share of the SMs; '@' as in jitter and slow_op (':' splits keys).
TEST(Inject, SmClockForms) {
  const auto v = parse_inject(
      "rank=0:sm_clock=1200,rank=1:sm_clock=1200@unlocked,rank=2:sm_clock=1100@1410-1980,"
      "rank=3:sm_clock=emulate@0.35");
  EXPECT_EQ(v[0].sm_clock_mhz, 1200);
  EXPECT_FALSE(v[0].sm_clock_prior.has_value());
  EXPECT_EQ(v[1].sm_clock_prior, GpuLock{});
  EXPECT_EQ(v[2].sm_clock_mhz, 1100);
  EXPECT_EQ(v[2].sm_clock_prior, (GpuLock{true, 1410, 1980}));
  EXPECT_EQ(v[3].sm_clock_mhz, 0);
  EXPECT_DOUBLE_EQ(v[3].sm_hold_fraction, 0.35);
  // One form per rank: a later entry for the rank replaces the earlier one whole.
  const InjectSpec m =
      inject_for_rank(parse_inject("rank=all:sm_clock=1200,rank=1:sm_clock=emulate@0.5"), 1);
  EXPECT_EQ(m.sm_clock_mhz, 0);
  EXPECT_DOUBLE_EQ(m.sm_hold_fraction, 0.5);
  EXPECT_EQ(inject_to_json(inject_for_rank(v, 2))["sm_clock_prior"], "1410-1980");
  EXPECT_EQ(inject_to_json(inject_for_rank(v, 3))["sm_clock_emulate"], 0.35);
}

TEST(Inject, SmClockBadValuesNameTheField) {
  const std::pair<const char*, const char*> bad[] = {
      {"rank=1:sm_clock=emulate",
       "--inject: sm_clock=emulate needs @F, the share of SMs to hold, e.g. emulate@0.3"},
      {"rank=1:sm_clock=emulate@1.5",
       "--inject: sm_clock emulate share must be in [0.01, 0.99] (got 1.5)"},
      {"rank=1:sm_clock=emulate@half",
       "--inject: sm_clock emulate share needs a number (got 'half')"},
      {"rank=1:sm_clock=emulate:0.5",  // ':' splits keys, hence '@'
       "--inject: sm_clock=emulate needs @F, the share of SMs to hold, e.g. emulate@0.3"},
      {"rank=1:sm_clock=1200@locked",
       "--inject: sm_clock prior needs 'unlocked' or MIN-MAX in MHz, e.g. 1200@1410-1980 (got "
       "'locked')"},
      {"rank=1:sm_clock=1200@1980-1410",
       "--inject: sm_clock prior min must be <= max (got '1980-1410')"},
      {"rank=1:sm_clock=1200@x-1410", "--inject: sm_clock prior min needs a number (got 'x')"},
      {"rank=1:sm_clock=fast", "--inject: sm_clock needs a number (got 'fast')"},
  };
  for (const auto& [text, message] : bad) {
    try {
      parse_inject(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const BadInput& e) {
      EXPECT_EQ(std::string(e.what()), message);
      EXPECT_EQ(e.code(), ExitCode::bad_input);
    }
  }
}

TEST(Inject, RejectsWithTheFieldNamed) {
  for (const char* bad : {"slowdown=2", "rank=1", "rank=1:slowdown=0.5", "rank=1:jitter=0.1",
                          "rank=1:warp=9", "rank=x:slowdown=2", "rank=1:slowdown=abc", ","}) {
    try {
      parse_inject(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("--inject"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(validate_inject_ranks(parse_inject("rank=2:slowdown=2"), 2), BadInput);
}

}  // namespace
}  // namespace tpb

namespace tpb {
namespace {

TEST(Hardware, ProfileFromTheDeviceName) {
  EXPECT_EQ(hardware_for_device("NVIDIA H200"), "h200-sxm");
  EXPECT_EQ(hardware_for_device("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(hardware_for_device("NVIDIA A100-SXM4-80GB"), "a100-sxm-80g");
  EXPECT_EQ(hardware_for_device("NVIDIA B200"), "b200");
  // Other form factors of the same chips have other clocks and memory: no guess.
  EXPECT_EQ(hardware_for_device("NVIDIA H100 PCIe"), "");
  EXPECT_EQ(hardware_for_device("NVIDIA H100 NVL"), "");
  EXPECT_EQ(hardware_for_device("NVIDIA A100-SXM4-40GB"), "");
  EXPECT_EQ(hardware_for_device("NVIDIA GH200 480GB"), "");
  EXPECT_EQ(hardware_for_device("Intel(R) Xeon(R)"), "");
}

DeviceCaps gpu(const char* name) {
  DeviceCaps c;
  c.backend = "cuda";
  c.name = name;
  c.device_memory = true;
  return c;
}

// An H200 is judged against its own 4.8 TB/s unless --hardware says otherwise, and then the
// mismatch is said; a device no profile describes keeps the default, and says so.
TEST(Hardware, TheDevicePicksItsProfileUnlessTold) {
  RunSpec s = resolve({{"backend", "cuda"}});
  EXPECT_EQ(s.hardware, "h100-sxm");
  EXPECT_EQ(adopt_device_hardware(s, gpu("NVIDIA H200")), "");
  EXPECT_EQ(s.hardware, "h200-sxm");
  EXPECT_DOUBLE_EQ(s.hw.peak_bw, 4.8e12);

  RunSpec given = resolve({{"backend", "cuda"}, {"hardware", "h100-sxm"}});
  const std::string w = adopt_device_hardware(given, gpu("NVIDIA H200"));
  EXPECT_EQ(w.rfind("hardware_mismatch:", 0), 0u) << w;
  EXPECT_EQ(given.hardware, "h100-sxm");

  RunSpec unknown = resolve({{"backend", "cuda"}});
  const std::string u = adopt_device_hardware(unknown, gpu("NVIDIA H100 PCIe"));
  EXPECT_EQ(u.rfind("hardware_unknown:", 0), 0u) << u;
  EXPECT_NE(u.find("--hardware"), std::string::npos) << u;
  EXPECT_EQ(unknown.hardware, "h100-sxm");

  RunSpec cpu = resolve(nlohmann::json::object());
  DeviceCaps c;
  c.backend = "cpu";
  c.name = "NVIDIA H200";  // a CPU device is never a GPU, whatever its name
  EXPECT_EQ(adopt_device_hardware(cpu, c), "");
  EXPECT_EQ(cpu.hardware, resolve(nlohmann::json::object()).hardware);
}

// The one rank's model a point builds: every field from the spec, the layers and the rank from
// the caller (the memory plan may build fewer layers than the spec names).
TEST(RunSpec, ModelConfigCarriesThePoint) {
  const RunSpec s = resolve({{"phase", "prefill"},
                             {"batch", 3},
                             {"prompt", 96},
                             {"context", 700},
                             {"seed", 17},
                             {"lm_head", true}});
  const TpModelConfig c = s.model_config(2, 1);
  EXPECT_EQ(c.shape.name, "tiny");
  EXPECT_EQ(c.layers, 2);
  EXPECT_EQ(c.tp, 2);
  EXPECT_EQ(c.tp_rank, 1);
  EXPECT_EQ(c.dtype, DType::fp32);
  EXPECT_EQ(c.phase, Phase::prefill);
  EXPECT_EQ(c.batch, 3);
  EXPECT_EQ(c.context, 700);
  EXPECT_EQ(c.prompt, 96);
  EXPECT_EQ(c.seed, 17u);
  EXPECT_TRUE(c.lm_head);
  EXPECT_EQ(c.serve.max_tokens, 0);  // fixed mode
}

// A serving model: the run's shape, rank and seed; one decode token from position 0 in the
// fixed-mode fields, and the LM head left to the serve shape.
TEST(RunSpec, ServeModelConfigIsTheRunsInServingMode) {
  const ServeSpec s = resolve_serve_spec(
      {{"concurrency", {2}}, {"requests", 4}, {"seed", 5}, {"lm_head", true}}, 2, kConfigs);
  const TpModelConfig c = s.model_config(3, 0);
  EXPECT_EQ(c.layers, 3);
  EXPECT_EQ(c.tp, 2);
  EXPECT_EQ(c.tp_rank, 0);
  EXPECT_EQ(c.seed, s.run.seed);
  EXPECT_EQ(c.phase, Phase::decode);
  EXPECT_EQ(c.batch, 1);
  EXPECT_EQ(c.context, 0);
  EXPECT_EQ(c.prompt, 1);
  EXPECT_FALSE(c.lm_head);
}

}  // namespace
}  // namespace tpb

namespace tpb {
namespace {

// --attention: cuda echoes its choice (a rerun keeps it); cpu and model refuse cudnn by name
// and echo nothing, so their results are as before the option.
TEST(RunSpec, AttentionIsTheCudaBackendsChoice) {
  const RunSpec cuda = resolve({{"backend", "cuda"}, {"attention", "cudnn"}}, 1);
  EXPECT_EQ(cuda.attention, "cudnn");
  EXPECT_EQ(run_spec_to_json(cuda)["attention"], "cudnn");
  EXPECT_EQ(run_spec_to_json(resolve({{"backend", "cuda"}}, 1))["attention"], "native");
  EXPECT_FALSE(run_spec_to_json(resolve(nlohmann::json::object())).contains("attention"));
  const std::vector<std::string> keys = rerun_keys();
  EXPECT_NE(std::find(keys.begin(), keys.end(), "attention"), keys.end());
  for (const char* backend : {"cpu", "model"})
    EXPECT_NE(error_of({{"backend", backend}, {"attention", "cudnn"}}, 1)
                  .find("--attention: cudnn runs on the cuda backend only"),
              std::string::npos)
        << backend;
  EXPECT_NE(error_of({{"attention", "flash"}}).find("--attention"), std::string::npos);
}

}  // namespace
}  // namespace tpb
