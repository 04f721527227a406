// The timeline model's NVTX (schema v3): per thread, tc's own tracks, then
// one group per NVTX domain (default first) with its marks, its push/pop
// ranges by nesting depth within the domain, and its start/end ranges; the
// site's colour, category name and real payload; cut ranges flagged and drawn
// to their process's end. Older stores load without any of it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../support/downgrade.h"
#include "tc/store/writer.h"
#include "tc/viewer/demo_store.h"
#include "tc/viewer/lod.h"
#include "tc/viewer/model.h"

namespace tc::viewer {
namespace {

namespace schema = store::schema;
constexpr int64_t kMs = 1'000'000;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tc_viewer_nvtx_" + std::to_string(::getpid()) + "_" + name)).string();
}

void ok(const Status& s) { ASSERT_TRUE(s.ok()) << s.message(); }

enum Loc : int64_t { kTcStep = 1, kTcInstant, kForward, kBackward, kLoadBatch, kEpoch, kCheckpoint, kPrefetch, kSave, kInner };

// Process 1 ends at 900 ms (the run's last event is at 950 ms); threads 1-3
// are its, thread 4 is process 2's. The store's depths are the thread's
// single stack (tc's range at 0 under thread 1's NVTX), as the collector
// writes them.
void write_store(const std::string& path) {
  auto created = store::Writer::create(path, {.overwrite = true});
  ASSERT_TRUE(created.ok()) << created.status().message();
  store::Writer& w = **created;
  ok(w.row(schema::run).i64(1).text("0.1.0").text("[\"python\",\"train.py\"]").text("/work").text("host").text("tc-profile")
         .text("monotonic").i64(0).i64(1000 * kMs).i64(0).null().i64(9).i64(0).i64(0).i64(0).text("none").null().text("tc").null().insert());
  struct L { int64_t id; const char* name; const char* file; const char* fn; };
  for (const L& l : {L{kTcStep, "train.step", "train.cpp", "main"}, L{kTcInstant, "log.flush", "train.cpp", "main"},
                     L{kForward, "forward", "nvtx", ""}, L{kBackward, "backward", "nvtx", ""}, L{kLoadBatch, "load batch", "nvtx", "data"},
                     L{kEpoch, "epoch", "nvtx", "data"}, L{kCheckpoint, "checkpoint", "nvtx", ""}, L{kPrefetch, "prefetch", "nvtx", "data"},
                     L{kSave, "save", "nvtx", ""}, L{kInner, "inner", "nvtx", "zeta"}}) {
    ok(w.row(schema::locations).i64(l.id).text(l.name).text(l.file).text(l.fn).i64(0).insert());
  }
  ok(w.row(schema::processes).i64(1).i64(100).text("python").i64(0).i64(900 * kMs).insert());
  ok(w.row(schema::processes).i64(2).i64(200).text("python").i64(0).null().insert());
  ok(w.row(schema::threads).i64(1).i64(1).i64(100).text("main").insert());
  ok(w.row(schema::threads).i64(2).i64(1).i64(101).text("worker").insert());
  ok(w.row(schema::threads).i64(3).i64(1).i64(102).null().insert());
  ok(w.row(schema::threads).i64(4).i64(2).i64(200).null().insert());
  auto site = [&](int64_t utid, int64_t loc, const char* domain, int64_t category, int64_t color) {
    auto r = w.row(schema::nvtx_sites);
    r.null().i64(utid).i64(loc);
    if (domain) r.text(domain); else r.null();
    if (category) r.i64(category); else r.null();
    if (color) r.i64(color); else r.null();
    ok(r.text("ascii").insert());
  };
  site(1, kForward, nullptr, 1, 0xFF76B900);
  site(1, kBackward, nullptr, 2, 0);
  site(2, kLoadBatch, "data", 0, 0x80123456);
  site(1, kEpoch, "data", 0, 0);
  site(1, kCheckpoint, nullptr, 0, 0xFFFF0000);
  site(2, kPrefetch, "data", 0, 0);
  site(2, kSave, nullptr, 0, 0);
  site(1, kInner, "zeta", 0, 0);
  ok(w.row(schema::nvtx_categories).null().i64(4).null().i64(1).text("rank 1 compute").insert());
  ok(w.row(schema::nvtx_categories).null().i64(1).null().i64(1).text("compute").insert());
  auto range = [&](int64_t utid, int64_t ts, int64_t dur, int64_t depth, int64_t loc) {
    ok(w.row(schema::ranges).null().i64(utid).i64(ts).i64(dur).i64(depth).i64(loc).i64(loc * 10).insert());
  };
  // Thread 1: tc's train.step [0, 100) at depth 0; NVTX forward [10, 50) at
  // depth 1 holding backward [20, 30) at 2, and a domain "zeta" range inside
  // both at store depth 3 but depth 0 in its own domain; a second forward
  // [60, 70) at depth 1 again.
  range(1, 0, 100 * kMs, 0, kTcStep);
  range(1, 10 * kMs, 40 * kMs, 1, kForward);
  range(1, 20 * kMs, 10 * kMs, 2, kBackward);
  range(1, 22 * kMs, 2 * kMs, 3, kInner);
  range(1, 60 * kMs, 10 * kMs, 1, kForward);
  // Thread 2, domain "data": load batch [5, 15) holding load batch [6, 8).
  range(2, 5 * kMs, 10 * kMs, 0, kLoadBatch);
  range(2, 6 * kMs, 2 * kMs, 1, kLoadBatch);
  // Thread 3: a forward still open when process 1 ended.
  range(3, 200 * kMs, -1, 0, kForward);
  ok(w.row(schema::instants).null().i64(1).i64(60 * kMs).i64(kCheckpoint).i64(5).insert());
  ok(w.row(schema::instants).null().i64(2).i64(70 * kMs).i64(kPrefetch).i64(0).insert());
  ok(w.row(schema::instants).null().i64(1).i64(950 * kMs).i64(kTcInstant).i64(2).insert());
  ok(w.row(schema::nvtx_real_payloads).null().i64(2).i64(70 * kMs).i64(kPrefetch).f64(2.5).insert());
  // Start/end: 42 starts on thread 1 and ends on thread 3 (process 2's 42 is
  // another range); 43 and 44 on thread 2 overlap; 43 never ends.
  ok(w.row(schema::nvtx_range_starts).null().i64(1).i64(1 * kMs).i64(42).i64(kEpoch).i64(11).insert());
  ok(w.row(schema::nvtx_range_ends).null().i64(4).i64(300 * kMs).i64(42).insert());
  ok(w.row(schema::nvtx_range_ends).null().i64(3).i64(500 * kMs).i64(42).insert());
  ok(w.row(schema::nvtx_range_starts).null().i64(2).i64(600 * kMs).i64(43).i64(kSave).i64(0).insert());
  ok(w.row(schema::nvtx_range_starts).null().i64(2).i64(650 * kMs).i64(44).i64(kSave).i64(0).insert());
  ok(w.row(schema::nvtx_range_ends).null().i64(2).i64(700 * kMs).i64(44).insert());
  ok(w.finalize());
}

struct TrackShape {
  TrackKind kind;
  int domain, depth;
  std::vector<int64_t> ts_ms;
  bool operator==(const TrackShape&) const = default;
};
void PrintTo(const TrackShape& t, std::ostream* os) {
  *os << track_kind_name(t.kind) << " domain " << t.domain << " depth " << t.depth << " ts_ms {";
  for (int64_t ts : t.ts_ms) *os << " " << ts;
  *os << " }";
}

std::vector<TrackShape> shapes(const Lane& lane) {
  std::vector<TrackShape> out;
  for (const Track& t : lane.tracks) {
    TrackShape s{t.kind, t.domain, t.depth, {}};
    for (int64_t ts : t.ts) s.ts_ms.push_back(ts / kMs);
    out.push_back(s);
  }
  return out;
}

const Lane* lane_of(const Timeline& tl, int64_t utid) {
  for (const Lane& l : tl.lanes) {
    if (l.utid == utid) return &l;
  }
  return nullptr;
}

class NvtxModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = temp_path("nvtx.tcdb");
    write_store(path_);
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }
  static inline std::string path_;
};

TEST_F(NvtxModelTest, LanesPerThreadAndDomainWithDepthsWithinTheDomain) {
  auto tl = load_timeline(path_);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_EQ(tl->nvtx_domains.size(), 3u);
  EXPECT_TRUE(tl->nvtx_domains[0].is_default);
  EXPECT_EQ(tl->nvtx_domains[0].label(), "NVTX");
  EXPECT_EQ(tl->nvtx_domains[1].label(), "data");
  EXPECT_EQ(tl->nvtx_domains[2].label(), "zeta");
  const Lane* main = lane_of(*tl, 1);
  const Lane* worker = lane_of(*tl, 2);
  const Lane* third = lane_of(*tl, 3);
  ASSERT_TRUE(main && worker && third);
  // tc's own first (instants, ranges), then the default domain, then "data" (the epoch started here), then "zeta".
  EXPECT_EQ(shapes(*main), (std::vector<TrackShape>{
                               {TrackKind::kInstants, -1, 0, {950}},
                               {TrackKind::kRanges, -1, 0, {0}},
                               {TrackKind::kNvtxMarks, 0, 0, {60}},
                               {TrackKind::kNvtxRanges, 0, 0, {10, 60}},
                               {TrackKind::kNvtxRanges, 0, 1, {20}},
                               {TrackKind::kNvtxStartEnd, 1, 0, {1}},
                               {TrackKind::kNvtxRanges, 2, 0, {22}},
                           }));
  EXPECT_EQ(shapes(*worker), (std::vector<TrackShape>{
                                 {TrackKind::kNvtxStartEnd, 0, 0, {600}},
                                 {TrackKind::kNvtxStartEnd, 0, 1, {650}},
                                 {TrackKind::kNvtxMarks, 1, 0, {70}},
                                 {TrackKind::kNvtxRanges, 1, 0, {5}},
                                 {TrackKind::kNvtxRanges, 1, 1, {6}},
                             }));
  EXPECT_EQ(shapes(*third), (std::vector<TrackShape>{{TrackKind::kNvtxRanges, 0, 0, {200}}}));
  EXPECT_EQ(lane_of(*tl, 4), nullptr) << "process 2's unmatched end is no event";
  // Every track stays drawable: sorted, never overlapping within a row.
  for (const Lane& lane : tl->lanes) {
    for (const Track& t : lane.tracks) {
      for (size_t i = 1; i < t.size(); ++i) EXPECT_LE(t.end[i - 1], t.ts[i]) << lane.name << " " << t.name;
    }
  }
}

TEST_F(NvtxModelTest, ColourCategoryPayloadAndCutComeFromTheStore) {
  auto tl = load_timeline(path_);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  const NvtxSite* forward = tl->nvtx_site(kForward);
  const NvtxSite* backward = tl->nvtx_site(kBackward);
  const NvtxSite* load = tl->nvtx_site(kLoadBatch);
  ASSERT_TRUE(forward && backward && load);
  EXPECT_EQ(tl->nvtx_site(kTcStep), nullptr);
  EXPECT_EQ(forward->category_name, "compute") << "its own process's name, not process 2's";
  EXPECT_EQ(backward->category, 2);
  EXPECT_EQ(backward->category_name, "") << "category 2 has no name";
  EXPECT_EQ(load->domain, 1);
  EXPECT_FALSE(load->category.has_value());
  ASSERT_TRUE(load->color.has_value());
  EXPECT_EQ(*load->color, 0x80123456u);
  palette::Rgb c = site_colour(*tl, kLoadBatch);
  EXPECT_EQ((std::vector<int>{c.r, c.g, c.b}), (std::vector<int>{0x12, 0x34, 0x56})) << "the NVTX colour, alpha dropped";
  palette::Rgb p = site_colour(*tl, kBackward), expected = palette::range_colour(kBackward);
  EXPECT_EQ((std::vector<int>{p.r, p.g, p.b}), (std::vector<int>{expected.r, expected.g, expected.b})) << "no colour: the palette's";
  EXPECT_EQ(tl->nvtx_real_payload(2, kPrefetch, 70 * kMs), 2.5);
  EXPECT_FALSE(tl->nvtx_real_payload(1, kCheckpoint, 60 * kMs).has_value());

  // The cut forward on thread 3: flagged, drawn to process 1's end (900 ms), not the run's.
  const Track& cut = lane_of(*tl, 3)->tracks[0];
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_TRUE(cut.is_cut(0));
  EXPECT_EQ(cut.end[0], 900 * kMs);
  EXPECT_EQ(cut.arg[0], kForward * 10) << "the payload";
  const Track& forward0 = lane_of(*tl, 1)->tracks[3];
  EXPECT_TRUE(forward0.cut.empty()) << "no range of the track is cut";
  EXPECT_EQ(forward0.end[0], 50 * kMs);

  // Start/end ranges: 42 on thread 1 ended on thread 3 at 500 ms; 43 cut at process 1's end.
  ASSERT_EQ(tl->nvtx_start_ends.size(), 3u);
  const NvtxStartEnd& epoch = tl->nvtx_start_ends[0];
  EXPECT_EQ(epoch.range_id, 42);
  EXPECT_EQ(epoch.utid, 1);
  EXPECT_EQ(epoch.end_utid, 3);
  EXPECT_EQ(epoch.end, 500 * kMs);
  EXPECT_EQ(epoch.payload, 11);
  EXPECT_FALSE(epoch.cut);
  const NvtxStartEnd& save = tl->nvtx_start_ends[1];
  EXPECT_EQ(save.range_id, 43);
  EXPECT_TRUE(save.cut);
  EXPECT_EQ(save.end, 900 * kMs);
  const Track& rows0 = lane_of(*tl, 2)->tracks[0];
  EXPECT_TRUE(rows0.is_cut(0));
  EXPECT_EQ(rows0.end[0], 900 * kMs);

  // Statistics by range name take NVTX ranges (a named domain's with its name), without the cut ones.
  std::map<std::string, int64_t> counts;
  for (const EventStats& s : event_statistics(*tl, StatsBy::kRange)) counts[s.name] = s.count;
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{
                        {"train.step", 1}, {"forward", 2}, {"backward", 1}, {"inner (zeta)", 1}, {"load batch (data)", 2},
                        {"epoch (data)", 1}, {"save", 1}}))
      << "the cut forward and the cut save (43) have no duration";
}

// A v2 store (no NVTX tables) loads as before: its ranges are tc's own.
TEST(NvtxModelOldStore, AV2StoreHasNoNvtxTracks) {
  std::string path = temp_path("v2.tcdb");
  write_store(path);
  ASSERT_EQ(test::downgrade_store(path, 2), "");
  auto tl = load_timeline(path);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  EXPECT_TRUE(tl->nvtx_domains.empty());
  EXPECT_TRUE(tl->nvtx_start_ends.empty());
  int ranges = 0;
  for (const Lane& lane : tl->lanes) {
    for (const Track& t : lane.tracks) {
      EXPECT_EQ(t.domain, -1);
      EXPECT_TRUE(t.kind != TrackKind::kNvtxRanges && t.kind != TrackKind::kNvtxMarks && t.kind != TrackKind::kNvtxStartEnd);
      if (t.kind == TrackKind::kRanges) ranges += static_cast<int>(t.size());
    }
  }
  EXPECT_EQ(ranges, 8);
  std::filesystem::remove(path);
}

// The demo store has both domains on the main and loader lanes, a cut range
// and start/end ranges, and every event is in a draw list.
TEST(NvtxModelDemo, TheDemoStoreShowsNvtxGroups) {
  std::string path = temp_path("demo.tcdb");
  DemoStoreOptions o;
  o.range_events = 600;
  auto n = write_demo_store(path, o);
  ASSERT_TRUE(n.ok()) << n.status().message();
  auto tl = load_timeline(path);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_EQ(tl->nvtx_domains.size(), 2u);
  auto has = [&](int64_t utid, TrackKind kind, int domain) {
    for (const Track& t : lane_of(*tl, utid)->tracks) {
      if (t.kind == kind && t.domain == domain) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(1, TrackKind::kNvtxRanges, 0));
  EXPECT_TRUE(has(1, TrackKind::kNvtxMarks, 0));
  EXPECT_TRUE(has(1, TrackKind::kNvtxStartEnd, 0));
  EXPECT_TRUE(has(2, TrackKind::kNvtxRanges, 1));
  EXPECT_TRUE(has(2, TrackKind::kNvtxMarks, 1));
  int cut = 0;
  int64_t events = 0;
  DrawList list;
  for (const Lane& lane : tl->lanes) {
    for (const Track& t : lane.tracks) {
      for (size_t i = 0; i < t.size(); ++i) cut += t.is_cut(i);
      build_draw_list(t, {tl->start_ts, tl->end_ts, 1200.0f}, &list);
      events += static_cast<int64_t>(list.events());
    }
  }
  EXPECT_EQ(cut, 2) << "the loader's prefetch and the unfinished epoch";
  EXPECT_EQ(events, tl->event_count);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tc::viewer
