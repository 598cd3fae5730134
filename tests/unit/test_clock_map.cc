// The device-to-host clock conversion (layers/clock_map.h): the tightest bracket is kept, and
// each point's stamps follow the line calibrated at that point's start and end, not one line
// from device open. Numbers are nanoseconds; each is worked out in the comment beside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "layers/clock_map.h"

namespace tpb {
namespace {

// A device clock whose offset to the host clock is host = device + off(device): a fake
// sampler reads it through brackets of given widths, the stamp landing `at` of the way in.
struct FakeSampler {
  std::vector<int64_t> widths;
  double at = 0.5;
  int64_t host = 1'000'000, offset = 250;  // device = host - offset
  std::size_t i = 0;
  ClockBracket operator()() {
    const int64_t w = widths[i++ % widths.size()];
    ClockBracket b{host, 0, host + w};
    b.device_ns = host + static_cast<int64_t>(at * static_cast<double>(w)) - offset;
    host += w + 10'000;
    return b;
  }
};

TEST(ClockMap, TightestBracketOfSeveralIsKept) {
  // The launch+sync of the first round is the slowest (9.8 us, as the H200's one bracket was);
  // the narrowest, 1.2 us, comes third, and a later bracket as narrow does not replace it.
  FakeSampler f{{9'800, 3'000, 1'200, 1'200, 5'000}, 0.9};
  std::vector<ClockBracket> seen;
  const ClockSample s = tightest_bracket(5, [&] { return seen.emplace_back(f()); });
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(s.bracket_ns, 1'200);
  EXPECT_EQ(s.gpu_ns, seen[2].device_ns);
  // The midpoint estimate: offset = host0 + 600 - device. The stamp landed at 0.9 of the
  // bracket (1,080 ns in), so the estimate is off by 480 ns, inside the half width (600 ns).
  EXPECT_EQ(s.offset_ns, seen[2].host0_ns + 600 - seen[2].device_ns);
  EXPECT_EQ(s.offset_ns - f.offset, -480);
  ClockLine line;
  line.begin(s);
  EXPECT_DOUBLE_EQ(line.uncertainty_s(), 0.6e-6);
}

TEST(ClockMap, OneRoundIsOneBracket) {
  FakeSampler f{{4'000}};
  const ClockSample s = tightest_bracket(0, [&] { return f(); });  // < 1 round takes one
  EXPECT_EQ(s.bracket_ns, 4'000);
  EXPECT_EQ(s.offset_ns, f.offset);  // stamped at the midpoint: exact
}

TEST(ClockMap, EachPointFollowsItsOwnLineThroughARateChange) {
  // Device open at device time 0 with offset 1,000. The clocks then run at another rate
  // (oscillators differ by ppm, and a host's NTP slew changes its rate): by the point's start
  // at 10 s the offset is 50,000 (4.9 ppm), and across the point it moves 100 ns per second.
  const ClockSample open{0, 1'000, 2'000};
  const ClockSample start{10'000'000'000, 50'000, 3'000}, end{11'000'000'000, 50'100, 1'000};
  ClockLine line;
  line.begin(open);   // the device's construction
  line.begin(start);  // the point's start restarts the line
  line.end(end);      // and its end closes it
  const int64_t mid = 10'500'000'000;
  // Halfway through the point: offset 50,050.
  EXPECT_EQ(line.to_host_ns(mid), mid + 50'050);
  EXPECT_EQ(line.to_host_ns(start.gpu_ns), start.gpu_ns + 50'000);
  EXPECT_EQ(line.to_host_ns(end.gpu_ns), end.gpu_ns + 50'100);
  // The one line from device open to the latest sample (the conversion before this fix) gives
  // 1,000 + 49,100 x 10.5 / 11 = 47,868 there: 2,182 ns off, outside the 1.5 us it reports.
  EXPECT_EQ(ClockLine::interpolate(mid, open, end), mid + 47'868);
  // The line's uncertainty: half its wider bracket (3,000 ns at the start).
  EXPECT_DOUBLE_EQ(line.uncertainty_s(), 1.5e-6);

  // The next point: the rate has turned (the offset falls 200 ns a second); its line follows.
  const ClockSample start2{20'000'000'000, 4'000, 800}, end2{22'000'000'000, 3'600, 600};
  line.begin(start2);
  line.end(end2);
  EXPECT_EQ(line.to_host_ns(21'000'000'000), 21'000'000'000 + 3'800);
  EXPECT_DOUBLE_EQ(line.uncertainty_s(), 0.4e-6);
}

TEST(ClockMap, EndWithoutBeginIsAConstantOffset) {
  ClockLine line;
  EXPECT_FALSE(line.calibrated());
  line.end({100, 7, 50});
  EXPECT_TRUE(line.calibrated());
  EXPECT_EQ(line.to_host_ns(1'000), 1'007);
  EXPECT_DOUBLE_EQ(line.uncertainty_s(), 25e-9);
}

}  // namespace
}  // namespace tpb
