// The viewer's memory per event over big or damaged stores (#27): the model
// (load_timeline) and a frame of it (FrameCache::prepare) together, measured
// by the process itself (mallinfo2: bytes the heap holds), per range.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tc/store/writer.h"
#include "tc/viewer/frame_cache.h"
#include "tc/viewer/lod.h"
#include "tc/viewer/model.h"

namespace tc::viewer {
namespace {

namespace schema = store::schema;

void ok(const Status& s) { ASSERT_TRUE(s.ok()) << s.message(); }

struct TempStore {
  std::string path = (std::filesystem::temp_directory_path() / ("tc_viewer_bounds_" + std::to_string(::getpid()) + ".tcdb")).string();
  ~TempStore() { std::filesystem::remove(path); }
};

enum class Shape { kNested, kThreads };

// n ranges: kNested, all on one thread, each inside the one before (depths
// 0 .. n-1, every range overlapping every other); kThreads: one per thread
// (n threads the threads table does not know).
void write_ranges(const std::string& path, int64_t n, Shape shape) {
  auto created = store::Writer::create(path, {.overwrite = true});
  ASSERT_TRUE(created.ok()) << created.status().message();
  store::Writer& w = **created;
  ok(w.row(schema::locations).i64(1).text("layer").text("model.py").text("forward").i64(10).insert());
  ok(w.row(schema::processes).i64(1).i64(100).text("python").i64(0).null().insert());
  ok(w.row(schema::threads).i64(1).i64(1).i64(100).text("main").insert());
  for (int64_t i = 0; i < n; ++i) {
    const bool nested = shape == Shape::kNested;
    ok(w.row(schema::ranges).null().i64(nested ? 1 : 2 + i).i64(1000 + i).i64(nested ? 2 * (n - i) : 10).i64(nested ? i : 0)
           .i64(1).i64(i).insert());
  }
  ok(w.finalize());
}

size_t heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;  // in use: small blocks and mmap'ed ones
}

// Bytes the heap grows by per range while the viewer holds the model and a
// frame of it, zoomed out at 1600 pixels.
double bytes_per_range(int64_t n, Shape shape) {
  TempStore store;
  write_ranges(store.path, n, shape);
  malloc_trim(0);
  const size_t before = heap_bytes();
  auto tl = load_timeline(store.path);
  EXPECT_TRUE(tl.ok()) << tl.status().message();
  if (!tl.ok()) return 0;
  EXPECT_EQ(tl->event_count, n);
  FrameCache cache;
  cache.prepare(*tl, {tl->start_ts, tl->end_ts, 1600}, 200);
  const size_t after = heap_bytes();
  return static_cast<double>(after > before ? after - before : 0) / static_cast<double>(n);
}

// #27: 1M overlapping ranges took 6 GB (about 6 KB per range: a row of
// pixels per depth). The bound: 1 KB per range.
TEST(ViewerBounds, NestedRangesCostAtMostAKilobyteEach) {
  const double per = bytes_per_range(100000, Shape::kNested);
  std::printf("nested ranges: %.0f bytes per range\n", per);
  EXPECT_LE(per, 1024.0);
}

TEST(ViewerBounds, OneRangePerThreadCostsAtMostAKilobyteEach) {
  const double per = bytes_per_range(100000, Shape::kThreads);
  std::printf("one range per thread: %.0f bytes per range\n", per);
  EXPECT_LE(per, 1024.0);
}

// Beyond kMaxRasterRows rows, a frame's pixels are a window of rows around
// the ones shown: each row in it as a frame of all rows would draw it, the
// others without pixels; showing others moves the window.
TEST(ViewerBounds, AFrameHoldsPixelsForAWindowOfRows) {
  constexpr size_t kRows = FrameCache::Frame::kMaxRasterRows + 1000;
  Timeline tl;
  tl.load_id = new_load_id();
  tl.lanes.resize(2);
  for (size_t r = 0; r < kRows; ++r) {
    Track t;
    t.depth = static_cast<int>(r);
    for (int64_t i = 0; i < 20; ++i) {
      t.ts.push_back(i * 1000 + static_cast<int64_t>(r % 97));
      t.end.push_back(t.ts.back() + 300 + static_cast<int64_t>(r % 13) * 20);
      t.ref.push_back(static_cast<uint32_t>(r % 5));
    }
    tl.lanes[r < 10 ? 0 : 1].tracks.push_back(std::move(t));
  }
  tl.start_ts = 0, tl.end_ts = 20'000;
  const ViewWindow w{0, 20'000, 800};
  auto expect_row = [&](const FrameCache::Frame& f, size_t row, bool has_pixels) {
    const size_t l = row < 10 ? 0 : 1, k = row < 10 ? row : row - 10;
    const Track& t = tl.lanes[l].tracks[k];
    EXPECT_EQ(f.tracks[l][k].events(), t.size()) << "row " << row << ": a draw list for every row";
    if (!has_pixels) {
      EXPECT_EQ(f.row_of[l][k], -1) << "row " << row;
      return;
    }
    ASSERT_GE(f.row_of[l][k], 0) << "row " << row;
    std::vector<RowRect> rects;
    row_rects(tl, t, f.tracks[l][k], 40.0f, &rects);
    std::vector<uint8_t> want(4 * static_cast<size_t>(f.columns));
    rasterize_row(rects, 40, f.columns, palette::kBackground, want.data());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), f.row(l, k))) << "row " << row;
  };
  FrameCache cache;
  ASSERT_TRUE(cache.prepare(tl, w, 40));
  EXPECT_EQ(static_cast<size_t>(cache.frame().rows()), FrameCache::Frame::kMaxRasterRows);
  expect_row(cache.frame(), 0, true);
  expect_row(cache.frame(), 15, true);
  expect_row(cache.frame(), kRows - 1, false);
  EXPECT_FALSE(cache.prepare(tl, w, 40)) << "the view and the shown rows are the same: nothing to build";
  cache.show_rows(kRows - 30, kRows);
  ASSERT_TRUE(cache.prepare(tl, w, 40)) << "rows without pixels shown: built again";
  EXPECT_EQ(static_cast<size_t>(cache.frame().rows()), FrameCache::Frame::kMaxRasterRows);
  expect_row(cache.frame(), kRows - 1, true);
  expect_row(cache.frame(), kRows - 30, true);
  expect_row(cache.frame(), 0, false);
  cache.show_rows(kRows - 40, kRows - 35);
  EXPECT_FALSE(cache.prepare(tl, w, 40)) << "rows inside the window: nothing to build";
}

}  // namespace
}  // namespace tc::viewer
