// The timeline model over damaged stores (#27): a store's numbers (world
// sizes, clock offsets, times, durations, ids) never size an allocation
// without a bound, and never overflow the model's arithmetic. A store that
// cannot be drawn is refused in one line as damaged (kCorrupt, exit 5);
// everything else loads, bounded, with what was skipped counted.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <limits>
#include <string>

#include "analysis/rank_store.h"
#include "support/json.h"
#include "support/process.h"
#include "tc/analysis/export.h"
#include "tc/analysis/ranges.h"
#include "tc/analysis/timeline/job.h"
#include "tc/analysis/timeline/timeline.h"
#include "tc/store/writer.h"

namespace tc::analysis::timeline {
namespace {

namespace schema = store::schema;
using tc::test::TempDir;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();

void ok(const Status& s) { ASSERT_TRUE(s.ok()) << s.message(); }

size_t heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// While alive, the process may map at most 2 GiB more than it has: a test
// that would allocate from a store's number fails with bad_alloc, not by
// taking the machine's memory. (Not under AddressSanitizer, which maps
// terabytes of shadow.)
class MemoryCap {
 public:
  MemoryCap() {
#if !defined(__SANITIZE_ADDRESS__)
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    if (pages > 0 && getrlimit(RLIMIT_AS, &old_) == 0) {
      rlimit cap = old_;
      cap.rlim_cur = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{2} << 30);
      set_ = setrlimit(RLIMIT_AS, &cap) == 0;
    }
#endif
  }
  ~MemoryCap() {
    if (set_) setrlimit(RLIMIT_AS, &old_);
  }

 private:
  rlimit old_{};
  bool set_ = false;
};

void sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// Every event of tl: end > ts, both within ±(2^61 + 2^60) (timeline.h), and
// the run's extent a difference that does not overflow.
void expect_bounded_times(const Timeline& tl) {
  const int64_t limit = (int64_t{1} << 61) + (int64_t{1} << 60);
  EXPECT_LT(tl.start_ts, tl.end_ts);
  EXPECT_GE(tl.start_ts, -limit);
  EXPECT_LE(tl.end_ts, limit);
  for (const Lane& lane : tl.lanes) {
    for (const Track& t : lane.tracks) {
      for (size_t i = 0; i < t.size(); ++i) {
        EXPECT_GE(t.ts[i], -limit) << lane.name << " / " << t.name << " #" << i;
        EXPECT_LE(t.end[i], limit) << lane.name << " / " << t.name << " #" << i;
        EXPECT_GT(t.end[i], t.ts[i]) << lane.name << " / " << t.name << " #" << i;
      }
    }
  }
}

// #27: world_size = 2^31-1 in a rank store aborted tc-viewer (the ranks
// missing from the world, listed one by one: 16 GB). Refused as damaged, or
// loaded with the missing ranks bounded.
TEST(TimelineBounds, AWorldOfTwoBillionRanksCostsNothing) {
  TempDir dir;
  const int64_t world = (int64_t{1} << 31) - 1;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0, .world_size = world}, {.rank = 1, .world_size = world}}, 2, {});
  MemoryCap cap;
  const size_t before = heap_bytes();
  auto tl = load_job_timeline(paths);
  if (!tl.ok()) {
    EXPECT_EQ(tl.status().code(), StatusCode::kCorrupt) << tl.status().message();
    EXPECT_EQ(tl.status().message().find('\n'), std::string::npos) << tl.status().message();
    return;
  }
  EXPECT_EQ(tl->world_size, world);
  const std::vector<int64_t> missing = missing_ranks(*tl);
  EXPECT_LE(missing.size(), 1024u);
  ASSERT_FALSE(missing.empty());
  EXPECT_EQ(missing.front(), 2);
  EXPECT_LT(heap_bytes() - std::min(before, heap_bytes()), size_t{64} << 20);
}

TEST(TimelineBounds, MissingRanksAreListedUpToALimitAndCounted) {
  Timeline tl;
  tl.world_size = int64_t{1} << 40;
  for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{-4}, int64_t{1} << 50}) {
    RankGroup g;
    g.rank = r;
    tl.ranks.push_back(g);
  }
  EXPECT_EQ(missing_ranks(tl, 4), (std::vector<int64_t>{2, 4, 5, 6}));
  EXPECT_EQ(missing_rank_count(tl), (int64_t{1} << 40) - 3) << "ranks outside the world are not in it";
  tl.world_size = 4;
  EXPECT_EQ(missing_ranks(tl), (std::vector<int64_t>{2}));
  EXPECT_EQ(missing_rank_count(tl), 1);
}

// #27: clock_offset_ns = INT64_MAX took tc-viewer to 23.7 GB (times that
// overflowed, and a time axis that never ended). A damaged store, in one line.
TEST(TimelineBounds, AClockOffsetOfInt64MaxIsADamagedStore) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0}, {.rank = 1, .clock_offset_ns = 5'000'000}}, 2, {});
  for (int64_t offset : {kMax, kMin, -(int64_t{1} << 61)}) {
    sql(paths[1], "UPDATE ranks SET clock_offset_ns = " + std::to_string(offset));
    MemoryCap cap;
    auto tl = load_job_timeline(paths);
    if (tl.ok()) {  // (not how the model takes it, but bounded would do)
      expect_bounded_times(*tl);
      continue;
    }
    EXPECT_EQ(tl.status().code(), StatusCode::kCorrupt) << tl.status().message();
    EXPECT_NE(tl.status().message().find(paths[1]), std::string::npos) << tl.status().message();
    EXPECT_EQ(tl.status().message().find('\n'), std::string::npos) << tl.status().message();
  }
  sql(paths[1], "UPDATE ranks SET clock_offset_ns = " + std::to_string(int64_t{1} << 50));  // 13 days: a clock, not damage
  auto tl = load_job_timeline(paths);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  expect_bounded_times(*tl);
}

// A store with times and durations at the ends of int64: a step and a range
// that end past any sensible time, events at INT64_MIN and INT64_MAX.
void write_extreme_times(const std::string& path) {
  auto created = store::Writer::create(path, {.overwrite = true});
  ASSERT_TRUE(created.ok()) << created.status().message();
  store::Writer& w = **created;
  ok(w.row(schema::locations).i64(1).text("layer").text("model.py").text("forward").i64(10).insert());
  ok(w.row(schema::processes).i64(1).i64(100).text("python").i64(0).i64(kMax).insert());
  ok(w.row(schema::threads).i64(1).i64(1).i64(100).text("main").insert());
  ok(w.row(schema::steps).null().i64(1).i64(1000).i64(kMax).i64(0).i64(1).insert());      // ends past everything
  ok(w.row(schema::steps).null().i64(1).i64(kMax - 5).i64(100).i64(1).i64(1).insert());   // out of range
  ok(w.row(schema::ranges).null().i64(1).i64(2000).i64(kMax).i64(0).i64(1).i64(0).insert());
  ok(w.row(schema::ranges).null().i64(1).i64(kMin).i64(10).i64(1).i64(1).i64(0).insert());  // out of range
  ok(w.row(schema::ranges).null().i64(1).i64(3000).i64(kMin).i64(1).i64(1).i64(0).insert());  // open: to the run's end
  ok(w.row(schema::ranges).null().i64(1).i64(4000).i64(50).i64(2).i64(1).i64(0).insert());
  ok(w.row(schema::instants).null().i64(1).i64(kMax).i64(1).i64(0).insert());  // out of range
  ok(w.row(schema::instants).null().i64(1).i64(5000).i64(1).i64(0).insert());
  ok(w.finalize());
}

TEST(TimelineBounds, TimesAtTheEndsOfInt64LoadBounded) {
  TempDir dir;
  const std::string path = dir.file("extreme.tcdb");
  write_extreme_times(path);
  MemoryCap cap;
  auto tl = load_timeline(path);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  expect_bounded_times(*tl);
  EXPECT_EQ(tl->start_ts, 1000);
}

TEST(TimelineBounds, EventsOutOfTimeRangeAreSkippedAndCounted) {
  TempDir dir;
  const std::string path = dir.file("extreme.tcdb");
  write_extreme_times(path);
  auto tl = load_timeline(path);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  EXPECT_EQ(tl->skipped.events, 3) << "a step, a range and an instant";
  EXPECT_EQ(tl->event_count, 5) << "a step, three ranges and an instant";
  EXPECT_EQ(tl->end_ts, kTimeLimit);
  ASSERT_EQ(tl->steps.size(), 1u);
  EXPECT_EQ(tl->steps[0].ts + tl->steps[0].dur, kTimeLimit) << "a duration past the limit ends there";
  for (const Lane& lane : tl->lanes) EXPECT_EQ(lane.process_end, 0) << "an end_ts of INT64_MAX is unknown";
}

// The Chrome export reads the store through the timeline model's readers:
// it leaves out what the timeline leaves out (events out of time range),
// counts them the same and cuts a duration past the limit the same way.
TEST(TimelineBounds, TheExportSkipsWhatTheTimelineSkips) {
  TempDir dir;
  const std::string path = dir.file("extreme.tcdb");
  write_extreme_times(path);
  sql(path, "INSERT INTO run (id, start_ts, end_ts) VALUES (1, 0, 10000)");
  auto tl = load_timeline(path);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  auto reader = store::Reader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  ExportStats stats;
  const std::string out = dir.file("trace.json");
  Status s = export_chrome(*reader, out, &stats);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(stats.skipped_events, tl->skipped.events);
  EXPECT_EQ(stats.skipped_events, 3) << "a step, a range and an instant";
  EXPECT_EQ(skipped_note(stats), "left out 3 events whose time is out of range (a damaged store), as the timeline does");
  EXPECT_EQ(skipped_note(ExportStats{}), "");
  tc::test::JsonValue j = tc::test::parse_json(tc::test::read_file(out));
  int events = 0;
  for (const auto& e : j["traceEvents"].a) {
    if (e["ph"].s == "M") continue;
    ++events;
    EXPECT_LT(e["ts"].n, static_cast<double>(kTimeLimit) / 1e3) << e["name"].s;
    if (e["ph"].s == "X") EXPECT_LE(e["ts"].n + e["dur"].n, static_cast<double>(kTimeLimit) / 1e3 + 1) << e["name"].s;
  }
  EXPECT_EQ(events, 5) << "a step, three ranges and an instant, as the timeline has";
}

// tc-analyze ranges reads ranges and marks through the same readers: what
// is out of time range is left out and counted, and a duration past the
// limit ends there instead of overflowing the totals.
TEST(TimelineBounds, RangeStatisticsSkipWhatTheTimelineSkips) {
  TempDir dir;
  const std::string path = dir.file("extreme.tcdb");
  write_extreme_times(path);
  auto reader = store::Reader::open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto t = range_table(*reader);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->skipped_events, 2) << "a range and an instant";
  ASSERT_EQ(t->ranges.size(), 1u);
  EXPECT_EQ(t->ranges[0].count, 3);
  EXPECT_EQ(t->ranges[0].cut, 1);
  EXPECT_EQ(t->ranges[0].total_ns, kTimeLimit - 2000 + 50) << "the duration past the limit ends there";
  EXPECT_EQ(t->mark_count, 1);
  auto found = range_occurrences(*reader, "layer");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->size(), 3u);
}

// A location id is an index: 2^24 took 16M locations (1.7 GB) for one row.
TEST(TimelineBounds, ALocationIdFarPastTheRowsCostsNothing) {
  TempDir dir;
  const std::string path = dir.file("ids.tcdb");
  {
    auto created = store::Writer::create(path, {.overwrite = true});
    ASSERT_TRUE(created.ok()) << created.status().message();
    store::Writer& w = **created;
    ok(w.row(schema::locations).i64(1).text("layer").text("model.py").text("forward").i64(10).insert());
    ok(w.row(schema::locations).i64(int64_t{1} << 24).text("far").text("model.py").text("forward").i64(11).insert());
    ok(w.row(schema::threads).i64(1).i64(1).i64(100).text("main").insert());
    ok(w.row(schema::ranges).null().i64(1).i64(1000).i64(10).i64(0).i64(1).i64(0).insert());
    ok(w.row(schema::ranges).null().i64(1).i64(2000).i64(10).i64(0).i64(int64_t{1} << 24).i64(0).insert());
    ok(w.finalize());
  }
  MemoryCap cap;
  malloc_trim(0);
  const size_t before = heap_bytes();
  auto tl = load_timeline(path);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  EXPECT_LT(heap_bytes() - std::min(before, heap_bytes()), size_t{16} << 20);
  EXPECT_EQ(tl->event_count, 2) << "the range of the far location stays, named ?";
  ASSERT_NE(tl->location(1), nullptr);
  EXPECT_EQ(tl->location(1)->name, "layer");
}

}  // namespace
}  // namespace tc::analysis::timeline
