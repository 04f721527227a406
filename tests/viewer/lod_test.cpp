// Level of detail: the draw list is bounded by pixels, and every visible event
// is counted by exactly one item.
#include <gtest/gtest.h>

#include <random>

#include "tc/viewer/lod.h"

namespace tc::viewer {
namespace {

// n events on one track, non-overlapping, with random gaps and lengths.
Track make_track(size_t n, uint32_t seed) {
  Track t;
  t.ts.reserve(n);
  t.end.reserve(n);
  t.ref.reserve(n);
  std::mt19937_64 rng(seed);
  int64_t ts = 1000;
  for (size_t i = 0; i < n; ++i) {
    ts += 1 + rng() % 50;
    int64_t dur = 1 + (rng() % 100 == 0 ? rng() % 100000 : rng() % 40);
    t.ts.push_back(ts);
    t.end.push_back(ts + dur);
    t.ref.push_back(static_cast<uint32_t>(i));
    ts += dur;
  }
  return t;
}

// Events with ts < t1 and end > t0, counted the slow way.
uint64_t count_visible(const Track& t, int64_t t0, int64_t t1) {
  uint64_t n = 0;
  for (size_t i = 0; i < t.size(); ++i) n += t.ts[i] < t1 && t.end[i] > t0;
  return n;
}

void expect_partition(const DrawList& list, uint64_t expected) {
  EXPECT_EQ(list.events(), expected);
  for (size_t k = 1; k < list.items.size(); ++k) {  // items follow each other, no event twice
    EXPECT_EQ(list.items[k].first, list.items[k - 1].first + list.items[k - 1].count);
  }
}

TEST(Lod, TenMillionEventsFullWidthStayUnderAFewThousandItems) {
  const size_t n = 10'000'000;
  Track t = make_track(n, 1);
  DrawList list;
  for (float width : {800.0f, 1600.0f, 3840.0f}) {
    build_draw_list(t, {t.ts.front(), t.end.back(), width}, &list);
    EXPECT_LE(list.items.size(), static_cast<size_t>(width) + 2) << "width " << width;
    EXPECT_GT(list.items.size(), static_cast<size_t>(width) / 2);
    EXPECT_EQ(list.events(), n);  // every event in some item's count
    expect_partition(list, n);
  }
}

TEST(Lod, ZoomedWindowsCountExactlyTheVisibleEvents) {
  Track t = make_track(200'000, 2);
  const int64_t span = t.end.back() - t.ts.front();
  std::mt19937_64 rng(3);
  DrawList list;
  for (int k = 0; k < 50; ++k) {
    int64_t w = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
    int64_t t0 = t.ts.front() - 100 + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
    float px = 100.0f + static_cast<float>(rng() % 3000);
    build_draw_list(t, {t0, t0 + w, px}, &list);
    expect_partition(list, count_visible(t, t0, t0 + w));
    EXPECT_LE(list.items.size(), static_cast<size_t>(px) + 3);
    for (const DrawItem& it : list.items) {
      EXPECT_GE(it.x0, -1.0f);
      EXPECT_LE(it.x1, px + 1.0f);
      EXPECT_LT(it.x0, it.x1);
    }
  }
}

TEST(Lod, ZoomedInFarEnoughEveryEventIsItsOwnItem) {
  Track t = make_track(1000, 4);
  DrawList list;
  build_draw_list(t, {t.ts[100], t.ts[110], 100000.0f}, &list);
  ASSERT_EQ(list.items.size(), 10u);
  for (const DrawItem& it : list.items) EXPECT_EQ(it.count, 1u);
}

TEST(Lod, WindowOutsideTheEventsIsEmpty) {
  Track t = make_track(1000, 5);
  DrawList list;
  build_draw_list(t, {t.end.back() + 10, t.end.back() + 1000, 500.0f}, &list);
  EXPECT_TRUE(list.items.empty());
  build_draw_list(t, {0, t.ts.front(), 500.0f}, &list);
  EXPECT_TRUE(list.items.empty());
}

TEST(Lod, OverlappingEventsUseThePrefixMaximum) {
  Track t;  // a long event, then short ones inside it, as a track of instants might have
  t.ts = {0, 10, 20, 30};
  t.end = {1000, 11, 21, 31};
  t.max_end = {1000, 1000, 1000, 1000};
  t.ref = {0, 1, 2, 3};
  DrawList list;
  build_draw_list(t, {500, 600, 100.0f}, &list);
  ASSERT_FALSE(list.items.empty());
  EXPECT_EQ(list.items.front().first, 0u);  // the long event is found, not skipped by the search
}

TEST(Lod, CounterColumnsAreBoundedAndKeepTheExtremes) {
  CounterSeries s;
  const size_t n = 1'000'000;
  for (size_t i = 0; i < n; ++i) {
    s.ts.push_back(static_cast<int64_t>(i) * 10);
    s.value.push_back(static_cast<double>(i % 1000));
  }
  s.value[777'777] = 5000;  // one spike
  s.build_levels();
  double lo, hi;
  s.min_max(0, n, &lo, &hi);
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 5000);
  s.min_max(777'000, 777'900, &lo, &hi);
  EXPECT_EQ(hi, 5000);
  s.min_max(10, 20, &lo, &hi);
  EXPECT_EQ(lo, 10);
  EXPECT_EQ(hi, 19);
  CounterDrawList list;
  build_counter_draw_list(s, {0, static_cast<int64_t>(n) * 10, 1600.0f}, &list);
  EXPECT_LE(list.columns.size(), 1600u);
  double top = 0;
  for (const CounterColumn& c : list.columns) top = std::max(top, c.hi);
  EXPECT_EQ(top, 5000);  // the spike survives the merge into pixel columns
}

}  // namespace
}  // namespace tc::viewer
