// The option table: every verb's --help shows each option's type and default, the defaults
// shown are the ones a spec resolves to, and times carry units inside --inject and --slo too.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "base/units.h"
#include "harness/config/cli.h"
#include "harness/config/inject_spec.h"
#include "harness/config/run_spec.h"
#include "harness/config/serve_spec.h"

namespace tpb {
namespace {

std::string help_of(const std::string& verb) {
  std::vector<std::string> args = {"tpbench", verb, "--help"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const CliResult r = parse_cli(static_cast<int>(argv.size()), argv.data());
  EXPECT_TRUE(r.help);
  return r.help_text;
}

// The option lines of a help text: "  --name ..." or "  -b,--name ...", the help flag aside.
// CLI11 puts a long flag and its type alone on a line and the text on the next.
std::vector<std::string> option_lines(const std::string& help) {
  std::vector<std::string> lines, out;
  std::istringstream in(help);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("  -", 0) != 0 || lines[i].find("--help") != std::string::npos) continue;
    std::string l = lines[i];
    if (i + 1 < lines.size() && lines[i + 1].rfind("    ", 0) == 0) l += lines[i + 1];
    out.push_back(l);
  }
  return out;
}

TEST(OptionTable, EveryOptionOfEveryVerbShowsItsDefault) {
  for (const char* verb : {"run", "sweep", "serve", "collectives", "calibrate", "whatif", "compare",
                           "diagnose", "report", "export"}) {
    const std::vector<std::string> lines = option_lines(help_of(verb));
    EXPECT_GT(lines.size(), 0u) << verb;
    for (const std::string& l : lines) {
      const bool shown = l.find("(default") != std::string::npos ||
                         l.find("(repeatable)") != std::string::npos ||
                         l.find("(required") != std::string::npos;
      EXPECT_TRUE(shown) << verb << ": " << l;
    }
  }
}

TEST(OptionTable, TypesAndDefaultsAsTheSpecsResolveThem) {
  const std::string run = help_of("run");
  // Hand-written: these are what resolve_run_spec gives a config without the key.
  EXPECT_NE(run.find("--batch INT"), std::string::npos);
  EXPECT_NE(run.find("sequences per step (default 1)"), std::string::npos);
  EXPECT_NE(run.find("--collective-timeout TIME"), std::string::npos);
  EXPECT_NE(run.find("(default 600s)"), std::string::npos);
  EXPECT_NE(run.find("--dtype fp32|bf16|fp16|fp8"), std::string::npos);
  EXPECT_NE(run.find("--memory-budget SIZE"), std::string::npos);
  const RunSpec s = resolve_run_spec(nlohmann::json::object(), 1, TPB_SOURCE_DIR "/configs");
  EXPECT_EQ(s.batch, 1);
  EXPECT_EQ(s.context, 1024);
  EXPECT_EQ(s.steps, 20);
  EXPECT_DOUBLE_EQ(s.collective_timeout_s, 600);
  const std::string serve = help_of("serve");
  EXPECT_NE(serve.find("--host-overhead TIME"), std::string::npos);
  EXPECT_NE(serve.find("(default 0us)"), std::string::npos);
  EXPECT_NE(serve.find("--lm-head true|false"), std::string::npos);
  EXPECT_EQ(serve.find("--phase"), std::string::npos);  // a serving run decides its phase
  const std::string coll = help_of("collectives");
  EXPECT_NE(coll.find("-b,--minbytes SIZE"), std::string::npos);
  EXPECT_NE(coll.find("-a,--average INT"), std::string::npos);
}

TEST(OptionTable, ServeKeysAreTheDeclaredOnesButVllmSpellings) {
  const std::vector<std::string> keys = serve_keys();
  auto has = [&keys](const char* k) {
    for (const auto& x : keys)
      if (x == k) return true;
    return false;
  };
  EXPECT_TRUE(has("concurrency"));
  EXPECT_TRUE(has("lm_head"));
  EXPECT_TRUE(has("host_overhead"));
  EXPECT_FALSE(has("max_concurrency"));  // renamed to concurrency before the spec reads it
  EXPECT_FALSE(has("batch"));
}

TEST(Units, TimesInInjectAndSlo) {
  EXPECT_DOUBLE_EQ(*parse_time("2ms", "us"), 2000);
  EXPECT_DOUBLE_EQ(*parse_time("300", "us"), 300);  // bare: the option's own unit
  EXPECT_DOUBLE_EQ(*parse_time("-5ms", "ms"), -5);
  EXPECT_FALSE(parse_time("2 ms", "us"));
  EXPECT_FALSE(parse_time("ms", "us"));
  const auto i = parse_inject("rank=1:host_delay=2ms:jitter=0.1@1ms:clock_offset=500us");
  ASSERT_EQ(i.size(), 1u);
  EXPECT_DOUBLE_EQ(i[0].host_delay_us, 2000);
  EXPECT_DOUBLE_EQ(i[0].jitter_us, 1000);
  EXPECT_DOUBLE_EQ(i[0].clock_offset_ms, 0.5);
  EXPECT_DOUBLE_EQ(parse_inject("rank=0:host_delay=300")[0].host_delay_us, 300);
  EXPECT_THROW(parse_inject("rank=0:host_delay=2parsecs"), BadInput);
  EXPECT_THROW(parse_inject("rank=0:host_delay=20s"), BadInput);  // past 1e7 us
}

}  // namespace
}  // namespace tpb
