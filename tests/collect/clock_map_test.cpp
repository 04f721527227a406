// The TSC-to-CLOCK_MONOTONIC map the collector uses for every timestamp.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tc/collect/collector.h"
#include "tc/trace/region.h"

namespace tr = tc::trace;

namespace {

TEST(ClockMap, MonotonicClockPassesThrough) {
  tc::collect::ClockMap m(false);
  EXPECT_EQ(m.to_ns(123456789), 123456789u);
  EXPECT_EQ(m.ns_per_tick(), 1.0);
}

TEST(ClockMap, TscMapsOntoMonotonicAndNeverGoesBackwards) {
  if (tr::preferred_clock() != tr::ClockKind::kTsc) GTEST_SKIP() << "no invariant TSC on this machine";
  tc::collect::ClockMap m(true);
  EXPECT_GT(m.ns_per_tick(), 0.0);
  std::vector<uint64_t> ticks;
  for (int round = 0; round < 30; ++round) {
    // Samples between resyncs, as a drain pass sees them.
    for (int i = 0; i < 1000; ++i) ticks.push_back(tr::read_clock(tr::ClockKind::kTsc));
    uint64_t t = tr::read_clock(tr::ClockKind::kTsc);
    uint64_t ns = tr::monotonic_ns();
    // Right after a sample, the map agrees with CLOCK_MONOTONIC to well under a millisecond.
    EXPECT_NEAR(static_cast<double>(m.to_ns(t)), static_cast<double>(ns), 1e6) << "round " << round;
    m.resync();
  }
  uint64_t prev = 0;
  for (uint64_t t : ticks) {
    uint64_t ns = m.to_ns(t);
    ASSERT_GE(ns, prev) << "the map must keep the order of ticks";
    prev = ns;
  }
}

}  // namespace
