// Level of detail: the draw list is bounded by pixels, and every visible event
// is counted by exactly one item.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// The level of detail as first written: a gallop from each item's first
// event to the next column's. build_draw_list looks where the last count
// says instead, and must find the same.
void reference_draw_list(const Track& track, const ViewWindow& view, DrawList* out) {
  out->items.clear();
  size_t i, last;
  visible_range(track, view.t0, view.t1, &i, &last);
  const double scale = view.px_per_ns();
  const std::vector<int64_t>& ends = track.max_end.empty() ? track.end : track.max_end;
  while (i < last) {
    const double x0 = (track.ts[i] - view.t0) * scale;
    const double col = x0 < 0 ? -1.0 : std::floor(x0);
    const int64_t boundary = view.t0 + static_cast<int64_t>(std::ceil((col + 1) / scale));
    const size_t j = static_cast<size_t>(std::lower_bound(track.ts.begin() + i + 1, track.ts.begin() + last, boundary) - track.ts.begin());
    const double x1 = (ends[j - 1] - view.t0) * scale;
    DrawItem item;
    item.x0 = static_cast<float>(std::max(x0, -1.0));
    item.x1 = static_cast<float>(std::min<double>(std::max(x1, std::max(x0, -1.0) + 1.0), view.width_px + 1));
    item.first = static_cast<uint32_t>(i);
    item.count = static_cast<uint32_t>(j - i);
    out->items.push_back(item);
    i = j;
  }
}

TEST(Lod, TheGuessedSearchFindsWhatAPlainSearchFinds) {
  // Uniform stretches (where the guess is right), bursts and gaps (where it is not).
  Track t = make_track(2'000'000, 6);
  for (size_t i = 1'000'000; i < 1'001'000; ++i) t.ts[i] = t.end[999'999] + static_cast<int64_t>(i - 1'000'000), t.end[i] = t.ts[i] + 1;
  for (size_t i = 1'001'000; i < t.size(); ++i) t.ts[i] += 3'000'000, t.end[i] += 3'000'000;
  ASSERT_TRUE(std::is_sorted(t.ts.begin(), t.ts.end()));
  ASSERT_TRUE(std::is_sorted(t.end.begin(), t.end.end()));
  const int64_t span = t.end.back() - t.ts.front();
  std::mt19937_64 rng(7);
  DrawList a, b;
  for (int k = 0; k < 80; ++k) {
    // From the whole run down to a few events per pixel column.
    const int64_t w = k == 0 ? span + 200 : std::max<int64_t>(50, span >> (rng() % 18));
    const int64_t t0 = k == 0 ? t.ts.front() - 100 : t.ts.front() + static_cast<int64_t>(rng() % static_cast<uint64_t>(span));
    const float px = 200.0f + static_cast<float>(rng() % 3000);
    build_draw_list(t, {t0, t0 + w, px}, &a);
    reference_draw_list(t, {t0, t0 + w, px}, &b);
    ASSERT_EQ(a.items.size(), b.items.size()) << "window " << k;
    for (size_t i = 0; i < a.items.size(); ++i) {
      ASSERT_EQ(a.items[i].first, b.items[i].first) << "window " << k << " item " << i;
      ASSERT_EQ(a.items[i].count, b.items[i].count) << "window " << k << " item " << i;
      ASSERT_EQ(a.items[i].x0, b.items[i].x0);
      ASSERT_EQ(a.items[i].x1, b.items[i].x1);
    }
  }
}

// A draw list of a ranges track (event_colour: the site's colour, no
// Timeline lookups) over 1000 pixels of 100 ns: single events that touch in
// runs of one site, stretches of many events per pixel, single events with
// gaps, and bursts, each jittered by the seed.
struct RowCase {
  Timeline tl;
  Track track;
  DrawList list;
};
RowCase make_row_case(uint32_t seed) {
  RowCase r;
  std::mt19937_64 rng(seed);
  Track& t = r.track;
  auto add = [&](int64_t ts, int64_t dur, uint32_t site) {
    t.ts.push_back(ts);
    t.end.push_back(ts + dur);
    t.ref.push_back(site);
  };
  int64_t ts = 0;
  for (uint32_t i = 0; ts < 20'000; ++i) {  // 5-pixel events back to back, four of a site at a time
    int64_t dur = 400 + static_cast<int64_t>(rng() % 200);
    add(ts, dur, (i / 4) % 3);
    ts += dur;
  }
  while (ts < 40'000) add(ts, 3, static_cast<uint32_t>(rng() % 3)), ts += 5;  // 20 per pixel
  while (ts < 70'000) {  // 3 pixels on, 2 off
    add(ts, 300, static_cast<uint32_t>(rng() % 3));
    ts += 500 + static_cast<int64_t>(rng() % 50);
  }
  while (ts < 100'000) {  // bursts of tiny events, then a gap
    for (int k = 0; k < 30; ++k) add(ts, 2, 1), ts += 3;
    ts += 300 + static_cast<int64_t>(rng() % 400);
  }
  build_draw_list(t, {0, 100'000, 1000.0f}, &r.list);
  return r;
}

bool same(palette::Rgb a, palette::Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }

TEST(Row, MergedRectanglesCoverExactlyTheUnionOfTheirItems) {
  for (uint32_t seed : {11u, 12u, 13u}) {
    RowCase rc = make_row_case(seed);
    const float origin = 198.0f;
    std::vector<RowRect> rects;
    row_rects(rc.tl, rc.track, rc.list, origin, &rects);
    const auto& items = rc.list.items;
    ASSERT_FALSE(rects.empty());
    size_t singles_merged = 0, stretches = 0;
    uint32_t next = 0;  // rectangles take the items in order, each once
    for (size_t k = 0; k < rects.size(); ++k) {
      const RowRect& r = rects[k];
      ASSERT_EQ(r.first_item, next);
      ASSERT_GE(r.items, 1u);
      next = r.first_item + r.items;
      const DrawItem& first = items[r.first_item];
      const bool merged = first.count > 1;
      const palette::Rgb c = event_colour(rc.tl, rc.track, first.first);
      EXPECT_TRUE(same(r.colour, merged ? palette::merged(c) : c)) << k;
      // Its extent is the union of its items': from the first one's start to the furthest end...
      float x1 = origin + first.x0;
      for (uint32_t i = r.first_item; i < next; ++i) {
        const DrawItem& it = items[i];
        EXPECT_EQ(it.count > 1, merged) << "a rectangle mixes single and merged items";
        if (i > r.first_item) {
          // ...with no gap between them (merged stretches: at most one pixel).
          EXPECT_LE(origin + it.x0, x1 + (merged ? 1.0f : 0.0f)) << "rect " << k << " item " << i;
          if (!merged) {
            EXPECT_TRUE(same(event_colour(rc.tl, rc.track, it.first), c));
          }
        }
        x1 = std::max(x1, origin + it.x1);
      }
      EXPECT_EQ(r.x0, origin + first.x0) << k;
      EXPECT_EQ(r.x1, x1) << k;
      // And the next item could not have joined it.
      if (next < items.size()) {
        const DrawItem& after = items[next];
        const bool could = (after.count > 1) == merged &&
                           (merged ? origin + after.x0 <= r.x1 + 1
                                   : origin + after.x0 <= r.x1 && same(event_colour(rc.tl, rc.track, after.first), c));
        EXPECT_FALSE(could) << "rect " << k << " stops early";
      }
      singles_merged += !merged && r.items > 1;
      stretches += merged;
    }
    EXPECT_EQ(next, items.size());
    EXPECT_GT(singles_merged, 0u) << "the case has touching single events of one colour";
    EXPECT_GT(stretches, 0u) << "the case has merged stretches";
    EXPECT_LT(rects.size(), items.size());
  }
}

// The reference: a column is the colour of the last rectangle holding its
// centre, with edges snapped to 1/256 pixel.
palette::Rgb reference_column(const std::vector<RowRect>& rects, int origin_px, int c, palette::Rgb empty) {
  const double centre = origin_px + c + 0.5;
  palette::Rgb out = empty;
  for (const RowRect& r : rects) {
    const double a = std::round(static_cast<double>(r.x0) * 256) / 256, b = std::round(static_cast<double>(r.x1) * 256) / 256;
    if (a <= centre && centre < b) out = r.colour;
  }
  return out;
}

TEST(Row, RasterizedColumnsTakeTheLastRectangleOverTheirCentre) {
  const palette::Rgb empty = palette::kBackground, red{200, 0, 0}, green{0, 200, 0}, blue{0, 0, 200};
  std::vector<uint8_t> px(4 * 20);
  auto at = [&](int c) { return palette::Rgb{px[4 * c], px[4 * c + 1], px[4 * c + 2]}; };
  // Edges on and beside centres: [10.5, 12.5) holds the centres of 10 and
  // 11; [3.6, 4.4) holds none; a later rectangle overwrites an earlier one.
  std::vector<RowRect> rects = {{10.5f, 12.5f, red, 0, 1}, {3.6f, 4.4f, green, 1, 1}, {0.2f, 1.2f, blue, 2, 1},
                                {11.0f, 14.0f, green, 3, 1}, {-5.0f, 0.3f, red, 4, 1}, {18.7f, 40.0f, blue, 5, 1}};
  rasterize_row(rects, 0, 20, empty, px.data());
  EXPECT_TRUE(same(at(0), blue));
  EXPECT_TRUE(same(at(1), empty));
  EXPECT_TRUE(same(at(3), empty));
  EXPECT_TRUE(same(at(4), empty));
  EXPECT_TRUE(same(at(9), empty));
  EXPECT_TRUE(same(at(10), red));
  EXPECT_TRUE(same(at(11), green));
  EXPECT_TRUE(same(at(13), green));
  EXPECT_TRUE(same(at(14), empty));
  EXPECT_TRUE(same(at(18), empty));
  EXPECT_TRUE(same(at(19), blue));
  for (int c = 0; c < 20; ++c) EXPECT_EQ(px[4 * c + 3], 255);

  // Real rows against the reference, every column.
  for (uint32_t seed : {21u, 22u}) {
    RowCase rc = make_row_case(seed);
    const int origin = 198, columns = 1000;
    row_rects(rc.tl, rc.track, rc.list, static_cast<float>(origin), &rects);
    std::vector<uint8_t> row(4 * columns);
    rasterize_row(rects, origin, columns, empty, row.data());
    for (int c = 0; c < columns; ++c) {
      const palette::Rgb want = reference_column(rects, origin, c, empty);
      ASSERT_TRUE(same({row[4 * c], row[4 * c + 1], row[4 * c + 2]}, want)) << "seed " << seed << " column " << c;
    }
  }
  // An item narrower than a pixel is drawn a pixel wide (build_draw_list),
  // and a rectangle one pixel wide colours exactly one column wherever it lies.
  std::mt19937_64 rng(23);
  std::vector<uint8_t> one(4 * 64);
  for (int k = 0; k < 2000; ++k) {
    const float x0 = 198.0f + static_cast<float>(rng() % (60 * 256)) / 256.0f;  // exact in float, on and off centres
    rasterize_row({{x0, x0 + 1.0f, red, 0, 1}}, 198, 64, empty, one.data());
    int coloured = 0;
    for (int c = 0; c < 64; ++c) coloured += same({one[4 * c], one[4 * c + 1], one[4 * c + 2]}, red);
    ASSERT_EQ(coloured, 1) << "a pixel-wide rectangle at " << x0;
  }
}

TEST(Row, PixelRunsRebuildTheRowOrGiveUpPastTheirLimit) {
  const palette::Rgb empty = palette::kBackground;
  RowCase rc = make_row_case(31);
  std::vector<RowRect> rects;
  row_rects(rc.tl, rc.track, rc.list, 0.0f, &rects);
  std::vector<uint8_t> row(4 * 1000);
  rasterize_row(rects, 0, 1000, empty, row.data());
  std::vector<PixelRun> runs;
  ASSERT_TRUE(pixel_runs(row.data(), 1000, empty, 100000, &runs));
  ASSERT_GT(runs.size(), 3u);
  std::vector<uint8_t> again(4 * 1000);
  rasterize_row({}, 0, 1000, empty, again.data());
  int last_end = -1;
  for (const PixelRun& r : runs) {
    EXPECT_LT(r.x0, r.x1);
    EXPECT_GE(r.x0, last_end);
    EXPECT_FALSE(same(r.colour, empty));
    last_end = r.x1;
    for (int c = r.x0; c < r.x1; ++c) again[4 * c] = r.colour.r, again[4 * c + 1] = r.colour.g, again[4 * c + 2] = r.colour.b;
  }
  EXPECT_EQ(again, row);
  EXPECT_FALSE(pixel_runs(row.data(), 1000, empty, runs.size() - 1, &runs));
  EXPECT_TRUE(runs.empty());
}

}  // namespace
}  // namespace tc::viewer
