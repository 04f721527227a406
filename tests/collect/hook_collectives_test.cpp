// The collectives of tc's Python hook (DDP's all-reduces as NVTX start/end
// ranges named tc.collective.OP) become collectives rows: seq per process in
// order of arrival, the step from the process's step ends, tc::dist's own
// collectives kept alone, cut ranges left out, the rest past the bound counted.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "tc/collect/collector.h"

using tc::collect::HookCollectives;

namespace {

TEST(HookCollectives, RangesBecomeRowsNumberedPerProcessWithTheirSteps) {
  HookCollectives h;
  h.location(7, "tc.collective.all_reduce");
  h.location(8, "tc.optimizer_step");
  h.location(9, "tc.collective.");  // no op: not a collective
  ASSERT_TRUE(h.any());
  // Process 1 (threads 1, 2): arrivals at 100 and 300, the second ended first (on another thread); an unrelated range 5.
  h.start(1, 1, 7, 11, 100);
  h.start(1, 1, 7, 12, 300);
  h.start(1, 1, 9, 13, 310);
  h.start(1, 1, 8, 14, 320);
  h.end(1, 12, 350);
  h.end(1, 11, 260);
  h.end(1, 13, 400);
  h.end(1, 5, 400);
  // Process 2: one collective, one the program's end cut (never ended).
  h.start(2, 3, 7, 11, 120);
  h.end(2, 11, 260);
  h.start(2, 3, 7, 12, 500);
  const std::map<int64_t, std::vector<int64_t>> ends = {{1, {50, 200, 400}}};
  auto rows = h.rows([&](int64_t upid) -> const std::vector<int64_t>* {
    auto it = ends.find(upid);
    return it == ends.end() ? nullptr : &it->second;
  });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].utid, 1);
  EXPECT_EQ(rows[0].ts, 100);
  EXPECT_EQ(rows[0].dur, 160);
  EXPECT_EQ(rows[0].seq, 1);
  EXPECT_EQ(rows[0].step, 1);  // after step 0 ended at 50, before step 1 ended at 200
  EXPECT_EQ(rows[0].op, "all_reduce");
  EXPECT_EQ(rows[0].loc, 7u);
  EXPECT_EQ(rows[1].ts, 300);
  EXPECT_EQ(rows[1].seq, 2);
  EXPECT_EQ(rows[1].step, 2);
  EXPECT_EQ(rows[2].utid, 3);
  EXPECT_EQ(rows[2].seq, 1);  // its own numbering
  EXPECT_EQ(rows[2].step, 0);  // no steps known
  EXPECT_EQ(h.skipped(), 0u);
}

TEST(HookCollectives, AProcessWithTcDistCollectivesKeepsThoseAlone) {
  HookCollectives h;
  h.location(7, "tc.collective.all_reduce");
  h.start(1, 1, 7, 1, 10);
  h.end(1, 1, 20);
  h.start(2, 2, 7, 1, 10);
  h.end(2, 1, 20);
  h.native(1);
  auto rows = h.rows([](int64_t) { return nullptr; });
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].utid, 2);
}

TEST(HookCollectives, NothingBeforeItsLocationAndABoundedCountAfter) {
  HookCollectives h(100);
  h.start(1, 1, 7, 1, 10);  // no such location yet: not a collective
  EXPECT_FALSE(h.any());
  h.location(7, "tc.collective.all_reduce");
  for (int64_t i = 0; i < 105; ++i) h.start(1, 1, 7, i + 2, i);
  EXPECT_EQ(h.skipped(), 5u);
  h.end(1, 2, 100);
  EXPECT_EQ(h.rows([](int64_t) { return nullptr; }).size(), 1u);
}

}  // namespace
