// The frame cache: built once per view, rebuilt when the view (or the
// timeline) changes, and then the same as a fresh build.
#include <gtest/gtest.h>

#include <algorithm>

#include "tc/viewer/frame_cache.h"

namespace tc::viewer {
namespace {

Timeline make_timeline(uint64_t load_id) {
  Timeline tl;
  tl.load_id = load_id;
  Lane lane;
  for (int depth = 0; depth < 3; ++depth) {
    Track t;
    t.kind = TrackKind::kRanges;
    t.depth = depth;
    for (int64_t i = 0; i < 50'000; ++i) {
      const int64_t ts = i * 20 + depth * 3;
      t.ts.push_back(ts);
      t.end.push_back(ts + 5 + (i % 7 == 0 ? 12 : 0));
      t.ref.push_back(static_cast<uint32_t>(i / 1000 % 5));
    }
    lane.tracks.push_back(std::move(t));
  }
  tl.lanes.push_back(std::move(lane));
  tl.start_ts = 0;
  tl.end_ts = 1'000'000;
  return tl;
}

// What a cache that never saw another view builds for this one.
void expect_fresh(const FrameCache& cache, const Timeline& tl, const ViewWindow& w, int origin) {
  FrameCache fresh;
  ASSERT_TRUE(fresh.prepare(tl, w, origin));
  const FrameCache::Frame &a = cache.frame(), &b = fresh.frame();
  EXPECT_EQ(a.window.t0, w.t0);
  EXPECT_EQ(a.window.t1, w.t1);
  EXPECT_EQ(a.columns, b.columns);
  EXPECT_EQ(a.pixels, b.pixels);
  ASSERT_EQ(a.tracks.size(), b.tracks.size());
  for (size_t l = 0; l < a.tracks.size(); ++l) {
    for (size_t k = 0; k < a.tracks[l].size(); ++k) {
      ASSERT_EQ(a.tracks[l][k].items.size(), b.tracks[l][k].items.size());
      for (size_t i = 0; i < a.tracks[l][k].items.size(); ++i) {
        EXPECT_EQ(a.tracks[l][k].items[i].first, b.tracks[l][k].items[i].first);
        EXPECT_EQ(a.tracks[l][k].items[i].x0, b.tracks[l][k].items[i].x0);
      }
    }
  }
  EXPECT_EQ(a.flat, b.flat);
}

TEST(FrameCache, ASameViewIsNotRebuiltAndAChangedOneIs) {
  Timeline tl = make_timeline(1);
  FrameCache cache;
  const ViewWindow w{0, 1'000'000, 1200.0f};
  ASSERT_TRUE(cache.prepare(tl, w, 198));
  const uint64_t g = cache.frame().generation;
  EXPECT_FALSE(cache.prepare(tl, w, 198)) << "the same view, the same timeline";
  EXPECT_EQ(cache.frame().generation, g);

  const ViewWindow panned{100'000, 1'100'000, 1200.0f}, zoomed{0, 500'000, 1200.0f}, wider{0, 1'000'000, 1300.0f};
  EXPECT_TRUE(cache.prepare(tl, panned, 198));
  EXPECT_GT(cache.frame().generation, g);
  expect_fresh(cache, tl, panned, 198);
  EXPECT_TRUE(cache.prepare(tl, zoomed, 198));
  expect_fresh(cache, tl, zoomed, 198);
  EXPECT_TRUE(cache.prepare(tl, wider, 198));
  expect_fresh(cache, tl, wider, 198);
  EXPECT_EQ(cache.frame().columns, 1300);
  EXPECT_TRUE(cache.prepare(tl, wider, 210)) << "the canvas moved on the screen";
  expect_fresh(cache, tl, wider, 210);
  EXPECT_FALSE(cache.prepare(tl, wider, 210));

  cache.invalidate();
  const uint64_t before = cache.frame().generation;
  EXPECT_TRUE(cache.prepare(tl, wider, 210));
  EXPECT_EQ(cache.frame().generation, before + 1);
}

TEST(FrameCache, AnotherLoadIsRebuiltEvenAtTheSameAddress) {
  Timeline tl = make_timeline(1);
  FrameCache cache;
  const ViewWindow w{0, 1'000'000, 800.0f};
  ASSERT_TRUE(cache.prepare(tl, w, 0));
  // The same object, reloaded with other events (as a Document reuses memory).
  tl = make_timeline(2);
  for (int64_t& end : tl.lanes[0].tracks[0].end) end += 3;
  EXPECT_TRUE(cache.prepare(tl, w, 0));
  expect_fresh(cache, tl, w, 0);
  Timeline other = make_timeline(2);
  EXPECT_TRUE(cache.prepare(other, w, 0)) << "another timeline object";
}

TEST(FrameCache, RowsHoldEachTracksPixels) {
  Timeline tl = make_timeline(3);
  FrameCache cache;
  ASSERT_TRUE(cache.prepare(tl, {0, 1'000'000, 640.0f}, 100));
  const FrameCache::Frame& f = cache.frame();
  ASSERT_EQ(f.rows(), 3);
  std::vector<RowRect> rects;
  std::vector<uint8_t> row(4 * 640);
  for (size_t k = 0; k < 3; ++k) {
    row_rects(tl, tl.lanes[0].tracks[k], f.tracks[0][k], 100.0f, &rects);
    rasterize_row(rects, 100, 640, palette::kBackground, row.data());
    EXPECT_TRUE(std::equal(row.begin(), row.end(), f.row(0, k))) << "track " << k;
    // Dense: a few runs of one colour, drawn flat.
    EXPECT_TRUE(f.flat[static_cast<size_t>(f.row_of[0][k])]);
    EXPECT_FALSE(f.runs[static_cast<size_t>(f.row_of[0][k])].empty());
  }
}

}  // namespace
}  // namespace tc::viewer
