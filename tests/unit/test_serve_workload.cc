// Serve workloads: length distributions, gamma arrivals and JSONL traces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/errors.h"
#include "harness/serve/length_dist.h"
#include "harness/serve/workload.h"

namespace tpb {
namespace {

std::string bad_input_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const BadInput& e) {
    return e.what();
  }
  return "(no BadInput thrown)";
}

TEST(ServeLengthDist, ParsesEachFormAndPrintsItBack) {
  for (const char* text : {"128", "uniform:16..256", "normal:100,12.5", "mix:64@0.9,1024@0.1"})
    EXPECT_EQ(parse_length_dist(text, "--prompt-len").text(), text);
  const auto mix = parse_length_dist("mix:64@0.9,1024@0.1", "--prompt-len");
  EXPECT_EQ(mix.kind, LengthDist::Kind::mix);
  EXPECT_EQ(mix.max(), 1024);
  EXPECT_EQ(parse_length_dist("uniform:16..256", "--x").max(), 256);
  EXPECT_EQ(parse_length_dist("normal:100,10", "--x").max(), 160);  // mean + 6 sd
}

TEST(ServeLengthDist, ErrorsNameTheField) {
  for (const char* text :
       {"0", "-3", "abc", "12x", "", "uniform:5..2", "uniform:5", "uniform:0..4", "normal:100",
        "normal:100,-1", "normal:0,1", "mix:", "mix:64@0.5,1024@0.4", "mix:64@0.9,1024",
        "mix:64@0.9,,1024@0.1", "zipf:1.1"}) {
    const auto msg = bad_input_message([&] { parse_length_dist(text, "--output-len"); });
    EXPECT_EQ(msg.rfind("--output-len: ", 0), 0u) << text << " -> " << msg;
    EXPECT_NE(msg.find(std::string("'") + text + "'"), std::string::npos) << msg;
  }
}

TEST(ServeLengthDist, MixRespectsWeights) {
  // 100k Bernoulli(0.9) draws: sd of the fraction = sqrt(0.9 * 0.1 / 1e5) = 0.00095; 0.005 is
  // over 5 sd, so this fails only for a wrong sampler.
  const auto d = parse_length_dist("mix:64@0.9,1024@0.1", "--x");
  std::mt19937_64 rng(7);
  int64_t short_ones = 0;
  for (int i = 0; i < 100000; ++i) {
    const auto v = d.sample(rng);
    ASSERT_TRUE(v == 64 || v == 1024) << v;
    short_ones += v == 64;
  }
  EXPECT_NEAR(static_cast<double>(short_ones) / 1e5, 0.9, 0.005);
}

TEST(ServeLengthDist, UniformStaysInItsBoundsAndReachesThem) {
  const auto d = parse_length_dist("uniform:16..256", "--x");
  std::mt19937_64 rng(3);
  int64_t lo = 1 << 30, hi = 0;
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const auto v = d.sample(rng);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += static_cast<double>(v);
  }
  EXPECT_EQ(lo, 16);
  EXPECT_EQ(hi, 256);
  EXPECT_NEAR(sum / 1e5, 136.0, 1.0);  // (16 + 256) / 2; sd of the mean = 69.4 / 316 = 0.22
}

TEST(ServeLengthDist, NormalIsClampedToOneAndItsMax) {
  const auto wide = parse_length_dist("normal:2,50", "--x");
  const auto narrow = parse_length_dist("normal:100,10", "--x");
  std::mt19937_64 rng(11);
  double sum = 0;
  for (int i = 0; i < 50000; ++i) {
    const auto w = wide.sample(rng);
    EXPECT_GE(w, 1);
    EXPECT_LE(w, wide.max());
    sum += static_cast<double>(narrow.sample(rng));
  }
  EXPECT_NEAR(sum / 5e4, 100.0, 0.3);  // sd of the mean = 10 / 224 = 0.045
}

LoadSpec open_spec(double rate, double burstiness, int64_t n, uint64_t seed = 1) {
  LoadSpec s;
  s.rate = rate;
  s.burstiness = burstiness;
  s.requests = n;
  s.prompt = parse_length_dist("uniform:16..256", "--prompt-len");
  s.output = parse_length_dist("mix:16@0.5,256@0.5", "--output-len");
  s.seed = seed;
  return s;
}

TEST(ServeWorkload, SeedsReproduceAndDiffer) {
  const auto a = make_requests(open_spec(10, 1, 200, 5)),
             b = make_requests(open_spec(10, 1, 200, 5));
  const auto c = make_requests(open_spec(10, 1, 200, 6));
  ASSERT_EQ(a.size(), 200u);
  int64_t same_as_c = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, static_cast<int64_t>(i));
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].prompt_len, b[i].prompt_len);
    EXPECT_EQ(a[i].output_len, b[i].output_len);
    same_as_c += a[i].prompt_len == c[i].prompt_len && a[i].arrival_s == c[i].arrival_s;
  }
  EXPECT_LT(same_as_c, 5);  // arrival 0 of the first one matches, a prompt now and then
}

TEST(ServeWorkload, RateMovesArrivalsNotLengths) {
  const auto slow = make_requests(open_spec(1, 1, 50)), fast = make_requests(open_spec(100, 1, 50));
  for (size_t i = 0; i < slow.size(); ++i) {
    EXPECT_EQ(slow[i].prompt_len, fast[i].prompt_len);
    EXPECT_EQ(slow[i].output_len, fast[i].output_len);
  }
  EXPECT_GT(slow.back().arrival_s, 10 * fast.back().arrival_s);
}

// Mean and coefficient of variation of the inter-arrival gaps.
std::pair<double, double> gap_mean_cv(const std::vector<Request>& r) {
  double sum = 0, sq = 0;
  const double n = static_cast<double>(r.size() - 1);
  for (size_t i = 1; i < r.size(); ++i) {
    const double g = r[i].arrival_s - r[i - 1].arrival_s;
    EXPECT_GE(g, 0);
    sum += g;
    sq += g * g;
  }
  const double mean = sum / n;
  return {mean, std::sqrt(sq / n - mean * mean) / mean};
}

TEST(ServeWorkload, GammaArrivalsHaveMeanOneOverRateAndCvOneOverSqrtBurstiness) {
  EXPECT_EQ(make_requests(open_spec(10, 1, 10)).front().arrival_s, 0.0);
  for (const double k : {0.25, 1.0, 4.0}) {
    const auto [mean, cv] = gap_mean_cv(make_requests(open_spec(10, k, 40000, 9)));
    // 40k gaps: the mean is within 1.1 CV/sqrt(n) ~ 1% at CV 2; the CV within a few percent.
    EXPECT_NEAR(mean, 0.1, 0.1 * 0.04) << "burstiness " << k;
    EXPECT_NEAR(cv, 1 / std::sqrt(k), 0.05 / std::sqrt(k)) << "burstiness " << k;
  }
}

TEST(ServeWorkload, ClosedLoopAndInfiniteRateArriveAtZero) {
  auto closed = open_spec(0, 1, 20);
  closed.concurrency = 4;
  closed.warmup_requests = 3;
  const auto c = make_requests(closed);
  EXPECT_EQ(c.size(), 23u);
  for (const auto& r : c) EXPECT_EQ(r.arrival_s, 0.0);
  for (const auto& r : make_requests(open_spec(INFINITY, 1, 20))) EXPECT_EQ(r.arrival_s, 0.0);
}

TEST(ServeWorkload, BadLoadNamesTheField) {
  EXPECT_NE(bad_input_message([] { make_requests(open_spec(0, 1, 10)); }).find("--rate"),
            std::string::npos);
  EXPECT_NE(bad_input_message([] { make_requests(open_spec(1, 0, 10)); }).find("--burstiness"),
            std::string::npos);
  EXPECT_NE(bad_input_message([] { make_requests(open_spec(1, 1, 0)); }).find("--requests"),
            std::string::npos);
}

class ServeTrace : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("tpb-serve-trace-" + std::to_string(::getpid()) + ".jsonl"))
                .string();
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(ServeTrace, ReadsAGoodFile) {
  const auto path = write(
      "{\"arrival_s\": 0, \"prompt_len\": 128, \"output_len\": 64}\n"
      "\n"
      "{\"arrival_s\": 0.5, \"prompt_len\": 16, \"output_len\": 1}\r\n"
      "{\"output_len\": 2, \"prompt_len\": 3, \"arrival_s\": 0.5}\n");
  const auto r = read_trace(path);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].id, 1);
  EXPECT_EQ(r[1].arrival_s, 0.5);
  EXPECT_EQ(r[1].prompt_len, 16);
  EXPECT_EQ(r[2].output_len, 2);
  LoadSpec spec = open_spec(1, 1, 2);
  spec.trace_file = path;
  spec.warmup_requests = 1;
  EXPECT_EQ(make_requests(spec).size(), 3u);
  const auto timed = make_requests(spec);
  EXPECT_EQ(timed[1].arrival_s, 0.5);
  spec.rate = 0;  // the trace's own arrivals need no rate
  EXPECT_EQ(make_requests(spec)[1].arrival_s, 0.5);
  spec.concurrency = 2;  // a closed loop releases them itself
  EXPECT_EQ(make_requests(spec)[1].arrival_s, 0.0);
  spec.requests = 3;  // 3 + 1 warm-up: more than the file holds
  EXPECT_NE(bad_input_message([&] { make_requests(spec); }).find("--requests"), std::string::npos);
}

TEST_F(ServeTrace, BadLinesAreNamedByNumber) {
  const std::string good = "{\"arrival_s\": 1, \"prompt_len\": 8, \"output_len\": 8}\n";
  for (const std::string bad :
       {"{\"arrival_s\": 2, \"prompt_len\": 0, \"output_len\": 8}",
        "{\"arrival_s\": 2, \"output_len\": 8}",
        "{\"arrival_s\": 0.5, \"prompt_len\": 8, \"output_len\": 8}",
        "{\"arrival_s\": -1, \"prompt_len\": 8, \"output_len\": 8}",
        "{\"arrival_s\": 2, \"prompt_len\": 8.5, \"output_len\": 8}",
        "{\"arrival_s\": 2, \"prompt_len\": 8, \"output_len\": 8", "[1, 2, 3]"}) {
    const auto path = write(good + "\n" + bad + "\n" + good);
    const auto msg = bad_input_message([&] { read_trace(path); });
    EXPECT_NE(msg.find("--trace: " + path + " line 3"), std::string::npos) << bad << " -> " << msg;
  }
  EXPECT_NE(bad_input_message([] { read_trace("/nonexistent/trace.jsonl"); }).find("--trace"),
            std::string::npos);
}

}  // namespace
}  // namespace tpb
