// The timeline model: a store becomes lanes of sorted tracks with the details
// tooltips and tables need; a bad file is a one-line Status.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <fstream>

#include "tc/viewer/demo_store.h"
#include "tc/viewer/lod.h"
#include "tc/viewer/model.h"

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

// Kernel runs form their own track under the executions, each inside its
// execution, each pointing at its kernel's description; statistics rank them.
TEST_F(ModelTest, KernelsNestUnderTheirExecutionsAndRankByTime) {
  auto tl = load_timeline(path_);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  const Lane& main = tl->lanes[0];
  const Track* k = find_track(main, TrackKind::kKernels);
  const Track* x = find_track(main, TrackKind::kExecutions);
  ASSERT_NE(k, nullptr);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(k->size(), 3 * x->size()) << "three kernels per execution";
  for (size_t i = 0; i < k->size(); ++i) {
    const KernelRun& run = tl->kernel_runs[k->ref[i]];
    ASSERT_LT(run.kernel, tl->kernels.size());
    auto e = std::upper_bound(x->ts.begin(), x->ts.end(), k->ts[i]);
    ASSERT_NE(e, x->ts.begin()) << "a kernel before any execution";
    size_t j = static_cast<size_t>(e - x->ts.begin()) - 1;
    EXPECT_LE(k->end[i], x->end[j]) << "kernel " << i << " ends after its execution";
  }
  auto by_site = event_statistics(*tl, StatsBy::kSite);
  ASSERT_EQ(by_site.size(), 3u);
  EXPECT_EQ(by_site[0].name, "model.cpp:42") << "the product holds six ninths of the time";
  EXPECT_EQ(by_site[0].count, static_cast<int64_t>(x->size()));
  int64_t slowest = by_site[0].max;
  const Track& t = tl->lanes[static_cast<size_t>(by_site[0].slowest_lane)].tracks[static_cast<size_t>(by_site[0].slowest_track)];
  EXPECT_EQ(t.end[by_site[0].slowest_event] - t.ts[by_site[0].slowest_event], slowest) << "the row points at its slowest run";
  EXPECT_EQ(event_statistics(*tl, StatsBy::kKernel).size(), 3 * tl->compilations.size());
  EXPECT_FALSE(event_statistics(*tl, StatsBy::kRange).empty());
}

// The memory lane spans the run's own bytes; a capacity far above them is a label, not the scale.
TEST(MemoryScale, FollowsTheRunNotAFarCapacity) {
  Timeline tl;
  tl.memory.ts = {0, 1, 2, 3};
  tl.memory.value = {40e6, 56e6, 41e6, 56e6};
  tl.memory.max_value = 56e6;
  tl.capacity_bytes = 23.5e9;
  MemoryScale m = memory_scale(tl);
  EXPECT_FALSE(m.capacity_in_range);
  EXPECT_LT(m.hi, 60e6);
  EXPECT_GT(m.lo, 30e6) << "the rise and fall of each step fills the lane";
  tl.capacity_bytes = 80e6;
  m = memory_scale(tl);
  EXPECT_TRUE(m.capacity_in_range);
  EXPECT_GE(m.hi, 80e6);
}

// A run without memory data (a PyTorch/XLA run, or a torch run whose steps have no memory records) has no memory lane, not an
// empty "0 B .. 1 B" one; a capacity alone does not make one; live bytes or an out-of-memory point do.
TEST(MemoryLane, OnlyWithMemoryData) {
  Timeline tl;
  EXPECT_FALSE(has_memory_lane(tl));
  tl.capacity_bytes = 23.5e9;
  EXPECT_FALSE(has_memory_lane(tl));
  tl.out_of_memory.push_back({});
  EXPECT_TRUE(has_memory_lane(tl));
  tl.out_of_memory.clear();
  tl.memory.ts = {0};
  tl.memory.value = {1175652};
  EXPECT_TRUE(has_memory_lane(tl));
}

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
