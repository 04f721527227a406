// The timeline model: a store becomes lanes of sorted tracks with the details
// tooltips and tables need; a bad file is a one-line Status.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tc/viewer/demo_store.h"
#include "tc/viewer/lod.h"
#include "tc/viewer/timeline.h"

namespace tc::viewer {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tc_viewer_" + std::to_string(::getpid()) + "_" + name)).string();
}

const Track* find_track(const Lane& lane, TrackKind kind, int depth = 0) {
  for (const Track& t : lane.tracks) {
    if (t.kind == kind && t.depth == depth) return &t;
  }
  return nullptr;
}

class ModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = temp_path("demo.tcdb");
    DemoStoreOptions o;
    o.range_events = 4000;
    o.threads = 3;
    auto written = write_demo_store(path_, o);
    ASSERT_TRUE(written.ok()) << written.status().message();
    events_ = *written;
  }
  static void TearDownTestSuite() { std::filesystem::remove(path_); }
  static inline std::string path_;
  static inline int64_t events_ = 0;
};

TEST_F(ModelTest, EveryLaneHasContent) {
  auto tl = load_timeline(path_);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_EQ(tl->lanes.size(), 3u);
  const Lane& main = tl->lanes[0];
  EXPECT_NE(main.name.find("main"), std::string::npos);
  for (TrackKind k : {TrackKind::kSteps, TrackKind::kCompilations, TrackKind::kExecutions, TrackKind::kEvaluations,
                      TrackKind::kInstants}) {
    EXPECT_NE(find_track(main, k), nullptr) << track_kind_name(k);
  }
  for (const Lane& lane : tl->lanes) {
    for (int d = 0; d < 3; ++d) EXPECT_NE(find_track(lane, TrackKind::kRanges, d), nullptr) << lane.name << " " << d;
    for (const Track& t : lane.tracks) {
      EXPECT_TRUE(std::is_sorted(t.ts.begin(), t.ts.end())) << t.name;
      for (size_t i = 0; i < t.size(); ++i) ASSERT_GT(t.end[i], t.ts[i]) << t.name;
    }
  }
  EXPECT_GT(tl->memory.size(), 0u);
  EXPECT_EQ(tl->capacity_bytes, double(16LL << 30));
  ASSERT_EQ(tl->out_of_memory.size(), 1u);
  EXPECT_GT(tl->event_count, 4000);
  EXPECT_LT(tl->start_ts, tl->end_ts);
}

TEST_F(ModelTest, RecompilationsCarryTheirInputChanges) {
  auto tl = load_timeline(path_);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  int shape = 0, structure = 0, first = 0;
  for (const Compilation& c : tl->compilations) {
    if (c.reason == CompileReason::kShapeChange) {
      ++shape;
      ASSERT_EQ(c.inputs.size(), 2u);
      EXPECT_EQ(c.inputs[0].input, "input_ids");
      EXPECT_EQ(c.inputs[0].dim, 1);
      EXPECT_LT(c.inputs[0].old_value, c.inputs[0].new_value);
    }
    structure += c.reason == CompileReason::kStructureChange;
    first += c.reason == CompileReason::kFirst;
  }
  EXPECT_EQ(first, 1);
  EXPECT_EQ(shape, 2);
  EXPECT_EQ(structure, 1);
  EXPECT_TRUE(std::is_sorted(tl->compilations.begin(), tl->compilations.end(),
                             [](const Compilation& a, const Compilation& b) { return a.ts < b.ts; }));
}

TEST_F(ModelTest, ExplicitEvaluationsNameTheirCallSite) {
  auto tl = load_timeline(path_);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_FALSE(tl->evaluations.empty());
  EXPECT_EQ(call_site(*tl, tl->evaluations[0].loc_id), "train.cpp:42");
  EXPECT_EQ(tl->evaluations[0].kind, "item");
}

TEST_F(ModelTest, ParallelAndSerialLoadsAgree) {
  LoadOptions one, four;
  one.threads = 1;
  four.threads = 4;
  auto a = load_timeline(path_, one), b = load_timeline(path_, four);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->lanes.size(), b->lanes.size());
  for (size_t l = 0; l < a->lanes.size(); ++l) {
    ASSERT_EQ(a->lanes[l].tracks.size(), b->lanes[l].tracks.size());
    for (size_t t = 0; t < a->lanes[l].tracks.size(); ++t) {
      EXPECT_EQ(a->lanes[l].tracks[t].ts, b->lanes[l].tracks[t].ts);
      EXPECT_EQ(a->lanes[l].tracks[t].ref, b->lanes[l].tracks[t].ref);
    }
  }
}

TEST_F(ModelTest, FullViewDrawListsAccountForEveryEvent) {
  auto tl = load_timeline(path_);
  ASSERT_TRUE(tl.ok());
  DrawList list;
  int64_t total = 0;
  for (const Lane& lane : tl->lanes) {
    for (const Track& t : lane.tracks) {
      build_draw_list(t, {tl->start_ts, tl->end_ts, 1200.0f}, &list);
      EXPECT_LE(list.items.size(), 1202u);
      total += static_cast<int64_t>(list.events());
    }
  }
  EXPECT_EQ(total, tl->event_count);
}

TEST(ModelErrors, BadFilesAreOneLineErrors) {
  std::string garbage = temp_path("garbage.tcdb");
  std::ofstream(garbage) << "this is not a store at all, just some text that is long enough";
  for (const std::string& p : {garbage, temp_path("missing.tcdb"), std::filesystem::temp_directory_path().string()}) {
    auto tl = load_timeline(p);
    ASSERT_FALSE(tl.ok()) << p;
    EXPECT_FALSE(tl.status().message().empty());
    EXPECT_EQ(tl.status().message().find('\n'), std::string::npos);
  }
  std::filesystem::remove(garbage);
}

}  // namespace
}  // namespace tc::viewer
