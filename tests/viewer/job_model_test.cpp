// A data-parallel job's stores on one axis (tc/analysis/timeline/job.h), on
// rank stores written here (tests/analysis/rank_store.h) whose every time on
// the aligned clock is known: rank 1's clock runs 5 ms behind rank 0's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "analysis/rank_store.h"
#include "support/downgrade.h"
#include "support/process.h"
#include "tc/viewer/demo_store.h"
#include "tc/store/writer.h"
#include "tc/analysis/job.h"
#include "tc/viewer/frame_cache.h"
#include "tc/viewer/model.h"
#include "tc/viewer/lod.h"

namespace tc::viewer {
namespace {

using tc::test::RankEvent;
using tc::test::RankPlan;
using tc::test::TempDir;
constexpr int64_t kMs = tc::test::kRankMs;

// Rank 1 compiles 30 ms longer before the first all-reduce of step 2 (seq 5).
std::vector<RankEvent> rank1_late() { return {{.what = RankEvent::kCompile, .rank = 1, .step = 2, .ns = 30 * kMs, .signature = "sigA20"}}; }

const Track* track_of(const Timeline& tl, size_t lane, TrackKind kind) {
  for (const Track& t : tl.lanes[lane].tracks)
    if (t.kind == kind) return &t;
  return nullptr;
}

// Each collective's pieces on a lane: seq -> {arrival, transfer start, end}.
struct Pieces {
  int64_t arrive = -1, transfer = -1, end = -1;
};
// From the lane's two rows: "collectives" (the transfers) and "waiting".
std::map<int64_t, Pieces> pieces(const Timeline& tl, size_t lane) {
  std::map<int64_t, Pieces> out;
  for (const Track& t : tl.lanes[lane].tracks) {
    if (t.kind != TrackKind::kCollectives) continue;
    EXPECT_EQ(t.name, t.depth == 0 ? "collectives" : "waiting");
    for (size_t i = 0; i < t.size(); ++i) {
      Pieces& p = out[tl.collectives[t.ref[i]].seq];
      EXPECT_EQ(t.arg[i], t.depth == 0 ? 1 : 0);
      if (t.depth == 1) p.arrive = t.ts[i];
      else p.transfer = t.ts[i], p.end = t.end[i];
      if (p.arrive < 0 || t.ts[i] < p.arrive) p.arrive = t.ts[i];
    }
  }
  return out;
}

TEST(JobModel, ClockOffsetsLineUpTheRanksCollectivesAtTheSameX) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0}, {.rank = 1, .clock_offset_ns = 5 * kMs}}, 4, rank1_late());
  auto tl = load_job_timeline({paths[1], paths[0]});  // given out of order: groups go by rank
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_EQ(tl->ranks.size(), 2u);
  EXPECT_EQ(tl->world_size, 2);
  EXPECT_EQ(tl->job, "job-7");
  const RankGroup &g0 = tl->ranks[0], &g1 = tl->ranks[1];
  EXPECT_EQ(g0.rank, 0);
  EXPECT_EQ(g1.rank, 1);
  EXPECT_EQ(g0.label(), "rank 0");
  EXPECT_EQ(g1.store, paths[1]);
  EXPECT_EQ(g1.host, "host1");
  EXPECT_EQ(g1.pid, 1001);
  EXPECT_EQ(g1.clock_offset_ns, 5 * kMs);
  ASSERT_EQ(g0.lane_count, 1u);
  ASSERT_EQ(g1.first_lane, 1u);
  EXPECT_EQ(tl->lanes[0].group, 0);
  EXPECT_EQ(tl->lanes[1].group, 1);
  EXPECT_EQ(tl->lanes[1].pid, 1001);

  // One view of the whole job: the same true time is the same x on both ranks.
  const ViewWindow w{tl->start_ts, tl->end_ts, 1600};
  auto p0 = pieces(*tl, 0), p1 = pieces(*tl, 1);
  ASSERT_EQ(p0.size(), 8u);
  ASSERT_EQ(p1.size(), 8u);
  for (auto& [seq, a] : p0) {
    const Pieces& b = p1[seq];
    EXPECT_EQ(w.x_of(a.transfer), w.x_of(b.transfer)) << "seq " << seq << ": the transfer starts when the last rank arrives, on every rank";
    EXPECT_EQ(w.x_of(a.end), w.x_of(b.end)) << "seq " << seq;
    if (seq == 5) {
      EXPECT_EQ(b.arrive, b.transfer) << "rank 1 arrived last: no wait";
      EXPECT_EQ(a.transfer - a.arrive, 30 * kMs) << "rank 0 waited for rank 1's 30 ms compile";
    } else {
      EXPECT_EQ(a.arrive, b.arrive) << "seq " << seq << ": both arrived at the same true time";
      EXPECT_EQ(a.arrive, a.transfer) << "seq " << seq << ": nobody waited";
    }
  }
  // Without the offset the arrivals would be 5 ms apart.
  auto r1 = load_timeline(paths[1]);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(pieces(*r1, 0)[1].arrive + 5 * kMs, p1[1].arrive);
  EXPECT_NE(w.x_of(pieces(*r1, 0)[1].arrive), w.x_of(p0[1].arrive));

  // The records say the same: rank 0's wait at seq 5, rank 1 last.
  for (const Collective& c : tl->collectives) {
    EXPECT_EQ(c.ranks_seen, 2);
    if (c.seq == 5 && c.rank == 0) {
      EXPECT_EQ(c.wait, 30 * kMs);
      EXPECT_EQ(c.last_rank, 1);
    } else if (c.seq != 5) {
      EXPECT_EQ(c.wait, 0) << "seq " << c.seq << " rank " << c.rank;
    }
  }
  // Steps of both ranks on the same axis: step s starts at the same time.
  const Track *s0 = track_of(*tl, 0, TrackKind::kSteps), *s1 = track_of(*tl, 1, TrackKind::kSteps);
  ASSERT_TRUE(s0 && s1);
  ASSERT_EQ(s0->size(), 4u);
  ASSERT_EQ(s1->size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(s0->ts[i], s1->ts[i]) << "step " << i;
  EXPECT_EQ(tl->steps[s1->ref[2]].step, 2);
  // Records moved with their tracks, and stayed sorted.
  const Track* c1 = track_of(*tl, 1, TrackKind::kCompilations);
  ASSERT_TRUE(c1);
  for (size_t i = 0; i < c1->size(); ++i) {
    EXPECT_EQ(tl->compilations[c1->ref[i]].ts, c1->ts[i]);
    EXPECT_EQ(tl->compilations[c1->ref[i]].rank, 1) << "the Compilations table's rank column";
  }
  EXPECT_TRUE(std::is_sorted(tl->compilations.begin(), tl->compilations.end(), [](auto& a, auto& b) { return a.ts < b.ts; }));
  EXPECT_EQ(tl->locations.size(), r1->locations.size()) << "the ranks' call sites are one set of locations";
}

// One tc-profile over mpirun: one store holds both ranks (and a process of
// no rank), each lane shifted by its own process's offset.
// A framework's job as tc's Python hook records it (torchrun's ranks from the
// environment only, no ranks row; DDP's all-reduces with no bytes; no tc
// executions): the same lanes per rank, with rank 0's wait drawn.
TEST(JobModel, AFrameworkJobHasLanesPerRankWithTheWaits) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0, .dist = false}, {.rank = 1, .dist = false}}, 4, rank1_late());
  for (const std::string& p : paths)
    tc::test::edit_store(p, "UPDATE collectives SET op = 'all_reduce', bytes = NULL, tensors = NULL; DELETE FROM executions; "
                            "UPDATE compilations SET framework = 'torch.compile'; UPDATE steps SET framework = 'torch'");
  auto tl = load_job_timeline(paths);
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_EQ(tl->ranks.size(), 2u);
  auto p0 = pieces(*tl, 0), p1 = pieces(*tl, 1);
  ASSERT_EQ(p0.size(), 8u);
  ASSERT_EQ(p1.size(), 8u);
  EXPECT_EQ(p0[5].transfer - p0[5].arrive, 30 * kMs) << "rank 0 waited for rank 1's 30 ms compile";
  EXPECT_EQ(p1[5].arrive, p1[5].transfer);
}

TEST(JobModel, OneStoreOfSeveralRanksIsGroupedByProcess) {
  namespace schema = tc::store::schema;
  TempDir dir;
  const std::string path = dir.file("run.tcdb");
  const int64_t off1 = 3 * kMs;  // rank 1's clock runs 3 ms behind rank 0's
  {
    auto w = tc::store::Writer::create(path);
    ASSERT_TRUE(w.ok()) << w.status().message();
    auto& s = **w;
    auto ok = [](const tc::Status& st) { ASSERT_TRUE(st.ok()) << st.message(); };
    ok(s.row(schema::locations).i64(1).text("all_reduce_mean").text("/src/train.cpp").text("main").i64(70).insert());
    for (int64_t p = 0; p < 3; ++p) {
      ok(s.row(schema::processes).i64(p + 1).i64(700 + p).text(p == 2 ? "helper" : "train").i64(0).null().insert());
      ok(s.row(schema::threads).i64(p + 1).i64(p + 1).i64(700 + p).null().insert());
    }
    // Rank 1's row first: groups go by rank, not by row.
    ok(s.row(schema::ranks).null().i64(2).i64(1).i64(2).text("vm").text("job-1").i64(off1).i64(1000).insert());
    ok(s.row(schema::ranks).null().i64(1).i64(0).i64(2).text("vm").text("job-1").i64(0).i64(0).insert());
    // Three all-reduces; rank 1 (utid 2) is 100 ms late at the second.
    for (int64_t seq = 1; seq <= 3; ++seq) {
      const int64_t base = seq * 1000 * kMs;
      for (int64_t utid = 1; utid <= 2; ++utid) {
        const int64_t late = utid == 2 && seq == 2 ? 100 * kMs : 0, local = utid == 2 ? base + late - off1 : base;
        ok(s.row(schema::collectives).null().i64(utid).i64(local).i64(kMs + 100 * kMs - late).i64(seq).i64(seq).text("all_reduce_mean").i64(8)
               .i64(1).i64(1).insert());
      }
    }
    ok(s.row(schema::steps).null().i64(3).i64(500 * kMs).i64(kMs).i64(0).i64(1).insert());  // the helper's one event
    auto r = s.row(schema::run);
    r.i64(1).text("0.1.0").text("[\"mpirun\"]").text("/").text("vm").text("tc-profile").text("monotonic");
    ok(r.i64(0).i64(4000 * kMs).i64(0).i64(0).null().i64(1).i64(0).i64(0).text("none").null().text("tc").null().insert());
    ok(s.finalize());
  }
  auto tl = load_job_timeline({path});
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  ASSERT_EQ(tl->ranks.size(), 3u);
  EXPECT_EQ(tl->ranks[0].rank, 0);
  EXPECT_EQ(tl->ranks[0].pid, 700);
  EXPECT_EQ(tl->ranks[1].rank, 1);
  EXPECT_EQ(tl->ranks[1].pid, 701);
  EXPECT_EQ(tl->ranks[1].clock_offset_ns, off1);
  EXPECT_EQ(tl->ranks[2].rank, -1);
  EXPECT_EQ(tl->ranks[2].label(), "other processes");
  EXPECT_EQ(tl->lanes[tl->ranks[2].first_lane].pid, 702);
  EXPECT_TRUE(missing_ranks(*tl).empty());
  ASSERT_EQ(tl->collectives.size(), 6u);
  for (const Collective& c : tl->collectives) {
    EXPECT_EQ(c.ts, c.seq * 1000 * kMs + (c.rank == 1 && c.seq == 2 ? 100 * kMs : 0)) << "rank " << c.rank << " seq " << c.seq;
    EXPECT_EQ(c.wait, c.rank == 0 && c.seq == 2 ? 100 * kMs : 0) << "rank " << c.rank << " seq " << c.seq << ": not 3 ms, the offset";
  }
}

TEST(JobModel, FindingsOfTheJobJumpToTheStepOnTheAlignedAxis) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0}, {.rank = 1, .clock_offset_ns = 5 * kMs}}, 4, rank1_late());
  auto tl = load_job_timeline(paths);
  auto job = analysis::analyze_job(paths);
  ASSERT_TRUE(tl.ok() && job.ok());
  const analysis::JobFinding* straggler = nullptr;
  for (const auto& f : job->findings)
    if (f.finding.kind == "distributed.straggler") straggler = &f;
  ASSERT_NE(straggler, nullptr);
  int64_t t0 = 0, t1 = 0;
  ASSERT_TRUE(anchor_extent(*tl, straggler->aligned_anchors_ts, &t0, &t1));
  // Step 2 of rank 1 on the timeline: the view goes to it.
  const Track* s1 = track_of(*tl, 1, TrackKind::kSteps);
  ASSERT_TRUE(s1);
  size_t step2 = 0;
  while (step2 < s1->size() && tl->steps[s1->ref[step2]].step != 2) ++step2;
  ASSERT_LT(step2, s1->size());
  // The first collective of step 2 comes before its mark_step: the extent runs from there through the step.
  EXPECT_LE(t0, s1->ts[step2] + 0);
  EXPECT_GE(t1, s1->end[step2]);
  // From rank 0's arrival at seq 5 (the first collective of step 2, where it waited for rank 1), through the step.
  int64_t rank0_arrival = -1;
  for (const Collective& c : tl->collectives)
    if (c.seq == 5 && c.rank == 0) rank0_arrival = c.ts;
  EXPECT_EQ(t0, rank0_arrival);
  EXPECT_LT(t0, straggler->aligned_anchors_ts.front()) << "before rank 1's arrival: the wait is in the view";
  EXPECT_FALSE(anchor_extent(*tl, {}, &t0, &t1));
}

TEST(JobModel, OneStoreAloneLoadsAsBeforeAndItsCollectivesShowNoWait) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0}, {.rank = 1, .clock_offset_ns = 5 * kMs}}, 3, rank1_late());
  auto tl = load_job_timeline({paths[0]});
  ASSERT_TRUE(tl.ok()) << tl.status().message();
  EXPECT_TRUE(tl->ranks.empty());
  EXPECT_EQ(tl->lanes[0].group, -1);
  const Track* c = track_of(*tl, 0, TrackKind::kCollectives);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->size(), 6u) << "one piece per collective: no other rank, no wait known";
  for (const Collective& x : tl->collectives) EXPECT_EQ(x.ranks_seen, 1);
  EXPECT_EQ(event_colour(*tl, *c, 0).r, palette::kCollective.r);
}

// tc-viewer opens every store through load_job_timeline: one of every older
// schema (no ranks, no collectives table) still loads, as one store.
TEST(JobModel, OlderStoresLoadAsOneStore) {
  for (int version = 1; version <= 2; ++version) {
    TempDir dir;
    const std::string path = dir.file("old.tcdb");
    DemoStoreOptions o;
    o.range_events = 200;
    ASSERT_TRUE(write_demo_store(path, o).ok());
    ASSERT_EQ(test::downgrade_store(path, version), "");
    auto tl = load_job_timeline({path});
    ASSERT_TRUE(tl.ok()) << "v" << version << ": " << tl.status().message();
    EXPECT_TRUE(tl->ranks.empty());
    EXPECT_GT(tl->event_count, 200);
    auto direct = load_timeline(path);
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(tl->event_count, direct->event_count);
  }
}

TEST(JobModel, ABadStoreAmongTheRanksIsOneLine) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0}, {.rank = 1, .clock_offset_ns = 5 * kMs}}, 2, {});
  const std::string text = dir.file("text.tcdb");
  {
    FILE* f = std::fopen(text.c_str(), "w");
    std::fputs("not a store", f);
    std::fclose(f);
  }
  auto one_line = [](const Status& s) { return s.message().find('\n') == std::string::npos; };
  auto a = load_job_timeline({paths[0], text});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find(text + ": not a tc store"), std::string::npos) << a.status().message();
  EXPECT_TRUE(one_line(a.status()));
  auto b = load_job_timeline({paths[0], dir.file("run.rank2.tcdb")});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("run.rank2.tcdb: no such file"), std::string::npos) << b.status().message();
  // A newer tc's store (schema version 99 in the header).
  const std::string newer = dir.file("newer.tcdb");
  std::filesystem::copy_file(paths[1], newer);
  {
    std::fstream f(newer, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.write("\0\0\0\x63", 4);
  }
  auto n = load_job_timeline({paths[0], newer});
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find(newer + ": written by tc schema v99"), std::string::npos) << n.status().message();
  EXPECT_TRUE(one_line(n.status()));
  auto c = load_job_timeline({paths[0], paths[0]});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("are both rank 0"), std::string::npos) << c.status().message();
  // A store of another job.
  TempDir other;
  auto q = tc::test::write_job(other.path().string(), {{.rank = 0, .job = "job-8"}, {.rank = 1, .job = "job-8"}}, 2, {});
  auto d = load_job_timeline({paths[0], q[1]});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("different jobs"), std::string::npos) << d.status().message();
  // A store from before the ranks table and without a launcher: no rank.
  TempDir lone;
  auto e = load_job_timeline({paths[0], tc::test::write_job(lone.path().string(), {{.rank = 0, .dist = false, .launcher = false}}, 1, {})[0]});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("names no rank"), std::string::npos) << e.status().message();
  // A rank of the world not given is no error: it is named.
  TempDir three;
  auto r = tc::test::write_job(three.path().string(), {{.rank = 0, .world_size = 3}, {.rank = 2, .world_size = 3}}, 2, {});
  auto f = load_job_timeline(r);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(missing_ranks(*f), std::vector<int64_t>{1});
  ASSERT_EQ(f->ranks.size(), 2u);
  EXPECT_EQ(f->ranks[1].rank, 2);
}

// A frame of a job has every rank's rows; hidden lanes (a collapsed rank)
// cost nothing and are rebuilt when shown again.
TEST(JobModel, FrameCacheBuildsEveryRanksRowsAndSkipsHiddenLanes) {
  TempDir dir;
  auto paths = tc::test::write_job(dir.path().string(), {{.rank = 0}, {.rank = 1, .clock_offset_ns = 5 * kMs}}, 4, rank1_late());
  auto tl = load_job_timeline(paths);
  ASSERT_TRUE(tl.ok());
  FrameCache cache;
  const ViewWindow w{tl->start_ts, tl->end_ts, 800};
  ASSERT_TRUE(cache.prepare(*tl, w, 0));
  const int all = cache.frame().rows();
  EXPECT_EQ(all, static_cast<int>(tl->lanes[0].tracks.size() + tl->lanes[1].tracks.size()));
  // The wait shows: rank 0's collectives row has the wait colour.
  size_t k = 0;
  while (k < tl->lanes[0].tracks.size() && !(tl->lanes[0].tracks[k].kind == TrackKind::kCollectives && tl->lanes[0].tracks[k].depth == 1)) ++k;
  ASSERT_LT(k, tl->lanes[0].tracks.size()) << "rank 0's waiting row";
  EXPECT_EQ(tl->lanes[0].tracks[k].size(), 1u) << "it waited once: at seq 5";
  EXPECT_EQ(track_of(*tl, 1, TrackKind::kCollectives)->size(), 8u);
  EXPECT_EQ(std::count_if(tl->lanes[1].tracks.begin(), tl->lanes[1].tracks.end(), [](const Track& t) { return t.kind == TrackKind::kCollectives; }), 1)
      << "rank 1 never waited: no waiting row";
  const uint8_t* row = cache.frame().row(0, k);
  int pink = 0;
  for (int x = 0; x < cache.frame().columns; ++x) pink += row[4 * x] == palette::kCollectiveWait.r && row[4 * x + 1] == palette::kCollectiveWait.g;
  EXPECT_GT(pink, 0);
  std::vector<uint8_t> hidden = {0, 1};
  EXPECT_TRUE(cache.prepare(*tl, w, 0, &hidden));
  EXPECT_EQ(cache.frame().rows(), static_cast<int>(tl->lanes[0].tracks.size()));
  EXPECT_TRUE(cache.frame().tracks[1].empty() || cache.frame().tracks[1][0].items.empty());
  EXPECT_FALSE(cache.prepare(*tl, w, 0, &hidden)) << "the same view and the same hidden lanes: cached";
  EXPECT_TRUE(cache.prepare(*tl, w, 0)) << "shown again";
  EXPECT_EQ(cache.frame().rows(), all);
}

}  // namespace
}  // namespace tc::viewer
